"""The per-trial reports of a document-classification run: ``classification_report.txt`` (micro and
per-label precision / recall / F1, the threshold) and ``errors.txt`` (the abstracts whose label set is wrong)."""

from __future__ import annotations

from typing import Any

from downstream.report_text import epoch_lines, split_title, table


def doc_report(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """Per split: the per-label table and BLURB's micro average, the threshold and the F1 at 0.5.

    Args:
        results: ``{"dev": metrics, "test": metrics}`` (:func:`downstream.doc_classification.metrics.doc_scores`
            with ``threshold``, ``threshold_source`` and ``f1_at_0_5``).
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.
    """
    parts = [epoch_lines(info)]
    for name, m in results.items():
        micro = {"precision": m["precision"], "recall": m["recall"], "f1": m["f1"], "support": m["num_gold_positive"]}
        lines = [
            f"=== {split_title(name)}: {m['num_documents']} abstracts ({m['documents_without_label']} without any label), "
            f"{m['num_gold_positive']} gold (abstract, label) pairs ===",
            table(m["per_label"], "label", {"micro avg (BLURB)": micro}),
            f"threshold {m['threshold']:.2f}, {m['threshold_source']}; F1 at BLURB's fixed 0.5: {100 * m['f1_at_0_5']:.2f}",
        ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def doc_errors(splits: dict[str, tuple[Any, list[dict[str, Any]]]], labels: list[str]) -> str:
    """``errors.txt``: per split the number of abstracts with a wrong label set, then one row per such abstract
    (split, PMID, sentences, missed labels, wrong labels).

    Args:
        splits: ``{"dev": (DocSplit, prediction rows)}`` (rows: ``doc_id``, ``gold``, ``predicted`` label positions).
        labels: the label names.
    """
    summary, rows = [], ["split\tpmid\tsentences\tmissed\twrong"]
    for name, (split, predicted) in splits.items():
        wrong = [r for r in predicted if set(r["gold"]) != set(r["predicted"])]
        summary.append(f"{name}: {len(wrong)} of {len(predicted)} abstracts with a wrong label set")
        for r in wrong:
            missed = "; ".join(labels[k] for k in sorted(set(r["gold"]) - set(r["predicted"]))) or "-"
            extra = "; ".join(labels[k] for k in sorted(set(r["predicted"]) - set(r["gold"]))) or "-"
            rows.append(f"{name}\t{r['doc_id']}\t{len(split.documents[r['doc_id']])}\t{missed}\t{extra}")
    return "\n".join(summary) + "\n\n" + "\n".join(rows) + "\n"
