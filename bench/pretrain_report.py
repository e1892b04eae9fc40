"""A report of ``bench/pretrain_throughput.py`` as Markdown: the README's throughput table (each case's loops
against the naive loop, MFU, the targets) and what limits each case. Run through
``pretrain_throughput.py --markdown REPORT.json [MORE.json ...]``; reads JSON only, needs no torch.

Several reports of one device merge by case (size, sequence length, batch): an eager bench and a compiled one
(``campaign.py step-bench`` writes them apart, ``bench/results/`` keeps them) make one table.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The targets on one H100 by (size, sequence length, batch): (figure, minimum, where the bar comes from).
#: Issue 45's bars (the whole training step); the first GPU issue's were 35 steps/s for ELECTRA-Small.
TARGETS: dict[tuple[str, int, int], tuple[str, float, str]] = {
    ("small", 128, 128): ("steps_per_second", 100.0, "about 15% MFU; the original ELECTRA-Small took 4 days for 1 M steps on a V100: about 2.9 steps/s"),
    ("small", 128, 512): ("sequences_per_second", 16000.0, "the batch where sequences/s levels off"),
    ("base", 128, 128): ("sequences_per_second", 3000.0, "NVIDIA's TF2 ELECTRA-Base: 955 sequences/s on an A100 with AMP"),
    ("base", 512, 32): ("sequences_per_second", 550.0, "issue 14's bar for long sequences"),
}  # fmt: skip

#: The table's loop columns: (heading, how a loop is recognised in a case: its key and whether it is compiled).
LOOP_COLUMNS: tuple[tuple[str, str, bool | None], ...] = (
    ("naive fp32", "naive", None),
    ("eager step", "optimized", False),
    ("compiled step", "optimized", True),
    ("captured (eager kernels)", "captured", None),
    ("compiled + captured", "compiled_captured", None),
)


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
    coordinate_descent_tuning"``: those set true by name, others as ``name=value``), and ``fuse_qkv``
    (``"fused QKV"``); ``""`` for none."""
    parts = []
    if loop.get("compiled") and loop.get("compile_scope") not in (None, "", "step"):
        parts.append(f"{loop['compile_scope']} scope")
    if loop.get("compiled") and loop.get("compile_options"):
        options = loop["compile_options"]
        parts.append("inductor " + ", ".join(k if v is True else f"{k}={v}" for k, v in sorted(options.items())))
    if loop.get("fuse_qkv"):
        parts.append("fused QKV")
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
    """The fastest loop other than the naive one (heading, loop)."""
    ok = [(h, loop) for h, loop in loops.items() if h != "naive fp32" and "error" not in loop and loop.get("steps_per_second")]
    return max(ok, key=lambda item: item[1]["steps_per_second"], default=(None, {}))


def _row(key: tuple[str, int, int, str], loops: dict[str, dict]) -> str:
    size, seq, batch, _ = key
    cells = []
    for heading, _, _ in LOOP_COLUMNS:
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


def markdown(report: dict, *more: dict | None) -> str:
    """``pretrain_throughput.py`` reports of one device as Markdown for a README: one row per case (merged over the
    reports by :func:`merged_cases`) with each loop's steps/s, the fastest loop, its same-run ratio over the naive
    fp32 loop, its sequences/s and MFU against the measured bf16 matmul rate, and the target of :data:`TARGETS`
    met or not by it; then what limits each case, loop by loop (:func:`_limits`). A figure that is not there is
    ``-``; a loop that failed is ``failed``."""
    reports = [report, *(r for r in more if r)]
    matmul = report.get("measured_bf16_matmul_flops")
    headings = " | ".join(h for h, _, _ in LOOP_COLUMNS)
    lines = [f"Device: {report.get('device', '-')}, torch {report.get('torch', '-')}; measured bf16 matmul rate: "
             + (f"{matmul / 1e12:.0f} TFLOP/s" if matmul else "-") + ". Steps/s per loop:", "",
             f"| case | batch x length | {headings} | fastest | x naive | sequences/s | MFU (measured matmul) | target |",
             "|---|---|" + "---:|" * len(LOOP_COLUMNS) + "---|---:|---:|---:|---|"]  # fmt: skip
    limits = []
    for key, loops in merged_cases(reports):
        lines.append(_row(key, loops))
        limits += _limits(key, loops)
    if limits:
        lines += ["", "What limits each case (torch.profiler over each loop's steps; host synchronisations counted "
                  "with torch.cuda.set_sync_debug_mode):", "", *limits]  # fmt: skip
    return "\n".join(lines) + "\n"


def read_report(path: Path) -> dict:
    """A report written by ``--output``, for ``--markdown``.

    Raises:
        SystemExit: ``path`` is missing, is not JSON (the line and column named), or holds no ``cases`` list.
    """
    try:
        report = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"error: {path}: no such file (expected a report written by --output)") from None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"error: {path}: line {exc.lineno}, column {exc.colno}: not JSON ({exc.msg}); "
                         "expected a report written by --output") from None  # fmt: skip
    if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
        raise SystemExit(f"error: {path}: no \"cases\" list; expected a report written by --output")
    return report
