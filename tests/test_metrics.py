"""Entity-level NER metrics against hand-computed cases, and the trial summary."""

import math

import pytest

from downstream.ner.metrics import ner_metrics
from downstream.trial.reports import summarize


def test_entity_level_scores_hand_computed():
    gold = [
        ["B-Disease", "I-Disease", "O", "B-Chemical"],  # D[0:1], C[3]
        ["O", "B-Disease", "O"],  # D[1]
        ["B-Chemical", "O"],  # C[0]
    ]
    pred = [
        ["B-Disease", "I-Disease", "O", "O"],  # D[0:1] correct; C missed
        ["B-Disease", "I-Disease", "O"],  # D[0:1] wrong boundaries
        ["I-Chemical", "O"],  # conlleval: an I- without a chunk starts one -> C[0] correct
    ]
    m = ner_metrics(gold, pred)
    # 2 correct of 3 predicted, of 4 gold
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 4)
    assert m["f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert m["accuracy"] == pytest.approx(5 / 9)
    assert (m["num_gold_entities"], m["num_predicted_entities"], m["num_words"]) == (4, 3, 9)
    assert m["per_type"]["Disease"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    assert m["per_type"]["Chemical"]["precision"] == pytest.approx(1.0)
    assert m["per_type"]["Chemical"]["recall"] == pytest.approx(0.5)
    assert m["per_type"]["Chemical"]["f1"] == pytest.approx(2 / 3)


def test_untyped_biobert_tags():
    gold = [["B", "I", "O", "B"]]
    pred = [["B", "I", "O", "O"]]
    m = ner_metrics(gold, pred)
    assert (m["precision"], m["recall"]) == (1.0, 0.5)
    assert m["per_type"]["_"]["support"] == 2


def test_no_predictions_gives_zero_not_nan():
    m = ner_metrics([["B", "O"]], [["O", "O"]])
    assert (m["precision"], m["recall"], m["f1"]) == (0.0, 0.0, 0.0)


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="sentence 0"):
        ner_metrics([["B", "O"]], [["O"]])


def test_summary_mean_sample_std_min_max():
    s = summarize([0.8, 0.9, 1.0])
    assert s["mean"] == pytest.approx(0.9)
    assert s["std"] == pytest.approx(0.1)  # sqrt((0.01 + 0 + 0.01) / (3 - 1))
    assert (s["min"], s["max"], s["n"], s["ddof"]) == (0.8, 1.0, 3, 1)
    population = summarize([0.8, 0.9, 1.0], ddof=0)
    assert population["std"] == pytest.approx(math.sqrt(0.02 / 3))
    assert summarize([0.5])["std"] is None
    assert summarize([])["mean"] is None


# ---- relation extraction: micro scores over the positive labels, checked against hand-computed confusion matrices


CHEMPROT_LABELS = ["false", "CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]
CHEMPROT_POSITIVE = CHEMPROT_LABELS[1:]


def test_chemprot_micro_over_five_cpr_classes_hand_computed():
    from downstream.classification import re_metrics

    gold = ["CPR:3", "CPR:3", "CPR:4", "CPR:4", "CPR:4", "false", "false", "false", "CPR:9", "false"]
    pred = ["CPR:3", "CPR:4", "CPR:4", "CPR:4", "false", "false", "CPR:3", "false", "CPR:9", "CPR:9"]
    m = re_metrics(gold, pred, positive_labels=CHEMPROT_POSITIVE, labels=CHEMPROT_LABELS)
    # confusion (rows gold, columns predicted), false excluded from the micro counts:
    #   tp = CPR:3 1 + CPR:4 2 + CPR:9 1 = 4; predicted positive 7 (a CPR:3 predicted CPR:4 is an FP and an FN);
    #   gold positive 6
    assert (m["true_positives"], m["num_predicted_positive"], m["num_gold_positive"]) == (4, 7, 6)
    assert m["precision"] == pytest.approx(4 / 7)
    assert m["recall"] == pytest.approx(4 / 6)
    assert m["f1"] == pytest.approx(8 / 13)  # 2 * (4/7) * (2/3) / (4/7 + 2/3)
    assert m["accuracy"] == pytest.approx(6 / 10)
    assert m["confusion"]["CPR:3"] == {"false": 0, "CPR:3": 1, "CPR:4": 1, "CPR:5": 0, "CPR:6": 0, "CPR:9": 0}
    assert m["confusion"]["false"] == {"false": 2, "CPR:3": 1, "CPR:4": 0, "CPR:5": 0, "CPR:6": 0, "CPR:9": 1}
    assert m["per_class"]["CPR:4"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3})
    assert m["per_class"]["false"] == pytest.approx({"precision": 2 / 3, "recall": 1 / 2, "f1": 4 / 7, "support": 4})
    assert m["per_class"]["CPR:5"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert list(m["per_class"]) == CHEMPROT_LABELS
    assert "CPR:3, CPR:4, CPR:5, CPR:6, CPR:9" in m["mode"]


def test_ddi_micro_over_four_types_hand_computed():
    from downstream.classification import re_metrics

    gold = ["DDI-effect", "DDI-false", "DDI-advise", "DDI-int", "DDI-false"]
    pred = ["DDI-effect", "DDI-effect", "DDI-false", "DDI-int", "DDI-false"]
    positive = ["DDI-advise", "DDI-effect", "DDI-int", "DDI-mechanism"]
    m = re_metrics(gold, pred, positive_labels=positive)
    # tp 2 (effect, int); predicted positive 3; gold positive 3
    assert (m["precision"], m["recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["accuracy"] == pytest.approx(3 / 5)  # examples 0, 3, 4
    assert m["per_class"]["DDI-advise"]["recall"] == 0.0 and m["per_class"]["DDI-mechanism"]["support"] == 0


def test_gad_binary_f1_of_the_positive_class_hand_computed():
    from downstream.classification import re_metrics

    gold = ["1", "1", "1", "0", "0", "0", "1"]
    pred = ["1", "0", "1", "1", "0", "0", "0"]
    m = re_metrics(gold, pred, positive_labels=["1"], labels=["0", "1"])
    # confusion: gold 1 -> [0: 2, 1: 2]; gold 0 -> [0: 2, 1: 1]
    assert m["confusion"] == {"0": {"0": 2, "1": 1}, "1": {"0": 2, "1": 2}}
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(1 / 2)
    assert m["f1"] == pytest.approx(4 / 7)
    assert m["accuracy"] == pytest.approx(4 / 7)
    assert m["per_class"]["1"]["f1"] == pytest.approx(m["f1"])  # binary F1 == per-class F1 of "1"
    assert m["mode"].startswith("binary")


def test_re_metrics_agree_with_scikit_learn_micro_average():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    import random

    from downstream.classification import re_metrics

    rng = random.Random(3)
    gold = [rng.choice(CHEMPROT_LABELS) for _ in range(300)]
    pred = [g if rng.random() < 0.6 else rng.choice(CHEMPROT_LABELS) for g in gold]
    p, r, f, _ = sklearn_metrics.precision_recall_fscore_support(gold, pred, labels=CHEMPROT_POSITIVE, average="micro")
    m = re_metrics(gold, pred, positive_labels=CHEMPROT_POSITIVE)
    assert (m["precision"], m["recall"], m["f1"]) == (pytest.approx(p), pytest.approx(r), pytest.approx(f))


def test_re_metrics_edge_cases():
    from downstream.classification import re_metrics

    m = re_metrics(["false", "CPR:3"], ["false", "false"], positive_labels=CHEMPROT_POSITIVE)
    assert (m["precision"], m["recall"], m["f1"]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="2 gold labels but 1 predicted"):
        re_metrics(["0", "1"], ["0"], positive_labels=["1"])
    with pytest.raises(ValueError, match="no positive labels"):
        re_metrics(["0"], ["0"], positive_labels=[])
