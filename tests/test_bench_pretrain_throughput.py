"""bench/pretrain_throughput.py on the CPU with a tiny model: a case or a diagnostic that fails is recorded
and the rest still reports; the report is on disk after every case; the exit status tells a failure from
running out of memory. The GPU session reads this report (issue 14), so losing it costs device minutes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from conftest import REPO_ROOT, load_script
from pretrain_fixture import TINY_HPARAMS

BENCH = REPO_ROOT / "bench" / "pretrain_throughput.py"


@pytest.fixture()
def bench():
    return load_script(BENCH)


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
        f"cases[{i}].optimized.profile: RuntimeError: profiler: CUPTI_ERROR_NOT_INITIALIZED" for i in (0, 1)
    ]


def test_every_case_is_profiled_and_its_model_flops_divided(bench, tiny):
    argv, out = tiny
    assert bench.cli([*argv, "--profile", "1", "--no-baseline"]) == 0
    cases = json.loads(out.read_text())["cases"]
    assert [c["optimized"]["profile"]["steps"] for c in cases] == [1, 1]
    share = cases[0]["optimized"]["model_flops_share"]
    assert set(share) == {"discriminator", "generator encoder", "generator vocabulary projection"}
    assert abs(sum(share.values()) - 1.0) < 0.01 and all(v > 0 for v in share.values())


def test_the_compile_scope_reaches_the_whole_step_and_the_report(bench, tiny, monkeypatch):
    """--compile-scope layers: the compiled whole-step loop compiles the layers (aot_eager here: no C++ build)."""
    import functools
    import sys

    from bioelectra.pretraining.step import WholeTrainingStep

    cases = sys.modules["pretrain_cases"]
    monkeypatch.setattr(cases, "WholeTrainingStep", functools.partial(WholeTrainingStep, compile_backend="aot_eager"))
    argv, out = tiny
    torch._dynamo.reset()
    assert bench.cli([*argv, "--no-baseline", "--whole-loops", "whole,whole_compiled", "--compile-scope", "layers"]) == 0
    torch._dynamo.reset()
    case = json.loads(out.read_text())["cases"][0]
    assert case["whole_compiled"]["compiled"] is True and case["whole_compiled"]["compile_scope"] == "layers"
    assert "compile_scope" not in case["whole"]  # not compiled: no scope
    # how torch's compile caches served the compiled loop's warm-up (aot_eager: no inductor graph); none uncompiled
    counts = case["whole_compiled"]["compile_cache_counts"]
    assert set(counts) == {"fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass", "autograd_cache_hit",
                           "autograd_cache_miss", "autograd_cache_bypass"}  # fmt: skip
    assert counts["fxgraph_cache_hit"] + counts["fxgraph_cache_miss"] == 0
    assert case["whole"]["compile_cache_counts"] is None


def test_markdown_reads_the_figures_the_targets_and_what_limits_each_case(bench, tmp_path, capsys):
    """The README's speed table from GPU-shaped reports, an eager one and a compiled one merged by case: each
    loop's steps/s, the fastest loop, its same-run ratio over the naive loop, its sequences/s and MFU, each
    target met or not by the fastest loop, then what limits each profiled loop (and a compiled loop's time to
    its first fast step)."""
    profile = {"steps": 10, "wall_seconds_per_step": 0.02, "device_busy_seconds_per_step": 0.0082,
               "device_busy_fraction": 0.41, "kernel_launches_per_step": 1234.0,
               "device_seconds_per_step_by_group": {"matmul": 0.004, "attention": 0.002, "optimizer": 0.001}}
    report = {
        "device": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "measured_bf16_matmul_flops": 7.5e14,
        "cases": [
            {"size": "small", "seq_len": 128, "batch_size": 128,
             "optimized": {"steps_per_second": 30.0, "sequences_per_second": 3840.0, "mfu_measured": 0.066, "compiled": False,
                           "step_seconds": 0.0333, "profile": profile, "host_syncs": {"host_syncs_per_step": 1.0, "where": {"masking_utils.py:10": 3}}},
             "naive": {"steps_per_second": 8.57},
             "captured": {"steps_per_second": 60.0, "sequences_per_second": 7680.0, "mfu_measured": 0.13, "compiled": False,
                          "captured": True, "warmup_seconds": 2.2}},
            {"size": "base", "seq_len": 128, "batch_size": 128,
             "optimized": {"steps_per_second": 24.0, "sequences_per_second": 3072.0, "compiled": False}, "naive": {"steps_per_second": 12.0}},
            {"size": "base", "seq_len": 512, "batch_size": 32, "optimized": {"steps_per_second": 15.0, "sequences_per_second": 480.0},
             "naive": {"error": "out of memory: CUDA out of memory", "exception": "OutOfMemoryError"}},
            {"size": "recipes/bioelectra-small/hparams.json", "seq_len": 128, "batch_size": 256,
             "optimized": {"error": "RuntimeError: boom", "exception": "RuntimeError"}},
        ],
    }  # fmt: skip
    compiled = {"cases": [
        {"size": "small", "seq_len": 128, "batch_size": 128, "optimized": {"steps_per_second": 31.0, "compiled": False},
         "compiled_captured": {"steps_per_second": 105.0, "sequences_per_second": 13440.0, "mfu_measured": 0.2,
                               "compiled": True, "captured": True, "warmup_seconds": 61.5, "step_seconds": 0.0095,
                               "profile": profile, "host_syncs": {"host_syncs_per_step": 0.0, "where": {}}}},
    ]}  # fmt: skip
    text = bench.markdown(report, compiled)
    for line in (
        "Device: NVIDIA H100 80GB HBM3, torch 2.11.0; measured bf16 matmul rate: 750 TFLOP/s. Steps/s per loop:",
        "| ELECTRA-Small | 128 x 128 | 8.57 | 30.00 | - | 60.00 | 105.00 | compiled + captured | x12.25 | 13,440 | 20.0% "
        "| >= 100 steps/s on an H100: met |",
        "| ELECTRA-Base | 128 x 128 | 12.00 | 24.00 | - | - | - | eager step | x2.00 | 3,072 | - | >= 3,000 sequences/s on an H100: met |",
        "| ELECTRA-Base | 32 x 512 | failed | 15.00 | - | - | - | eager step | - | 480 | - | >= 550 sequences/s on an H100: not met (no compiled + captured figure) |",
        "| bioelectra-small | 256 x 128 | - | failed | - | - | - | - | - | - | - | - |",
        "- ELECTRA-Small, 128 x 128, eager step: 33.30 ms per step unprofiled; device busy 8.20 ms per step (41.0% of the "
        "profiled step), 1,234 kernel launches; by group: matmul 4.00 ms, attention 2.00 ms, optimizer 1.00 ms; "
        "1 host synchronisations per step at masking_utils.py:10 (3).",
        "- ELECTRA-Small, 128 x 128, compiled + captured: 9.50 ms per step unprofiled; device busy 8.20 ms per step "
        "(41.0% of the profiled step), 1,234 kernel launches; by group: matmul 4.00 ms, attention 2.00 ms, optimizer "
        "1.00 ms; 0 host synchronisations per step; 61.5 s to the first fast step.",
    ):  # fmt: skip
        assert line in text, f"{line}\n---\n{text}"
    assert "ELECTRA-Base, 128 x 128" not in text  # neither profiled nor counted: no line of guesses
    assert "captured (eager kernels): " not in text  # not profiled: no line

    path, compiled_path = tmp_path / "bench.json", tmp_path / "bench-compiled.json"
    path.write_text(json.dumps(report))
    compiled_path.write_text(json.dumps(compiled))
    assert bench.cli(["--markdown", str(path), str(compiled_path)]) == 0  # runs nothing, so nothing fails
    assert capsys.readouterr().out == text


def test_markdown_gives_another_compile_scope_and_the_fused_projection_rows_of_their_own(bench):
    """Reports of one case with the whole step compiled in the step scope, in the layers scope, with query, key
    and value fused and with inductor's autotuning: four rows, not the first report's figure alone (a loop with
    inductor's default options is the plain row's); each variant's ratio over the plain row's naive loop."""
    def case(**loops):
        return {"cases": [{"size": "small", "seq_len": 128, "batch_size": 128, **loops}]}

    def compiled(rate, **extra):
        return {"steps_per_second": rate, "sequences_per_second": rate * 128, "compiled": True, "captured": True, **extra}

    reports = [
        case(naive={"steps_per_second": 10.0}, captured={"steps_per_second": 40.0, "compiled": False}),
        case(compiled_captured=compiled(90.0, compile_scope="step")),
        case(compiled_captured=compiled(95.0, compile_scope="layers")),
        case(compiled_captured=compiled(101.0, compile_scope="step", fuse_qkv=True)),
        case(compiled_captured=compiled(
            97.0, compile_scope="step", compile_options={"max_autotune": True, "coordinate_descent_tuning": True}
        )),
        case(compiled_captured=compiled(92.0, compile_scope="step", compile_options={})),  # defaults: the plain row
        case(compiled_captured=compiled(99.0, compile_scope="step", bf16_weight_copies=True)),
    ]
    rows = [line for line in bench.markdown(*reports).splitlines() if line.startswith("| ELECTRA-Small")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| ELECTRA-Small", "| ELECTRA-Small (layers scope)", "| ELECTRA-Small (fused QKV)",
        "| ELECTRA-Small (inductor coordinate_descent_tuning, max_autotune)", "| ELECTRA-Small (bf16 weight copies)",
    ]  # fmt: skip
    assert "| 10.00 | - | - | 40.00 | 90.00 | compiled + captured | x9.00 |" in rows[0]
    assert "| 10.00 | - | - | - | 95.00 | compiled + captured | x9.50 |" in rows[1]
    assert "| 10.00 | - | - | - | 101.00 | compiled + captured | x10.10 |" in rows[2] and rows[2].endswith(": met |")
    assert "| 10.00 | - | - | - | 97.00 | compiled + captured | x9.70 |" in rows[3]
    assert "| 10.00 | - | - | - | 99.00 | compiled + captured | x9.90 |" in rows[4]


def test_markdown_gives_each_compiled_loop_its_time_to_the_first_fast_step(bench):
    """The compile-time table: one row per compiled loop and report (the same case compiled from nothing and from
    a carried cache are two rows, though the speed table merges them), the cache its report loaded, the graphs
    torch's caches served, and the 60 s bar; uncompiled loops and reports without a compiled loop add nothing."""
    def report(cache, warmup, counts, **extra):
        loop = {"steps_per_second": 120.0, "sequences_per_second": 30720.0, "compiled": True, "captured": True,
                "compile_scope": "step", "warmup_seconds": warmup, **({"compile_cache_counts": counts} if counts else {})}  # fmt: skip
        return {"device": "NVIDIA H100", **extra, "compile_cache": cache,
                "cases": [{"size": "recipes/bioelectra-small/hparams.json", "seq_len": 128, "batch_size": 256,
                           "optimized": {"steps_per_second": 30.0, "compiled": False, "warmup_seconds": 0.5},
                           "compiled_captured": loop}]}  # fmt: skip

    cold = {"fxgraph_cache_hit": 0, "fxgraph_cache_miss": 4, "fxgraph_cache_bypass": 0,
            "autograd_cache_hit": 0, "autograd_cache_miss": 1, "autograd_cache_bypass": 1}
    carried = {"fxgraph_cache_hit": 4, "fxgraph_cache_miss": 0, "fxgraph_cache_bypass": 0,
               "autograd_cache_hit": 2, "autograd_cache_miss": 0, "autograd_cache_bypass": 0}  # fmt: skip
    text = bench.markdown(report({"file": "c.bin", "loaded": False}, 86.8, cold),
                          report({"file": "c.bin", "loaded": True}, 31.5, carried),
                          report(None, 90.0, None))  # fmt: skip
    rows = [line for line in text.split("Time to the first fast step")[1].splitlines() if line.startswith("| bioelectra")]
    assert rows == [
        "| bioelectra-small | 256 x 128 | compiled + captured | none loaded | 0 of 4 | 0 of 2 (1 refused) | 86.8 | not met |",
        "| bioelectra-small | 256 x 128 | compiled + captured | loaded | 4 of 4 | 2 of 2 | 31.5 | met |",
        "| bioelectra-small | 256 x 128 | compiled + captured | - | - | - | 90.0 | not met |",
    ]  # fmt: skip
    assert "| bioelectra-small | 256 x 128 | - | 30.00 |" in text  # the speed table: one row of the case
    # a compiled pretrain train run: its first step (first_compiled_step.json, carried into step-train.json)
    train = {"median_steps_per_second": 119.0, "windows": [{"step": 1}, {"step": 200}], "train_step": "captured",
             "torch_compile": True, "case": {"size": "recipes/bioelectra-small/hparams.json", "seq_len": 128, "batch_size": 256},
             "compile_scope": "step", "first_compiled_step": {"seconds": 37.04, "compile_cache": "c.bin",
                                                              "compile_cache_loaded": True, "compile_cache_counts": carried}}  # fmt: skip
    text = bench.markdown(report({"file": "c.bin", "loaded": True}, 31.5, carried), train)
    rows = [line for line in text.split("Time to the first fast step")[1].splitlines() if line.startswith("| bioelectra")]
    assert rows[1] == "| bioelectra-small | 256 x 128 | `pretrain train` | loaded | 4 of 4 | 2 of 2 | 37.0 | met |", rows
    eager_run = {k: v for k, v in train.items() if k != "first_compiled_step"}  # an older report, or an eager run
    assert len([r for r in bench.markdown(report(None, 31.5, None), eager_run).split("Time to")[1].splitlines()
                if r.startswith("| bioelectra")]) == 1  # fmt: skip
    uncompiled = report(None, 1.0, None)
    del uncompiled["cases"][0]["compiled_captured"]
    assert "Time to the first fast step" not in bench.markdown(uncompiled)


