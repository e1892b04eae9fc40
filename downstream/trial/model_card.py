"""The model card (``README.md`` in the Hugging Face model-card format) of every saved trial model.

A card has YAML front matter the Hub reads (``library_name``, ``pipeline_tag``, ``tags``, ``base_model`` when
the checkpoint is a hub id, and a ``model-index`` with the trial's test metrics), then for a person: the base
checkpoint, the dataset, the label set, the trial's development and test metrics, the command that made it,
how to use it with ``transformers.pipeline`` and ``bioelectra predict``, and its limits.
(Format: https://huggingface.co/docs/hub/model-cards, ``model-index`` as the Hub's evaluation results.)
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.settings import FinetuneSettings

#: finetune options and the settings fields they set, in the order a command line lists them.
_OPTIONS = (
    ("--loader", "task"), ("--dataset", "dataset"), ("--data-dir", "data_dir"), ("--entity-type", "entity_type"),
    ("--ckpt", "checkpoint_name"), ("--trials", "num_trials"), ("--seed", "seed"), ("--epochs", "num_train_epochs"),
    ("--max-steps", "max_steps"), ("--learning-rate", "learning_rate"), ("--batch-size", "per_device_train_batch_size"),
    ("--max-seq-length", "max_seq_length"), ("--warmup-ratio", "warmup_ratio"), ("--weight-decay", "weight_decay"),
    ("--layerwise-lr-decay", "layerwise_lr_decay"), ("--optimizer", "optimizer"), ("--dropout", "dropout"),
    ("--metric", "metric"), ("--precision", "precision"), ("--iob1", "iob1_policy"),
    ("--max-train-examples", "max_train_examples"), ("--fold", "fold"), ("--re-head", "re_head"),
    ("--dev-fraction", "dev_fraction"), ("--dev-split-seed", "dev_split_seed"), ("--doc-stride", "doc_stride"),
    ("--max-query-length", "max_query_length"), ("--max-answer-length", "max_answer_length"),
    ("--n-best-size", "n_best_size"), ("--null-score-threshold", "null_score_threshold"),
    ("--null-window-fraction", "null_window_fraction"), ("--output-dir", "output_dir"),
)  # fmt: skip

#: Options always written (the others only where they differ from FinetuneSettings' defaults).
_ALWAYS = {"--loader", "--ckpt", "--trials", "--seed", "--epochs", "--learning-rate", "--batch-size", "--max-seq-length", "--output-dir"}


def finetune_command(settings: FinetuneSettings) -> str:
    """A ``bioelectra finetune`` command line that makes the same run: the main settings always, the others
    where they differ from the defaults, every value explicit (so a changed default does not change it)."""
    defaults = FinetuneSettings(task=settings.task, checkpoint=settings.checkpoint, output_dir=settings.output_dir)
    args = ["bioelectra", "finetune"]
    for option, name in _OPTIONS:
        value = getattr(settings, name)
        if name == "checkpoint_name" and value is None:
            value = settings.checkpoint
        if value is None or (option not in _ALWAYS and value == getattr(defaults, name)):
            continue
        args += [option, f"{value:g}" if isinstance(value, float) else str(value)]
    if not settings.greater_is_better:
        args.append("--lower-is-better")
    return shlex.join(args)


def _base_model(settings: FinetuneSettings) -> str | None:
    """The hub id of the base checkpoint, when it is one (``owner/name`` that is not a local path)."""
    name = settings.checkpoint_name or settings.checkpoint
    if name.count("/") == 1 and not Path(name).exists() and not name.startswith((".", "/")):
        return name
    return None


def _pct(value: Any) -> str:
    return f"{100 * value:.2f}" if isinstance(value, int | float) else "-"


def model_card(
    settings: FinetuneSettings,
    *,
    kind: str,
    labels: list[str],
    trial_index: int,
    seed: int,
    best_epoch: float | None,
    dev: dict[str, Any],
    test: dict[str, Any],
    dataset_title: str | None = None,
    f1_name: str = "F1",
) -> str:
    """The card's text (``README.md``) for one trial model.

    Args:
        settings: the run's settings.
        kind: the task kind, ``ner``, ``re``, ``qa`` or ``yesno``.
        labels: the model's labels in id order.
        trial_index, seed, best_epoch: the trial's.
        dev, test: the trial's metrics (fractions in [0, 1]).
        dataset_title: the registry's title of the dataset, if registered.
        f1_name: what the F1 is (``entity-level F1``, ``micro-F1 over the positive labels``).
    """
    dataset = settings.dataset or Path(str(settings.data_dir)).name
    title = dataset_title or dataset
    base = settings.checkpoint_name or settings.checkpoint
    kind_card = _KIND_CARDS[kind]
    pipeline_tag, task_name, kind_tag = kind_card["pipeline_tag"], kind_card["task_name"], kind_card["tag"]
    names = _CARD_METRICS.get(kind, ("f1", "precision", "recall"))
    table = _CARD_METRICS.get(kind, ("precision", "recall", "f1", "accuracy"))
    front = {
        "library_name": "transformers",
        "pipeline_tag": pipeline_tag,
        "tags": ["biomedical", "electra", "bioelectra", kind_tag, dataset],
        "metrics": list(names),
    }
    if _base_model(settings):
        front["base_model"] = _base_model(settings)
    metrics = [
        {"type": name, "value": round(float(test[name]), 4), "name": f"test {f1_name if name == 'f1' else name}"}
        for name in names
        if isinstance(test.get(name), int | float)
    ]
    front["model-index"] = [
        {
            "name": f"{dataset}-{Path(str(settings.output_dir)).name}-trial-{trial_index}",
            "results": [
                {
                    "task": {"type": pipeline_tag, "name": task_name},
                    "dataset": {"name": title, "type": dataset, "split": "test"},
                    "metrics": metrics,
                }
            ],
        }
    ]
    rows = [
        "| split | " + " | ".join(_TITLES.get(n, n) for n in table) + " |",
        "|---|" + "---:|" * len(table),
        *(f"| {split} | " + " | ".join(_pct(m.get(n)) for n in table) + " |" for split, m in (("dev", dev), ("test", test))),
    ]
    usage, labels_line, limits, scores_line = _kind_sections(kind, settings, labels, f1_name)
    epoch = f"{best_epoch:g}" if isinstance(best_epoch, int | float) else "-"
    body = f"""# {title}: {task_name.lower()} fine-tuned from `{base}`

