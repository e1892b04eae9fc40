"""Multi-label document classification (``--loader doc-classification``): the reader on hand-made files in
BLURB's HoC layout (tests/fixtures/doc-classification-tiny) and bad rows, the grouping of sentences into
abstracts, BLURB's micro-F1 against scikit-learn and a hand-computed case, the threshold chosen on dev and
used on test, the single-prediction baselines, the sigmoid head's loss, the prediction files recomputed, the
registry's message for HoC (never downloaded), an end-to-end run on a tiny model, and BLURB's real files
when ../shared/data has them."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import FIXTURES, write_lines
from sklearn.metrics import precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.doc_classification.data import HOC_LABELS, find_doc_files, read_doc_file
from downstream.doc_classification.metrics import THRESHOLDS, choose_threshold, decide, doc_scores
from downstream.doc_classification.task import EVERY_LABEL, DocClassificationTask
from downstream.errors import DataFormatError, DatasetUnavailableError
from downstream.task import EvalResult

HEADER = "labels\tsentence\tindex"
NONE3 = "0_0,1_0,2_0"


def test_sentences_make_abstracts_in_sentence_order_with_the_union_of_their_labels(tmp_path):
    path = write_lines(tmp_path / "x.tsv", [HEADER, "0_1,1_0,2_0\tSecond .\t7_s1", f"{NONE3}\tFirst .\t7_s0",
                                            "0_0,1_0,2_1\tThird .\t7_s2", f"{NONE3}\tAlone .\t9_s0"])  # fmt: skip
    split = read_doc_file(path)
    assert list(split.documents) == ["7", "9"]
    assert [split.sentences[i].text_a for i in split.documents["7"]] == ["First .", "Second .", "Third ."]
    assert split.document_labels() == {"7": frozenset({0, 2}), "9": frozenset()}  # 9: an abstract without label
    split.keep_documents(1)
    assert list(split.documents) == ["7"] and len(split.sentences) == 3


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["labels\ttext\tindex", f"{NONE3}\ta\t1_s0"], r"x\.tsv:1: header"),
        ([HEADER, f"{NONE3}\ta"], r"x\.tsv:2: 2 fields, expected 3"),
        ([HEADER, "0_0,2_0,1_0\ta\t1_s0"], r"x\.tsv:2: label flag '2_0' at position 1, expected 1_0 or 1_1"),
        ([HEADER, "0_0,1_2,2_0\ta\t1_s0"], r"x\.tsv:2: label flag '1_2'"),
        ([HEADER, f"{NONE3}\ta\t1_s0", "0_0,1_0\tb\t1_s1"], r"x\.tsv:3: 2 label flags, expected 3"),
        ([HEADER, f"{NONE3}\ta\t1-s0"], r"x\.tsv:2: index '1-s0', expected <PMID>_s<sentence number>"),
        ([HEADER, f"{NONE3}\ta\t1_s0", f"{NONE3}\tb\t1_s0"], r"x\.tsv:3: index '1_s0' repeated \(first on line 2\)"),
        ([HEADER, f"{NONE3}\t\t1_s0"], r"x\.tsv:2: sentence '1_s0' is empty"),
        ([HEADER], r"x\.tsv: no sentences"),
    ],
)
def test_bad_rows_name_the_file_and_line(tmp_path, lines, message):
    with pytest.raises(DataFormatError, match=message):
        read_doc_file(write_lines(tmp_path / "x.tsv", lines))


def test_splits_must_have_the_training_files_number_of_labels(tmp_path):
    for name, flags in (("train", NONE3), ("dev", "0_0,1_0"), ("test", NONE3)):
        write_lines(tmp_path / f"{name}.tsv", [HEADER, f"{flags}\ta\t1_s0"])
    with pytest.raises(DataFormatError, match=r"dev\.tsv:2: 2 label flags, expected 3 .*training file .* has 3"):
        DocClassificationTask(find_doc_files(tmp_path))


def _sklearn_micro(gold, predicted, n):
    binarizer = MultiLabelBinarizer(classes=list(range(n)))
    g, p = binarizer.fit_transform(gold), binarizer.transform(predicted)
    return precision_recall_fscore_support(g, p, average="micro", zero_division=0), precision_recall_fscore_support(
        g, p, average=None, zero_division=0
    )


def test_blurb_micro_f1_matches_scikit_learn_and_a_hand_computed_case():
    labels = ["a", "b", "c"]
    gold = [{0}, {0, 1}, set(), {2}]
    predicted = [{0}, {1, 2}, {0}, set()]
    # by hand: tp = 1 (doc 0, a) + 1 (doc 1, b) = 2; predicted positives 1 + 2 + 1 = 4; gold positives 1 + 2 + 1 = 4
    scores = doc_scores(gold, predicted, labels)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.5, 0.5, 0.5)
    assert scores["true_positives"] == 2 and scores["documents_without_label"] == 1
    (p, r, f, _), (pl, rl, fl, support) = _sklearn_micro(gold, predicted, 3)
    assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx((p, r, f))
    for k, name in enumerate(labels):
        row = scores["per_label"][name]
        assert (row["precision"], row["recall"], row["f1"], row["support"]) == pytest.approx((pl[k], rl[k], fl[k], support[k]))
    rng = np.random.default_rng(0)
    for _ in range(20):
        gold = [set(np.flatnonzero(rng.random(5) < 0.3)) for _ in range(30)]
        predicted = [set(np.flatnonzero(rng.random(5) < 0.3)) for _ in range(30)]
        (p, r, f, _), _ = _sklearn_micro(gold, predicted, 5)
        scores = doc_scores(gold, predicted, list("abcde"))
        assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx((p, r, f))
    assert doc_scores([set()], [set()], labels)["f1"] == 0.0  # no positive anywhere: 0, not NaN
    with pytest.raises(ValueError, match="same number"):
        doc_scores([{0}], [], labels)


def test_the_threshold_with_the_best_f1_is_chosen_ties_nearest_one_half():
    gold = [{0}, {1}, set()]
    probabilities = [[0.72, 0.10], [0.20, 0.66], [0.35, 0.05]]
    chosen = choose_threshold(gold, probabilities, ["a", "b"])
    assert 0.35 <= chosen < 0.66 and chosen == 0.5  # every threshold in [0.35, 0.66) is perfect: 0.5 kept
    assert decide(probabilities, 0.3) == [frozenset({0}), frozenset({1}), frozenset({0})]
    low = choose_threshold([{0}, {1}], [[0.12, 0.01], [0.02, 0.13]], ["a", "b"])
    assert low == 0.1 and low in THRESHOLDS


def _task(wordpiece_tokenizer, **options) -> DocClassificationTask:
    task = DocClassificationTask(find_doc_files(FIXTURES / "doc-classification-tiny"), **options)
    task.encode(wordpiece_tokenizer, max_seq_length=32)
    return task


def _logits_in_length_order(task, name, per_sentence):
    """Logits ``(sentences, labels)`` the Trainer would give: features in the split's length order."""
    logits = np.log(per_sentence / (1.0 - per_sentence))
    return logits[task.dataset(name).example_index]


