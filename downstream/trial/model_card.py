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
from downstream.kinds import task_class
from downstream.settings import FinetuneSettings

#: finetune options and the settings fields they set, in the order a command line lists them.
_OPTIONS = (
    ("--loader", "task"), ("--dataset", "dataset"), ("--data-dir", "data_dir"), ("--entity-type", "entity_type"),
    ("--ckpt", "checkpoint_name"), ("--trials", "num_trials"), ("--seed", "seed"), ("--epochs", "num_train_epochs"),
    ("--max-steps", "max_steps"), ("--learning-rate", "learning_rate"), ("--batch-size", "per_device_train_batch_size"),
    ("--max-seq-length", "max_seq_length"), ("--warmup-ratio", "warmup_ratio"), ("--weight-decay", "weight_decay"),
    ("--layerwise-lr-decay", "layerwise_lr_decay"), ("--optimizer", "optimizer"), ("--dropout", "dropout"),
    ("--metric", "metric"), ("--precision", "precision"), ("--iob1", "iob1_policy"),
    ("--max-train-examples", "max_train_examples"), ("--max-eval-examples", "max_eval_examples"), ("--fold", "fold"),
    ("--re-head", "re_head"),
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
    if not settings.double_unordered:
        args.append("--no-double-unordered")
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
    kind_class = task_class(kind)
    card = kind_class.card_info(list(labels))
    pipeline_tag, task_name, kind_tag = (card[key] for key in ("pipeline_tag", "task_name", "tag"))
    names, table = kind_class.card_metrics, kind_class.card_table_metrics
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
    usage, labels_line, limits, scores_line = kind_class.card_sections(settings, labels, f1_name)
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


#: Column titles of the results table.
_TITLES = {
    "precision": "precision", "recall": "recall", "f1": "F1", "accuracy": "accuracy", "exact_match": "exact match",
    "strict_accuracy": "strict accuracy", "lenient_accuracy": "lenient accuracy", "mrr": "MRR", "mcc": "MCC",
    "pearson": "Pearson", "spearman": "Spearman",
}  # fmt: skip


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
