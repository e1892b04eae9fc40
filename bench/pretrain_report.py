"""A report of ``bench/pretrain_throughput.py`` as Markdown: the README's throughput table (each case's loops
against the naive loop, MFU, the targets), each compiled loop's compile time and what limits each case. Run
through ``pretrain_throughput.py --markdown REPORT.json [MORE.json ...]``; reads JSON only, needs no torch.

Several reports of one device merge by case (size, sequence length, batch): an eager bench and a compiled one
(``campaign.py step-bench`` writes them apart, ``bench/results/`` keeps them) make one table. A ``step-train.json``
(``step-bench``'s ``train`` part: ``pretrain train`` of a case, its speed per log window) joins its case as the
`pretrain train` column, beside the bench's loops of the same model and batch.
"""

from __future__ import annotations

import json
from pathlib import Path

from bioelectra.compile_records import cache_served

#: The targets of the whole training step on one H100 by (size, sequence length, batch): (figure, minimum,
#: where the bar comes from).
TARGETS: dict[tuple[str, int, int], tuple[str, float, str]] = {
    ("small", 128, 128): ("steps_per_second", 100.0, "about 15% MFU; the original ELECTRA-Small took 4 days for 1 M steps on a V100: about 2.9 steps/s"),
    ("small", 128, 512): ("sequences_per_second", 16000.0, "the batch where sequences/s levels off"),
    ("base", 128, 128): ("sequences_per_second", 3000.0, "NVIDIA's TF2 ELECTRA-Base: 955 sequences/s on an A100 with AMP"),
    ("base", 512, 32): ("sequences_per_second", 550.0, "the bar for long sequences (512 tokens: ELECTRA-Base's pre-training length)"),
}  # fmt: skip

#: The heading of ``pretrain train``'s column: the real path (Trainer, data loader, logs, evaluations, saves),
#: from a ``step-train.json``; never a case's "fastest" loop, which is the bench's.
TRAIN_HEADING = "`pretrain train`"

#: ``pretrain train`` at no less than this share of the bench's fastest loop of the same model and batch: the
#: real path (data loader, logs, evaluations, saves) may cost at most a tenth of the step's speed.
TRAIN_FRACTION_BAR = 0.9

#: The bar for compile time on the device: at most 60 s to the first fast step, a few percent of a short run.
COMPILE_SECONDS_BAR = 60.0

#: The table's loop columns: (heading, how a loop is recognised in a case: its key and whether it is compiled).
LOOP_COLUMNS: tuple[tuple[str, str, bool | None], ...] = (
    ("naive fp32", "naive", None),
    ("eager step", "optimized", False),
    ("compiled step", "optimized", True),
    ("whole step, uncaptured", "whole", None),
    ("whole step compiled, uncaptured", "whole_compiled", None),
    ("captured (eager kernels)", "captured", None),
    ("compiled + captured", "compiled_captured", None),
    (TRAIN_HEADING, "pretrain_train", None),
)

#: Columns shown only where some case has a figure for them (the others are always shown, ``-`` where none).
OPTIONAL_COLUMNS = frozenset({"whole step, uncaptured", "whole step compiled, uncaptured", TRAIN_HEADING})


def case_label(size: str) -> str:
    """``ELECTRA-Small`` for ``small``; for a ``--hparams`` file, its folder's name (``bioelectra-small``)."""
    return Path(size).parent.name or Path(size).stem if size.endswith(".json") else f"ELECTRA-{size.capitalize()}"


def _num(value, fmt: str = ".1f") -> str:
    return "-" if value is None else format(value, fmt)


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def loop_variant(loop: dict) -> str:
    """What sets a loop apart from the same case's others, for its own row: a compiled loop's ``compile_scope``
    other than ``step`` (``"layers scope"``), its inductor options (``"inductor max_autotune,
    coordinate_descent_tuning"``: those set true by name, others as ``name=value``), ``fuse_qkv`` (``"fused QKV"``)
    and ``bf16_weight_copies`` (``"bf16 weight copies"``); ``""`` for none."""
    parts = []
    if loop.get("compiled") and loop.get("compile_scope") not in (None, "", "step"):
        parts.append(f"{loop['compile_scope']} scope")
    if loop.get("compiled") and loop.get("compile_options"):
        options = loop["compile_options"]
        parts.append("inductor " + ", ".join(k if v is True else f"{k}={v}" for k, v in sorted(options.items())))
    if loop.get("fuse_qkv"):
        parts.append("fused QKV")
    if loop.get("bf16_weight_copies"):
        parts.append("bf16 weight copies")
    return ", ".join(parts)