def test_dev_chooses_the_threshold_and_test_is_scored_with_it(wordpiece_tokenizer, tmp_path):
    task = _task(wordpiece_tokenizer)
    assert task.labels == list(HOC_LABELS)
    dev = task.splits["dev"]  # abstracts 2001 {5}, 2002 {}, 2003 {1, 2}
    probabilities = np.full((len(dev.sentences), 10), 0.02)
    probabilities[0, 5] = 0.31  # 2001_s0 genomic instability, weak but right
    probabilities[3, 1] = 0.40  # 2003_s0 immune
    probabilities[4, 2] = 0.35  # 2003_s1 energetics
    probabilities[2, 9] = 0.19  # 2002_s0: a false label under the chosen threshold
    evaluator = task.evaluator("dev")
    evaluator(SimpleNamespace(predictions=_logits_in_length_order(task, "dev", probabilities), label_ids=None))
    result = evaluator.last
    assert result.metrics["f1"] == 1.0 and result.metrics["f1_at_0_5"] == 0.0  # BLURB's 0.5 finds nothing here
    assert result.metrics["threshold"] == 0.3  # every threshold in [0.19, 0.31) is perfect: the one nearest 0.5 kept
    assert [(r["doc_id"], r["predicted"]) for r in result.predictions] == [("2001", [5]), ("2002", []), ("2003", [1, 2])]
    task.adopt_dev_result(result)
    test = task.splits["test"]  # 3001 {3}, 3002 {4}, 3003 {}
    probabilities = np.full((len(test.sentences), 10), 0.02)
    probabilities[0, 3] = 0.32  # over 0.3: found
    probabilities[2, 4] = 0.29  # under 0.3: missed
    probabilities[3, 0] = 0.305  # 3003: one wrong label
    evaluator = task.evaluator("test")
    evaluator(SimpleNamespace(predictions=_logits_in_length_order(task, "test", probabilities), label_ids=None))
    metrics = evaluator.last.metrics
    assert metrics["threshold"] == 0.3 and metrics["threshold_source"] == "chosen on the development split"
    assert (metrics["true_positives"], metrics["num_predicted_positive"], metrics["num_gold_positive"]) == (1, 2, 2)
    assert metrics["f1"] == pytest.approx(0.5)
    # the predictions file holds every abstract: BLURB's score recomputed from it with scikit-learn is the same
    task.write_predictions(tmp_path / "test_predictions.tsv", "test", evaluator.last)
    rows = [line.split("\t") for line in (tmp_path / "test_predictions.tsv").read_text().splitlines()]
    assert rows[0][:3] == ["pmid", "gold", "prediction"] and len(rows[0]) == 13 and [r[0] for r in rows[1:]] == ["3001", "3002", "3003"]

    def positions(cell):
        return {int(k) for k in cell.split(",") if k}

    (p, r, f, _), _ = _sklearn_micro([positions(r[1]) for r in rows[1:]], [positions(r[2]) for r in rows[1:]], 10)
    assert f == pytest.approx(metrics["f1"]) and (p, r) == pytest.approx((metrics["precision"], metrics["recall"]))
    report, errors = task.analysis({"dev": result, "test": evaluator.last}, {"best_epoch": 1.0})
    assert "micro avg (BLURB)" in report and "threshold 0.30" in report and "evading growth suppressors" in report
    assert "test: 2 of 3 abstracts with a wrong label set" in errors