def test_the_whole_steps_bf16_weight_copies_go_with_bf16_autocast_only(bench):
    """--bf16-weight-copies reaches the whole step where the loop has bf16 autocast (CUDA), and is left out where
    it has none (this CPU's loops): the copies stand in for autocast's casts."""
    from pretrain_cases import case_config, loop_optimizer

    from bioelectra.modeling import ElectraPretrainingModel

    model = ElectraPretrainingModel(case_config("small", vocab_size=64, seq_len=16, layers=1)[0]).train()
    for use_bf16 in (True, False):
        _, whole, _ = loop_optimizer(model, device=torch.device("cpu"), optimized=True, compile_model=False,
                                     fused_adamw=False, whole="whole", use_bf16=use_bf16,
                                     step_options={"bf16_weight_copies": True, "compile_scope": "step"})  # fmt: skip
        assert whole.bf16_weight_copies is use_bf16 and whole.bf16 is use_bf16


def test_a_pretrain_train_report_joins_its_case_beside_the_bench(bench, tmp_path, capsys):
    """A step-train.json (``pretrain train``'s median log window) is the `pretrain train` column of its case, on
    the row of its compile scope; it is never the case's fastest loop; its share of the bench's fastest loop is
    said against the 90% bar. An older one without its case finds it by its bench_best_steps_per_second; one
    that matches no case is refused by name. The uncaptured whole-step columns show only where a figure is."""
    bench_report = {"device": "NVIDIA H100", "cases": [
        {"size": "recipe/hparams.json", "seq_len": 128, "batch_size": 256, "naive": {"steps_per_second": 10.0},
         "captured": {"steps_per_second": 40.0, "compiled": False},
         "compiled_captured": {"steps_per_second": 120.0, "compiled": True, "captured": True, "compile_scope": "step"}},
        {"size": "recipe/hparams.json", "seq_len": 128, "batch_size": 256,
         "compiled_captured": {"steps_per_second": 100.0, "compiled": True, "captured": True, "compile_scope": "layers"}},
    ]}  # fmt: skip
    windows = [{"step": 1, "steps_per_second": 0.03}] + [{"step": 200 * i, "steps_per_second": 99.0} for i in range(1, 5)]
    train = {"median_steps_per_second": 99.0, "bench_best_steps_per_second": 120.0, "windows": windows,
             "train_step": "captured", "torch_compile": True,
             "case": {"size": "recipe/hparams.json", "seq_len": 128, "batch_size": 256}, "compile_scope": "layers",
             "fuse_qkv": False, "compile_options": {}}  # fmt: skip
    text = bench.markdown(bench_report, train)
    header = next(line for line in text.splitlines() if line.startswith("| case |"))
    assert "| compiled + captured | `pretrain train` | fastest |" in header and "uncaptured" not in header
    rows = [line for line in text.splitlines() if line.startswith("| recipe")]
    assert rows[0].startswith("| recipe | 256 x 128 | 10.00 | - | - | 40.00 | 120.00 | - | compiled + captured | x12.00 |")
    assert rows[1].startswith("| recipe (layers scope) | 256 x 128 | 10.00 | - | - | - | 100.00 | 99.00 | compiled + captured |")
    assert ("- recipe (layers scope), 256 x 128, `pretrain train`: median 99.00 steps/s over 4 log windows after the "
            "first (train_step captured, compiled), 99.0% of the bench's fastest loop (100.00 steps/s): >= 90% met.") in text
    slow = {**train, "median_steps_per_second": 80.0, "compile_scope": "step"}
    assert "80.0% of the bench's fastest loop (100.00 steps/s): >= 90% not met" not in bench.markdown(bench_report, slow)
    assert "66.7% of the bench's fastest loop (120.00 steps/s): >= 90% not met" in bench.markdown(bench_report, slow)

    older = {k: v for k, v in train.items() if k not in ("case", "compile_scope", "fuse_qkv", "compile_options")}
    assert "| recipe | 256 x 128 | 10.00 | - | - | 40.00 | 120.00 | 99.00 |" in bench.markdown(bench_report, older)
    path, train_path = tmp_path / "bench.json", tmp_path / "step-train.json"
    path.write_text(json.dumps(bench_report))
    train_path.write_text(json.dumps({**older, "bench_best_steps_per_second": 77.0}))
    with pytest.raises(SystemExit):
        bench.cli(["--markdown", str(path), str(train_path)])
    assert "without its \"case\", and 0 cases" in capsys.readouterr().err

    cpu = {"device": "AMD EPYC, 2 cores", "cases": [{"size": "small", "seq_len": 128, "batch_size": 2,
           "optimized": {"steps_per_second": 1.0, "compiled": False},
           "whole_compiled": {"steps_per_second": 1.5, "compiled": True, "compile_scope": "layers"}}]}  # fmt: skip
    text = bench.markdown(cpu)
    assert "| eager step | compiled step | whole step compiled, uncaptured | captured (eager kernels) |" in text
    assert "whole step, uncaptured |" not in text and "`pretrain train`" not in text
    assert "| ELECTRA-Small (layers scope) | 2 x 128 | - | - | - | 1.50 | - | - | whole step compiled, uncaptured |" in text