def merged_cases(reports: list[dict]) -> list[tuple[tuple[str, int, int, str], dict[str, dict]]]:
    """The cases of ``reports`` merged by (size, sequence length, batch, :func:`loop_variant`), in order of first
    appearance: for each, the loops of :data:`LOOP_COLUMNS` by heading (the first report that has one wins). A
    variant's row (another compile scope, the fused projection) takes the naive loop of the case's plain row for
    its ratio when it has none of its own."""
    merged: dict[tuple[str, int, int, str], dict[str, dict]] = {}
    for report in reports:
        for case in report.get("cases", []):
            for heading, key, compiled in LOOP_COLUMNS:
                loop = case.get(key)
                if loop is None:
                    continue
                if compiled is not None and bool(loop.get("compiled")) != compiled and "error" not in loop:
                    continue
                if compiled is True and "error" in loop:
                    continue  # a failed optimized loop counts as the eager step's
                loops = merged.setdefault((case["size"], case["seq_len"], case["batch_size"], loop_variant(loop)), {})
                loops.setdefault(heading, loop)
    for (size, seq, batch, variant), loops in merged.items():
        plain = merged.get((size, seq, batch, ""), {})
        if variant and "naive fp32" not in loops and "naive fp32" in plain:
            loops["naive fp32"] = plain["naive fp32"]
    return [(key, {h: loops[h] for h, _, _ in LOOP_COLUMNS if h in loops}) for key, loops in merged.items()]


def _label(key: tuple[str, int, int, str]) -> str:
    size, _, _, variant = key
    return case_label(size) + (f" ({variant})" if variant else "")


def _best(loops: dict[str, dict]) -> tuple[str | None, dict]:
    """The bench's fastest loop other than the naive one (heading, loop); ``pretrain train`` is not the bench's."""
    ok = [(h, loop) for h, loop in loops.items()
          if h not in ("naive fp32", TRAIN_HEADING) and "error" not in loop and loop.get("steps_per_second")]  # fmt: skip
    return max(ok, key=lambda item: item[1]["steps_per_second"], default=(None, {}))


def _row(key: tuple[str, int, int, str], loops: dict[str, dict], headings: list[str]) -> str:
    size, seq, batch, _ = key
    cells = []
    for heading in headings:
        loop = loops.get(heading)
        cells.append("-" if loop is None else ("failed" if "error" in loop else _num(loop.get("steps_per_second"), ".2f")))
    heading, best = _best(loops)
    naive = (loops.get("naive fp32") or {}).get("steps_per_second")
    ratio = f"x{best['steps_per_second'] / naive:.2f}" if best and naive else "-"
    target, target_cell = TARGETS.get((size, seq, batch)), "-"
    if target is not None:
        figure, bar, _ = target
        met = (best.get(figure) or 0) >= bar
        target_cell = f">= {bar:,.0f} {figure.split('_')[0]}/s on an H100: " + ("met" if met else "not met")
        if not met and "compiled + captured" not in loops:
            target_cell += " (no compiled + captured figure)"
    return (f"| {_label(key)} | {batch} x {seq} | " + " | ".join(cells) + f" | {heading or '-'} | {ratio} | "
            f"{_num(best.get('sequences_per_second'), ',.0f')} | {_pct(best.get('mfu_measured'))} | {target_cell} |")  # fmt: skip


def _limits(key: tuple[str, int, int, str], loops: dict[str, dict]) -> list[str]:
    """What limits the case, per loop profiled: device-busy share, kernels, device time by group, host
    synchronisations, and the time to the first fast step of a compiled or captured loop."""
    _, seq, batch, _ = key
    lines = []
    for heading, loop in loops.items():
        if "error" in loop:
            continue
        if heading == TRAIN_HEADING:
            lines.append(f"- {_label(key)}, {batch} x {seq}, {heading}: " + _train_line(loop, _best(loops)[1]) + ".")
            continue
        profile, syncs, parts = loop.get("profile") or {}, loop.get("host_syncs") or {}, []
        if profile.get("kernel_launches_per_step"):  # device kernels were seen (CUDA); a CPU profile has none
            groups = ", ".join(f"{g} {1000 * t:.2f} ms" for g, t in list(profile.get("device_seconds_per_step_by_group", {}).items())[:5])
            parts.append(f"device busy {1000 * profile['device_busy_seconds_per_step']:.2f} ms per step "
                         f"({_pct(profile.get('device_busy_fraction'))} of the profiled step), "
                         f"{_num(profile.get('kernel_launches_per_step'), ',.0f')} kernel launches"
                         + (f"; by group: {groups}" if groups else ""))  # fmt: skip
        if syncs.get("host_syncs_per_step") is not None:
            where = ", ".join(f"{k} ({v})" for k, v in syncs.get("where", {}).items())
            parts.append(f"{syncs['host_syncs_per_step']:g} host synchronisations per step" + (f" at {where}" if where else ""))
        if parts and loop.get("step_seconds"):
            parts.insert(0, f"{1000 * loop['step_seconds']:.2f} ms per step unprofiled")
        if parts and (loop.get("compiled") or loop.get("captured")) and loop.get("warmup_seconds") is not None:
            parts.append(f"{loop['warmup_seconds']:.1f} s to the first fast step")
        if parts:
            lines.append(f"- {_label(key)}, {batch} x {seq}, {heading}: " + "; ".join(parts) + ".")
    return lines


