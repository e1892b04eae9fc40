"""Baselines beside the scores, and warnings for degenerate trials.

A model that answers "yes" to every PubMedQA question, or "related" to every GAD sentence, gets a plausible
score (accuracy 55, F1 69) that is only the class balance. Each split's single-class baseline (the
majority class, or all-positive for an F1 over positive classes: the kind's ``baseline``) is reported
beside the scores, and a trial is flagged, on the console and in ``results.md``, when its predictions are
all one class or its headline score is within :data:`BASELINE_MARGIN` of that baseline.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

#: A trial whose headline score is less than this above its split's baseline is flagged (one point).
BASELINE_MARGIN = 0.01


def split_baselines(task) -> dict[str, dict[str, Any]]:
    """``{"dev": baseline, "test": baseline}`` of the task's splits (empty for a kind without baselines);
    computed once per task."""
    cached = getattr(task, "_split_baselines", None)
    if cached is None:
        cached = {name: b for name in ("dev", "test") if (b := task.baseline(name)) is not None}
        task._split_baselines = cached
    return cached


def trial_warnings(task, results: dict[str, Any], baselines: dict[str, dict[str, Any]]) -> list[str]:
    """The warnings of one trial (``results``: its dev and test :class:`downstream.task.EvalResult`), logged.

    A trial is flagged when a split's predictions are all one class, or its headline metric is within
    :data:`BASELINE_MARGIN` of the split's baseline.
    """
    headline = task.headline_metrics[0]
    warnings = []
    for split in ("dev", "test"):
        baseline = baselines.get(split)
        if baseline is not None and baseline["values"].get(headline, 0.0) >= 1.0 - BASELINE_MARGIN:
            continue  # the split's gold is one class itself: one class predicted is right, the baseline unbeatable
        classes = task.predicted_classes(results[split])
        if classes is not None and len(set(classes)) == 1:
            warnings.append(f"{split}: every prediction is {classes[0]!r}, one class: the model learnt the class balance, "
                            "not the task")  # fmt: skip
        value = results[split].metrics.get(headline)
        if baseline is not None and isinstance(value, int | float):
            floor = baseline["values"][headline]
            if value - floor < BASELINE_MARGIN:
                warnings.append(
                    f"{split}: {headline} {100 * value:.2f} is {'below' if value < floor else 'within a point of'} the "
                    f"baseline {100 * floor:.2f} "
                    f"(always {baseline['predictions'][headline]!r})"
                )
    for warning in warnings:
        logger.warning("degenerate model? %s", warning)
    return warnings


def fold_baselines(fold_reports: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The mean over folds of each split's baselines (cross-validation: each fold has its own test split)."""
    out: dict[str, dict[str, Any]] = {}
    for split in ("dev", "test"):
        per_fold = [r["baseline"][split]["values"] for r in fold_reports if split in (r.get("baseline") or {})]
        if per_fold and len(per_fold) == len(fold_reports):
            out[split] = {"values": {m: sum(v[m] for v in per_fold) / len(per_fold) for m in per_fold[0]}}
    return out


def warning_lines(trials: list[dict[str, Any]], *, label: str = "trial") -> list[str]:
    """``results.md`` lines: each flagged trial's warnings (nothing when none is flagged)."""
    flagged = [(t, w) for t in trials for w in t.get("warnings", [])]
    if not flagged:
        return []
    lines = ["", "**Warning: degenerate predictions.** A score near its single-class baseline is the class balance, "
             "not a model of the task:", ""]  # fmt: skip
    lines += [f"- {label} {t.get('trial_index')} (seed {t.get('seed')}): {w}" for t, w in flagged]
    return lines


def baseline_classes(report: dict[str, Any], columns: list[tuple[str, str]]) -> str:
    """The classes the baseline predicts for every unit in ``columns`` (``(split, metric)``): ``O`` (no
    entity), ``entailment``, ``1`` ...; ``-`` when none is recorded."""
    classes = {str(report["baseline"].get(split, {}).get("predictions", {}).get(name)) for split, name in columns}
    return ", ".join(sorted(c for c in classes if c != "None")) or "-"


def baseline_cell(report: dict[str, Any], split: str, metric: str) -> str:
    """The baseline of ``metric`` on ``split`` in percent, ``-`` when there is none."""
    value = (report.get("baseline") or {}).get(split, {}).get("values", {}).get(metric)
    return "-" if value is None else f"{100 * value:.2f}"
