"""The original ``run_finetuning.py`` task names of chunking and SQuAD / MRQA: which kind reads them, the
original's single-task defaults, its QA keys, its file layout (``finetuning_data/<task>/``), its results file."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import _single, normalize_original_flags
from downstream.original import ORIGINAL_TASK_KINDS, plan_original_runs

runner = CliRunner()


def _data_dir(tmp_path, tiny_checkpoint=None):
    """The original DATA_DIR: finetuning_data/chunk/(train|dev).txt, newsqa/(train|dev).jsonl, squad/(train|dev).json."""
    data = tmp_path / "DATA_DIR"
    chunk = data / "finetuning_data" / "chunk"
    chunk.mkdir(parents=True)
    shutil.copy(FIXTURES / "chunk-tiny" / "train.txt", chunk / "train.txt")
    shutil.copy(FIXTURES / "chunk-tiny" / "test.txt", chunk / "dev.txt")  # the original's README: the test set as dev.txt
    shutil.copytree(FIXTURES / "mrqa-tiny", data / "finetuning_data" / "newsqa")
    squad = data / "finetuning_data" / "squad"
    squad.mkdir()
    article = {"title": "t", "paragraphs": [{"context": "The cat sat on the mat.", "qas": [
        {"id": "a", "question": "Who sat?", "answers": [{"text": "The cat", "answer_start": 0}]}]}]}  # fmt: skip
    for name in ("train.json", "dev.json"):
        (squad / name).write_text(json.dumps({"version": "1.1", "data": [article]}))
    if tiny_checkpoint is not None:
        shutil.copytree(tiny_checkpoint, data / "models" / "electra-small")
    return data


def test_original_task_names_and_their_defaults(tmp_path):
    """``configure_finetuning.py``: "squad" or "qa" in a task's name -> 512 sub-tokens and 2 epochs; chunk -> 256
    sub-tokens (keys given in --hparams win); the QA keys go to the QA tasks and are not reported as ignored."""
    assert {"chunk", "squad", "squadv1", "newsqa", "naturalqs", "triviaqa", "searchqa", "textbookqa"} <= set(ORIGINAL_TASK_KINDS)
    data = _data_dir(tmp_path)
    hparams = {"model_size": "small", "task_names": ["chunk", "squad", "newsqa", "naturalqs"], "doc_stride": 64,
               "n_best_size": 10, "train_batch_size": 16}  # fmt: skip
    (data / "finetuning_data" / "naturalqs").mkdir()
    runs, ignored = plan_original_runs(data, "electra-small", hparams)
    by_task = {run.task: run for run in runs}
    assert [run.kind for run in runs] == ["ner", "qa", "qa", "qa"]
    assert by_task["chunk"].settings["max_seq_length"] == 256 and by_task["chunk"].settings["num_train_epochs"] == 3.0
    assert by_task["squad"].settings["max_seq_length"] == 512 and by_task["squad"].settings["num_train_epochs"] == 2.0
    assert by_task["newsqa"].settings["doc_stride"] == 64 and by_task["newsqa"].settings["n_best_size"] == 10
    assert "doc_stride" not in by_task["chunk"].settings and not ignored
    # "naturalqs" has neither "squad" nor "qa" in its name: the original's rule leaves it 128 sub-tokens, 3 epochs
    assert by_task["naturalqs"].settings["max_seq_length"] == 128 and by_task["naturalqs"].settings["num_train_epochs"] == 3.0
    assert all(run.settings["per_device_train_batch_size"] == 16 for run in runs)
    assert by_task["chunk"].data_dir == data / "finetuning_data" / "chunk" and by_task["chunk"].dataset is None
    runs, _ = plan_original_runs(data, "m", {"task_names": ["chunk"], "max_seq_length": 64})
    assert runs[0].settings["max_seq_length"] == 64


def test_original_qa_task_without_its_folder_says_what_it_reads(tmp_path):
    with pytest.raises(ValueError, match=r"task 'triviaqa': no folder .*triviaqa \(expected train.jsonl and dev.jsonl"):
        plan_original_runs(tmp_path, "m", {"task_names": ["triviaqa"]})
    with pytest.raises(ValueError, match=r"task 'squad': no folder .*squad \(expected train.json and dev.json"):
        plan_original_runs(tmp_path, "m", {"task_names": ["squad"]})
    runs, _ = plan_original_runs(tmp_path, "m", {"task_names": ["chunk"]})  # no folder: the registered dataset
    assert runs[0].dataset == "chunk" and runs[0].data_dir is None


def test_run_finetuning_chunk_and_newsqa_from_the_original_layout(tmp_path, tiny_checkpoint):
    """``run_finetuning.py --data-dir D --model-name electra-small --hparams '{"model_size": "small",
    "task_names": ["chunk", "newsqa"]}'`` (tiny: 1 trial of 1 epoch, 128 sub-tokens for the tiny model)."""
    data = _data_dir(tmp_path, tiny_checkpoint)
    hparams = {"model_size": "small", "task_names": ["chunk", "newsqa"], "num_trials": 1, "num_train_epochs": 1.0,
               "max_seq_length": 128, "max_query_length": 32, "doc_stride": 32, "train_batch_size": 8}  # fmt: skip
    result = runner.invoke(_single("run-finetuning"), normalize_original_flags(
        ["--data-dir", str(data), "--model-name", "electra-small", "--hparams", json.dumps(hparams)]))  # fmt: skip
    assert result.exit_code == 0, result.output[-3000:]
    results = data / "models" / "electra-small" / "results"
    chunk = (results / "chunk_results.txt").read_text().splitlines()
    assert len(chunk) == 1 and chunk[0].startswith("chunk: precision: ") and " - f1: " in chunk[0]
    newsqa = (results / "newsqa_results.txt").read_text().splitlines()
    assert len(newsqa) == 1 and newsqa[0].startswith("newsqa: exact_match: ") and " - f1: " in newsqa[0]
    models = data / "models" / "electra-small" / "finetuning_models"
    report = json.loads((models / "newsqa_model" / "results.json").read_text())
    assert report["task"] == "qa" and report["settings"]["doc_stride"] == 32 and "test is the dev file" in report["split"]["test"]
    report = json.loads((models / "chunk_model" / "results.json").read_text())
    assert report["task"] == "ner" and "the same file, dev.txt" in report["split"]["dev"]
