"""The per-trial reports (classification_report.txt, errors.txt), the histories in trial.json and the run's plots."""

import json
from pathlib import Path

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.classification import re_metrics
from downstream.ner.analysis import (
    error_kinds,
    ner_classification_report,
    ner_errors,
    sentence_errors,
    word_micro_average,
    word_report,
)
from downstream.ner.data import NerSplit, Sentence
from downstream.ner.metrics import ner_metrics
from downstream.relation.analysis import re_classification_report, re_errors
from downstream.relation.data import ReExample, ReSplit
from downstream.trial.analysis import dev_history, epoch_losses, train_loss_history
from downstream.trial.plots import plot_report, plot_run

PNG = b"\x89PNG\r\n\x1a\n"

GOLD = [
    ["B-Disease", "I-Disease", "O", "B-Chemical", "O"],  # D[0:1], C[3]
    ["O", "B-Disease", "I-Disease", "O"],  # D[1:2]
    ["O", "O", "O"],
    ["B-Chemical", "O"],  # C[0]
]
PRED = [
    ["B-Disease", "I-Disease", "O", "O", "B-Disease"],  # D[0:1] correct; C[3] missed; D[4] spurious
    ["O", "B-Disease", "O", "O"],  # D[1] overlaps gold D[1:2]: wrong boundary
    ["O", "O", "O"],
    ["B-Disease", "O"],  # D[0] on gold C[0]: wrong type
]


def _split(gold, path="devel.tsv"):
    """Sentence i has words w<i><j> and starts on file line 10 i + 1."""
    return NerSplit(path=Path(path), sentences=[
        Sentence(tuple(f"w{i}{j}" for j in range(len(tags))), tuple(tags), 10 * i + 1) for i, tags in enumerate(gold)])  # fmt: skip


def test_error_kinds_by_hand():
    assert dict(error_kinds(GOLD, PRED)) == {"missed": 1, "spurious": 1, "wrong boundary": 1, "wrong type": 1}
    assert sum(error_kinds(GOLD, GOLD).values()) == 0
    # a predicted entity spanning two gold ones of its type is one boundary error; neither gold one is "missed"
    assert dict(error_kinds([["B-D", "O", "B-D"]], [["B-D", "I-D", "I-D"]])) == {
        "missed": 0, "spurious": 0, "wrong boundary": 1, "wrong type": 0}  # fmt: skip
    # same span, other type: wrong type, and the gold entity it covers is not also "missed"
    assert [e.kind for e in sentence_errors(["B-C", "I-C"], ["B-D", "I-D"])] == ["wrong type"]
    # overlapping a gold entity of its own type and one of another: wrong boundary (its own type wins)
    errors = sentence_errors(["B-D", "B-C", "O"], ["B-D", "I-D", "O"])
    assert [(e.kind, e.predicted, e.gold) for e in errors] == [("wrong boundary", ("D", 0, 1), (("D", 0, 0), ("C", 1, 1)))]
    # seqeval's default chunking: a stray I- starts an entity (spurious), B- inside a mention splits it
    errors = sentence_errors(["O", "B-D", "I-D", "I-D"], ["I-D", "B-D", "B-D", "I-D"])
    assert [(e.kind, e.predicted) for e in errors] == [("spurious", ("D", 0, 0)), ("wrong boundary", ("D", 1, 1)),
                                                      ("wrong boundary", ("D", 2, 3))]  # fmt: skip
    # a gold entity nothing touches is missed even when a neighbour is predicted wrongly
    assert [e.kind for e in sentence_errors(["B-D", "O", "B-C"], ["O", "O", "O"])] == ["missed", "missed"]


