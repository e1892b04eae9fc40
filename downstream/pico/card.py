"""The PICO model card's text: usage with the token-classification pipeline, labels, limits."""

from __future__ import annotations

from typing import Any

#: The card's pipeline tag, task name and Hub tag.
CARD = {"pipeline_tag": "token-classification", "task_name": "PICO extraction", "tag": "pico"}


def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The model card's usage example, labels section, limits and the line that says what the scores are
    (``settings``: the run's :class:`downstream.settings.FinetuneSettings`)."""
    usage = '''```python
from transformers import pipeline

tagger = pipeline("token-classification", model="PATH/TO/THIS/FOLDER", aggregation_strategy="first")
tagger("Xylitol chewing gum for prevention of acute otitis media in day-care children .")
# runs of I-PAR / I-INT / I-OUT tokens: participants, interventions, outcomes
```'''
    labels_line = ("## Labels\n\nIO tags of EBM-NLP in BLURB's form (no `B-` tags): "
                   f"{', '.join(f'`{label}`' for label in labels)}; PAR participants, INT interventions, OUT outcomes.\n\n")  # fmt: skip
    limits = (
        "- Trained on abstracts of randomised controlled trials (EBM-NLP): other study designs and full texts "
        "are not what it learnt.\n"
        "- IO tags: two adjacent spans of one element read as one span.\n"
        f"- Inputs of more than {settings.max_seq_length} sub-tokens were trained as windows."
    )
    scores = f"{f1_name}, and the macro precision and recall (%), over tokens (BLURB's word-level scores)"
    return usage, labels_line, limits, scores