def compile_time_lines(reports: list[dict]) -> list[str]:
    """A table of every compiled loop's time to its first fast step (``warmup_seconds``: compilation, the warm-up
    steps and the capture), report by report (the same case compiled from nothing and from a carried cache are
    two rows), with the cache its report loaded (``compile_cache``), how torch's caches served its graphs
    (``compile_cache_counts``; absent from older reports) and :data:`COMPILE_SECONDS_BAR`; ``[]`` where no loop compiled.
    A compiled ``pretrain train`` run's row is its first step (:func:`train_as_report`)."""
    rows = []
    for report in reports:
        carried = report.get("compile_cache")
        cache = "-" if carried is None else ("loaded" if carried.get("loaded") else "none loaded")
        for case in report.get("cases", []):
            for heading, key, compiled in LOOP_COLUMNS:
                loop = case.get(key) or {}
                if "error" in loop or not loop.get("compiled") or compiled is False or loop.get("warmup_seconds") is None:
                    continue
                label = _label((case["size"], case["seq_len"], case["batch_size"], loop_variant(loop)))
                counts, seconds = loop.get("compile_cache_counts"), loop["warmup_seconds"]
                met = "met" if seconds <= COMPILE_SECONDS_BAR else "not met"
                rows.append(f"| {label} | {case['batch_size']} x {case['seq_len']} | {heading} | {cache} | "
                            f"{cache_served(counts, 'inductor')} | {cache_served(counts, 'aot_autograd')} | "
                            f"{seconds:,.1f} | {met} |")  # fmt: skip
    if not rows:
        return []
    return ["", "Time to the first fast step of each compiled loop (its warm-up steps: compilation, the first steps "
            f"and the capture; for {TRAIN_HEADING}, its first step), with the compile cache its run loaded "
            "(`--compile-cache`, the hparam `compile_cache`) and the graphs torch's "
            f"caches served (a carried cache's, or the machine's own cache folders'); the bar is <= "
            f"{COMPILE_SECONDS_BAR:.0f} s:", "",
            "| case | batch x length | loop | compile cache | inductor graphs from a cache | AOT autograd graphs "
            f"from a cache | seconds to the first fast step | <= {COMPILE_SECONDS_BAR:.0f} s |",
            "|---|---|---|---|---:|---:|---:|---|", *rows]  # fmt: skip


def _train_line(loop: dict, best: dict) -> str:
    """``pretrain train``'s speed against the bench's fastest loop of its case, and :data:`TRAIN_FRACTION_BAR`."""
    how = ", ".join(part for part in (f"train_step {loop['train_step']}" if loop.get("train_step") else "",
                                      "compiled" if loop.get("compiled") else "") if part)  # fmt: skip
    text = (f"median {loop['steps_per_second']:.2f} steps/s over {loop.get('windows', '-')} log windows after the "
            "first" + (f" ({how})" if how else ""))  # fmt: skip
    if best.get("steps_per_second"):
        share = loop["steps_per_second"] / best["steps_per_second"]
        met = "met" if share >= TRAIN_FRACTION_BAR else "not met"
        text += (f", {_pct(share)} of the bench's fastest loop ({best['steps_per_second']:.2f} steps/s): "
                 f">= {TRAIN_FRACTION_BAR:.0%} {met}")  # fmt: skip
    return text


def is_train_report(report: dict) -> bool:
    """Whether ``report`` is a ``step-train.json`` (``pretrain train``'s speed), not a bench report."""
    return isinstance(report, dict) and "median_steps_per_second" in report and "cases" not in report


