"""The campaign's measurement of the whole training step (``train_step`` ``captured``) on the device, in one
command: ``step-bench``. Its parts run in order of priority while ``--budget-seconds`` last, each writing under
``--out`` as soon as it ends, so a command cut short leaves every part that finished:

1. ``eager``: ``bench/pretrain_throughput.py`` on ELECTRA-Small 128 x 128 and 128 x 512, ELECTRA-Base 128 x 128
   and 512 x 32 and the recipe's model (128 x its batch): the naive fp32 loop, the eager step (the Trainer's
   arithmetic) and the captured whole step of eager kernels, each profiled; ``step-bench-eager.json``.
2. ``compiled``: the whole step compiled (``fullgraph=True``; the forward pass and the update, with
   ``--compile-scope forward`` the forward pass alone, with ``layers`` each transformer layer alone, identical
   layers compiled once) and captured, on ELECTRA-Small 128 x 128, the recipe's model and ELECTRA-Base
   128 x 128, loading ``--compile-cache`` when one was carried and writing the artifacts of this command's
   compilations to ``compile-cache.bin.xz`` under ``--out`` (give it to the next run: ``--compile-cache``);
   ``step-bench-compiled.json``.
3. ``loss``: the eager step against the captured one over 50 steps from the same weights on the same batches
   (ELECTRA-Small 128 x 128): losses and peak memory; ``step-bench-loss.json``.
4. ``train``: ``data`` (when not built yet), then ``pretrain train`` of the recipe in the foreground for
   ``--train-minutes`` with ``train_step: captured`` (compiled when part 2 showed it faster than the eager
   kernels captured); its speed per logging window beside the bench's best loop of the recipe's model:
   ``step-train.json``.

``step-bench.json`` says what each part did (seconds, status, error). ``tests/test_campaign.py`` dry-runs it on
the CPU with tiny cases (no capture there: the loops run uncaptured and say so).
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import subprocess
import sys
import time
from pathlib import Path

from campaign_common import (
    CACHE_NAME,
    COMPILE_CACHE,
    REPO,
    log,
    read_json,
    recipe_case,
    unpack_compile_cache,
    use_site,
    write_json,
)
from campaign_train import FALLBACK_MIN_SECONDS, cmd_data, cmd_train

#: The parts of ``step-bench`` in the order they run.
PARTS = ("eager", "compiled", "loss", "train")

#: Seconds each part may take at most (the budget left may cut it shorter); ``train`` adds its minutes.
PART_SECONDS = {"eager": 170.0, "compiled": 240.0, "loss": 60.0, "train": 75.0}

#: A part starts only with at least this many seconds of the budget left.
MIN_PART_SECONDS = 30.0

#: ``pretrain train`` of the captured step compiles only when the compiled bench showed it at least this much
#: faster than the captured eager kernels on the recipe's model.
COMPILE_MIN_SPEEDUP = 1.1


def eager_cases(hparams: Path) -> str:
    return f"small:128:128,small:128:512,base:128:128,base:512:32,{hparams}:128:{_recipe_batch(hparams)}"


def compiled_cases(hparams: Path) -> str:
    return f"small:128:128,{hparams}:128:{_recipe_batch(hparams)},base:128:128"


def _recipe_batch(hparams: Path) -> int:
    return int(json.loads(hparams.read_text()).get("per_device_train_batch_size", 128))


def _bench(args, cases: str, output: Path, extra: list[str], timeout: float) -> dict:
    """The bench on ``cases`` into ``output`` (written after every case), stopped after ``timeout`` seconds;
    ``{"status", "seconds"}`` and the error when it failed or was stopped (the finished cases stay)."""
    cmd = [sys.executable, str(REPO / "bench" / "pretrain_throughput.py"), "--cases", cases, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--output", str(output), *extra]  # fmt: skip
    if args.layers:
        cmd += ["--layers", str(args.layers)]
    if args.batch_size:
        cmd += ["--batch-size", str(args.batch_size)]
    if args.fuse_qkv:
        cmd += ["--fuse-qkv"]
    if args.bf16_weight_copies:
        cmd += ["--bf16-weight-copies"]
    if args.compile_mode != "default" or args.compile_options:
        cmd += ["--compile-mode", args.compile_mode, "--compile-options", args.compile_options or "{}"]
    log("$ " + " ".join(cmd))
    started = time.monotonic()
    try:
        code = subprocess.run(cmd, stdout=subprocess.DEVNULL, timeout=timeout, check=False).returncode
        status = {"status": "done" if code == 0 else f"exited {code}"}
    except subprocess.TimeoutExpired:
        status = {"status": "stopped", "error": f"still running after {timeout:.0f} s: the cases it finished are kept"}
    status["seconds"] = round(time.monotonic() - started, 1)
    return status


def _best_recipe_loop(report: dict, hparams: Path) -> tuple[str | None, float | None]:
    """The fastest loop (name, steps/s) of the recipe's case in a bench report."""
    case = recipe_case(report, hparams) or {}
    best = (None, None)
    for name in ("optimized", "whole", "whole_compiled", "captured", "compiled_captured"):
        rate = (case.get(name) or {}).get("steps_per_second")
        if rate and (best[1] is None or rate > best[1]):
            best = (name, rate)
    return best