Trial {trial_index} (seed {seed}) of a run of {settings.num_trials} seeded trial(s) made with
`bioelectra finetune`: {pipeline_tag} on **{title}** (`{dataset}`), fine-tuned from
the checkpoint `{base}`, keeping the epoch best on the development set by `{settings.metric}` (epoch {epoch} of
{settings.num_train_epochs:g}).

{labels_line}## Results of this trial

{scores_line}:

{chr(10).join(rows)}

The run's `results.json` / `results.md` (one folder up) hold every trial and the mean ± std over trials.

## How it was made

```bash
{finetune_command(settings)}
```

Learning rate {settings.learning_rate:g}, batch {settings.per_device_train_batch_size}, {settings.num_train_epochs:g} epochs,
warmup ratio {settings.warmup_ratio:g}, weight decay {settings.weight_decay:g}, maximum sequence length
{settings.max_seq_length}, optimizer `{settings.optimizer}`, seed {seed}.

## How to use

{usage}

## Limits

{limits}
- Its quality is bounded by the base checkpoint's: compare the scores above with the published ones for this
  dataset before relying on it.
"""
    return "---\n" + _yaml(front) + "---\n\n" + body


#: Per task kind: the pipeline tag, the task's name and the Hub tag of the card.
_KIND_CARDS = {
    "ner": {"pipeline_tag": "token-classification", "task_name": "Named-entity recognition", "tag": "ner"},
    "re": {"pipeline_tag": "text-classification", "task_name": "Relation extraction", "tag": "relation-extraction"},
    "qa": {"pipeline_tag": "question-answering", "task_name": "Extractive question answering", "tag": "question-answering"},
    "yesno": {"pipeline_tag": "text-classification", "task_name": "Yes/no question answering", "tag": "question-answering"},
}  # fmt: skip

#: The card's metrics (front matter and results table) per task kind; NER and RE: F1, precision, recall in
#: the front matter, precision, recall, F1, accuracy in the table.
_CARD_METRICS = {
    "qa": ("exact_match", "f1", "strict_accuracy", "lenient_accuracy", "mrr"),
    "yesno": ("accuracy", "f1", "precision", "recall"),
}

#: Column titles of the results table.
_TITLES = {
    "precision": "precision", "recall": "recall", "f1": "F1", "accuracy": "accuracy", "exact_match": "exact match",
    "strict_accuracy": "strict accuracy", "lenient_accuracy": "lenient accuracy", "mrr": "MRR",
}  # fmt: skip


def _kind_sections(kind: str, settings: FinetuneSettings, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The kind's usage example, labels section, limits and the line that says what the scores are."""
    from downstream.predict.predictor import PIPELINE_AGGREGATION

    if kind == "ner":
        usage = f'''```python
from transformers import pipeline

tagger = pipeline("token-classification", model="PATH/TO/THIS/FOLDER", aggregation_strategy="{PIPELINE_AGGREGATION}")
tagger("The patient was diagnosed with Duchenne muscular dystrophy and later developed breast cancer.")
# [{{'entity_group': '...', 'word': '...', 'start': ..., 'end': ..., 'score': ...}}, ...]
```

`aggregation_strategy="{PIPELINE_AGGREGATION}"`: a word takes the label of its first sub-token, the one the
model was trained on (the other sub-tokens of a word carry no label in training), and a `B-` tag followed by
`I-` tags of the same type makes one entity. On whole documents, `bioelectra predict --model PATH file.txt`
splits sentences and long sentences into windows (no text skipped) and writes JSONL, CoNLL or BRAT.'''
        typed = settings.resolved_entity_type()
        labels_line = (
            f"## Labels\n\nIOB2 tags: {', '.join(f'`{label}`' for label in labels)}"
            + (f" (the dataset's bare `B` / `I` tags typed as `{typed}`).\n\n" if typed else ".\n\n")
        )
        limits = (
            "- Trained on the sentences of one benchmark's training split: other entity types, other text genres "
            "(clinical notes, full-text methods sections) and other annotation guidelines are not what it learnt.\n"
            "- Words are split on whitespace and punctuation, as the benchmark files are; mentions inside one "
            "word (a prefix, a hyphenated compound) can only be found as whole words.\n"
            f"- Inputs of more than {settings.max_seq_length} sub-tokens were trained as windows; the pipeline "
            "truncates longer texts unless given `stride`: use `bioelectra predict` on documents."
        )
        scores = f"{f1_name}, precision and recall (%), seqeval's entity-level scores (conlleval-compatible)"
    elif kind == "re":
        usage = '''```python
from transformers import pipeline

classifier = pipeline("text-classification", model="PATH/TO/THIS/FOLDER", top_k=None)
classifier("@CHEMICAL$ inhibits the activity of @GENE$ .")  # entities replaced by the dataset's placeholders
```

Or `bioelectra predict --model PATH sentences.txt` (one sentence per line): label and probability per class.'''
        labels_line = f"## Labels\n\nClasses: {', '.join(f'`{label}`' for label in labels)}.\n\n"
        limits = (
            "- Sentences must mark the two entities the way the training data did (the dataset's placeholders "
            "or markers); one sentence, one pair.\n"
            "- Trained on one benchmark's relation types; the scores are those of this split, not of other text."
        )
        scores = f"{f1_name}, precision and recall (%), micro-averaged over the positive labels"
    elif kind == "qa":
        usage = f'''```python
from transformers import pipeline

qa = pipeline("question-answering", model="PATH/TO/THIS/FOLDER")
qa(question="What causes COVID-19?", context="COVID-19 is caused by the SARS-CoV-2 coronavirus ...",
   doc_stride={settings.doc_stride}, max_answer_len={settings.max_answer_length})
# {{'score': ..., 'start': ..., 'end': ..., 'answer': '...'}}
```

The pipeline windows long contexts itself (`doc_stride`, `max_seq_len`); the model was fine-tuned on
windows of {settings.max_seq_length} sub-tokens, {settings.doc_stride} apart.'''
        labels_line = ""
        limits = (
            "- Extractive: the answer is always a span of the given context; a question whose answer is not "
            "in the context still gets a span unless the model was trained on SQuAD 2.0 data.\n"
            "- Trained on one benchmark's questions and documents; other question styles and text genres are "
            "not what it learnt."
        )
        scores = ("Exact match and token F1 (%, the SQuAD evaluation script's definitions), and BioASQ's strict "
                  "accuracy, lenient accuracy and MRR over the top 5 answers")  # fmt: skip
    else:  # yesno
        usage = '''```python
from transformers import pipeline

classifier = pipeline("text-classification", model="PATH/TO/THIS/FOLDER", top_k=None)
classifier({"text": "Do statins reduce atrial fibrillation after bypass surgery?", "text_pair": "ABSTRACT TEXT ..."})
```'''
        labels_line = f"## Labels\n\nAnswers: {', '.join(f'`{label}`' for label in labels)}.\n\n"
        limits = (
            "- Reads the question with one passage (an abstract without its conclusion, as in PubMedQA's "
            f"reasoning-required setting), truncated to {settings.max_seq_length} sub-tokens.\n"
            "- A few hundred training questions: the scores vary a lot between seeds; read the run's mean and std."
        )
        scores = "Accuracy and macro-averaged F1, precision and recall over the answers (%)"
    return usage, labels_line, limits, scores


def _yaml(value: Any, indent: int = 0) -> str:
    """A small YAML writer for the front matter (mappings, lists, scalars; strings JSON-quoted, which is
    valid YAML), so no YAML library is needed."""
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{key}:")
                lines.append(_yaml(item, indent + 1).rstrip("\n"))
            else:
                lines.append(f"{pad}{key}: {json.dumps(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                inner = _yaml(item, indent + 1).rstrip("\n").split("\n")
                lines.append(f"{pad}- {inner[0].lstrip()}")
                lines.extend(inner[1:])
            else:
                lines.append(f"{pad}- {json.dumps(item)}")
    return "\n".join(lines) + "\n"


def write_model_card(model_dir: str | Path, settings: FinetuneSettings, **fields: Any) -> Path:
    """Write :func:`model_card` as ``model_dir/README.md`` (through a temporary name). Returns the path."""
    path = Path(model_dir) / "README.md"
    atomic_write_text(path, model_card(settings, **fields))
    return path
