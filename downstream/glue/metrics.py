"""GLUE's metrics (Wang et al. 2019, section 3), computed with scikit-learn and scipy.

- ``mcc``: Matthews correlation coefficient (CoLA), ``sklearn.metrics.matthews_corrcoef``;
- ``pearson``, ``spearman``: correlation of predicted and gold scores (STS-B), ``scipy.stats.pearsonr`` /
  ``spearmanr``; ``mse`` beside them (on the 0-5 scale), as the original ELECTRA code's ``RegressionScorer``
  (:func:`downstream.classification.regression_scores`, shared with sentence similarity);
- ``f1`` (with ``precision`` and ``recall``): binary F1 of class ``1`` (MRPC, QQP), ``sklearn.metrics.f1_score``;
- ``accuracy``: ``sklearn.metrics.accuracy_score`` (every classification task).

All in [0, 1] (correlations in [-1, 1]); reports print them times 100, as GLUE's leaderboard does. A
correlation is undefined when the predictions (or the gold scores) are constant; it is reported as 0.0 with
``constant_predictions`` set, so that the best-epoch selection still compares numbers (NaN never compares).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from downstream.classification import regression_scores
from downstream.glue.spec import GlueSpec

#: How the GLUE scores are computed, stated in every GLUE result.
GLUE_METRIC_MODE = (
    "GLUE's metrics (Wang et al. 2019): CoLA Matthews correlation, STS-B Pearson and Spearman correlation, MRPC and "
    "QQP F1 of class 1 and accuracy, the other tasks accuracy (scikit-learn / scipy)"
)


def classification_scores(spec: GlueSpec, gold: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """``accuracy`` always; ``mcc`` for CoLA; ``f1``, ``precision``, ``recall`` of class ``1`` for MRPC / QQP;
    ``confusion`` ``{gold: {predicted: count}}``.

    Raises:
        ValueError: different lengths, or no example.
    """
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef, precision_score, recall_score

    if len(gold) != len(predicted) or not gold:
        raise ValueError(
            f"{len(gold)} gold labels and {len(predicted)} predicted: expected the same number, at least one"
        )
    gold, predicted = list(gold), list(predicted)
    scores: dict[str, Any] = {"accuracy": float(accuracy_score(gold, predicted)), "num_examples": len(gold)}
    if "mcc" in spec.metrics:
        scores["mcc"] = float(matthews_corrcoef(gold, predicted))
    if "f1" in spec.metrics:
        kwargs = {"pos_label": "1", "labels": list(spec.labels), "zero_division": 0}
        scores["f1"] = float(f1_score(gold, predicted, **kwargs))
        scores["precision"] = float(precision_score(gold, predicted, **kwargs))
        scores["recall"] = float(recall_score(gold, predicted, **kwargs))
    scores["confusion"] = {g: {p: sum(1 for a, b in zip(gold, predicted, strict=True) if (a, b) == (g, p)) for p in spec.labels}
                           for g in spec.labels}  # fmt: skip
    return scores


def glue_scores(spec: GlueSpec, gold: Sequence, predicted: Sequence) -> dict[str, Any]:
    """The GLUE metrics of task ``spec`` (see the module docstring), with ``mode``."""
    scores = (
        regression_scores(gold, predicted)
        if spec.is_regression
        else classification_scores(spec, gold, predicted)
    )
    scores["mode"] = GLUE_METRIC_MODE
    return scores