def test_the_committed_gpu_reports_read_as_a_table(bench):
    """bench/results/ keeps the JSON the README's GPU speed table comes from: each report has the bench's
    format (device, cases with size, seq_len, batch_size, and each loop's steps/s, sequences/s, compiled), and
    the table printed from them names each case's fastest loop with its figure."""
    results = REPO_ROOT / "bench" / "results"
    eager_reports = sorted(results.glob("pretrain-step-*-eager.json"))
    assert eager_reports, f"no pretrain-step-*-eager.json under {results}"
    for eager in eager_reports:
        compiled = eager.with_name(eager.name.replace("-eager", "-compiled"))
        loaded = [json.loads(p.read_text()) for p in (eager, compiled) if p.is_file()]
        fastest = {}
        for report in loaded:
            assert report["device"] and report["cases"], report
            for case in report["cases"]:
                assert {"size", "seq_len", "batch_size"} <= set(case)
                for name in ("naive", "optimized", "captured", "compiled_captured"):
                    loop = case.get(name)
                    if loop is None or "error" in loop:
                        continue
                    assert loop["steps_per_second"] > 0 and "compiled" in loop
                    assert abs(loop["sequences_per_second"] - loop["steps_per_second"] * case["batch_size"]) < 1.0
                    key = (case["size"], case["seq_len"], case["batch_size"])
                    fastest[key] = max(fastest.get(key, 0.0), loop["steps_per_second"])
        train_path = eager.with_name(eager.name.replace("-eager", "-train"))
        train = json.loads(train_path.read_text()) if train_path.is_file() else None
        text = bench.markdown(*loaded, train)
        for (size, seq, batch), rate in fastest.items():
            row = next(line for line in text.splitlines() if line.startswith(f"| {bench.case_label(size)} | {batch} x {seq} |"))
            assert f"| {rate:.2f} |" in row, row
        if train is not None:  # pretrain train's median beside the bench's loops of its model
            assert f"| {train['median_steps_per_second']:.2f} |" in text and "`pretrain train`: median" in text


