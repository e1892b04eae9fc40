"""Entity-level NER metrics against hand-computed cases, and the trial summary."""

import math

import pytest

from downstream.metrics import ner_metrics, summarize


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
