"""Beside every score its single-class baseline, and degenerate trials flagged (issue #50: GAD's all-positive
F1, PubMedQA's all-"yes" accuracy)."""

import logging

import pytest
from conftest import FIXTURES

from downstream.ner.task import NerTask
from downstream.relation.task import ReTask
from downstream.settings import FinetuneSettings
from downstream.task import EvalResult
from downstream.trial.baselines import split_baselines, trial_warnings, warning_lines
from downstream.trial.reports import format_markdown, format_summary_table


def _gad_task():
    settings = FinetuneSettings(task="re", checkpoint="c", output_dir="o", data_dir=FIXTURES / "re-gad", fold=1)
    return ReTask(ReTask.locate_files(settings), **ReTask.options(settings))


def _result(task, name, predicted):
    from downstream.classification import re_metrics

    gold = [e.label for e in task.splits[name].examples]
    return EvalResult(metrics=re_metrics(gold, predicted, positive_labels=task.positive_labels, labels=task.labels),
                      predictions=predicted)  # fmt: skip


def test_the_re_baseline_is_all_positive_for_f1_and_the_majority_for_accuracy():
    task = _gad_task()
    gold = [e.label for e in task.splits["test"].examples]
    positive = gold.count("1") / len(gold)
    baseline = split_baselines(task)["test"]
    assert baseline["predictions"]["f1"] == "1"
    assert baseline["values"]["f1"] == pytest.approx(2 * positive / (1 + positive))
    assert baseline["values"]["accuracy"] == pytest.approx(max(positive, 1 - positive))


def test_a_collapsed_trial_is_flagged_on_the_console_and_in_results_md(caplog):
    task = _gad_task()
    results = {name: _result(task, name, ["1"] * len(task.splits[name].examples)) for name in ("dev", "test")}
    with caplog.at_level(logging.WARNING):
        warnings = trial_warnings(task, results, split_baselines(task))
    assert any("every prediction is '1'" in w for w in warnings)
    assert any("within a point of the baseline" in w for w in warnings)
    assert any("degenerate model?" in r.getMessage() for r in caplog.records)

    record = {"trial_index": 0, "seed": 42, "best_epoch": 1.0, "train_seconds": 1.0, "warnings": warnings,
              "dev": results["dev"].metrics, "test": results["test"].metrics}  # fmt: skip
    stats = {"mean": 0.5, "std": None, "min": 0.5, "max": 0.5, "n": 1}
    report = {
        "dataset": "gad", "task": "re", "checkpoint": "c", "std_ddof": 1, "num_trials": 1, "trials": [record],
        "summary": {s: {m: stats for m in ("f1", "precision", "recall")} for s in ("dev", "test")},
        "counts": {s: {"file": "f"} for s in ("train", "dev", "test")}, "baseline": split_baselines(task),
    }  # fmt: skip
    markdown = format_markdown(report)
    assert "| split | metric | mean | std | min | max | baseline |" in markdown
    assert "**Warning: degenerate predictions.**" in markdown and "trial 0 (seed 42): test: every prediction is '1'" in markdown
    table = format_summary_table(report)
    assert " base " in table and "(one class for all: 1)" in table and "degenerate" in table  # GAD: all-positive


def test_a_trial_above_the_baseline_is_not_flagged():
    task = _gad_task()
    results = {name: _result(task, name, [e.label for e in task.splits[name].examples]) for name in ("dev", "test")}
    assert trial_warnings(task, results, split_baselines(task)) == []
    assert warning_lines([{"trial_index": 0, "seed": 1, "warnings": []}]) == []


def test_the_ner_baseline_finds_no_entity():
    settings = FinetuneSettings(task="ner", checkpoint="c", output_dir="o", data_dir=FIXTURES / "ner-tiny", entity_type="Disease")
    task = NerTask(NerTask.locate_files(settings), **NerTask.options(settings))
    baseline = split_baselines(task)["test"]
    assert baseline["values"]["f1"] == 0.0 and 0.0 < baseline["values"]["accuracy"] < 1.0
    nothing = EvalResult(metrics={"f1": 0.0}, predictions=[["O"] * len(s.words) for s in task.splits["test"].sentences])
    warnings = trial_warnings(task, {"dev": nothing, "test": nothing}, split_baselines(task))
    assert any("every prediction is 'O'" in w for w in warnings)


def test_the_yesno_baseline_is_the_majority_answer(tmp_path):
    from test_yesno import pubmedqa_records, write

    from downstream.yesno.task import YesNoTask

    write(tmp_path / "ori_pqal.json", pubmedqa_records(200))
    settings = FinetuneSettings(task="yesno", checkpoint="c", output_dir="o", data_dir=tmp_path)
    task = YesNoTask(YesNoTask.locate_files(settings), **YesNoTask.options(settings))
    gold = list(task.splits["test"].question_labels().values())
    baseline = split_baselines(task)["test"]
    majority = max(set(gold), key=gold.count)
    assert baseline["predictions"]["accuracy"] == majority
    assert baseline["values"]["accuracy"] == pytest.approx(gold.count(majority) / len(gold))


def test_cross_validation_reports_show_the_mean_baseline_and_each_folds_flagged_trials():
    from downstream.trial.baselines import fold_baselines
    from downstream.trial.reports import format_folds_markdown, format_folds_table

    stats = {"mean": 0.69, "std": 0.01, "min": 0.68, "max": 0.7, "n": 1}
    summary = {s: {m: stats for m in ("f1", "precision", "recall")} for s in ("dev", "test")}
    folds = [
        {"counts": {s: {"examples": 10} for s in ("train", "dev", "test")}, "summary": summary,
         "baseline": {s: {"values": {"f1": f1}} for s in ("dev", "test")},
         "trials": [{"trial_index": 0, "seed": 42, "warnings": ["test: every prediction is '1', one class"] if f1 > 0.6 else []}]}
        for f1 in (0.6, 0.7)
    ]  # fmt: skip
    report = {"dataset": "gad", "task": "re", "checkpoint": "c", "std_ddof": 1, "folds": [1, 2], "fold_reports": folds,
              "num_trials_per_fold": 1, "protocol": "2-fold", "summary_over_folds": summary,
              "baseline": fold_baselines(folds)}  # fmt: skip
    assert report["baseline"]["test"]["values"]["f1"] == pytest.approx(0.65)
    markdown = format_folds_markdown(report)
    assert "| test | f1 | 69.00 | 1.00 | 68.00 | 70.00 | 65.00 |" in markdown
    assert "- fold 2, trial 0 (seed 42): test: every prediction is '1'" in markdown
    table = format_folds_table(report)
    assert "65.00" in table and "1 of 2 trial(s) degenerate" in table
