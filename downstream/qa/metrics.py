"""Extractive question answering metrics. All values are fractions in [0, 1] (the official scripts print
percentages: multiply by 100 only in reports).

SQuAD (Rajpurkar et al. 2016, 2018): the official ``evaluate-v1.1.py`` definitions, unchanged:

- ``normalize_answer``: lower-case, remove punctuation (``string.punctuation``), remove the articles
  ``a`` / ``an`` / ``the`` (as whole words), then collapse whitespace;
- exact match: normalized prediction == normalized gold;
- token F1: bag-of-tokens overlap of the normalized, whitespace-split strings
  (``precision = same / len(pred)``, ``recall = same / len(gold)``, ``F1 = 2PR / (P + R)``, 0 when nothing
  is shared);
- per question the maximum over its gold answers, then the mean over questions; a question without a
  prediction scores 0 (as the official script, which prints "Unanswered question ... will receive score 0").

SQuAD 2.0 (``evaluate-v2.0.py``): an impossible question's gold is the empty string (gold answers that
normalize to nothing are replaced by ``""``), and when either side normalizes to no tokens F1 is 1 if both
do and 0 otherwise (v1.1 gives 0 there). ``has_ans_*`` / ``no_ans_*`` split the scores as that script does.

BioASQ factoid (Tsatsaronis et al. 2015), as BioBERT (Lee et al. 2020, section 4.3) reports it from the top 5
predicted answers: strict accuracy (the top-1 answer matches a gold answer), lenient accuracy (any of the
top 5 matches), and mean reciprocal rank (1 / rank of the first match in the top 5, 0 if none). Matching is
what BioASQ's official evaluator (``EvaluatorTask1b -phaseB``, which BioBERT's scripts call) does: string
equality after lower-casing (:func:`bioasq_normalize`: also surrounding whitespace removed), every gold
synonym counting. A ranked list is first de-duplicated by that form (keeping the first), so a repeated
answer does not take a rank; empty answers never match. A question without any prediction scores 0 here (the
official evaluator leaves it out of the mean; our predictions answer every question).
"""

from __future__ import annotations

import logging
import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

logger = logging.getLogger(__name__)

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, drop the articles a / an / the, collapse whitespace (``evaluate-v1.1.py``)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction: str, ground_truth: str) -> float:
    """1.0 when the normalized strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def f1_score(prediction: str, ground_truth: str, *, version_2: bool = False) -> float:
    """Token F1 of the normalized strings (``evaluate-v1.1.py``; with ``version_2`` the v2.0 rule for an empty
    side: 1.0 if both are empty, else 0.0)."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(ground_truth).split()
    if version_2 and (not pred_tokens or not gold_tokens):
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_metrics(
    gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str], *, version_2: bool = False
) -> dict[str, float | int]:
    """SQuAD exact match and F1 over the questions of ``gold``.

    Args:
        gold: question id -> gold answer texts (an impossible question: ``[]`` or ``[""]``).
        predictions: question id -> predicted text (``""`` = no answer).
        version_2: score as ``evaluate-v2.0.py`` (empty gold, has-answer / no-answer breakdown).

    Returns:
        ``{"exact_match", "f1", "num_questions", "num_missing"}`` plus, with ``version_2``,
        ``has_ans_exact_match``, ``has_ans_f1``, ``num_has_ans`` and the ``no_ans_`` equivalents.

    Raises:
        ValueError: a prediction for a question id that is not in ``gold`` (a mismatch of files), or no
            question at all; a gold list that is empty in v1.1.
    """
    if not gold:
        raise ValueError("no gold questions to score")
    unknown = [qid for qid in predictions if qid not in gold]
    if unknown:
        raise ValueError(f"{len(unknown)} predictions for question ids not in the gold answers, e.g. {unknown[:3]}")
    em_by_id: dict[str, float] = {}
    f1_by_id: dict[str, float] = {}
    has_answer: dict[str, bool] = {}
    missing = 0
    for qid, answers in gold.items():
        texts = [a for a in answers if normalize_answer(a)] if version_2 else list(answers)
        if not texts:
            if not version_2:
                raise ValueError(f"question {qid!r}: no gold answer (an impossible question needs version_2=True)")
            texts = [""]
        has_answer[qid] = texts != [""]
        if qid not in predictions:
            missing += 1
            em_by_id[qid] = f1_by_id[qid] = 0.0
            continue
        prediction = predictions[qid]
        em_by_id[qid] = max(exact_match_score(prediction, t) for t in texts)
        f1_by_id[qid] = max(f1_score(prediction, t, version_2=version_2) for t in texts)
    if missing:
        logger.warning("%d of %d questions have no prediction; they score 0", missing, len(gold))
    n = len(gold)
    result: dict[str, float | int] = {
        "exact_match": sum(em_by_id.values()) / n,
        "f1": sum(f1_by_id.values()) / n,
        "num_questions": n,
        "num_missing": missing,
    }
    if version_2:
        for prefix, want in (("has_ans", True), ("no_ans", False)):
            ids = [qid for qid in gold if has_answer[qid] is want]
            result[f"num_{prefix}"] = len(ids)
            if ids:
                result[f"{prefix}_exact_match"] = sum(em_by_id[q] for q in ids) / len(ids)
                result[f"{prefix}_f1"] = sum(f1_by_id[q] for q in ids) / len(ids)
    return result


def bioasq_normalize(text: str) -> str:
    """The form BioASQ's evaluator compares factoid answers in: lower-cased (surrounding whitespace removed)."""
    return text.strip().lower()


def bioasq_factoid_metrics(
    gold: Mapping[str, Sequence[str]], ranked: Mapping[str, Sequence[str]], *, top_k: int = 5
) -> dict[str, float | int]:
    """BioASQ factoid strict accuracy, lenient accuracy and MRR over the top ``top_k`` answers (BioBERT: 5).

    Args:
        gold: question id -> gold answer texts (synonyms of the one answer).
        ranked: question id -> predicted answers, best first (e.g. an n-best list's texts).
        top_k: answers considered (BioASQ allows 5).

    Returns:
        ``{"strict_accuracy", "lenient_accuracy", "mrr", "num_questions", "num_missing"}``; a question
        without a ranked list scores 0 on all three.

    Raises:
        ValueError: predictions for unknown question ids, no question, or ``top_k < 1``.
    """
    if not gold:
        raise ValueError("no gold questions to score")
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    unknown = [qid for qid in ranked if qid not in gold]
    if unknown:
        raise ValueError(f"{len(unknown)} predictions for question ids not in the gold answers, e.g. {unknown[:3]}")
    strict = lenient = reciprocal = 0.0
    missing = 0
    for qid, answers in gold.items():
        gold_norm = {bioasq_normalize(a) for a in answers} - {""}
        if qid not in ranked:
            missing += 1
            continue
        seen: list[str] = []
        for answer in ranked[qid]:
            norm = bioasq_normalize(answer)
            if norm not in seen:
                seen.append(norm)
            if len(seen) == top_k:
                break
        rank = next((i + 1 for i, norm in enumerate(seen) if norm and norm in gold_norm), None)
        if rank is not None:
            strict += float(rank == 1)
            lenient += 1.0
            reciprocal += 1.0 / rank
    n = len(gold)
    return {
        "strict_accuracy": strict / n,
        "lenient_accuracy": lenient / n,
        "mrr": reciprocal / n,
        "num_questions": n,
        "num_missing": missing,
    }
