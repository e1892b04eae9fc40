"""The document-classification model card's text: usage with the text-classification pipeline, labels, limits."""

from __future__ import annotations

from typing import Any

#: The card's pipeline tag, task name and Hub tag.
CARD = {"pipeline_tag": "text-classification", "task_name": "Multi-label document classification", "tag": "document-classification"}


def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The model card's usage example, labels section, limits and the line that says what the scores are
    (``settings``: the run's :class:`downstream.settings.FinetuneSettings`)."""
    usage = '''```python
from transformers import pipeline

classifier = pipeline("text-classification", model="PATH/TO/THIS/FOLDER", function_to_apply="sigmoid", top_k=None)
sentences = ["Knockdown of GATA2 induced apoptosis in KRAS mutant cells .", "..."]  # one abstract, sentence by sentence
per_sentence = classifier(sentences)
# an abstract's labels: those whose probability exceeds the threshold (results.json: dev "threshold") in any sentence
```'''
    labels_line = f"## Labels\n\nIndependent labels (one sigmoid each): {', '.join(f'`{label}`' for label in labels)}.\n\n"
    limits = (
        "- Classifies sentences; an abstract gets the union of its sentences' labels (BLURB's HoC evaluation). Use "
        "the decision threshold chosen on the development split (results.json), not 0.5 by default.\n"
        f"- A sentence is cut to {settings.max_seq_length} sub-tokens."
    )
    scores = "BLURB's micro-averaged F1, precision and recall over abstracts x labels (%)"
    return usage, labels_line, limits, scores
