"""NER metrics, as the benchmarks define them. All values are fractions in [0, 1].

NER: entity-level micro precision / recall / F1 from ``seqeval`` in its default mode, which reproduces
the CoNLL-2000 ``conlleval`` script (Sang & Buchholz, 2000) that BioBERT's NER evaluation reports: an
entity is a maximal chunk ``B-x I-x ...``; an ``I-x`` that does not continue a chunk of type ``x`` starts a
new one (so predictions need not be valid IOB2); a predicted entity counts only if its type, start and
end all match a gold entity. Token accuracy is the fraction of words whose tag is right.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The seqeval mode used, stated in every NER result.
NER_METRIC_MODE = "seqeval default (conlleval-compatible), micro-averaged over entity types"


def ner_metrics(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """Entity-level precision, recall and F1, token accuracy and a per-type report.

    Args:
        gold: gold IOB2 tags, one list per sentence.
        predicted: predicted tags, same shape as ``gold``.

    Returns:
        ``{"precision", "recall", "f1", "accuracy", "num_sentences", "num_words", "num_gold_entities",
        "num_predicted_entities", "per_type": {type: {"precision", "recall", "f1", "support"}}, "mode"}``.
        Untyped BioBERT tags (``B`` / ``I``) appear as type ``"_"`` (seqeval's name for them).

    Raises:
        ValueError: ``gold`` and ``predicted`` differ in shape.
    """
    from seqeval.metrics import accuracy_score, classification_report, f1_score, precision_score, recall_score
    from seqeval.metrics.sequence_labeling import get_entities

    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    for index, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"sentence {index}: {len(g)} gold tags but {len(p)} predicted")
    gold_lists = [list(s) for s in gold]
    pred_lists = [list(s) for s in predicted]
    report = classification_report(gold_lists, pred_lists, output_dict=True, zero_division=0)
    per_type = {
        name: {
            "precision": float(values["precision"]),
            "recall": float(values["recall"]),
            "f1": float(values["f1-score"]),
            "support": int(values["support"]),
        }
        for name, values in report.items()
        if not name.endswith(" avg")
    }
    return {
        "precision": float(precision_score(gold_lists, pred_lists, zero_division=0)),
        "recall": float(recall_score(gold_lists, pred_lists, zero_division=0)),
        "f1": float(f1_score(gold_lists, pred_lists, zero_division=0)),
        "accuracy": float(accuracy_score(gold_lists, pred_lists)),
        "num_sentences": len(gold_lists),
        "num_words": sum(len(s) for s in gold_lists),
        "num_gold_entities": len(get_entities(gold_lists)),
        "num_predicted_entities": len(get_entities(pred_lists)),
        "per_type": per_type,
        "mode": NER_METRIC_MODE,
    }
