"""The RE model card's text: usage with the text-classification pipeline, labels, limits."""

from __future__ import annotations

from typing import Any

#: The card's pipeline tag, task name and Hub tag.
CARD = {"pipeline_tag": "text-classification", "task_name": "Relation extraction", "tag": "relation-extraction"}


def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The model card's usage example, labels section, limits and the line that says what the scores are
    (``settings``: the run's :class:`downstream.settings.FinetuneSettings`)."""
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
    return usage, labels_line, limits, scores