def test_error_kinds_add_up_to_the_entity_metrics():
    """Every wrong predicted entity is exactly one of spurious / wrong boundary / wrong type, so those
    add up to seqeval's false positives; missed gold entities are among its false negatives."""
    gold = [*GOLD, ["B-D", "O", "B-D"], ["B-C", "I-C"], ["O", "B-D", "I-D", "I-D"], ["B-D", "B-C", "O"]]
    pred = [*PRED, ["B-D", "I-D", "I-D"], ["B-D", "I-D"], ["I-D", "B-D", "B-D", "I-D"], ["B-D", "I-D", "O"]]
    counts = error_kinds(gold, pred)
    m = ner_metrics(gold, pred)
    tp = round(m["precision"] * m["num_predicted_entities"])
    assert counts["spurious"] + counts["wrong boundary"] + counts["wrong type"] == m["num_predicted_entities"] - tp
    assert counts["missed"] <= m["num_gold_entities"] - tp


def test_word_report_by_hand():
    report = word_report(GOLD, PRED)
    # B-Disease: gold at (0,0) (1,1); predicted at (0,0) (0,4) (1,1) (3,0): 2 hits
    assert report["B-Disease"] == {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "support": 2}
    # I-Disease: gold (0,1) (1,2); predicted (0,1): 1 hit
    assert report["I-Disease"] == {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3), "support": 2}
    assert report["B-Chemical"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}
    # O: 8 gold words, 9 predicted, 7 of them right
    assert report["O"] == {"precision": pytest.approx(7 / 9), "recall": pytest.approx(7 / 8), "f1": pytest.approx(14 / 17), "support": 8}
    assert list(report) == ["B-Chemical", "B-Disease", "I-Disease", "O"]
    # micro over the entity tags: 3 right of 5 predicted non-O words, of 6 gold non-O words
    assert word_micro_average(GOLD, PRED) == {"precision": 0.6, "recall": 0.5, "f1": pytest.approx(6 / 11), "support": 6}
    with pytest.raises(ValueError):
        word_report([["O", "O"]], [["O"]])


def test_classification_report_by_hand():
    text = ner_classification_report({"dev": (GOLD, PRED), "test": (GOLD, GOLD)}, {"best_epoch": 2.0, "train_loss": 0.25, "dev_loss": 0.5})
    assert text.startswith("best epoch: 2.0    training loss of that epoch: 0.2500    validation loss: 0.5000\n")
    dev, test = text.split("=== test", 1)
    rows = {line.split()[0]: line.split()[1:] for line in dev.splitlines() if line.strip()}
    # entity level, seqeval default mode: 4 gold, 4 predicted, 1 right (Disease w00 w01)
    assert rows["Disease"] == ["0.2500", "0.5000", "0.3333", "2"] and rows["Chemical"] == ["0.0000", "0.0000", "0.0000", "2"]
    assert [line.split()[2:] for line in dev.splitlines() if line.strip().startswith("micro avg")][0] == ["0.2500", "0.2500", "0.2500", "4"]
    assert "macro avg" in dev and "weighted avg" in dev and "seqeval default" in dev
    # word level
    assert rows["B-Disease"] == ["0.5000", "1.0000", "0.6667", "2"] and rows["O"] == ["0.7778", "0.8750", "0.8235", "8"]
    assert [line.split()[-4:] for line in dev.splitlines() if "tags but O" in line] == [["0.6000", "0.5000", "0.5455", "6"]]
    assert [line.split()[2:] for line in test.splitlines() if line.strip().startswith("micro avg")][0] == ["1.0000", "1.0000", "1.0000", "4"]


