"""The per-trial reports of a sentence-similarity run: ``classification_report.txt`` and ``errors.txt``."""

from __future__ import annotations

from typing import Any

from downstream.report_text import epoch_lines, split_title

#: The pairs with the largest absolute error listed per split in ``errors.txt``.
WORST_PAIRS = 50


def similarity_report(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """Pearson and Spearman correlation (percent) and the mean squared error of each split.

    Args:
        results: ``{"dev": metrics, "test": metrics}`` (:func:`downstream.classification.regression_scores`).
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.
    """
    parts = [epoch_lines(info)]
    for name, m in results.items():
        lines = [f"=== {split_title(name)}: {m.get('num_examples')} pairs ==="]
        lines += [f"{key:<10}{100 * m[key]:>8.2f}" for key in ("pearson", "spearman") if isinstance(m.get(key), float)]
        if "mse" in m:
            lines.append(f"{'mse':<10}{m['mse']:>8.4f}  (the scores' own scale)")
        if m.get("constant_predictions"):
            lines.append("constant predictions (or gold scores): the correlations are undefined, 0 reported")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def similarity_errors(splits: dict[str, tuple[Any, list[float]]]) -> str:
    """``errors.txt``: per split the :data:`WORST_PAIRS` largest absolute errors (split, pair id, line, gold,
    predicted, the two sentences).

    Args:
        splits: ``{"dev": (SimilaritySplit, predictions in file order)}``.
    """
    summary, rows = [], ["split\tpair_id\tline\tgold\tpredicted\tsent1\tsent2"]
    for name, (split, predicted) in splits.items():
        pairs = sorted(zip(split.examples, predicted, strict=True), key=lambda ep: -abs(ep[0].label - ep[1]))
        worst = pairs[:WORST_PAIRS]
        summary.append(f"{name}: the {len(worst)} largest absolute errors of {len(pairs)} pairs")
        rows += [f"{name}\t{e.index}\t{e.line}\t{e.label:.3f}\t{p:.3f}\t{e.text_a}\t{e.text_b}" for e, p in worst]
    return "\n".join(summary) + "\n\n" + "\n".join(rows) + "\n"
