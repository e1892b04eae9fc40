"""Sentence similarity (``--loader similarity``): the reader on hand-made files in BLURB's BIOSSES layout
(tests/fixtures/similarity-tiny) and bad rows, the evaluator's correlations against scipy on hand-made
predictions, the prediction files recomputed, the regression head's loss, the registry's message for BIOSSES
(never downloaded), an end-to-end run on a tiny model, and BLURB's real files when ../shared/data has them."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import FIXTURES, write_lines
from scipy.stats import pearsonr, spearmanr
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DataFormatError, DatasetUnavailableError
from downstream.similarity.data import find_similarity_files, read_similarity_file
from downstream.similarity.task import SimilarityTask

HEADER = "pair_id\tsent1\tsent2\tscore"


def test_the_reader_keeps_ids_quotes_and_scores():
    split = read_similarity_file(FIXTURES / "similarity-tiny" / "train.tsv")
    assert [e.index for e in split.examples] == ["1", "2", "3", "4", "5", "6"]
    assert split.examples[4].text_a == 'The protein binds "tightly" to DNA .'  # a raw quote is text, not quoting
    assert split.examples[0].label == 3.8 and split.examples[1].line == 3 and split.score_range() == (0.0, 3.8)
    assert set(find_similarity_files(FIXTURES / "similarity-tiny")) == {"train", "dev", "test"}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["id\ta\tb\tscore", "1\tx\ty\t1"], r"x\.tsv:1: header"),
        ([HEADER, "1\tx\ty"], r"x\.tsv:2: 3 fields, expected 4"),
        ([HEADER, "1\tx\ty\thigh"], r"x\.tsv:2: score 'high' is not a finite number"),
        ([HEADER, "1\tx\ty\tnan"], r"x\.tsv:2: score 'nan' is not a finite number"),
        ([HEADER, "1\tx\ty\t1", "1\tu\tv\t2"], r"x\.tsv:3: pair_id '1' repeated \(first on line 2\)"),
        ([HEADER, "1\t\ty\t1"], r"x\.tsv:2: pair '1' has an empty sentence"),
        ([HEADER], r"x\.tsv: no pairs"),
        ([], r"x\.tsv: empty file \(expected a header pair_id"),
    ],
)
def test_bad_rows_name_the_file_and_line(tmp_path, lines, message):
    with pytest.raises(DataFormatError, match=message):
        read_similarity_file(write_lines(tmp_path / "x.tsv", lines))


def test_a_missing_file_or_split_is_said(tmp_path):
    with pytest.raises(DatasetUnavailableError, match="no such file"):
        read_similarity_file(tmp_path / "none.tsv")
    (tmp_path / "train.tsv").write_text(HEADER + "\n1\ta\tb\t1\n")
    with pytest.raises(DatasetUnavailableError, match="missing devel.tsv or dev.tsv, test.tsv"):
        find_similarity_files(tmp_path)


def _task(wordpiece_tokenizer, **options) -> SimilarityTask:
    task = SimilarityTask(find_similarity_files(FIXTURES / "similarity-tiny"), **options)
    task.encode(wordpiece_tokenizer, max_seq_length=32)
    return task


def test_the_evaluator_scores_in_file_order_against_scipy(wordpiece_tokenizer, tmp_path):
    task = _task(wordpiece_tokenizer)
    gold = [e.label for e in task.splits["dev"].examples]
    wanted = [3.5, 1.0, 2.5, 2.6]  # per pair, in file order
    encoded = task.dataset("dev")
    assert sorted(encoded.example_index) == [0, 1, 2, 3] and len(encoded.features) == 4
    in_length_order = np.array([wanted[i] for i in encoded.example_index])
    evaluator = task.evaluator("dev")
    returned = evaluator(SimpleNamespace(predictions=in_length_order, label_ids=None))
    assert evaluator.last.predictions == wanted
    assert returned["pearson"] == pytest.approx(pearsonr(gold, wanted)[0])
    assert returned["spearman"] == pytest.approx(spearmanr(gold, wanted)[0])
    assert returned["mse"] == pytest.approx(np.mean((np.array(gold) - np.array(wanted)) ** 2))
    # the predictions file holds every pair: the score recomputed from it is the same
    task.write_predictions(tmp_path / "dev_predictions.tsv", "dev", evaluator.last)
    rows = [line.split("\t") for line in (tmp_path / "dev_predictions.tsv").read_text().splitlines()]
    assert rows[0] == ["pair_id", "gold", "prediction"] and [r[0] for r in rows[1:]] == ["7", "8", "9", "10"]
    assert pearsonr([float(r[1]) for r in rows[1:]], [float(r[2]) for r in rows[1:]])[0] == pytest.approx(returned["pearson"], abs=1e-4)


def test_constant_predictions_have_no_correlation_and_no_baseline(wordpiece_tokenizer):
    task = _task(wordpiece_tokenizer)
    evaluator = task.evaluator("test")
    evaluator(SimpleNamespace(predictions=np.full(4, 2.0), label_ids=None))
    assert evaluator.last.metrics["constant_predictions"] is True and evaluator.last.metrics["pearson"] == 0.0
    assert task.baseline("test") is None and task.predicted_classes(evaluator.last) is None


def test_the_target_is_the_gold_score_and_the_head_a_regression(wordpiece_tokenizer, tiny_checkpoint):
    task = _task(wordpiece_tokenizer, max_train_examples=3)
    assert [f["labels"] for f in task.dataset("train").features] == [3.8, 0.0, 3.6]
    assert task.counts()["train"]["examples_in_file"] == 6 and task.counts()["train"]["examples"] == 3
    model = task.build_model(str(tiny_checkpoint))
    assert model.config.problem_type == "regression" and model.config.num_labels == 1
    batch = task.data_collator(wordpiece_tokenizer)([task.dataset("train")[i] for i in range(3)])
    out = model(**batch)
    assert out.logits.shape == (3, 1)
    assert out.loss.item() == pytest.approx(torch.nn.functional.mse_loss(out.logits[:, 0], batch["labels"]).item(), rel=1e-5)
    assert torch.equal(task.reduce_logits(out.logits, None), out.logits[:, 0])


def test_biosses_is_registered_and_never_downloaded(tmp_path, monkeypatch):
    from downstream.registry import get_spec
    from downstream.settings import FinetuneSettings

    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    spec = get_spec("biosses", task="similarity")
    assert spec.get_from and not spec.files and not spec.archive_url and not spec.shipped
    settings = FinetuneSettings(task="similarity", checkpoint="x", output_dir=tmp_path, dataset="biosses", metric="pearson")
    with pytest.raises(DatasetUnavailableError) as error:
        SimilarityTask.locate_files(settings)
    text = str(error.value)
    assert "github.com/gizemsogancioglu/biosses" in text and "GPL-3.0" in text and "--data-dir" in text and "not downloaded" in text
    assert not (tmp_path / "cache").exists()  # nothing fetched, nothing half-written


def test_a_cached_copy_is_found(tmp_path, monkeypatch):
    import shutil

    from downstream.settings import FinetuneSettings

    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    shutil.copytree(FIXTURES / "similarity-tiny", tmp_path / "cache" / "datasets" / "biosses")
    settings = FinetuneSettings(task="similarity", checkpoint="x", output_dir=tmp_path, dataset="biosses", metric="pearson")
    assert SimilarityTask.locate_files(settings)["dev"].name == "dev.tsv"


@pytest.mark.slow
def test_finetune_similarity_end_to_end(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["finetune", "--loader", "similarity", "--data-dir", str(FIXTURES / "similarity-tiny"),
                                      "--ckpt", str(tiny_checkpoint), "--max-seq-length", "32", "--trials", "1", "--epochs", "2",
                                      "--batch-size", "4", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads((out / "results.json").read_text())
    assert report["task"] == "similarity" and report["settings"]["metric"] == "pearson" and report["labels"] == ["score"]
    assert set(report["summary"]["test"]) >= {"pearson", "spearman"}
    for split, ids in (("dev", ["7", "8", "9", "10"]), ("test", ["11", "12", "13", "14"])):
        rows = [line.split("\t") for line in (out / "trial-0" / f"{split}_predictions.tsv").read_text().splitlines()]
        assert [r[0] for r in rows[1:]] == ids
        gold, predicted = [float(r[1]) for r in rows[1:]], [float(r[2]) for r in rows[1:]]
        trial = report["trials"][0][split]
        if not trial.get("constant_predictions"):
            assert pearsonr(gold, predicted)[0] == pytest.approx(trial["pearson"], abs=1e-3)
    assert "pearson" in (out / "trial-0" / "classification_report.txt").read_text()
    assert "Sentence similarity" in (out / "trial-0" / "model" / "README.md").read_text()


@pytest.mark.shared_data
def test_blurb_biosses_files(shared_data):
    folder = shared_data / "sts" / "biosses"
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    task = SimilarityTask(find_similarity_files(folder))
    assert {name: len(s.examples) for name, s in task.splits.items()} == {"train": 64, "dev": 16, "test": 20}
    assert all(0.0 <= low <= high <= 4.0 for low, high in (s.score_range() for s in task.splits.values()))
    ids = [e.index for s in task.splits.values() for e in s.examples]
    assert sorted(map(int, ids)) == list(range(1, 101))


@pytest.mark.slow
def test_benchmark_runs_biosses_and_hoc_from_a_data_root(tmp_path, tiny_checkpoint, monkeypatch):
    import shutil

    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "empty-cache"))
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "similarity-tiny", root / "sts" / "biosses")
    shutil.copytree(FIXTURES / "doc-classification-tiny", root / "doc-classification" / "hoc")
    out = tmp_path / "bench"
    result = CliRunner().invoke(app, ["benchmark", "--ckpt", str(tiny_checkpoint), "--suite", "biosses,hoc", "--trials", "1",
                                      "--data-root", str(root), "--epochs", "1", "--max-seq-length", "32", "--batch-size", "8",
                                      "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads((out / "benchmark.json").read_text())
    assert [(r["dataset"], r["task"]) for r in report["rows"]] == [("biosses", "similarity"), ("hoc", "doc-classification")]
    assert report["rows"][0]["summary"]["test"]["pearson"]["n"] == 1 and report["rows"][1]["summary"]["test"]["f1"]["n"] == 1
    markdown = (out / "benchmark.md").read_text()
    assert "| biosses | Pearson |" in markdown and "| hoc | micro-F1 |" in markdown
    assert (out / "hoc" / "trial-0" / "dev_predictions.tsv").is_file()
