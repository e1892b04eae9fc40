"""The per-trial reports of the question answering kinds: ``classification_report.txt`` and ``errors.txt``
(the NER and RE ones are in :mod:`downstream.analysis`, which writes all of them)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from downstream.qa_metrics import exact_match_score, f1_score
from downstream.report_text import epoch_lines, split_title, table

#: Extractive QA scores of the report, with their titles.
QA_REPORT_METRICS = (
    ("exact_match", "exact match"), ("f1", "token F1"), ("strict_accuracy", "strict accuracy (top 1)"),
    ("lenient_accuracy", "lenient accuracy (top 5)"), ("mrr", "MRR (top 5)"),
)  # fmt: skip


def qa_classification_report(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """``classification_report.txt`` for extractive QA: the scores of each split (fractions), with the
    SQuAD 2.0 has-answer / no-answer breakdown when there is one.

    Args:
        results: ``{"dev": metrics, "test": metrics}`` (:func:`downstream.qa_task.qa_metrics`).
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.
    """
    parts = [epoch_lines(info)]
    for name, m in results.items():
        lines = [f"=== {split_title(name)}: {m.get('num_questions', '-')} questions ==="]
        lines += [f"{title:<26}{m[key]:>8.4f}" for key, title in QA_REPORT_METRICS if isinstance(m.get(key), int | float)]
        for prefix, title in (("has_ans", "answerable"), ("no_ans", "unanswerable")):
            if f"{prefix}_f1" in m:
                lines.append(f"{title} ({m[f'num_{prefix}']}): exact match {m[f'{prefix}_exact_match']:.4f}, F1 {m[f'{prefix}_f1']:.4f}")
        parts.append("\n".join(lines))
    parts.append("(exact match and F1: the SQuAD evaluation script's definitions; strict / lenient accuracy and MRR:\n"
                 " BioASQ's factoid measures over the n-best list's first 5 distinct answers)")  # fmt: skip
    return "\n\n".join(parts) + "\n"


def qa_errors(splits: dict[str, tuple[Any, dict[str, Any]]]) -> str:
    """``errors.txt`` for extractive QA.

    Args:
        splits: ``{"dev": (QaSplit, {question id: QaPrediction}), "test": ...}`` (pooled splits: one prediction
            per question).

    Returns:
        Per split the number of questions whose answer is not an exact match (split into: no overlap with
        any gold answer, partial overlap, and answered though unanswerable / unanswered though answerable),
        then one block per such question: id, question, gold answers, predicted answer and its F1.
    """
    summary = ["questions without an exact match (kinds: no overlap = token F1 0, partial = 0 < F1 < 1):"]
    blocks = []
    for name, (split, predictions) in splits.items():
        kinds: Counter = Counter()
        questions = split.questions()
        for example in questions:
            gold = example.gold_texts
            predicted = predictions[example.question_id].text if example.question_id in predictions else ""
            if max(exact_match_score(predicted, g) for g in gold):
                continue
            f1 = max(f1_score(predicted, g, version_2=split.version_2) for g in gold)
            kind = ("answered, no answer" if example.is_impossible else "unanswered" if not predicted
                    else "partial" if f1 > 0 else "no overlap")  # fmt: skip
            kinds[kind] += 1
            gold_text = " | ".join(repr(g) for g in gold)
            blocks.append(f"# {name} {example.question_id} (document {example.document_id})\n"
                          f"question:  {example.question}\ngold:      {gold_text}\npredicted: {predicted!r}  (F1 {f1:.2f})")  # fmt: skip
        summary.append(f"  {name}: {sum(kinds.values())} of {len(questions)}" + "".join(f"; {k} {v}" for k, v in kinds.most_common()))
    return "\n".join(summary) + "\n\n" + "\n\n".join(blocks) + ("\n" if blocks else "")


def yesno_classification_report(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """``classification_report.txt`` for yes/no QA: per answer precision / recall / F1 / support (questions),
    the macro average, the accuracy and the confusion matrix of each split.

    Args:
        results: ``{"dev": metrics, "test": metrics}`` (:func:`downstream.metrics.classification_metrics`).
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
