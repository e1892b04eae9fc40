"""GLUE from the command lines: ``finetune --loader glue`` on a tiny model and the hand-made RTE files, the
original ``run_finetuning.py`` with GLUE task names in the original layout (train.tsv / dev.tsv), the
per-task selection metric, double_unordered's option, and the message when GLUE is not there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DownstreamError
from downstream.options import settings_from_options

runner = CliRunner()


def _settings(task: str, dataset: str | None, data_dir: Path | None = None, **given):
    return settings_from_options(task, given={"metric": None, **given}, fixed={"dataset": dataset, "data_dir": data_dir, "output_dir": Path("x")},
                                 checkpoint=lambda: "ckpt")  # fmt: skip


def test_each_glue_task_selects_on_the_original_metric():
    assert _settings("glue", "cola").metric == "mcc" and _settings("glue", "sts").metric == "spearman"
    assert _settings("glue", "mrpc").metric == "accuracy" and _settings("glue", None, Path("glue/STS-B")).metric == "spearman"
    assert _settings("glue", "cola", metric="loss").metric == "loss"  # an option given wins
    assert _settings("ner", "ncbi-disease").metric == "f1"  # other kinds unchanged
    assert _settings("glue", "rte").double_unordered is True
    with pytest.raises(DownstreamError, match="--double-unordered / --no-double-unordered are for GLUE"):
        settings_from_options("ner", given={}, fixed={"dataset": "x", "output_dir": Path("x"), "double_unordered": False}, checkpoint=lambda: "c")


def test_the_task_comes_from_the_dataset_or_the_folder_name():
    from downstream.glue.task import GlueTask

    assert GlueTask.spec_of(_settings("glue", None, Path("data/glue/RTE"))).name == "rte"
    assert GlueTask.spec_of(_settings("glue", "sst", Path("data/anything"))).name == "sst-2"
    with pytest.raises(DownstreamError, match="give --dataset to say which GLUE task"):
        GlueTask.spec_of(_settings("glue", None, Path("data/mine")))
    with pytest.raises(DownstreamError, match="unknown GLUE task 'rtee'"):
        GlueTask.spec_of(_settings("glue", "rtee", Path("data/glue/RTE")))  # a wrong name is not overridden by the folder


def test_a_named_task_without_data_says_where_glue_is(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    result = runner.invoke(app, ["finetune", "--loader", "glue", "--dataset", "rte", "--ckpt", "electra-small",
                                 "--output-dir", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert "nyu-mll/glue" in text and "gluebenchmark.com/tasks" in text and "--data-dir" in text


@pytest.mark.slow
def test_finetune_glue_rte_end_to_end(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    result = runner.invoke(app, ["finetune", "--loader", "glue", "--dataset", "rte", "--data-dir", str(FIXTURES / "glue-rte"),
                                 "--ckpt", str(tiny_checkpoint), "--max-seq-length", "32", "--trials", "1", "--epochs", "1",
                                 "--batch-size", "4", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "dev acc" in result.output
    report = json.loads((out / "results.json").read_text())
    assert report["task"] == "glue" and report["glue_task"] == "rte" and report["settings"]["metric"] == "accuracy"
    assert report["labels"] == ["entailment", "not_entailment"] and report["summary"]["test"]["accuracy"]["n"] == 0
    assert 0.0 <= report["trials"][0]["dev"]["accuracy"] <= 1.0 and report["trials"][0]["test"]["scored"] is False
    rows = (out / "trial-0" / "RTE.tsv").read_text().splitlines()
    assert rows[0] == "index\tprediction" and [r.split("\t")[0] for r in rows[1:]] == ["0", "1", "2"]
    assert "GLUE's test labels are hidden" in (out / "results.md").read_text()
    assert "confusion matrix" in (out / "trial-0" / "classification_report.txt").read_text()
    card = (out / "trial-0" / "model" / "README.md").read_text()
    assert "GLUE sentence (pair) classification" in card and "--loader glue" in card


@pytest.mark.slow
def test_run_finetuning_glue_tasks_in_the_original_layout(tmp_path, tiny_checkpoint):
    data_dir = tmp_path / "DATA_DIR"
    shutil.copytree(tiny_checkpoint, data_dir / "models" / "electra-small")
    for task, fixture in (("rte", "glue-rte"), ("sts", "glue-stsb")):
        for name in ("train.tsv", "dev.tsv"):  # the original's layout: no test file
            (data_dir / "finetuning_data" / task).mkdir(parents=True, exist_ok=True)
            shutil.copy(FIXTURES / fixture / name, data_dir / "finetuning_data" / task / name)
    hparams = {"model_size": "small", "task_names": ["rte", "sts"], "num_train_epochs": 1.0, "max_seq_length": 32}
    result = runner.invoke(app, ["run-finetuning", "--data-dir", str(data_dir), "--model-name", "electra-small",
                                 "--hparams", json.dumps(hparams)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    model = data_dir / "models" / "electra-small"
    rte = (model / "results" / "rte_results.txt").read_text().splitlines()
    sts = (model / "results" / "sts_results.txt").read_text().splitlines()
    assert len(rte) == 1 and rte[0].startswith("rte: accuracy: ") and rte[0].split(" - ")[-1].startswith("loss: ")
    assert sts[0].startswith("sts: pearson: ") and " - spearman: " in sts[0] and " - mse: " in sts[0]
    report = json.loads((model / "finetuning_models" / "sts_model" / "results.json").read_text())
    assert report["settings"]["metric"] == "spearman" and report["double_unordered"] is True
    assert report["counts"]["train"]["examples"] == 8 and report["counts"]["test"]["examples"] == 0
    assert report["settings"]["optimizer"] == "electra" and not list((model / "finetuning_models" / "sts_model" / "trial-0").glob("*.tsv"))
