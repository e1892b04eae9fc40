"""Exact nearest-name search over a score matrix, and accuracy@k on gold mentions as BioSyn scores it
(``dmis-lab/BioSyn`` ``utils.py``: ``check_label``, ``evaluate_topk_acc``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from downstream.linking.preprocess import Query

#: The k of the accuracies reported (BioSyn's README: Acc@1 / Acc@5).
REPORTED_K = (1, 5)


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best columns of each row, best first (BioSyn's ``retrieve_candidate``: argpartition, then a
    sort of the ``k``; for ``k == 1`` the arg-max, one pass without a copy); ties keep the lower column first.

    Args:
        scores: ``(num_queries, num_names)`` scores, higher is better.
        k: how many (at most ``num_names``).

    Returns:
        ``(indices, values)``, both ``(num_queries, k)``.
    """
    k = min(k, scores.shape[1])
    if k == 1:
        indices = scores.argmax(axis=1)[:, None]  # (num_queries, 1): the first of equal maxima
        return indices, np.take_along_axis(scores, indices, axis=1)
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]  # (num_queries, k), unordered
    part_scores = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -part_scores), axis=1)  # by score, then by column
    indices = np.take_along_axis(part, order, axis=1)
    return indices, np.take_along_axis(scores, indices, axis=1)


def is_correct(predicted_ids: Sequence[str], gold_ids: Sequence[str]) -> bool:
    """BioSyn's ``check_label``: a candidate is correct when one of its ids is one of the gold ids (a mention
    with several gold ids, alternatives or a composite's, is right with any of them)."""
    return not set(predicted_ids).isdisjoint(gold_ids)


def accuracy_at_k(
    queries: Sequence[Query], candidates: Sequence[Sequence[Sequence[tuple[str, ...]]]], ks: Sequence[int] = REPORTED_K
) -> dict[str, float]:
    """Accuracy@k on gold mentions, BioSyn's ``evaluate_topk_acc``: a query is right at ``k`` when each of its
    parts (one, or a composite's several) has a correct candidate among its first ``k``.

    Args:
        queries: the gold queries.
        candidates: ``candidates[q][p]``: the ranked candidates' ids (one tuple per candidate name) of part ``p``
            of query ``q``.
        ks: the ``k`` values.

    Returns:
        ``{"accuracy_at_1": ..., "accuracy_at_5": ...}``: fractions in [0, 1] (0 for no queries).
    """
    out = {}
    for k in ks:
        hits = sum(
            all(any(is_correct(c, q.concept_ids) for c in part[:k]) for part in parts)
            for q, parts in zip(queries, candidates, strict=True)
        )
        out[f"accuracy_at_{k}"] = hits / len(queries) if queries else 0.0
    return out
