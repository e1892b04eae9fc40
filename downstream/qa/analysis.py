"""The per-trial reports of the question answering kinds: ``classification_report.txt`` and ``errors.txt``
(:mod:`downstream.trial.analysis` writes them through the task's ``analysis``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from downstream.qa.metrics import exact_match_score, f1_score
from downstream.report_text import epoch_lines, split_title

#: Extractive QA scores of the report, with their titles.
QA_REPORT_METRICS = (
    ("exact_match", "exact match"), ("f1", "token F1"), ("strict_accuracy", "strict accuracy (top 1)"),
    ("lenient_accuracy", "lenient accuracy (top 5)"), ("mrr", "MRR (top 5)"),
)  # fmt: skip


def qa_classification_report(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """``classification_report.txt`` for extractive QA: the scores of each split (fractions), with the
    SQuAD 2.0 has-answer / no-answer breakdown when there is one.

    Args:
        results: ``{"dev": metrics, "test": metrics}`` (:func:`downstream.qa.task.qa_metrics`).
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


