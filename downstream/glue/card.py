"""The GLUE model card's text: usage with the text-classification pipeline, labels, limits."""

from __future__ import annotations

from typing import Any

#: The card's pipeline tag, task name and Hub tag.
CARD = {
    "pipeline_tag": "text-classification",
    "task_name": "GLUE sentence (pair) classification",
    "tag": "glue",
}


def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The model card's usage example, labels section, limits and the line that says what the scores are
    (``settings``: the run's :class:`downstream.settings.FinetuneSettings`)."""
    usage = """```python
from transformers import pipeline

classifier = pipeline("text-classification", model="PATH/TO/THIS/FOLDER", top_k=None)
classifier({"text": "A man is playing a flute.", "text_pair": "A man plays the flute."})  # a pair task
classifier("The sailors rode the breeze clear of the rocks.")  # a single-sentence task (CoLA, SST-2)
```"""
    if labels == ["score"]:
        labels_line = "## Labels\n\nOne output: the similarity score divided by 5 (multiply by 5 for STS-B's 0-5 scale).\n\n"
    else:
        labels_line = f"## Labels\n\nClasses: {', '.join(f'`{label}`' for label in labels)} (as GLUE's files name them).\n\n"
    limits = (
        f"- General-English benchmark (GLUE); inputs cut to {settings.max_seq_length} sub-tokens, the longer "
        "sentence of a pair first.\n"
        "- GLUE's test labels are hidden: the test scores come from the GLUE server (submission files in the "
        "trial folder); the scores below are on the development set."
    )
    scores = "GLUE's metrics (%): accuracy; F1 of class 1 (MRPC, QQP); Matthews correlation (CoLA); Pearson and Spearman correlation (STS-B)"
    return usage, labels_line, limits, scores