def test_the_baselines_are_one_label_or_every_label_for_every_abstract(wordpiece_tokenizer):
    task = _task(wordpiece_tokenizer)
    baseline = task.baseline("dev")  # gold: {5}, {}, {1, 2}: 3 gold positives over 3 abstracts
    # every label: tp 3, predicted 30 -> P 0.1, R 1, F1 2 * 0.1 / 1.1; one label (1): tp 1, predicted 3 -> F1 1/3
    assert baseline["values"]["f1"] == pytest.approx(1 / 3) and baseline["predictions"]["f1"] in task.labels
    assert baseline["values"]["recall"] == 1.0 and baseline["predictions"]["recall"] == EVERY_LABEL
    rows = [{"doc_id": d, "gold": [], "predicted": [2]} for d in ("2001", "2002", "2003")]
    assert set(task.predicted_classes(EvalResult(metrics={}, predictions=rows))) == {"cellular energetics"}


def test_training_sentences_carry_their_own_flags_and_the_head_is_sigmoid(wordpiece_tokenizer, tiny_checkpoint):
    task = _task(wordpiece_tokenizer, max_train_examples=4, max_eval_examples=2)
    assert task.dataset("train").features[2]["labels"] == [1.0] + [0.0] * 5 + [1.0] + [0.0] * 3  # 1001_s2: labels 0 and 6
    counts = task.counts()
    assert (counts["train"]["sentences"], counts["train"]["abstracts"], counts["train"]["abstracts_in_file"]) == (4, 2, 4)
    assert counts["dev"]["abstracts"] == 2 and counts["dev"]["abstracts_without_label"] == 1
    model = task.build_model(str(tiny_checkpoint))
    assert model.config.problem_type == "multi_label_classification" and model.config.num_labels == 10
    batch = task.data_collator(wordpiece_tokenizer)([task.dataset("train")[i] for i in range(4)])
    out = model(**batch)
    assert out.logits.shape == (4, 10) and batch["labels"].dtype == torch.float32
    expected = torch.nn.functional.binary_cross_entropy_with_logits(out.logits, batch["labels"])
    assert out.loss.item() == pytest.approx(expected.item(), rel=1e-5)
    hf = DocClassificationTask(find_doc_files(FIXTURES / "doc-classification-tiny"), re_head="hf").build_model(str(tiny_checkpoint))
    assert hf.config.problem_type == "multi_label_classification" and hf(**batch).loss is not None


