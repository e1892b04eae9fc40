"""The NER model card's text: usage with the token-classification pipeline, labels, limits."""

from __future__ import annotations

from typing import Any

from downstream.ner.conll2000 import CHUNK_TYPES
from downstream.ner.data import PIPELINE_AGGREGATION
from downstream.ner.types import entity_type_of, has_bare_labels

#: The card's pipeline tag, task name and Hub tag.
CARD = {"pipeline_tag": "token-classification", "task_name": "Named-entity recognition", "tag": "ner"}
#: The same for a chunking model (CoNLL-2000's phrase types as its labels).
CHUNKING_CARD = {"pipeline_tag": "token-classification", "task_name": "Chunking", "tag": "chunking"}


def is_chunking(labels: list[str]) -> bool:
    """Whether ``labels`` are CoNLL-2000 chunk tags (``O`` and ``B-`` / ``I-`` of its phrase types only)."""
    return bool(labels) and any(label != "O" for label in labels) and all(label == "O" or label[2:] in CHUNK_TYPES for label in labels)


def card_info(labels: list[str]) -> dict[str, str]:
    """:data:`CHUNKING_CARD` for chunk tags, else :data:`CARD`."""
    return CHUNKING_CARD if is_chunking(labels) else CARD


def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The model card's usage example, labels section, limits and the line that says what the scores are
    (``settings``: the run's :class:`downstream.settings.FinetuneSettings`)."""
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
    if is_chunking(labels):
        return _chunking_sections(usage, labels, settings, f1_name)
    if has_bare_labels(labels):
        usage = (
            "**Not ready for a pipeline: this model's labels are bare `B` / `I`** (its training files had no entity "
            "type, and none was given or found). A token-classification pipeline returns fragments labelled `B` "
            "and `I`, not entities. Fine-tune again with `--entity-type TYPE` (or `--dataset NAME` for a "
            "registered benchmark) to get typed labels such as `B-Disease` / `I-Disease`."
        )
    typed = entity_type_of(settings)[0] if not has_bare_labels(labels) else None
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
    return usage, labels_line, limits, scores


def _chunking_sections(usage: str, labels: list[str], settings: Any, f1_name: str) -> tuple[str, str, str, str]:
    """The card's texts for a CoNLL-2000 chunking model: chunk tags, phrases in place of entities."""
    usage = usage.replace(
        "The patient was diagnosed with Duchenne muscular dystrophy and later developed breast cancer.",
        "Confidence in the pound is widely expected to take another sharp dive.",
    ).replace("makes one entity", "makes one phrase (chunk)")
    labels_line = f"## Labels\n\nIOB2 chunk tags of CoNLL-2000: {', '.join(f'`{label}`' for label in labels)}.\n\n"
    limits = (
        "- Trained on CoNLL-2000's Wall Street Journal sentences (Penn Treebank tokenisation, no POS tags given "
        "to the model): other genres and tokenisations are not what it learnt.\n"
        f"- Inputs of more than {settings.max_seq_length} sub-tokens were trained as windows; the pipeline "
        "truncates longer texts unless given `stride`."
    )
    scores = f"{f1_name}, precision and recall (%), conlleval's phrase-level scores (seqeval's default mode)"
    return usage, labels_line, limits, scores
