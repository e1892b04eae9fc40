#!/usr/bin/env python
"""Pre-training throughput of ElectraPretrainingModel: steps/s, tokens/s, peak memory, MFU; printed as JSON.

For each case (preset x sequence length) two loops train the same model on the same synthetic masked
batches:

- ``optimized``: SDPA attention, bf16 autocast on CUDA, ELECTRA's AdamW with multi-tensor (foreach)
  kernels, optional ``torch.compile``;
- ``naive``: a plain fp32 eager loop (eager attention, no autocast, per-parameter optimizer loop).

``speedup`` is optimized steps/s over naive steps/s. No timed asserts: this prints figures.

``--whole-loops`` adds loops of the whole training step (:mod:`bioelectra.pretraining.step`, ``pretrain train``'s
``train_step`` ``whole`` / ``captured``: forward, gradients, clip and the original's update as one function, the
learning rate a device tensor), each case's entry under its name with ``speedup`` over the naive loop:

- ``whole``: the whole step, eager kernels (the CPU's dry run of the others);
- ``whole_compiled``: its forward and update through ``torch.compile(fullgraph=True)``;
- ``captured``: the whole step of eager kernels recorded once as a CUDA graph and replayed (CUDA);
- ``compiled_captured``: compiled, then captured (CUDA).

Off CUDA a captured loop runs uncaptured and says so (``captured: false``). After its timing each whole loop
checks that its steps draw new random numbers (``random_stream``: 3 steps at learning rate 0 on one batch must
not give one loss three times). ``--compile-cache FILE`` loads
``torch.compile``'s cache artifacts from FILE before the first compilation (when it exists) and writes them there
at the end, so a later run compiles from them: ``compile_cache`` in the report says which happened, and each
loop's ``warmup_seconds`` is its time to the first fast step (compilation and capture included), a compiled loop's
``compile_cache_counts`` how torch's caches served its graphs in that time (hits against graphs compiled anew:
what a carried cache saved). ``--fuse-qkv``
computes each self-attention's query, key and value as one projection in the optimized and whole loops
(:mod:`bioelectra.fused_attention`; ``fuse_qkv`` in each loop's figures). ``--compile-mode`` and
``--compile-options`` tell every compiled loop's ``torch.compile`` a mode and inductor's options (the hparams
``compile_mode`` and ``compile_options``, :mod:`bioelectra.pretraining.compile_options`; each compiled loop's
``compile_options`` in the report is the merged dict, ``{}`` for inductor's defaults).

Targets of the whole training step on one H100 (:data:`TARGETS`): ELECTRA-Small (batch 128, seq 128) >= 100 steps/s, at batch 512 >= 16,000 sequences/s;
ELECTRA-Base (seq 128) >= 3,000 sequences/s; ELECTRA-Base (seq 512) >= 550 sequences/s. ``--markdown
REPORT.json`` prints a report written earlier as the README's table (``bench/pretrain_report.py``).

Examples::

    python bench/pretrain_throughput.py    # GPU: small@128 batch 128, base@128 batch 128, base@512 batch 32
    python bench/pretrain_throughput.py --cases small:128 --batch-size 8 --steps 3 --warmup 1   # CPU smoke
    python bench/pretrain_throughput.py --compile --no-baseline
    python bench/pretrain_throughput.py --cases recipes/bioelectra-small/hparams.json:128:256 --profile 10

A case's size is ``small``, ``base``, ``large`` or the path of a ``pretrain train --hparams`` JSON file (its
``model_size``, default small, with its model options: ``model_hparam_overrides``, ``generator_hidden_size``,
``untied_generator`` ...). On CUDA each optimized loop also counts the host
synchronisations of 3 more steps, and the Python lines that made them (``host_syncs``). ``warmup_seconds`` is the
wall time of the untimed first steps: with ``--compile``, mostly the compilation. ``--matmul`` measures the device's bf16 matrix rate (an 8192^3 product, median
of 10 after 3 warm-ups, random data) and reports ``mfu_measured`` against it beside ``mfu`` (data-sheet
peak). ``--profile N`` profiles N more optimized steps of every case with ``torch.profiler`` and reports
the kernels by device time and launches, grouped (matrix products, attention, optimizer, copy/cast, ...);
``model_flops_share`` says how the model FLOPs divide between the discriminator, the generator's encoder and
its vocabulary projection.

MFU: model FLOPs per step / step time / the device's dense bf16 peak. Model FLOPs per step (training =
3 x forward) for each of the generator and the discriminator: ``6 * N_layers_params * tokens`` (encoder
matrices, embedding projection, heads) ``+ 12 * layers * seq * hidden * tokens`` (attention scores and
values), plus the generator's vocabulary projection at the masked positions only
(``6 * embedding_size * vocab * masked``). Embedding lookups, softmax, LayerNorm are not counted.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bioelectra.configuration import ElectraPretrainingConfig  # noqa: E402
from bioelectra.masking import max_predictions_per_seq  # noqa: E402
from bioelectra.pretraining.compile_cache import load_compile_cache, save_compile_cache  # noqa: E402
from bioelectra.pretraining.compile_options import COMPILE_MODES, inductor_options  # noqa: E402
from bioelectra.pretraining.step import (  # noqa: E402
    COMPILE_SCOPES,
    WholeTrainingStep,
)
from bioelectra.textio import atomic_write_text  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import device_name  # noqa: E402
from pretrain_cases import (  # noqa: E402
    BIO_ELECTRA_VOCAB_SIZE,
    DEFAULT_BATCH,
    case_config,
    loop_model,
    loop_optimizer,
    make_batches,
    update_label,
)
from pretrain_measure import flops_figures, host_syncs, measured_matmul_flops, profile_steps, warm_up  # noqa: E402
from pretrain_report import TARGETS, case_label, is_train_report, markdown, read_report, train_as_report  # noqa: E402, F401  (TARGETS, case_label, markdown: this module's API too)

#: ``--whole-loops`` names -> (``run_loop``'s ``whole``, ``compile_model``).
WHOLE_LOOPS = {
    "whole": ("whole", False),
    "whole_compiled": ("whole", True),
    "captured": ("captured", False),
    "compiled_captured": ("captured", True),
}


def run_loop(
    config: ElectraPretrainingConfig,
    batches: list[dict],
    *,
    device: torch.device,
    optimized: bool,
    compile_model: bool,
    fused_adamw: bool = False,
    steps: int,
    warmup: int,
    seed: int,
    profile: int = 0,
    matmul_flops: float | None = None,
    whole: str | None = None,
    losses: list[float] | None = None,
    step_options: dict | None = None,
    fuse_qkv: bool = False,
) -> dict:
    """Train ``steps`` timed steps (after ``warmup`` untimed ones); return the figures (and, with ``profile`` > 0,
    :func:`profile_steps` over that many more steps). ``whole`` (``"whole"`` or ``"captured"``, with ``optimized``):
    the whole training step (:class:`WholeTrainingStep`), compiled with ``compile_model``, captured as a CUDA graph
    with ``"captured"`` on CUDA; ``step_options``: its ``compile_scope``, ``compile_options`` (inductor's; a compiled
    loop's without ``whole`` too) and ``bf16_weight_copies`` (with bf16 autocast); ``fuse_qkv`` (with
    ``optimized``): :func:`fuse_qkv_projections`.
    ``losses``: gets each timed step's loss (for :func:`loss_check`)."""
    torch.manual_seed(seed)
    model, fused = loop_model(config, device=device, optimized=optimized, fuse_qkv=fuse_qkv)
    use_bf16 = optimized and device.type == "cuda" and torch.cuda.is_bf16_supported()
    optimizer, whole_step, scheduler = loop_optimizer(
        model, device=device, optimized=optimized, compile_model=compile_model, fused_adamw=fused_adamw,
        whole=whole, use_bf16=use_bf16, step_options=step_options,
    )  # fmt: skip
    options = {"options": compile_options} if (compile_options := (step_options or {}).get("compile_options")) else {}
    forward = torch.compile(model, **options) if (optimized and compile_model and whole is None) else model
    batches = [{k: v.to(device, non_blocking=True) for k, v in b.items()} for b in batches]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def step(i: int) -> torch.Tensor:
        batch = batches[i % len(batches)]
        if whole_step is not None:  # forward, gradients, clip, update: one function (one graph replay)
            loss = whole_step(batch)
            scheduler.step()
            return loss
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
            loss = forward(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=optimized)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    warmup_seconds, cache_counts = warm_up(step, warmup, device)
    start = time.perf_counter()
    for i in range(steps):
        loss = step(warmup + i)
        if losses is not None:
            losses.append(float(loss.detach()))
    loss_value = float(loss.detach())
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    b, s = batches[0]["input_ids"].shape
    steps_per_second = steps / seconds
    result = {
        "steps_per_second": round(steps_per_second, 3),
        "sequences_per_second": round(steps_per_second * b, 1),
        "tokens_per_second": round(steps_per_second * b * s, 1),
        "step_seconds": round(seconds / steps, 5),
        "warmup_seconds": round(warmup_seconds, 2),
        "final_loss": round(loss_value, 4),
        "bf16_autocast": use_bf16,
        "attention": model.config._attn_implementation,
        "compiled": bool(optimized and compile_model),
        "optimizer": update_label(optimizer, whole_step),
        "compile_options": dict(compile_options or {}) if optimized and compile_model else None,
        "compile_cache_counts": cache_counts if optimized and compile_model else None,
        "fuse_qkv": fused,
    }
    if whole is not None:
        scope = {"compile_scope": whole_step.compile_scope} if whole_step.compiled else {}
        result.update(whole_step=True, captured=whole_step.capture, bf16_weight_copies=whole_step.bf16_weight_copies, **scope)
    if device.type == "cuda":
        result["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated(device))
    else:  # process-wide peak resident set (ru_maxrss is KiB on Linux): includes earlier cases
        result["peak_rss_bytes_process"] = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    result.update(flops_figures(config, batches, steps_per_second, device=device, matmul_flops=matmul_flops))
    # the diagnostics run after the timing: one that fails leaves the figures above standing
    if profile > 0:
        result["profile"] = guarded(profile_steps, lambda i: step(warmup + steps + i), profile, device)
    if optimized and device.type == "cuda":
        result["host_syncs"] = guarded(host_syncs, lambda i: step(warmup + steps + profile + i), 3, device)
    if whole_step is not None:
        result["random_stream"] = guarded(random_stream_check, whole_step, optimizer, batches[0])
    return result


def random_stream_check(whole_step: WholeTrainingStep, optimizer: torch.optim.Optimizer, batch: dict, steps: int = 3) -> dict:
    """Whether each replay of a whole step draws new random numbers (dropout, the generator's samples): ``steps``
    steps on one batch at learning rate 0 leave the weights as they are, so their losses differ only through
    the random draws. All equal would mean that a captured graph replays frozen random numbers: the same
    dropout masks and replacements every step."""
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    losses = [float(whole_step(batch).detach()) for _ in range(steps)]
    return {"losses_at_lr_0": [round(v, 6) for v in losses], "fresh": len(set(losses)) > 1}


def loss_check(config: ElectraPretrainingConfig, batches: list[dict], *, device: torch.device, steps: int, seed: int) -> dict:
    """The eager step (the Trainer's arithmetic, one kernel at a time) against the captured whole step (eager
    kernels in one CUDA graph; uncaptured off CUDA) over ``steps`` steps from the same initial weights on the
    same batches: each step's loss, the largest relative difference, and the peak device memory of each.
    The random streams differ (the capture's warm-up draws numbers; graph replays draw their own), so the
    losses agree as two runs of one computation do, not bit for bit."""
    curves: dict[str, list[float]] = {"eager": [], "captured": []}
    runs = {}
    for name, whole in (("eager", None), ("captured", "captured")):
        runs[name] = run_loop(
            config, batches, device=device, optimized=True, compile_model=False, steps=steps, warmup=0, seed=seed,
            whole=whole, losses=curves[name],
        )  # fmt: skip
    diffs = [abs(a - b) / max(abs(a), 1e-9) for a, b in zip(curves["eager"], curves["captured"], strict=True)]
    memory = {name: run.get("peak_memory_bytes") for name, run in runs.items()}
    return {
        "steps": steps,
        "losses": {name: [round(v, 5) for v in curve] for name, curve in curves.items()},
        "max_relative_difference": round(max(diffs), 5),
        "mean_relative_difference": round(sum(diffs) / len(diffs), 5),
        "last_10_mean": {name: round(sum(curve[-10:]) / len(curve[-10:]), 5) for name, curve in curves.items()},
        "captured": runs["captured"].get("captured"),
        "peak_memory_bytes": memory,
        "peak_memory_ratio": round(memory["captured"] / memory["eager"], 3) if memory["eager"] else None,
    }


def guarded(fn, *args, **kwargs) -> dict:
    """``fn(...)``, or ``{"error": ..., "exception": ...}`` when it raises, so that the other cases (and the
    figures already taken) still report. Running out of device memory is expected (the naive loop's eager
    attention at sequence 512, say); any other exception is a failure of the bench: its traceback goes to
    stderr and :func:`failures` names it, so ``main`` exits with status 1 after the report is written."""
    try:
        return fn(*args, **kwargs)
    except torch.OutOfMemoryError as exc:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return {"error": f"out of memory: {str(exc).splitlines()[0]}", "exception": "OutOfMemoryError"}
    except Exception as exc:  # noqa: BLE001 - recorded in the report and re-raised as the exit status
        traceback.print_exc(file=sys.stderr)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        first = (str(exc).splitlines() or [""])[0]
        return {"error": f"{type(exc).__name__}: {first}", "exception": type(exc).__name__}


def failures(report: dict) -> list[str]:
    """The report's failures: every ``guarded`` result that raised something other than running out of
    memory, as ``"<where>: <error>"``. Diagnostics that failed (``profile``, ``host_syncs``, the matmul
    rate) are listed too; running out of memory is a finding, not a failure."""
    found = []

    def visit(node, where: str) -> None:
        if isinstance(node, dict):
            if node.get("exception") not in (None, "OutOfMemoryError"):
                found.append(f"{where}: {node['error']}")
            for key, value in node.items():
                visit(value, f"{where}.{key}" if where else key)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                visit(value, f"{where}[{i}]")

    visit(report, "")
    return found


def write_report(report: dict, path: Path) -> None:
    """The report as JSON at ``path``, atomically (:func:`bioelectra.textio.atomic_write_text`): written after
    every case, so a bench that dies later keeps the cases it finished."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(report, indent=2) + "\n")


def make_parser() -> argparse.ArgumentParser:
    """The bench's command line (``--help`` lists it)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases",
        default="small:128:128,base:128:128,base:512:32",
        help="size:seq_len[:batch_size], comma-separated",
    )
    parser.add_argument("--batch-size", type=int, default=None, help="overrides every case's batch size")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per loop")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (compilation, allocator)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--compile", action="store_true", help="torch.compile the optimized loop's model")
    parser.add_argument("--compile-scope", default="step", choices=COMPILE_SCOPES,
                        help="the compiled whole-step loops: the forward pass and the update (step) or each layer alone (layers)")
    parser.add_argument("--compile-mode", default="default", choices=COMPILE_MODES,
                        help="the compiled loops: torch.compile's mode (hparam compile_mode; max-autotune-no-cudagraphs "
                             "autotunes; the captured loops refuse the modes with inductor's own CUDA graphs)")
    parser.add_argument("--compile-options", type=json_object, default=None, metavar="JSON",
                        help='the compiled loops: inductor options over the mode\'s (hparam compile_options), e.g. '
                             '\'{"combo_kernels": true}\'')
    parser.add_argument("--fuse-qkv", action="store_true",
                        help="the optimized loops: query, key and value as one projection (hparam fuse_qkv)")
    parser.add_argument("--bf16-weight-copies", action="store_true",
                        help="the whole-step loops with bf16 autocast (CUDA): the forward pass reads bf16 copies of the "
                             "linear layers' weights that the update writes (hparam bf16_weight_copies)")
    parser.add_argument(
        "--fused-adamw",
        action="store_true",
        help="CUDA: torch's fused AdamW (with bias correction) instead of ELECTRA's foreach AdamW",
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the naive fp32 eager loop")
    parser.add_argument("--whole-loops", default="", metavar="LOOPS",
                        help=f"comma-separated loops of the whole training step after the others: {', '.join(WHOLE_LOOPS)}")
    parser.add_argument("--loss-check", type=int, default=0, metavar="STEPS",
                        help="per case, the eager and the captured step's losses over STEPS steps (loss_check)")
    parser.add_argument("--compile-cache", type=Path, default=None, metavar="FILE",
                        help="torch.compile's cache artifacts: loaded first when FILE exists, written at the end")
    parser.add_argument("--vocab-size", type=int, default=BIO_ELECTRA_VOCAB_SIZE)
    parser.add_argument(
        "--layers", type=int, default=None, help="override the discriminator's layers (CPU smoke)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--matmul", action="store_true", help="CUDA: measure the bf16 matmul rate (MFU denominator)")
    parser.add_argument("--profile", type=int, default=0, help="profile this many optimized steps of every case")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON report here")
    parser.add_argument("--markdown", type=Path, nargs="+", default=None, metavar="REPORT.json",
                        help="print a written report (and a --compile one of the same cases) as Markdown; runs nothing")  # fmt: skip
    return parser


def run_case(
    case: str, args: argparse.Namespace, *, device: torch.device, matmul_flops: float | None, whole_loops: list[str]
) -> dict:
    """One ``size:seq_len[:batch_size]`` case of ``--cases``: its model and batches, the optimized loop, the naive
    one (unless ``--no-baseline``), the ``--whole-loops`` and the ``--loss-check``, each :func:`guarded`."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
    size, seq, *rest = case.rsplit(":", 2) if case.count(":") >= 2 else case.split(":")
    seq_len = int(seq)
    config, model_size = case_config(size, args.vocab_size, seq_len, args.layers)
    # the collator's cap, as pretrain train sets it: fixed prediction slots, no host synchronisation
    config.max_predictions_per_seq = max_predictions_per_seq(config.mask_prob, seq_len)
    batch = args.batch_size or (int(rest[0]) if rest else DEFAULT_BATCH[model_size])
    batches = make_batches(4, batch, seq_len, config.discriminator_config.vocab_size, config.mask_prob, args.seed)
    entry = {
        "size": size,
        "discriminator": {
            k: getattr(config.discriminator_config, k)
            for k in ("hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size")
        },
        "generator_hidden_size": config.generator_config.hidden_size,
        "seq_len": seq_len,
        "batch_size": batch,
        "layers": config.discriminator_config.num_hidden_layers,
    }
    common = dict(
        device=device,
        compile_model=args.compile,
        step_options={"compile_scope": args.compile_scope, "compile_options": args.inductor_options,
                      "bf16_weight_copies": args.bf16_weight_copies},  # fmt: skip
        fuse_qkv=args.fuse_qkv,
        fused_adamw=args.fused_adamw,
        steps=args.steps,
        warmup=args.warmup,
        seed=args.seed,
    )
    entry["optimized"] = guarded(
        run_loop,
        config,
        batches,
        optimized=True,
        profile=args.profile,
        matmul_flops=matmul_flops,
        **common,
    )
    if not args.no_baseline:
        entry["naive"] = guarded(run_loop, config, batches, optimized=False, **common)
        if "error" not in entry["optimized"] and "error" not in entry["naive"]:
            ratio = entry["optimized"]["steps_per_second"] / entry["naive"]["steps_per_second"]
            entry["speedup"] = round(ratio, 3)
    for name in whole_loops:
        if device.type == "cuda":
            torch.cuda.empty_cache()
        mode, compiled = WHOLE_LOOPS[name]
        loop = guarded(
            run_loop, config, batches, optimized=True, whole=mode, profile=args.profile, matmul_flops=matmul_flops,
            **{**common, "compile_model": compiled},
        )  # fmt: skip
        naive = entry.get("naive", {})
        if "error" not in loop and naive and "error" not in naive:
            loop["speedup"] = round(loop["steps_per_second"] / naive["steps_per_second"], 3)
        entry[name] = loop
    if args.loss_check > 0:
        entry["loss_check"] = guarded(
            loss_check, config, batches, device=device, steps=args.loss_check, seed=args.seed
        )
    return entry


def json_object(text: str) -> dict:
    """``--compile-options``: a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> dict:
    parser = make_parser()
    args = parser.parse_args(argv)
    whole_loops = [name for name in args.whole_loops.split(",") if name]
    unknown = sorted(set(whole_loops) - set(WHOLE_LOOPS))
    if unknown:
        parser.error(f"--whole-loops: unknown {', '.join(unknown)}; expected some of {', '.join(WHOLE_LOOPS)}")
    if args.markdown:
        reports = [read_report(p) for p in args.markdown]
        bench_reports = [r for r in reports if not is_train_report(r)]
        for i, path in enumerate(args.markdown):
            if is_train_report(reports[i]):  # its case found here, so that an error names its file
                try:
                    reports[i] = train_as_report(reports[i], bench_reports)
                except ValueError as exc:
                    parser.error(f"--markdown {path}: {exc}")
        print(markdown(*reports), end="")
        return {}  # nothing ran: nothing failed

    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    capture = device.type == "cuda" and any(WHOLE_LOOPS[name][0] == "captured" for name in whole_loops)
    try:
        args.inductor_options = inductor_options(args.compile_mode, args.compile_options, capture=capture)
    except ValueError as exc:
        parser.error(f"--compile-mode / --compile-options: {exc}")
    report = {
        "device": device_name(device),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cases": [],
    }
    if args.compile_cache is not None:
        report["compile_cache"] = {"file": str(args.compile_cache), "loaded": load_compile_cache(args.compile_cache)}
    matmul_flops = None
    if args.matmul and device.type == "cuda":
        rate = guarded(lambda: {"flops": measured_matmul_flops(device)})
        if "error" in rate:
            report["measured_bf16_matmul"] = rate
        else:
            matmul_flops = rate["flops"]
            report["measured_bf16_matmul_flops"] = round(matmul_flops, -9)
    for case in args.cases.split(","):
        entry = run_case(case, args, device=device, matmul_flops=matmul_flops, whole_loops=whole_loops)
        report["cases"].append(entry)
        print(json.dumps(entry), file=sys.stderr, flush=True)
        if args.compile_cache is not None:  # after every case: a bench stopped at its time limit keeps the cache
            report["compile_cache"]["written_bytes"] = guarded(lambda: {"bytes": save_compile_cache(args.compile_cache)})
        if args.output is not None:
            write_report(report, args.output)
    print(json.dumps(report, indent=2))
    if args.output is not None:
        write_report(report, args.output)
    return report


def cli(argv: list[str] | None = None) -> int:
    """:func:`main`, then the exit status: 1 when :func:`failures` finds any (each printed), else 0."""
    failed = failures(main(argv))
    for failure in failed:
        print(f"error: {failure}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(cli())