def test_errors_file_by_hand():
    text = ner_errors({"dev": (_split(GOLD), PRED), "test": (_split(GOLD, "test.tsv"), GOLD)})
    head, *blocks = text.split("\n\n")
    assert head.splitlines()[1:] == [
        "  dev: 3 of 4 sentences with a wrong tag; missed 1, spurious 1, wrong boundary 1, wrong type 1",
        "  test: 0 of 4 sentences with a wrong tag; missed 0, spurious 0, wrong boundary 0, wrong type 0",
    ]
    assert [b.splitlines()[0] for b in blocks] == ["# dev sentence 0 (devel.tsv line 1)", "# dev sentence 1 (devel.tsv line 11)",
                                                   "# dev sentence 3 (devel.tsv line 31)"]  # fmt: skip
    assert blocks[0].splitlines()[1:] == [
        "TOKEN  GOLD        PRED",
        "w00    B-Disease   B-Disease",
        "w01    I-Disease   I-Disease",
        "w02    O           O",
        "w03    B-Chemical  O           <<",
        "w04    O           B-Disease   <<",
        "  spurious: Disease 'w04'",
        "  missed: Chemical 'w03'",
    ]
    assert blocks[1].splitlines()[-2:] == ["w13    O          O", "  wrong boundary: Disease 'w11' (gold Disease 'w11 w12')"]
    assert blocks[2].splitlines()[-2:] == ["w31    O           O", "  wrong type: Disease 'w30' (gold Chemical 'w30')"]
    assert text.endswith("\n") and not text.endswith("\n\n")
    with pytest.raises(ValueError, match="devel.tsv: 4 sentences but 3 predicted"):
        ner_errors({"dev": (_split(GOLD), PRED[:3])})


RE_GOLD = ["CPR:3", "false", "CPR:4", "CPR:3"]
RE_PRED = ["CPR:3", "CPR:3", "false", "CPR:4"]


def test_re_reports_by_hand():
    split = ReSplit(path="test.tsv", examples=[ReExample(f"s{i}", g, f"id{i}", i + 2) for i, g in enumerate(RE_GOLD)])
    text = re_errors({"test": (split, RE_PRED)})
    head, rows = text.split("\n\n")
    assert head.splitlines()[1].startswith("  test: 3 of 4; ")
    assert sorted(head.splitlines()[1].split("; ")[1:]) == ["CPR:3 -> CPR:4: 1", "CPR:4 -> false: 1", "false -> CPR:3: 1"]
    assert rows.splitlines() == ["split\tindex\tline\tgold\tpredicted\tsentence", "test\tid1\t3\tfalse\tCPR:3\ts1",
                                 "test\tid2\t4\tCPR:4\tfalse\ts2", "test\tid3\t5\tCPR:3\tCPR:4\ts3"]  # fmt: skip

    metrics = re_metrics(RE_GOLD, RE_PRED, positive_labels=["CPR:3", "CPR:4"], labels=["false", "CPR:3", "CPR:4"])
    report = re_classification_report({"test": metrics}, {"best_epoch": 1.0, "train_loss": None, "dev_loss": 0.7})
    assert "training loss of that epoch: -" in report
    lines = report.splitlines()
    # micro over CPR:3, CPR:4: 1 right of 3 predicted positive, 3 gold positive
    assert [line.split()[-4:] for line in lines if line.startswith("micro (positive labels)")] == [["0.3333", "0.3333", "0.3333", "3"]]
    assert "(micro over the positive labels CPR:3, CPR:4, the benchmark's score" in report
    # per class: CPR:3 predicted twice, right once, 2 gold
    assert [line.split() for line in lines if line.startswith("CPR:3 ") and "." in line][0] == ["CPR:3", "0.5000", "0.5000", "0.5000", "2"]
    assert [line.split() for line in lines if line.startswith("false ") and "." in line][0] == ["false", "0.0000", "0.0000", "0.0000", "1"]
    matrix = lines[lines.index("confusion matrix (rows gold, columns predicted):") + 1 :][:4]
    assert matrix[0].split()[-3:] == ["false", "CPR:3", "CPR:4"]
    assert [row.split() for row in matrix[1:]] == [["false", "0", "1", "0"], ["CPR:3", "0", "1", "1"], ["CPR:4", "1", "0", "0"]]


