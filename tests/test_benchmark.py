"""bioelectra benchmark, the literature figures, protocols, the hyper-parameter search and run logs."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES
from pretrain_fixture import TINY_HPARAMS, make_data_dir
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.benchmark import format_minutes, run_seconds, with_current_literature
from downstream.dataset_specs import DATASETS
from downstream.errors import DownstreamError
from downstream.literature import SOURCE_FIELDS, literature_file, load_literature
from downstream.settings import PROTOCOLS, FinetuneSettings, protocol_settings, protocol_values

runner = CliRunner()


# ------------------------------------------------------------------------------------------- protocols


def test_protocols_state_their_values_and_sources():
    assert set(PROTOCOLS) == {"electra", "bio-electra", "default", "blurb"}
    assert all(p["source"] for p in PROTOCOLS.values())
    assert protocol_values("default") == {}
    bio = protocol_values("bio-electra", "ncbi-disease")
    assert (bio["num_train_epochs"], bio["learning_rate"], bio["per_device_train_batch_size"], bio["max_seq_length"]) == (10.0, 3e-4, 32, 128)
    ncbi = protocol_values("blurb", "ncbi-disease")
    assert (ncbi["learning_rate"], ncbi["num_train_epochs"], ncbi["max_seq_length"], ncbi["weight_decay"]) == (5e-5, 20.0, 512, 0.0)
    assert protocol_values("blurb", "chemprot")["max_seq_length"] == 256
    assert protocol_values("blurb", "linnaeus") == PROTOCOLS["blurb"]["settings"]  # not a BLURB set: common only
    for name in PROTOCOLS["blurb"]["per_dataset"]:
        assert name in DATASETS
    # options the user gives win over the protocol, and every value makes valid settings
    chosen = protocol_settings("blurb", {"learning_rate": 1e-3}, "ncbi-disease")
    assert chosen["learning_rate"] == 1e-3 and chosen["protocol"] == "blurb"
    FinetuneSettings(task="ner", checkpoint="x", output_dir="o", **chosen)
    with pytest.raises(ValueError, match="--protocol 'bert'"):
        protocol_values("bert")


# ------------------------------------------------------------------------------------------ literature


def test_literature_file_has_sources_for_every_figure():
    literature = load_literature()
    assert literature.figures and literature.models
    for source in literature.sources.values():
        assert all(source[f].strip() for f in SOURCE_FIELDS)
    for figure in literature.figures:
        assert figure.source in literature.sources and figure.dataset in DATASETS and 0 < figure.value <= 100
    biobert = literature.lookup("ncbi-disease", "f1")["biobert"]
    assert biobert.value == 89.71 and "Table 6" in literature.sources[biobert.source]["where"]
    assert literature.lookup("pubmedqa", "accuracy")["pubmedbert"].value == 55.84


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["results"][0].update(source="nowhere"), "unknown source 'nowhere'"),
        (lambda d: d["results"][0].update(value=189.7), "not a percentage"),
        (lambda d: d["results"][0].update(dataset="mnli"), "dataset 'mnli' is not registered"),
        (lambda d: d["results"].append(dict(d["results"][0])), "a second figure"),
        (lambda d: d["sources"]["biobert-2020"].pop("evidence"), "lacks evidence"),
    ],
)
def test_a_malformed_literature_file_is_refused(tmp_path, change, message):
    data = json.loads(literature_file().read_text())
    change(data)
    path = tmp_path / "literature.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DownstreamError, match=message):
        load_literature(path)


def test_a_recorded_report_takes_the_published_figures_as_the_file_has_them_now(tmp_path):
    # a record made when the file had no figure for HoC: shown with today's figures, the record left as it was
    row = {"dataset": "hoc", "task": "doc-classification", "title": "HoC", "summary": {"test": {"f1": {"mean": 0.8}}},
           "literature": {"f1": {}}}  # fmt: skip
    record = {"rows": [row], "limits": {}, "models": [], "sources": {}, "blurb": {}}
    literature = load_literature()
    now = with_current_literature(record)
    figure = literature.lookup("hoc", "f1")["biolinkbert-base"]
    assert now["rows"][0]["literature"]["f1"]["biolinkbert-base"]["value"] == figure.value
    assert now["blurb"]["ours"]["score"] == pytest.approx(80.0) and now["blurb"]["published"]["biolinkbert-base"]["score"] == figure.value
    assert figure.source in now["sources"] and "biolinkbert-base" in [m["key"] for m in now["models"]]
    assert record["rows"][0]["literature"] == {"f1": {}} and record["blurb"] == {}
    # a corrected figure reaches the page
    data = json.loads(literature_file().read_text())
    next(r for r in data["results"] if (r["model"], r["dataset"]) == ("biolinkbert-base", "hoc"))["value"] = 50.0
    (tmp_path / "l.json").write_text(json.dumps(data))
    again = with_current_literature(record, load_literature(tmp_path / "l.json"))
    assert again["rows"][0]["literature"]["f1"]["biolinkbert-base"]["value"] == 50.0
    # a limited run's record is not set beside published scores
    assert with_current_literature({**record, "limits": {"max_steps": 2}})["blurb"]["published"] == {}


# ------------------------------------------------------------------------------------------- benchmark


def data_root(tmp_path):
    """A --data-root laid out like ../shared/data with two tiny sets."""
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "ner-tiny", root / "ner" / "bc5cdr-chem")
    shutil.copytree(FIXTURES / "re-chemprot", root / "re" / "chemprot")
    return root


@pytest.mark.slow
def test_benchmark_runs_the_present_sets_resumes_and_lists_the_missing(tmp_path, tiny_checkpoint, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "empty-cache"))
    out = tmp_path / "bench"
    args = ["benchmark", "--ckpt", str(tiny_checkpoint), "--suite", "bc5cdr-chem,chemprot,bc2gm", "--trials", "1",
            "--data-root", str(data_root(tmp_path)), "--epochs", "1", "--max-seq-length", "32", "--batch-size", "8",
            "--output-dir", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads((out / "benchmark.json").read_text())
    assert [r["dataset"] for r in report["rows"]] == ["bc5cdr-chem", "chemprot"]
    assert set(report["missing"]) == {"bc2gm"} and "not in" in report["missing"]["bc2gm"]
    chem = report["rows"][0]
    assert chem["literature"]["f1"]["biobert"]["value"] == 93.47 and chem["summary"]["test"]["f1"]["n"] == 1
    markdown = (out / "benchmark.md").read_text()
    assert "| bc5cdr-chem | entity-level F1 |" in markdown and "93.47<sup>" in markdown and "Sources:" in markdown
    assert "## BLURB score over 2 of 13 datasets" in markdown and "Not present, left out: bc2gm" in markdown
    saved = json.loads((out / "bc5cdr-chem" / "results.json").read_text())
    # the time a dataset took: its trial's training and test seconds, in the table in minutes
    trial = saved["trials"][0]
    assert chem["seconds"] == round(trial["train_seconds"] + trial["test_seconds"], 1) > 0
    assert f"| {format_minutes(chem['seconds'])} |" in markdown.split("| bc5cdr-chem |")[1].splitlines()[0]
    # bare tags typed as the registry says, the folder being named like the dataset
    assert saved["labels"] == ["O", "B-Chemical", "I-Chemical"] and saved["entity_type"] == "Chemical"
    # a re-run reuses both; with one dataset's results gone, only that one runs again
    stamp = (out / "chemprot" / "results.json").stat().st_mtime_ns
    (out / "bc5cdr-chem" / "results.json").unlink()
    shutil.rmtree(out / "bc5cdr-chem" / "trial-0")
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert (out / "chemprot" / "results.json").stat().st_mtime_ns == stamp
    assert (out / "bc5cdr-chem" / "results.json").is_file()
    assert json.loads((out / "benchmark.json").read_text())["rows"][0]["summary"] == chem["summary"]  # same seed, same run


def test_benchmark_with_nothing_present_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "empty-cache"))
    result = runner.invoke(app, ["benchmark", "--suite", "bc2gm,chemprot", "--data-root", str(tmp_path), "--output-dir", str(tmp_path / "b")])
    assert result.exit_code == 2 and "none of bc2gm, chemprot is present" in " ".join(result.output.split())
    result = runner.invoke(app, ["benchmark", "--suite", "glue", "--output-dir", str(tmp_path / "b")])
    assert result.exit_code == 2 and "--suite 'glue'" in result.output


# ----------------------------------------------------------------------------------- hyper-parameter search


@pytest.mark.slow
def test_search_never_reads_the_test_split_resumes_and_reports(tmp_path, tiny_checkpoint, monkeypatch):
    from downstream.ner.task import NerTask
    from downstream.tuning import hpsearch

    touched = []
    original_dataset, original_evaluator = NerTask.dataset, NerTask.evaluator

    def guarded_dataset(self, name):
        if name == "test":
            touched.append("dataset")
        return original_dataset(self, name)

    def guarded_evaluator(self, name):
        if name == "test":
            touched.append("evaluator")
        return original_evaluator(self, name)

    monkeypatch.setattr(NerTask, "dataset", guarded_dataset)
    monkeypatch.setattr(NerTask, "evaluator", guarded_evaluator)
    monkeypatch.setitem(hpsearch.SEARCH_SPACE, "num_train_epochs", hpsearch.SearchParam("int", 1, 2, source="test"))
    out = tmp_path / "run"
    settings = FinetuneSettings(task="ner", data_dir=FIXTURES / "ner-tiny", checkpoint=str(tiny_checkpoint), output_dir=out,
                                max_seq_length=32, per_device_train_batch_size=8, learning_rate=1e-3, num_trials=1)  # fmt: skip
    summary = hpsearch.run_hp_search(settings, 3, fixed={"per_device_train_batch_size"})
    assert touched == []  # the search never built a test batch nor scored the test split
    assert summary["budget"]["trials"] == 3 and len(summary["trials"]) == 3
    assert "per_device_train_batch_size" not in summary["space"] and "per_device_train_batch_size" not in summary["best"]["params"]
    for trial in summary["trials"]:
        assert 1e-4 <= trial["params"]["learning_rate"] <= 5e-3 and trial["dev_history"]
    assert (out / "hp_search" / "study.journal").is_file() and (out / "hp_search" / "search.md").is_file()
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    study = optuna.load_study(study_name="hp-search", storage=JournalStorage(JournalFileBackend(str(out / "hp_search" / "study.journal"))))
    for trial in study.trials:  # reported at tenths of each trial's own schedule; a finished one reaches 10
        steps = sorted(trial.intermediate_values)
        assert steps and set(steps) <= set(range(1, 11)) and (trial.state.name != "COMPLETE" or steps[-1] == 10), steps
    # resumed: the same budget runs nothing more; a larger one adds the difference
    assert len(hpsearch.run_hp_search(settings, 3, fixed={"per_device_train_batch_size"})["trials"]) == 3
    assert len(hpsearch.run_hp_search(settings, 4, fixed={"per_device_train_batch_size"})["trials"]) == 4
    other = FinetuneSettings(**{**settings.__dict__, "max_seq_length": 24})
    with pytest.raises(DownstreamError, match="holds a search for other settings"):
        hpsearch.run_hp_search(other, 4, fixed={"per_device_train_batch_size"})
    # then the reported trials, with the best settings and the search in the report
    report = hpsearch.run_search_then_trials(settings, 4, fixed={"per_device_train_batch_size"})
    assert touched  # the reported trials do score the test split
    best = report["hp_search"]["best"]["params"]
    assert report["settings"]["learning_rate"] == pytest.approx(best["learning_rate"])
    assert "## Hyper-parameter search" in (out / "results.md").read_text()


# ------------------------------------------------------------------------------------------- run logs


def scalar_tags(folder) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set()
    for events in folder.rglob("events.out.tfevents.*"):
        accumulator = EventAccumulator(str(events))
        accumulator.Reload()
        tags |= set(accumulator.Tags()["scalars"])
    return tags


@pytest.mark.slow
def test_report_to_tensorboard_writes_event_files(tmp_path, tiny_checkpoint):
    out = tmp_path / "ft"
    result = runner.invoke(app, ["finetune", "--data-dir", str(FIXTURES / "ner-tiny"), "--ckpt", str(tiny_checkpoint),
                                 "--max-seq-length", "32", "--max-steps", "50", "--batch-size", "4", "--output-dir", str(out),
                                 "--report-to", "tensorboard"])  # fmt: skip  (50 steps: the Trainer logs the loss every 50)
    assert result.exit_code == 0, result.output + repr(result.exception)
    tags = scalar_tags(out / "trial-0" / "tensorboard")
    assert {"train/loss", "train/learning_rate", "eval/f1", "eval/loss"} <= tags, tags

    data = make_data_dir(tmp_path / "pt-data")
    hparams = {**TINY_HPARAMS, "eval_steps": 3, "report_to": "tensorboard"}
    result = runner.invoke(app, ["pretrain", "train", "--data-dir", str(data), "--output-dir", str(tmp_path / "pt"),
                                 "--hparams", json.dumps(hparams)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    tags = scalar_tags(tmp_path / "pt" / "tensorboard")
    assert {"train/mlm_loss", "train/disc_loss", "eval/disc_auc", "eval/masked_lm_accuracy"} <= tags, tags


def test_report_to_is_checked_before_any_work(tmp_path):
    result = runner.invoke(app, ["finetune", "--dataset", "ncbi-disease", "--report-to", "nosuchlogger", "--output-dir", str(tmp_path / "x")])
    assert result.exit_code == 2 and "--report-to nosuchlogger: unknown" in result.output
    assert not (tmp_path / "x").exists()


def test_run_seconds_sums_every_trial_of_every_fold():
    trials = [{"train_seconds": 60.0, "test_seconds": 6.5}, {"train_seconds": 30.0, "test_seconds": 3.5}]
    assert run_seconds({"trials": trials}) == 100.0
    # cross-validation: the folds' reports
    assert run_seconds({"fold_reports": [{"trials": trials}, {"trials": trials[:1]}]}) == 166.5
    # a trial with no time recorded (an older file): unknown, never a partial sum
    assert run_seconds({"trials": [*trials, {"seed": 3}]}) is None and run_seconds({"trials": []}) is None
    assert format_minutes(None) == "-" and format_minutes(90) == "1.5"


@pytest.mark.slow
def test_a_stopped_benchmark_reports_every_dataset_finished_before(tmp_path, tiny_checkpoint, monkeypatch):
    """A dataset finished by an earlier command (another --suite) is in the report before anything runs, so a
    benchmark stopped during its first new dataset still has its table."""
    import downstream.benchmark as benchmark

    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "empty-cache"))
    out = tmp_path / "bench"
    common = ["--ckpt", str(tiny_checkpoint), "--trials", "1", "--data-root", str(data_root(tmp_path)), "--epochs", "1",
              "--max-seq-length", "32", "--batch-size", "8", "--output-dir", str(out)]  # fmt: skip
    first = runner.invoke(app, ["benchmark", "--suite", "bc5cdr-chem", *common])
    assert first.exit_code == 0, first.output
    finished = json.loads((out / "benchmark.json").read_text())["rows"][0]

    started = []

    def stopped(name, *args, **kwargs):
        started.append(name)
        raise KeyboardInterrupt  # the user stops the run while chemprot trains (the CLI says "Aborted!")

    monkeypatch.setattr(benchmark, "run_dataset", stopped)
    second = runner.invoke(app, ["benchmark", "--suite", "chemprot,bc5cdr-chem", *common])
    assert second.exit_code != 0 and started == ["chemprot"]
    report = json.loads((out / "benchmark.json").read_text())
    assert report["suite"] == "chemprot,bc5cdr-chem" and [r["dataset"] for r in report["rows"]] == ["bc5cdr-chem"]
    assert report["rows"][0]["summary"] == finished["summary"] and report["rows"][0]["seconds"] == finished["seconds"]
    assert "| bc5cdr-chem |" in (out / "benchmark.md").read_text()
