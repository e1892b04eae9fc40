"""bench/hybrid_search.py on tiny fixtures: a three-name dense linker and the tiny NCBI-disease test file; the
report's keys, and figures that agree with one another."""

from __future__ import annotations

import datetime
import json

import pytest
import test_bench_predict_linking
from conftest import FIXTURES, REPO_ROOT, load_script

linker_dir = test_bench_predict_linking.linker_dir
dense_linker_dir = test_bench_predict_linking.dense_linker_dir


def test_a_dry_run_compares_the_searches(dense_linker_dir, tmp_path):
    bench = load_script(REPO_ROOT / "bench" / "hybrid_search.py")
    out = tmp_path / "report.json"
    report = bench.main(["--linker", str(dense_linker_dir), "--data-dir", str(FIXTURES / "linking-tiny"), "--fractions", "0.02,0.5",
                         "--ranks", "0,2", "--k", "1,2", "--repeats", "1", "--out", str(out)])  # fmt: skip
    assert json.loads(out.read_text(encoding="utf-8")) == report
    assert {"benchmark", "date", "device", "versions", "linker", "mentions", "mean_postings_per_text", "constants",
            "repeats", "cases", "by_postings"} <= set(report)  # fmt: skip
    assert datetime.date.fromisoformat(report["date"]) and report["device"] and report["versions"]["scipy"]
    assert report["linker"]["dataset"] == "ncbi-disease" and report["linker"]["num_names"] == 3
    assert report["mentions"] > 0
    # per k, one full case and one pruned case per fraction and rank (the script stops when their results differ)
    pruned = [(fraction, rank) for fraction in (0.02, 0.5) for rank in (0, 2)]
    assert [(c["search"], c["k"], c.get("common_postings_fraction"), c.get("common_rank")) for c in report["cases"]] == [
        (search, k, *case) for k in (1, 2) for search, case in [("full", (None, None))] + [("pruned", p) for p in pruned]]
    for case in report["cases"]:
        assert case["ms_per_text"] > 0
        if case["search"] == "pruned":  # three names: the default thresholds prune no text
            assert (case["pruned"], case["fell_back"], case["scored_mean"]) == (0, 0, None)
    assert sum(band["texts"] for band in report["by_postings"]) == report["mentions"]
    assert all(band["full_ms_per_text"] > 0 and band["pruned_ms_per_text"] > 0 for band in report["by_postings"])


def test_texts_from_a_file_are_searched_instead_of_the_test_mentions(dense_linker_dir, tmp_path, capsys):
    bench = load_script(REPO_ROOT / "bench" / "hybrid_search.py")
    texts = tmp_path / "searched.json"
    texts.write_text(json.dumps(["breast cancer", "dmd x", "breast cancer"]), encoding="utf-8")
    report = bench.main(["--linker", str(dense_linker_dir), "--texts", str(texts), "--fractions", "0.5", "--ranks", "0",
                         "--k", "1", "--repeats", "1"])  # fmt: skip
    assert report["texts"] == str(texts) and report["mentions"] == 2  # each once
    texts.write_text(json.dumps([]), encoding="utf-8")
    with pytest.raises(SystemExit):
        bench.main(["--linker", str(dense_linker_dir), "--texts", str(texts)])
    assert "expected a non-empty JSON list" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "value"), [("--ranks", "0,-1"), ("--ranks", "x"), ("--fractions", "0.05,2"), ("--k", "0")])
def test_bad_number_lists_are_refused_before_anything_runs(dense_linker_dir, flag, value, capsys):
    bench = load_script(REPO_ROOT / "bench" / "hybrid_search.py")
    with pytest.raises(SystemExit):
        bench.main(["--linker", str(dense_linker_dir), flag, value])
    assert f"{flag} {value}: expected comma-separated" in capsys.readouterr().err


def test_a_sparse_linker_is_refused(linker_dir, tmp_path):
    bench = load_script(REPO_ROOT / "bench" / "hybrid_search.py")
    with pytest.raises(SystemExit):
        bench.main(["--linker", str(linker_dir), "--data-dir", str(FIXTURES / "linking-tiny")])