LOG = [
    {"loss": 2.0, "epoch": 0.5, "step": 5, "learning_rate": 1e-3},
    {"loss": 1.0, "epoch": 1.0, "step": 10, "learning_rate": 8e-4},
    {"eval_loss": 0.9, "eval_f1": 0.4, "eval_precision": 0.5, "eval_recall": 1 / 3, "eval_accuracy": 0.8, "epoch": 1.0, "step": 10},
    {"loss": 0.5, "epoch": 1.5, "step": 15, "learning_rate": 6e-4},
    {"eval_loss": 0.7, "eval_f1": 0.6, "eval_precision": 0.6, "eval_recall": 0.6, "eval_accuracy": 0.9, "epoch": 2.0, "step": 20},
    {"eval_loss": 0.8, "eval_f1": 0.5, "eval_precision": 0.5, "eval_recall": 0.5, "eval_accuracy": 0.85, "epoch": 2.9994, "step": 29},
    {"train_loss": 1.1, "epoch": 2.9994, "step": 29},
]


def test_epoch_losses_take_the_losses_logged_since_the_previous_evaluation():
    assert epoch_losses(LOG, 1.0) == {"train_loss": 1.5, "dev_loss": 0.9}
    assert epoch_losses(LOG, 2.0) == {"train_loss": 0.5, "dev_loss": 0.7}
    # nothing logged between the 2nd and 3rd evaluation; the run's final train_loss is not an epoch's
    assert epoch_losses(LOG, 3.0) == {"train_loss": None, "dev_loss": 0.8}  # the best epoch is rounded to 2 decimals
    assert epoch_losses(LOG, None) == {"train_loss": None, "dev_loss": None}
    assert epoch_losses(LOG, 4.0) == {"train_loss": None, "dev_loss": None}


def test_histories_for_trial_json():
    dev = dev_history(LOG, "eval_recall")
    assert [(h["epoch"], h["step"], h["f1"], h["loss"]) for h in dev] == [(1.0, 10, 0.4, 0.9), (2.0, 20, 0.6, 0.7), (2.9994, 29, 0.5, 0.8)]
    assert {h["selection_metric"] for h in dev} == {"recall"} and dev[0]["selection_value"] == pytest.approx(1 / 3)
    assert dev_history(LOG, "loss")[1]["selection_value"] == 0.7
    assert [(h["step"], h["loss"]) for h in train_loss_history(LOG)] == [(5, 2.0), (10, 1.0), (15, 0.5)]
    assert dev_history([], "f1") == [] and train_loss_history([]) == []


def _report():
    trials = [{"trial_index": i, "seed": 42 + i, "best_epoch": 2.0, "test": {"f1": f1},
               "dev_history": [{"epoch": 1.0, "f1": 0.2}, {"epoch": 2.0, "f1": 0.3 + i / 10}],
               "train_loss_history": [{"step": 10, "loss": 1.0}, {"step": 20, "loss": 0.5}]}
              for i, f1 in enumerate([0.4, 0.5, 0.45])]  # fmt: skip
    return {"dataset": "ncbi-disease", "checkpoint": "tiny", "f1_name": "entity-level F1", "trials": trials}


def _assert_png(path: Path):
    import matplotlib.image

    assert path.read_bytes().startswith(PNG)
    height, width = matplotlib.image.imread(path).shape[:2]  # decodes: a whole image, not just a header
    assert height > 100 and width > 100


def test_plots_are_png_and_skipped_without_matplotlib(tmp_path, monkeypatch):
    written = plot_report(_report(), tmp_path)
    assert sorted(p.name for p in written) == ["dev_f1.png", "test_f1_spread.png", "train_loss.png"]
    assert all(p.parent == tmp_path / "plots" for p in written)
    for path in written:
        _assert_png(path)
    # trials recorded before the histories existed: only the spread of the test scores can be drawn
    old = {**_report(), "trials": [{k: v for k, v in t.items() if not k.endswith("history")} for t in _report()["trials"]]}
    assert [p.name for p in plot_report(old, tmp_path / "old")] == ["test_f1_spread.png"]
    monkeypatch.setattr("downstream.trial.plots.pyplot", lambda: None)
    assert plot_report(_report(), tmp_path / "none") == [] and not (tmp_path / "none").exists()


