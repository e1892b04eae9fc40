"""tools/record_benchmark.py and the BLURB table of the results page (tools/docs_pages.py: render_blurb): a real
(tiny) benchmark run recorded, then shown."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES, REPO_ROOT, load_script
from typer.testing import CliRunner

from bioelectra.cli import app

pages = load_script(REPO_ROOT / "tools" / "docs_pages.py")
record_tool = load_script(REPO_ROOT / "tools" / "record_benchmark.py")
runner = CliRunner()


def run_tiny_blurb(tmp_path, tiny_checkpoint, *extra: str):
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "ner-tiny", root / "ner" / "ncbi-disease")
    out = tmp_path / "bench"
    args = ["benchmark", "--ckpt", str(tiny_checkpoint), "--suite", "ncbi-disease", "--trials", "2", "--data-root", str(root),
            "--epochs", "1", "--max-seq-length", "32", "--batch-size", "8", "--output-dir", str(out), *extra]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return out


@pytest.mark.slow
def test_a_recorded_blurb_run_is_shown_with_its_provenance(tmp_path, tiny_checkpoint, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "empty-cache"))
    out = run_tiny_blurb(tmp_path, tiny_checkpoint)
    record = record_tool.make_record(out, command="bioelectra benchmark --suite ncbi-disease", load="idle", date="2030-01-02")
    report = json.loads((out / "benchmark.json").read_text())
    assert record["rows"][0]["summary"] == report["rows"][0]["summary"] and "output_dir" not in record["rows"][0]
    assert record["versions"]["torch"] and record["device"] and record["load"] == "idle"
    # a benchmark.json without the time (written by a version that did not record it): taken from the trials
    report_without = {**report, "rows": [{k: v for k, v in r.items() if k != "seconds"} for r in report["rows"]]}
    (out / "benchmark.json").write_text(json.dumps(report_without))
    again = record_tool.make_record(out, command="x", load="idle")
    assert again["rows"][0]["seconds"] == report["rows"][0]["seconds"] > 0
    # a record of the suite "blurb" (the run's dataset is a BLURB one): shown beside a second checkpoint's
    records = tmp_path / "results"
    (records / "benchmark").mkdir(parents=True)
    for name in ("bioelectra-small-untrained", "bioelectra-small"):
        (records / "benchmark" / f"{name}.json").write_text(json.dumps({**record, "suite": "blurb", "checkpoint": name}))
    monkeypatch.setattr(pages, "RESULTS", records)
    text = pages.render_blurb()
    row = report["rows"][0]
    test_f1 = row["summary"]["test"]["f1"]
    cell = f"{100 * test_f1['mean']:.2f} ± {100 * test_f1['std']:.2f}"
    line = next(x for x in text.splitlines() if "| ncbi-disease |" in x)
    assert line.count(cell) == 2, line  # both checkpoints, the shipped one first
    assert text.splitlines()[0].startswith("1. `bioelectra benchmark --suite ncbi-disease` (2030-01-02, ")
    minutes = f"{row['seconds'] / 60:.1f}"
    assert line.endswith(f"| {minutes} / {minutes} |")
    # the other BLURB datasets are listed as not run, and the score says over how many datasets it is
    assert "| bc2gm |" in text and "BLURB score over 1 of 13 datasets" in text
    assert "| named entity recognition | " + f"{100 * test_f1['mean']:.2f}" in text
    # the front page's line: each checkpoint's score, over how many datasets, the shipped model first
    summary = pages.render_blurb_summary()
    score = f"**{100 * test_f1['mean']:.2f}** (BLURB score over 1 of 13 datasets, 2030-01-02)"
    assert summary.index(f"bioelectra-small {score}") < summary.index(f"bioelectra-small-untrained {score}")


def test_a_limited_run_is_not_recorded(tmp_path):
    (tmp_path / "benchmark.json").write_text(json.dumps({"limits": {"max_steps": 2}, "rows": []}))
    with pytest.raises(ValueError, match="limited run"):
        record_tool.make_record(tmp_path, command="x", load="idle")
    with pytest.raises(FileNotFoundError):
        record_tool.make_record(tmp_path / "nowhere", command="x", load="idle")


def test_without_a_record_the_table_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(pages, "RESULTS", tmp_path)
    assert pages.render_blurb() == pages.render_blurb_summary() == "No `benchmark --suite blurb` run is recorded yet."
