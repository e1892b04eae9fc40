"""What a person reads after a RE trial: the per-class report, the micro scores over the positive labels
(:func:`downstream.classification.re_metrics`), the confusion matrix, and the misclassified examples
with counts per (gold, predicted) pair."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from downstream.report_text import epoch_lines, split_title, table


def re_classification_report(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """``classification_report.txt`` for RE.

    Args:
        results: ``{"dev": metrics, "test": metrics}``, each the dict of :func:`downstream.classification.re_metrics`.
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.
    """
    parts = [epoch_lines(info)]
    for name, m in results.items():
        support = m.get("num_gold_positive", 0)
        micro = {"precision": m["precision"], "recall": m["recall"], "f1": m["f1"], "support": support}
        labels = list(m["confusion"])
        corner = "gold \\ predicted"
        width = max(len(x) for x in [*labels, corner]) + 2
        columns = [max(8, len(label) + 2) for label in labels]
        confusion = [
            f"{corner:<{width}}" + "".join(f"{label:>{w}}" for label, w in zip(labels, columns, strict=True))
        ]
        for g in labels:
            confusion.append(
                f"{g:<{width}}"
                + "".join(f"{m['confusion'][g][p]:>{w}}" for p, w in zip(labels, columns, strict=True))
            )
        parts.append(
            f"=== {split_title(name)}: per class (support: gold examples) ===\n"
            f"{table(m['per_class'], 'label', {'micro (positive labels)': micro})}\n"
            f"(micro over the positive labels {', '.join(m.get('positive_labels', []))}, the benchmark's score; "
            "support: gold positive examples)\n"
            f"accuracy (all examples) {m.get('accuracy', 0):.4f}\n\n"
            "confusion matrix (rows gold, columns predicted):\n" + "\n".join(confusion)
        )
    return "\n\n".join(parts) + "\n"


def re_errors(splits: dict[str, tuple[Any, Sequence[str]]]) -> str:
    """``errors.txt`` for RE.

    Args:
        splits: ``{"dev": (ReSplit, predicted labels), "test": ...}``.

    Returns:
        The counts of misclassified examples per (gold, predicted) pair for each split, then one
        tab-separated row per misclassified example: split, index, file line, gold, predicted, sentence.
    """
    summary, rows = (
        ["misclassified examples per (gold -> predicted):"],
        ["split\tindex\tline\tgold\tpredicted\tsentence"],
    )
    for name, (split, predicted) in splits.items():
        if len(split.examples) != len(predicted):
            raise ValueError(f"{split.path}: {len(split.examples)} examples but {len(predicted)} predicted")
        wrong = [(ex, p) for ex, p in zip(split.examples, predicted, strict=True) if ex.label != p]
        pairs = Counter((ex.label, p) for ex, p in wrong)
        summary.append(
            f"  {name}: {len(wrong)} of {len(predicted)}"
            + "".join(f"; {g} -> {p}: {n}" for (g, p), n in pairs.most_common())
        )
        rows += [f"{name}\t{ex.index}\t{ex.line}\t{ex.label}\t{p}\t{ex.sentence}" for ex, p in wrong]
    return "\n".join(summary) + "\n\n" + "\n".join(rows) + "\n"
