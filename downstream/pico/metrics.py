"""BLURB's PICO metric: macro-averaged token-level F1 over the PICO elements.

Definition (Gu et al. 2021, "Domain-Specific Language Model Pretraining for Biomedical Natural Language
Processing", Table 2: EBM PICO is scored by "Macro F1 word-level"; the BLURB site's task list, the same):
every token is one decision. For each element ``e`` of PAR, INT, OUT, precision, recall and F1 of the class
``I-e`` over all tokens of the split (a token tagged ``I-e`` by the gold and by the model is a true
positive; ``O`` is never a scored class, but an ``O`` predicted where the gold has ``I-e`` is a false
negative of ``e``); the score is the unweighted mean of the three F1s. This is scikit-learn's
``f1_score(gold, predicted, labels=["I-PAR", "I-INT", "I-OUT"], average="macro")`` over the flattened
tokens, with which ``tests/test_pico.py`` checks it. (LinkBERT's BLURB code, ``src/tokcls/run_ner.py
--return_macro_metrics``, averages seqeval's per-type span F1 instead: a span-level variant, not this one.)

All values are fractions in [0, 1]; an element without gold and predicted tokens has F1 0 (scikit-learn's
``zero_division=0``).
"""

from __future__ import annotations

from collections.abc import Sequence

from downstream.pico.data import PICO_ELEMENTS

#: What the headline metric is, stated in every result.
PICO_METRIC_MODE = "macro token-level F1 over PAR, INT, OUT (BLURB's EBM PICO metric; O is not a scored class)"


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def pico_metrics(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """BLURB's macro token-level F1 and what it is made of.

    Args:
        gold: gold IO tags, one list per sentence.
        predicted: predicted tags, the same shape.

    Returns:
        ``{"f1", "precision", "recall"}`` (macro over the three elements: the means of their F1s, precisions and
        recalls), ``"micro_f1"`` (over the pooled PICO tokens), ``"accuracy"`` (tokens whose tag is right, ``O``
        included), ``"per_type": {element: {"precision", "recall", "f1", "support"}}``, ``"num_words"``,
        ``"num_sentences"``, ``"mode"``.

    Raises:
        ValueError: ``gold`` and ``predicted`` differ in shape (the sentence named).
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    true_positive = dict.fromkeys(PICO_ELEMENTS, 0)
    gold_count = dict.fromkeys(PICO_ELEMENTS, 0)
    predicted_count = dict.fromkeys(PICO_ELEMENTS, 0)
    correct = words = 0
    for index, (g_tags, p_tags) in enumerate(zip(gold, predicted, strict=True)):
        if len(g_tags) != len(p_tags):
            raise ValueError(f"sentence {index}: {len(g_tags)} gold tags but {len(p_tags)} predicted")
        for g, p in zip(g_tags, p_tags, strict=True):
            words += 1
            correct += g == p
            g_element, p_element = g[2:], p[2:]  # "I-PAR" -> "PAR"; "O" -> ""
            if g_element in gold_count:
                gold_count[g_element] += 1
            if p_element in predicted_count:
                predicted_count[p_element] += 1
                true_positive[p_element] += g == p
    per_type = {}
    for element in PICO_ELEMENTS:
        precision = _ratio(true_positive[element], predicted_count[element])
        recall = _ratio(true_positive[element], gold_count[element])
        f1 = _ratio(2 * true_positive[element], predicted_count[element] + gold_count[element])
        per_type[element] = {"precision": precision, "recall": recall, "f1": f1, "support": gold_count[element]}
    pooled_tp, pooled_gold, pooled_pred = (sum(c.values()) for c in (true_positive, gold_count, predicted_count))
    n = len(PICO_ELEMENTS)
    return {
        "f1": sum(v["f1"] for v in per_type.values()) / n,
        "precision": sum(v["precision"] for v in per_type.values()) / n,
        "recall": sum(v["recall"] for v in per_type.values()) / n,
        "micro_f1": _ratio(2 * pooled_tp, pooled_gold + pooled_pred),
        "accuracy": _ratio(correct, words),
        "per_type": per_type,
        "num_words": words,
        "num_sentences": len(gold),
        "mode": PICO_METRIC_MODE,
    }