def test_cache_counts_read_alike_in_the_log_the_bench_and_the_report():
    """bioelectra/compile_records.py is the one rendering of how torch's compile caches served a step's graphs
    (the run's log line, the bench's compile-time table, the campaign's report), and it needs no torch: the bench's
    Markdown and the campaign's report read JSON only."""
    from bioelectra.compile_records import CACHE_COUNTERS, cache_served, describe_cache_counts

    counts = {"fxgraph_cache_hit": 4, "fxgraph_cache_miss": 1, "fxgraph_cache_bypass": 0,
              "autograd_cache_hit": 1, "autograd_cache_miss": 0, "autograd_cache_bypass": 1}  # fmt: skip
    assert cache_served(counts, "inductor") == "4 of 5" and cache_served(counts, "aot_autograd") == "1 of 2 (1 refused)"
    assert describe_cache_counts(counts) == "graphs from a cache: inductor 4 of 5, AOT autograd 1 of 2 (1 refused)"
    assert cache_served(None, "inductor") == cache_served({}, "aot_autograd") == "-"  # a report from before the counts
    with pytest.raises(KeyError):
        cache_served(counts, "fxgraph_cache")  # a counter's prefix is not a group
    assert set(counts) == {name for names in CACHE_COUNTERS.values() for name in names}
    code = "import sys, bioelectra.compile_records; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=False).returncode == 0