def train_as_report(train: dict, reports: list[dict]) -> dict:
    """A ``step-train.json`` as a bench report of one case whose ``pretrain_train`` loop is the run's median
    window. Its case is its ``case`` (size, seq_len, batch_size; absent from older files), its row the bench's
    loops with the same ``compile_scope``, ``fuse_qkv``, ``compile_options`` and ``bf16_weight_copies``
    (:func:`loop_variant`); an older one's case is that of ``reports`` whose fastest loop ran at its
    ``bench_best_steps_per_second`` (how ``step-bench`` chose that figure). A compiled run's
    ``first_compiled_step`` (``pretrain train``'s ``first_compiled_step.json``, where present) gives the loop its
    ``warmup_seconds`` and ``compile_cache_counts`` and the report its ``compile_cache``, for
    :func:`compile_time_lines`.

    Raises:
        ValueError: no median (the run logged no window), or no case and none or several that match."""
    median = train.get("median_steps_per_second")
    if not median:
        raise ValueError("a step-train report without a median: the run logged no speed window")
    case = train.get("case")
    if case is None:
        best = train.get("bench_best_steps_per_second")
        found = {key[:3] for key, loops in merged_cases(reports)
                 if best and abs((_best(loops)[1].get("steps_per_second") or 0) - best) <= 1e-3 * best}  # fmt: skip
        if len(found) != 1:
            raise ValueError(f"a step-train report without its \"case\", and {len(found)} cases of the bench "
                             f"reports whose fastest loop ran at its bench_best_steps_per_second ({best}): give the "
                             "bench report of the run's model beside it")  # fmt: skip
        size, seq, batch = found.pop()
        case = {"size": size, "seq_len": seq, "batch_size": batch}
    windows = train.get("windows") or []
    loop = {"steps_per_second": median, "sequences_per_second": median * case["batch_size"],
            "compiled": bool(train.get("torch_compile")), "train_step": train.get("train_step"),
            "windows": max(len(windows) - 1, 1) if windows else None,
            **{k: train[k] for k in ("compile_scope", "fuse_qkv", "compile_options", "bf16_weight_copies") if k in train}}  # fmt: skip
    first = train.get("first_compiled_step") or {}
    if first.get("seconds") is None:
        return {"cases": [{**case, "pretrain_train": loop}]}
    loop.update(warmup_seconds=first["seconds"], compile_cache_counts=first.get("compile_cache_counts"))
    carried = {"file": first.get("compile_cache"), "loaded": bool(first.get("compile_cache_loaded"))}
    return {"cases": [{**case, "pretrain_train": loop}], "compile_cache": carried}


def markdown(report: dict, *more: dict | None) -> str:
    """``pretrain_throughput.py`` reports of one device as Markdown for a README: one row per case (merged over the
    reports by :func:`merged_cases`) with each loop's steps/s, the fastest loop, its same-run ratio over the naive
    fp32 loop, its sequences/s and MFU against the measured bf16 matmul rate, and the target of :data:`TARGETS`
    met or not by it; then each compiled loop's time to its first fast step (:func:`compile_time_lines`) and what
    limits each case, loop by loop (:func:`_limits`). A figure that is not there is
    ``-``; a loop that failed is ``failed``. A ``step-train.json`` among them (:func:`is_train_report`) gives its
    case the `pretrain train` column (:func:`train_as_report`); the columns of :data:`OPTIONAL_COLUMNS` show only
    where some case has a figure for them.

    Raises:
        ValueError: a step-train report that no case matches (:func:`train_as_report`)."""
    given = [report, *(r for r in more if r)]
    reports = [r for r in given if not is_train_report(r)]
    reports += [train_as_report(r, reports) for r in given if is_train_report(r)]
    first = reports[0] if reports else {}
    matmul = first.get("measured_bf16_matmul_flops")
    cases = merged_cases(reports)
    shown = [h for h, _, _ in LOOP_COLUMNS if h not in OPTIONAL_COLUMNS or any(h in loops for _, loops in cases)]
    lines = [f"Device: {first.get('device', '-')}, torch {first.get('torch', '-')}; measured bf16 matmul rate: "
             + (f"{matmul / 1e12:.0f} TFLOP/s" if matmul else "-") + ". Steps/s per loop:", "",
             f"| case | batch x length | {' | '.join(shown)} | fastest | x naive | sequences/s | MFU (measured matmul) | target |",
             "|---|---|" + "---:|" * len(shown) + "---|---:|---:|---:|---|"]  # fmt: skip
    limits = []
    for key, loops in cases:
        lines.append(_row(key, loops, shown))
        limits += _limits(key, loops)
    lines += compile_time_lines(reports)
    if limits:
        lines += ["", "What limits each case (torch.profiler over each loop's steps; host synchronisations counted "
                  "with torch.cuda.set_sync_debug_mode):", "", *limits]  # fmt: skip
    return "\n".join(lines) + "\n"


def read_report(path: Path) -> dict:
    """A report written by ``--output``, for ``--markdown``.

    Raises:
        SystemExit: ``path`` is missing, is not JSON (the line and column named), or holds neither a ``cases``
            list nor a step-train report's ``median_steps_per_second``.
    """
    try:
        report = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"error: {path}: no such file (expected a report written by --output)") from None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"error: {path}: line {exc.lineno}, column {exc.colno}: not JSON ({exc.msg}); "
                         "expected a report written by --output") from None  # fmt: skip
    if is_train_report(report):
        return report
    if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
        raise SystemExit(f"error: {path}: no \"cases\" list; expected a report written by --output "
                         "(or a step-train.json, with median_steps_per_second)")  # fmt: skip
    return report