def test_plot_run_redraws_from_results_json(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(_report()))
    assert sorted(p.name for p in plot_run(tmp_path)) == ["dev_f1.png", "test_f1_spread.png", "train_loss.png"]
    folds = tmp_path / "cv"
    folds.mkdir()
    (folds / "results.json").write_text(json.dumps({"folds": [1, 3], "fold_reports": [_report(), _report()]}))
    assert sorted(str(p.relative_to(folds)) for p in plot_run(folds) if p.name == "dev_f1.png") == [
        "fold-1/plots/dev_f1.png", "fold-3/plots/dev_f1.png"]  # fmt: skip
    with pytest.raises(FileNotFoundError, match="no results.json"):
        plot_run(tmp_path / "missing")


@pytest.mark.slow
def test_trial_reports_and_histories_end_to_end(tmp_path, tiny_checkpoint, monkeypatch):
    import downstream.trial.runner

    built = downstream.trial.runner.build_trainer

    def log_every_step(*args, **kwargs):  # the tiny run has 2 steps per epoch; the Trainer logs every 50
        trainer, evaluator = built(*args, **kwargs)
        trainer.args.logging_steps = 1
        return trainer, evaluator

    monkeypatch.setattr(downstream.trial.runner, "build_trainer", log_every_step)
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["finetune", "--data-dir", str(FIXTURES / "ner-tiny"), "--ckpt", str(tiny_checkpoint),
                                      "--batch-size", "2", "--max-seq-length", "16", "--entity-type", "Disease", "--epochs", "2",
                                      "--learning-rate", "3e-3", "--trials", "2", "--output-dir", str(run)])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((run / "results.json").read_text())
    for trial in report["trials"]:
        assert [h["epoch"] for h in trial["dev_history"]] == [1.0, 2.0]
        assert all(0.0 <= h["f1"] <= 1.0 and h["loss"] > 0 and h["selection_metric"] == "f1" for h in trial["dev_history"])
        assert [h["step"] for h in trial["train_loss_history"]] == [1, 2, 3, 4]  # 4 training sentences, batch 2
        kept = [h for h in trial["dev_history"] if h["epoch"] == trial["best_epoch"]]
        assert kept and kept[0]["f1"] == pytest.approx(trial["dev"]["f1"])
    trial = json.loads((run / "trial-0" / "trial.json").read_text())
    assert trial["dev_history"] == report["trials"][0]["dev_history"]

    text = (run / "trial-0" / "classification_report.txt").read_text()
    best = trial["best_epoch"]
    losses = [h["loss"] for h in trial["train_loss_history"] if best - 1 < h["epoch"] <= best]
    dev_loss = [h["loss"] for h in trial["dev_history"] if h["epoch"] == best][0]
    assert text.splitlines()[0] == (f"best epoch: {best}    training loss of that epoch: {sum(losses) / len(losses):.4f}    "
                                    f"validation loss: {dev_loss:.4f}")  # fmt: skip
    assert "=== dev (best epoch): entity level" in text and "=== test (the best epoch's model): word level" in text
    assert "Disease" in text and "B-Disease" in text

    errors = (run / "trial-0" / "errors.txt").read_text()
    wrong = {split: sum(list(g) != list(p) for g, p in zip(gold, pred, strict=True))
             for split, gold, pred in [("test", [s.tags for s in _read("test.tsv")], _predicted(run / "trial-0" / "test_predictions.txt"))]}  # fmt: skip
    assert f"  test: {wrong['test']} of {len(_read('test.tsv'))} sentences with a wrong tag" in errors
    assert errors.count("# test sentence") == wrong["test"]
    for name in ("dev_f1.png", "test_f1_spread.png", "train_loss.png"):
        _assert_png(run / "plots" / name)


def _read(name):
    from downstream.ner.data import read_ner_file

    return read_ner_file(FIXTURES / "ner-tiny" / name, entity_type="Disease").sentences


def _predicted(path):
    return [[line.split(" ")[2] for line in block.splitlines()] for block in path.read_text().strip().split("\n\n")]