def test_markdown_names_a_bad_report_file(bench, tmp_path):
    bad, other = tmp_path / "bench.json", tmp_path / "other.json"
    bad.write_text('{"device": "x",\n  cases: []}')
    with pytest.raises(SystemExit, match=r"bench.json: line 2, column 3: not JSON"):
        bench.cli(["--markdown", str(bad)])
    other.write_text('{"steps_per_second": 3}')
    with pytest.raises(SystemExit, match=r'other.json: no "cases" list'):
        bench.cli(["--markdown", str(other)])
    with pytest.raises(SystemExit, match=r"missing.json: no such file"):
        bench.cli(["--markdown", str(tmp_path / "missing.json")])


def test_the_profile_counts_kernels_and_device_time_by_group(bench):
    """A profile's table from the device kernels of 3 steps: launches and device seconds per step by group (the
    casts of weights, eager or Triton's, counted as copy/cast; a Triton kernel that fuses a cast into a layer
    norm counted as the layer norm), the top kernels by device time."""
    from pretrain_measure import kernel_summary

    per_step = [
        ("triton_poi_fused__to_copy_0", 1e-6), ("triton_poi_fused__to_copy_1", 1e-6),
        ("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NNN", 10e-6),
        ("triton_per_fused__to_copy_add_native_dropout_native_layer_norm_2", 4e-6),
        ("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda>", 2e-6),
    ]  # fmt: skip
    summary = kernel_summary(per_step * 3, steps=3, top=2)
    assert summary["kernel_launches_per_step"] == 5.0
    assert summary["kernels_per_step_by_group"] == {"copy/cast": 3.0, "matmul": 1.0, "layer_norm": 1.0}
    assert summary["device_seconds_per_step_by_group"] == {"matmul": 1e-05, "copy/cast": 4e-06, "layer_norm": 4e-06}
    assert abs(summary["device_busy_seconds"] - 3 * 18e-6) < 1e-12
    assert [(k["name"][:6], k["count"], k["group"]) for k in summary["top_kernels"]] == [
        ("nvjet_", 3, "matmul"), ("triton", 3, "layer_norm")
    ]  # fmt: skip
    assert summary["top_kernels"][0]["device_seconds_per_step"] == 1e-05
    assert kernel_summary([], steps=2)["kernels_per_step_by_group"] == {}  # the CPU: no device kernels
