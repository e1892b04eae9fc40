"""The per-trial reports of a GLUE task: ``classification_report.txt`` and ``errors.txt``."""

from __future__ import annotations

from collections import Counter
from typing import Any

from downstream.glue.spec import GlueSpec
from downstream.report_text import epoch_lines, split_title

#: Regression: the examples with the largest absolute error listed in ``errors.txt``.
WORST_SCORES = 50


def glue_classification_report(
    spec: GlueSpec, results: dict[str, dict[str, Any]], info: dict[str, Any]
) -> str:
    """The labelled splits' GLUE metrics (percent) and, for a classification task, the confusion matrix.

    Args:
        spec: the task.
        results: ``{"dev": metrics}`` (:func:`downstream.glue.metrics.glue_scores`); GLUE's test set has none.
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.
    """
    parts = [epoch_lines(info)]
    for name, m in results.items():
        keys = [
            k
            for k in ("accuracy", "f1", "precision", "recall", "mcc", "pearson", "spearman")
            if isinstance(m.get(k), float)
        ]
        lines = [f"=== {split_title(name)}: {spec.title}, {m.get('num_examples')} examples ==="]
        lines += [f"{key:<10}{100 * m[key]:>8.2f}" for key in keys]
        if "mse" in m:
            lines.append(f"{'mse':<10}{m['mse']:>8.4f}  (0-5 scale)")
        if m.get("constant_predictions"):
            lines.append("constant predictions: the correlations are undefined, 0 reported")
        confusion = m.get("confusion")
        if confusion:
            labels = list(confusion)
            corner = "gold \\ predicted"
            width = max(len(x) for x in [*labels, corner]) + 2
            lines += ["", "confusion matrix (rows gold, columns predicted):",
                      f"{corner:<{width}}" + "".join(f"{label:>16}" for label in labels)]  # fmt: skip
            lines += [f"{g:<{width}}" + "".join(f"{confusion[g][p]:>16}" for p in labels) for g in labels]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def glue_errors(spec: GlueSpec, splits: dict[str, tuple[Any, list]]) -> str:
    """``errors.txt``: classification: the wrong answers per (gold -> predicted) pair, then one row per wrong
    example (split, index, line, gold, predicted, text a, text b); STS-B: the :data:`WORST_SCORES` largest
    absolute errors per split.

    Args:
        splits: ``{"dev": (GlueSplit, predictions in file order)}``.
    """
    summary, rows = [], ["split\tindex\tline\tgold\tpredicted\ttext_a\ttext_b"]
    for name, (split, predicted) in splits.items():
        pairs = list(zip(split.examples, predicted, strict=True))
        if spec.is_regression:
            worst = sorted(pairs, key=lambda ep: -abs(ep[0].label - ep[1]))[:WORST_SCORES]
            summary.append(f"{name}: the {len(worst)} largest absolute errors of {len(pairs)} (0-5 scale)")
            rows += [
                f"{name}\t{e.index}\t{e.line}\t{e.label:.3f}\t{p:.3f}\t{e.text_a}\t{e.text_b}"
                for e, p in worst
            ]
            continue
        wrong = [(e, p) for e, p in pairs if e.label != p]
        counts = Counter((e.label, p) for e, p in wrong)
        summary.append(
            f"{name}: {len(wrong)} of {len(pairs)} wrong"
            + "".join(f"; {g} -> {p}: {n}" for (g, p), n in counts.most_common())
        )
        rows += [
            f"{name}\t{e.index}\t{e.line}\t{e.label}\t{p}\t{e.text_a}\t{e.text_b or ''}" for e, p in wrong
        ]
    return "\n".join(summary) + "\n\n" + "\n".join(rows) + "\n"
