"""The yes/no QA model card's text: usage with the text-classification pipeline, labels, limits."""

from __future__ import annotations

from typing import Any

#: The card's pipeline tag, task name and Hub tag.
CARD = {"pipeline_tag": "text-classification", "task_name": "Yes/no question answering", "tag": "question-answering"}


def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The model card's usage example, labels section, limits and the line that says what the scores are
    (``settings``: the run's :class:`downstream.settings.FinetuneSettings`)."""
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
