"""The extractive QA model card's text: usage with the question-answering pipeline, limits."""

from __future__ import annotations

from typing import Any

#: The card's pipeline tag, task name and Hub tag.
CARD = {"pipeline_tag": "question-answering", "task_name": "Extractive question answering", "tag": "question-answering"}


def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
    """The model card's usage example, labels section, limits and the line that says what the scores are
    (``settings``: the run's :class:`downstream.settings.FinetuneSettings`)."""
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
    return usage, labels_line, limits, scores
