"""Yes/no question answering metrics: accuracy and macro-averaged precision / recall / F1. All values are
fractions in [0, 1]."""

from __future__ import annotations

from collections.abc import Sequence

from downstream.classification import re_metrics

#: How the yes/no QA scores are computed, stated in every yes/no result.
YESNO_METRIC_MODE = (
    "accuracy over questions, and macro-averaged precision / recall / F1 (the unweighted mean over the answer "
    "classes), as PubMedQA (Jin et al. 2019) reports them; BLURB's PubMedQA and BioASQ score is the accuracy"
)


def classification_metrics(gold: Sequence[str], predicted: Sequence[str], *, labels: Sequence[str]) -> dict:
    """Accuracy and macro-averaged precision / recall / F1 over ``labels`` (yes/no QA).

    Macro averaging gives every class the same weight: ``F1_macro = mean over c of F1_c`` with ``F1_c`` the
    one-class-against-the-rest F1 of class ``c`` (PubMedQA's ``evaluation.py`` reports sklearn's
    ``f1_score(average="macro")``, the same formula). A class with no gold and no predicted example has
    F1 0 and still counts in the mean (sklearn's ``zero_division=0``) when it is in ``labels``.

    Args:
        gold: gold answer of each question.
        predicted: predicted answer of each question, same length.
        labels: the answer classes (e.g. ``yes``, ``no``, ``maybe``), in report order.

    Returns:
        ``{"accuracy", "precision", "recall", "f1", "num_examples", "per_class": {label: {"precision",
        "recall", "f1", "support"}}, "confusion": {gold: {predicted: count}}, "mode"}``.

    Raises:
        ValueError: different lengths, or no label.
    """
    if not labels:
        raise ValueError("no labels: the macro-averaged scores would be undefined")
    base = re_metrics(gold, predicted, positive_labels=list(labels), labels=list(labels))
    per_class = base["per_class"]
    names = list(labels)

    def mean(key: str) -> float:
        return sum(per_class[label][key] for label in names) / len(names)

    return {
        "accuracy": base["accuracy"],
        "precision": mean("precision"),
        "recall": mean("recall"),
        "f1": mean("f1"),
        "num_examples": base["num_examples"],
        "per_class": per_class,
        "confusion": base["confusion"],
        "mode": YESNO_METRIC_MODE,
    }
