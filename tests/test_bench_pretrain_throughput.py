"""bench/pretrain_throughput.py on the CPU with a tiny model: a case or a diagnostic that fails is recorded
and the rest still reports; the report is on disk after every case; the exit status tells a failure from
running out of memory. The GPU session reads this report (issue 14), so losing it costs device minutes."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch
from conftest import REPO_ROOT
from pretrain_fixture import TINY_HPARAMS

BENCH = REPO_ROOT / "bench" / "pretrain_throughput.py"


@pytest.fixture()
def bench():
    spec = importlib.util.spec_from_file_location("pretrain_throughput", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def tiny(tmp_path):
    """Two cases of a tiny model (one hparams file under two names): 1 timed step each, batch 2 x 16."""
    hp = {"model_size": "small", **{k: v for k, v in TINY_HPARAMS.items() if k != "attn_implementation"}}
    paths = []
    for name in ("first", "second"):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(hp))
    cases = ",".join(f"{p}:16:2" for p in paths)
    out = tmp_path / "bench.json"
    return ["--cases", cases, "--steps", "1", "--warmup", "1", "--vocab-size", "64", "--device", "cpu",
            "--output", str(out)], out  # fmt: skip


def loop_failing_at(bench, monkeypatch, call: int, exc: BaseException) -> None:
    """``run_loop`` raises ``exc`` at its ``call``-th call (0-based; optimized then naive per case)."""
    real, calls = bench.run_loop, []

    def run_loop(*args, **kwargs):
        calls.append(kwargs["optimized"])
        if len(calls) - 1 == call:
            raise exc
        return real(*args, **kwargs)

    monkeypatch.setattr(bench, "run_loop", run_loop)


def test_a_failed_loop_is_recorded_and_the_other_cases_still_report(bench, tiny, monkeypatch, capsys):
    argv, out = tiny
    loop_failing_at(bench, monkeypatch, 3, RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED\nmore"))  # case 2, naive
    assert bench.cli(argv) == 1
    report = json.loads(out.read_text())
    first, second = report["cases"]
    assert first["optimized"]["steps_per_second"] > 0 and first["speedup"] > 0
    assert second["optimized"]["steps_per_second"] > 0
    assert second["naive"] == {"error": "RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED", "exception": "RuntimeError"}
    assert "speedup" not in second
    assert bench.failures(report) == ["cases[1].naive: RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED"]
    err = capsys.readouterr().err
    assert "Traceback" in err and "error: cases[1].naive" in err


def test_running_out_of_memory_is_a_finding_not_a_failure(bench, tiny, monkeypatch):
    argv, out = tiny
    loop_failing_at(bench, monkeypatch, 1, torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4 GiB"))
    assert bench.cli(argv) == 0
    naive = json.loads(out.read_text())["cases"][0]["naive"]
    assert naive["exception"] == "OutOfMemoryError" and naive["error"].startswith("out of memory: CUDA out of memory")


def test_the_report_is_on_disk_after_every_case(bench, tiny, monkeypatch):
    """A bench that dies in its second case (here an exception nothing catches) keeps the first on disk."""

    class Killed(BaseException):
        pass

    argv, out = tiny
    loop_failing_at(bench, monkeypatch, 2, Killed())  # case 2, optimized
    with pytest.raises(Killed):
        bench.cli(argv)
    report = json.loads(out.read_text())
    assert len(report["cases"]) == 1 and report["cases"][0]["optimized"]["steps_per_second"] > 0
    assert not list(out.parent.glob(".*.tmp"))


def test_a_failed_profile_leaves_the_timing_standing(bench, tiny, monkeypatch):
    argv, out = tiny

    def profile_steps(*args, **kwargs):
        raise RuntimeError("profiler: CUPTI_ERROR_NOT_INITIALIZED")

    monkeypatch.setattr(bench, "profile_steps", profile_steps)
    assert bench.cli([*argv, "--profile", "1", "--no-baseline"]) == 1
    case = json.loads(out.read_text())["cases"][0]["optimized"]
    assert case["steps_per_second"] > 0 and case["profile"]["exception"] == "RuntimeError"
    assert bench.failures(json.loads(out.read_text())) == [
        "cases[0].optimized.profile: RuntimeError: profiler: CUPTI_ERROR_NOT_INITIALIZED"
    ]
