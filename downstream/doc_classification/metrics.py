"""Multi-label document classification: BLURB's HoC metric, the decision rule and its threshold.

BLURB's metric (Gu et al. 2021, "Domain-Specific Language Model Pretraining for Biomedical Natural Language
Processing", ACM HEALTH 3(1), Table 2: HoC, document classification, micro F1), computed as BLURB's
evaluation code does (``eval_hoc`` and ``compute_p_r_f`` of michiyasunaga/LinkBERT ``src/seqcls/utils_hoc.py``,
the fine-tuning code of BioLinkBERT's BLURB entries): each sentence's predicted labels are keyed by its
abstract (the PMID before the first ``_`` of its index) and unioned, the gold labels likewise; then over the
matrix of abstracts x labels (``d`` abstracts, ``G_d`` / ``P_d`` its gold / predicted label sets)::

    tp = sum_d |G_d & P_d|      precision = tp / sum_d |P_d|      recall = tp / sum_d |G_d|
    F1 = 2 * precision * recall / (precision + recall)

a micro average over every (abstract, label) decision; zero denominators give 0 (its ``divide``). An abstract
without gold label adds no gold positive; each label it is given is a false positive. This is not BLUE's
``eval_hoc.py`` (Peng et al. 2019), which averages precision and recall per abstract (example-based).

Decision rule: a sentence has a label when its sigmoid probability exceeds the threshold (BLURB's code,
LinkBERT's ``src/seqcls/run_seqcls.py`` ``compute_metrics`` for ``hoc``: logit > 0, i.e. probability > 0.5), so an abstract has a label when the highest probability of its sentences
for it exceeds the threshold. Here the threshold is chosen on the development split (:func:`choose_threshold`)
and the test split is scored with it; ``f1_at_0_5`` gives BLURB's fixed rule beside it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

#: Thresholds tried on the development split: 0.05, 0.10, ..., 0.95.
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))

#: BLURB's fixed decision threshold (logit > 0).
BLURB_THRESHOLD = 0.5

#: How the document-classification scores are computed, stated in every result.
DOC_METRIC_MODE = (
    "BLURB's HoC metric (Gu et al. 2021; LinkBERT's BLURB code utils_hoc.py): micro precision / recall / F1 over "
    "abstracts x labels, an abstract's labels the union of its sentences'; threshold on the sentence probabilities "
    "chosen on dev"
)


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def doc_scores(gold: Sequence[Collection[int]], predicted: Sequence[Collection[int]], labels: Sequence[str]) -> dict[str, Any]:
    """BLURB's micro precision / recall / F1 over abstracts x labels (module docstring), and per label.

    Args:
        gold: each abstract's gold label positions (indices into ``labels``).
        predicted: each abstract's predicted label positions, same order and length.
        labels: the label names.

    Returns:
        ``{"f1", "precision", "recall", "num_documents", "num_gold_positive", "num_predicted_positive",
        "true_positives", "documents_without_label", "per_label": {name: {"precision", "recall", "f1",
        "support"}}, "mode"}``.

    Raises:
        ValueError: different lengths, no abstract, or a label position outside ``labels``.
    """
    if len(gold) != len(predicted) or not gold:
        raise ValueError(f"{len(gold)} gold abstracts and {len(predicted)} predicted: expected the same number, at least one")
    gold_sets, pred_sets = [set(g) for g in gold], [set(p) for p in predicted]
    if any(k < 0 or k >= len(labels) for s in (*gold_sets, *pred_sets) for k in s):
        raise ValueError(f"a label position outside 0..{len(labels) - 1}")
    per_label = {}
    for k, name in enumerate(labels):
        tp = sum(1 for g, p in zip(gold_sets, pred_sets, strict=True) if k in g and k in p)
        support = sum(1 for g in gold_sets if k in g)
        precision, recall = _ratio(tp, sum(1 for p in pred_sets if k in p)), _ratio(tp, support)
        per_label[name] = {"precision": precision, "recall": recall, "f1": _f1(precision, recall), "support": support}
    tp = sum(len(g & p) for g, p in zip(gold_sets, pred_sets, strict=True))
    gold_n, pred_n = sum(len(g) for g in gold_sets), sum(len(p) for p in pred_sets)
    precision, recall = _ratio(tp, pred_n), _ratio(tp, gold_n)
    return {
        "f1": _f1(precision, recall), "precision": precision, "recall": recall, "num_documents": len(gold_sets),
        "num_gold_positive": gold_n, "num_predicted_positive": pred_n, "true_positives": tp,
        "documents_without_label": sum(1 for g in gold_sets if not g), "per_label": per_label, "mode": DOC_METRIC_MODE,
    }  # fmt: skip


def decide(probabilities: Sequence[Sequence[float]], threshold: float) -> list[frozenset[int]]:
    """Each abstract's labels: the positions whose probability (its sentences' highest) exceeds ``threshold``.

    Args:
        probabilities: per abstract, one probability per label.
        threshold: in (0, 1).
    """
    return [frozenset(k for k, p in enumerate(row) if p > threshold) for row in probabilities]


def choose_threshold(gold: Sequence[Collection[int]], probabilities: Sequence[Sequence[float]], labels: Sequence[str]) -> float:
    """The threshold of :data:`THRESHOLDS` with the highest micro-F1 on these abstracts (ties: the one nearest
    :data:`BLURB_THRESHOLD`, then the lower).

    Args:
        gold: each abstract's gold label positions.
        probabilities: per abstract, one probability per label (its sentences' highest).
        labels: the label names.
    """
    f1 = {t: doc_scores(gold, decide(probabilities, t), labels)["f1"] for t in THRESHOLDS}
    return max(THRESHOLDS, key=lambda t: (f1[t], -abs(t - BLURB_THRESHOLD), -t))