def _recipe_rate(report: dict, hparams: Path, loop: str) -> float | None:
    return ((recipe_case(report, hparams) or {}).get(loop) or {}).get("steps_per_second")


def train_compiles(args) -> tuple[bool, str]:
    """``--compile-train``: ``on`` / ``off`` as said; ``auto`` compiles when the compiled bench's captured loop
    beat the eager kernels captured on the recipe's model by :data:`COMPILE_MIN_SPEEDUP`."""
    if args.compile_train in ("on", "off"):
        return args.compile_train == "on", f"--compile-train {args.compile_train}"
    eager = _recipe_rate(read_json(args.out / "step-bench-eager.json", {}), args.hparams, "captured")
    compiled = _recipe_rate(read_json(args.out / "step-bench-compiled.json", {}), args.hparams, "compiled_captured")
    if not eager or not compiled:
        return False, "eager kernels: no captured figure of the recipe's model both compiled and not"
    ratio = compiled / eager
    return ratio >= COMPILE_MIN_SPEEDUP, f"compiled captured x{ratio:.2f} the eager kernels captured"


def train_speed(history: list[dict], bench_best: float | None) -> dict:
    """The run's speed from its training logs: each window's steps/s, their median leaving out the first (the
    compilation and the capture; all of them when there is one) and the median ``data_wait_fraction`` of the same
    windows, and the median over the bench's best loop of the same model. ``report``'s speed row is these medians."""
    windows = [r for r in history if "steps_per_second" in r and "loss" in r]
    counted = windows[1:] or windows
    rates = sorted(r["steps_per_second"] for r in counted)
    waits = sorted(r.get("data_wait_fraction", 0.0) for r in counted)
    median = rates[len(rates) // 2] if rates else None
    return {
        "windows": [{"step": r["step"], "steps_per_second": r["steps_per_second"],
                     "data_wait_fraction": r.get("data_wait_fraction")} for r in windows],  # fmt: skip
        "median_steps_per_second": median,
        "median_data_wait_fraction": waits[len(waits) // 2] if waits else None,
        "bench_best_steps_per_second": bench_best,
        "fraction_of_bench": round(median / bench_best, 3) if median and bench_best else None,
    }


def cmd_step_bench(args) -> None:
    use_site(args.work)
    from bioelectra.pretraining.step import COMPILE_SCOPES

    if args.compile_scope not in COMPILE_SCOPES:
        raise SystemExit(f"step-bench: --compile-scope {args.compile_scope!r}: expected one of {', '.join(COMPILE_SCOPES)}")
    _check_compile_options(args)
    args.out.mkdir(parents=True, exist_ok=True)
    parts = [p for p in PARTS if not args.only or p in args.only]
    started = time.monotonic()
    record: dict = {"budget_seconds": args.budget_seconds, "parts": {}}
    cache = unpack_compile_cache(args.compile_cache, args.work)
    if args.compile_cache is not None and args.compile_cache.is_file():
        record["compile_cache_carried"] = {"file": str(args.compile_cache), "bytes": cache.stat().st_size}

    def left() -> float:
        return args.budget_seconds - (time.monotonic() - started)

    for part in parts:
        cap = PART_SECONDS[part] + (args.train_minutes * 60 if part == "train" else 0.0)
        timeout = min(cap, left())
        if timeout < MIN_PART_SECONDS:
            record["parts"][part] = {"status": "skipped", "error": f"{left():.0f} s of the budget left"}
            write_json(args.out / "step-bench.json", record)
            continue
        log(f"step-bench: {part} (at most {timeout:.0f} s; {left():.0f} s of the budget left)")
        if part == "eager":
            status = _bench(args, args.cases_eager or eager_cases(args.hparams), args.out / "step-bench-eager.json",
                            ["--matmul", "--profile", str(args.profile), "--whole-loops", "captured"], timeout)  # fmt: skip
        elif part == "compiled":
            status = _bench(args, args.cases_compiled or compiled_cases(args.hparams),
                            args.out / "step-bench-compiled.json",
                            ["--matmul", "--no-baseline", "--profile", str(args.profile), "--whole-loops",
                             "compiled_captured", "--compile-cache", str(cache), "--compile-scope",
                             args.compile_scope], timeout)  # fmt: skip
            if cache.is_file():
                (args.out / f"{CACHE_NAME}.xz").write_bytes(lzma.compress(cache.read_bytes(), preset=6))
                status["compile_cache_bytes"] = cache.stat().st_size
        elif part == "loss":
            status = _bench(args, args.cases_loss, args.out / "step-bench-loss.json",
                            ["--no-baseline", "--loss-check", str(args.loss_steps)], timeout)  # fmt: skip
        else:
            status = _train(args, timeout, cache)
        record["parts"][part] = status
        write_json(args.out / "step-bench.json", record)
    record["seconds"] = round(time.monotonic() - started, 1)
    write_json(args.out / "step-bench.json", record)
    print(json.dumps(record, indent=2))


def _check_compile_options(args) -> None:
    """``--compile-mode`` / ``--compile-options`` checked before any part runs (the parts' steps are captured
    on CUDA, so inductor's own CUDA graphs are refused there)."""
    import torch

    from bioelectra.pretraining.compile_options import inductor_options

    try:
        options = json.loads(args.compile_options) if args.compile_options else None
        inductor_options(args.compile_mode, options, capture=torch.cuda.is_available())
    except (ValueError, json.JSONDecodeError) as exc:
        raise SystemExit(f"step-bench: --compile-mode / --compile-options: {exc}") from None


def _train(args, timeout: float, cache: Path) -> dict:
    """``data`` when needed, then ``pretrain train`` of the captured step for the minutes that fit (the
    ``train`` stage's command, in the foreground), and :func:`train_speed` into ``step-train.json``."""
    from bioelectra.pretraining import FIRST_COMPILED_STEP_FILE, LOG_HISTORY_FILE, read_log_history

    begun = time.monotonic()
    if not (args.work / "data" / "build_info.json").is_file():
        cmd_data(argparse.Namespace(work=args.work, out=args.out, num_processes=args.num_processes,
                                    max_seq_length=args.max_seq_length))  # fmt: skip
    minutes = min(args.train_minutes, (timeout - (time.monotonic() - begun) - 45.0) / 60.0)
    if minutes * 60 < FALLBACK_MIN_SECONDS:
        return {"status": "skipped", "error": f"{minutes * 60:.0f} s left for training after data"}
    compiled, why = train_compiles(args)
    log(f"train: {why}")
    settings = [["train_step", json.dumps("captured")], ["compile_cache", json.dumps(str(cache))],
                ["compile_scope", json.dumps(args.compile_scope)], *([["fuse_qkv", "true"]] if args.fuse_qkv else []),
                *([["bf16_weight_copies", "true"]] if args.bf16_weight_copies else []),
                ["compile_mode", json.dumps(args.compile_mode)], ["compile_options", args.compile_options or "{}"],
                *([["logging_steps", json.dumps(args.logging_steps)]] if args.logging_steps else [])]  # fmt: skip
    run_dir = args.work / "run"
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a speed measurement starts afresh (a resume would start past the compilation)
    cmd_train(argparse.Namespace(
        work=args.work, out=args.out, hparams=args.hparams, minutes=round(minutes, 2), steps=None,
        compile="on" if compiled else "off", compile_min_speedup=1.0, init_from_warmup=500,
        set=settings + list(args.set or []), foreground=True, check_seconds=0.0,
    ))  # fmt: skip
    done = read_json(args.work / "train-done.json", {}) or {}
    _, best = _best_recipe_loop(read_json(args.out / "step-bench-eager.json", {}), args.hparams)
    _, best_compiled = _best_recipe_loop(read_json(args.out / "step-bench-compiled.json", {}), args.hparams)
    best = max((b for b in (best, best_compiled) if b), default=None)
    speed = train_speed(read_log_history(run_dir / LOG_HISTORY_FILE), best)
    run_hp = read_json(run_dir / "hparams.json", {}) or {}
    first = read_json(run_dir / FIRST_COMPILED_STEP_FILE, None)  # the compile time of the real path
    report = {"minutes": round(minutes, 2), "compiled": compiled, "why": why, "done": done,
              "train_step": run_hp.get("train_step"), "torch_compile": run_hp.get("torch_compile"),
              **_train_case(args, run_hp), **speed, **({"first_compiled_step": first} if first else {})}  # fmt: skip
    write_json(args.out / "step-train.json", report)
    return {"status": "done" if not done.get("returncode") else f"exited {done.get('returncode')}",
            "seconds": round(time.monotonic() - begun, 1)}  # fmt: skip


def _train_case(args, run_hp: dict) -> dict:
    """The run's case as the bench names it (``--hparams`` as given, its sequence length and batch), and what
    sets its step apart as the bench's loops record it (``compile_scope``, ``fuse_qkv``, ``bf16_weight_copies``
    where they were used, inductor's merged ``compile_options``), so that ``pretrain_throughput.py --markdown``
    puts the run beside the bench's loop of the same model, batch and variant."""
    import torch

    from bioelectra.pretraining.compile_options import inductor_options
    from bioelectra.pretraining.trainer import whole_step_bf16

    case = {"size": str(args.hparams), "seq_len": run_hp.get("max_seq_length"),
            "batch_size": run_hp.get("per_device_train_batch_size")}  # fmt: skip
    if None in case.values():
        return {}  # the run wrote no hparams (it failed before): no case to name
    # the copies stand in for autocast's casts: the run's whole step used them only under bf16 autocast
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    copies = bool(run_hp.get("bf16_weight_copies")) and whole_step_bf16(run_hp.get("precision", "auto"), device)
    variant: dict = {"compile_scope": run_hp.get("compile_scope"), "fuse_qkv": bool(run_hp.get("fuse_qkv")),
                     "bf16_weight_copies": copies}  # fmt: skip
    if run_hp.get("torch_compile"):
        try:
            variant["compile_options"] = inductor_options(run_hp.get("compile_mode", "default"), run_hp.get("compile_options") or {})
        except ValueError:  # checked before the run; a report is no place to fail
            variant["compile_options"] = run_hp.get("compile_options") or {}
    return {"case": case, **variant}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``step-bench``'s options (the stage's ``--work``, ``--out``, ``--hparams`` come from ``campaign.py``)."""
    p.add_argument("--budget-seconds", type=float, default=540.0, help="the seconds for all the parts")
    p.add_argument("--only", nargs="*", choices=PARTS, default=None, help="run these parts only (in their order)")
    p.add_argument("--compile-cache", type=Path, default=COMPILE_CACHE,
                   help="a compile-cache.bin.xz an earlier call brought back (carried; default: the recipe's): "
                   "loaded before compiling")  # fmt: skip
    p.add_argument("--compile-scope", default="step",
                   help="what of the forward pass compiles, in the compiled part and the run (checked against "
                   "bioelectra's COMPILE_SCOPES once it is importable): the forward pass and the update (step; the "
                   "carried cache's), the forward pass alone (forward) or each layer alone, identical layers once "
                   "(layers: 12 layers as fast as 1)")  # fmt: skip
    p.add_argument("--fuse-qkv", action="store_true",
                   help="query, key and value as one projection, in every part (bench --fuse-qkv; the run's fuse_qkv)")
    p.add_argument("--bf16-weight-copies", action="store_true",
                   help="the forward pass on bf16 copies of the linear weights that the update writes, in every part "
                        "(bench --bf16-weight-copies; the run's bf16_weight_copies)")
    p.add_argument("--compile-mode", default="default",
                   help="torch.compile's mode in the compiled part and the run (bench --compile-mode; the run's "
                   "compile_mode): max-autotune-no-cudagraphs autotunes inductor's kernels")  # fmt: skip
    p.add_argument("--compile-options", default=None, metavar="JSON",
                   help="inductor's options over the mode's, a JSON object (bench --compile-options; the run's "
                   "compile_options), e.g. '{\"combo_kernels\": true}'")  # fmt: skip
    p.add_argument("--cases-eager", default=None, help="the eager part's cases (default: eager_cases)")
    p.add_argument("--cases-compiled", default=None, help="the compiled part's cases (default: compiled_cases)")
    p.add_argument("--cases-loss", default="small:128:128")
    p.add_argument("--loss-steps", type=int, default=50)
    p.add_argument("--steps", type=int, default=50, help="timed steps per loop")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--profile", type=int, default=10)
    p.add_argument("--layers", type=int, default=None, help="every case's layers (CPU dry run)")
    p.add_argument("--batch-size", type=int, default=None, help="every case's batch (CPU dry run)")
    p.add_argument("--train-minutes", type=float, default=2.0)
    p.add_argument("--compile-train", choices=("auto", "on", "off"), default="auto")
    p.add_argument("--logging-steps", type=int, default=None, help="the run's logging_steps (default: the recipe's)")
    p.add_argument("--num-processes", type=int, default=None)
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--set", nargs=2, action="append", metavar=("KEY", "JSON"), help="override one hparam of the run")
