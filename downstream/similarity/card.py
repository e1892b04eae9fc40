"""The sentence-similarity model card's text: usage with the text-classification pipeline, the output, limits."""

from __future__ import annotations

from typing import Any

#: The card's pipeline tag, task name and Hub tag.
CARD = {"pipeline_tag": "text-classification", "task_name": "Sentence similarity", "tag": "sentence-similarity"}


def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The model card's usage example, labels section, limits and the line that says what the scores are
    (``settings``: the run's :class:`downstream.settings.FinetuneSettings`)."""
    usage = '''```python
from transformers import pipeline

scorer = pipeline("text-classification", model="PATH/TO/THIS/FOLDER", function_to_apply="none")
scorer({"text": "KRAS mutations activate the MAPK pathway.", "text_pair": "Mutant KRAS drives MAPK signalling."})
# [{"label": "score", "score": <the predicted similarity, on the training data's scale>}]
```'''
    labels_line = "## Output\n\nOne output, `score`: the predicted similarity on the training data's scale (BIOSSES: 0-4).\n\n"
    limits = (
        f"- A pair is cut to {settings.max_seq_length} sub-tokens, the longer sentence first.\n"
        "- BIOSSES has 64 training pairs: the scores vary a lot between seeds; read the run's mean and std."
    )
    scores = "Pearson and Spearman correlation of the predicted with the gold scores (%)"
    return usage, labels_line, limits, scores
