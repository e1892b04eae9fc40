"""The per-trial reports of yes/no question answering: ``classification_report.txt`` and ``errors.txt``."""

from __future__ import annotations

from collections import Counter
from typing import Any

from downstream.report_text import epoch_lines, split_title, table


def yesno_classification_report(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """``classification_report.txt`` for yes/no QA: per answer precision / recall / F1 / support (questions),
    the macro average, the accuracy and the confusion matrix of each split.

    Args:
        results: ``{"dev": metrics, "test": metrics}`` (:func:`downstream.yesno.metrics.classification_metrics`).
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.
    """
    parts = [epoch_lines(info)]
    for name, m in results.items():
        labels = list(m["confusion"])
        macro = {"precision": m["precision"], "recall": m["recall"], "f1": m["f1"], "support": m["num_examples"]}
        corner = "gold \\ predicted"
        width = max(len(x) for x in [*labels, corner]) + 2
        confusion = [f"{corner:<{width}}" + "".join(f"{label:>8}" for label in labels)]
        confusion += [f"{g:<{width}}" + "".join(f"{m['confusion'][g][p]:>8}" for p in labels) for g in labels]
        parts.append(
            f"=== {split_title(name)}: per answer (support: questions) ===\n"
            f"{table(m['per_class'], 'answer', {'macro average': macro})}\n"
            f"accuracy {m['accuracy']:.4f}\n\nconfusion matrix (rows gold, columns predicted):\n" + "\n".join(confusion)
        )
    return "\n\n".join(parts) + "\n"


def yesno_errors(splits: dict[str, tuple[Any, list[dict[str, Any]]]]) -> str:
    """``errors.txt`` for yes/no QA.

    Args:
        splits: ``{"dev": (YesNoSplit, the evaluator's per-question rows), "test": ...}``.

    Returns:
        The counts of wrong answers per (gold -> predicted) pair for each split, then one tab-separated row
        per wrong question: split, question id, gold, predicted, the predicted answer's probability, question.
    """
    summary, rows = ["wrong answers per (gold -> predicted):"], ["split\tquestion_id\tgold\tpredicted\tprobability\tquestion"]
    for name, (split, predicted) in splits.items():
        questions = {e.question_id: e.question for e in split.examples}
        wrong = [r for r in predicted if r["gold"] != r["predicted"]]
        pairs = Counter((r["gold"], r["predicted"]) for r in wrong)
        summary.append(f"  {name}: {len(wrong)} of {len(predicted)}" + "".join(f"; {g} -> {p}: {n}" for (g, p), n in pairs.most_common()))
        rows += [f"{name}\t{r['question_id']}\t{r['gold']}\t{r['predicted']}\t{r['probabilities'][r['predicted']]:.4f}\t"
                 f"{questions.get(r['question_id'], '')}" for r in wrong]  # fmt: skip
    return "\n".join(summary) + "\n\n" + "\n".join(rows) + "\n"