def test_hoc_is_registered_and_never_downloaded(tmp_path, monkeypatch):
    from downstream.registry import get_spec
    from downstream.settings import FinetuneSettings

    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    spec = get_spec("hoc", task="doc-classification")
    assert spec.get_from and not spec.files and not spec.archive_url and not spec.shipped
    settings = FinetuneSettings(task="doc-classification", checkpoint="x", output_dir=tmp_path, dataset="hoc")
    with pytest.raises(DatasetUnavailableError) as error:
        DocClassificationTask.locate_files(settings)
    text = str(error.value)
    assert "github.com/sb895/Hallmarks-of-Cancer" in text and "GPL-3.0" in text and "--data-dir" in text and "not downloaded" in text
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_finetune_doc_classification_end_to_end(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["finetune", "--loader", "doc-classification", "--data-dir", str(FIXTURES / "doc-classification-tiny"),
                                      "--ckpt", str(tiny_checkpoint), "--max-seq-length", "32", "--trials", "1", "--epochs", "2",
                                      "--batch-size", "4", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads((out / "results.json").read_text())
    assert report["task"] == "doc-classification" and report["labels"] == list(HOC_LABELS)
    trial = report["trials"][0]
    assert trial["test"]["threshold"] == trial["dev"]["threshold"] and trial["test"]["threshold_source"] == "chosen on the development split"
    assert report["baseline"]["test"]["values"]["f1"] > 0
    for split, ids in (("dev", ["2001", "2002", "2003"]), ("test", ["3001", "3002", "3003"])):
        rows = [line.split("\t") for line in (out / "trial-0" / f"{split}_predictions.tsv").read_text().splitlines()]
        assert [r[0] for r in rows[1:]] == ids
        gold = [{int(k) for k in r[1].split(",") if k} for r in rows[1:]]
        predicted = [{int(k) for k in r[2].split(",") if k} for r in rows[1:]]
        assert doc_scores(gold, predicted, list(HOC_LABELS))["f1"] == pytest.approx(trial[split]["f1"])
    assert "micro avg (BLURB)" in (out / "trial-0" / "classification_report.txt").read_text()
    markdown = (out / "results.md").read_text()
    assert "| tumor promoting inflammation |" in markdown and "Thresholds (per trial)" in markdown
    # the saved model scored again: dev chooses the threshold again, the test set uses it, both files written
    again = tmp_path / "evaluate"
    result = CliRunner().invoke(app, ["evaluate", "--model", str(out / "trial-0" / "model"), "--loader", "doc-classification",
                                      "--data-dir", str(FIXTURES / "doc-classification-tiny"), "--max-seq-length", "32",
                                      "--output-dir", str(again)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    evaluation = json.loads((again / "results.json").read_text())
    assert evaluation["test"]["threshold"] == evaluation["dev"]["threshold"] == trial["dev"]["threshold"]
    assert evaluation["test"]["f1"] == pytest.approx(trial["test"]["f1"])
    assert (again / "dev_predictions.tsv").is_file() and (again / "test_predictions.tsv").is_file()


@pytest.mark.shared_data
def test_blurb_hoc_files(shared_data):
    folder = shared_data / "doc-classification" / "hoc"
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    splits = {name: read_doc_file(path) for name, path in find_doc_files(folder).items()}
    assert {n: (len(s.documents), len(s.sentences)) for n, s in splits.items()} == {
        "train": (1295, 12119), "dev": (186, 1798), "test": (371, 3547)}  # fmt: skip
    without = {n: sum(1 for g in s.document_labels().values() if not g) for n, s in splits.items()}
    assert without == {"train": 197, "dev": 22, "test": 53} and sum(without.values()) == 272
    assert all(len(s.sentences[0].label) == 10 for s in splits.values())
