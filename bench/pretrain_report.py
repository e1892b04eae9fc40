"""A report of ``bench/pretrain_throughput.py`` as Markdown: the README's throughput table (each case against
the naive loop, MFU, the compiled speed, the targets) and what limits each case. Run through
``pretrain_throughput.py --markdown REPORT.json [COMPILED.json]``; reads JSON only, needs no torch.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The targets on one H100 by (size, sequence length, batch): (figure, minimum, where the bar comes from).
TARGETS: dict[tuple[str, int, int], tuple[str, float, str]] = {
    ("small", 128, 128): ("steps_per_second", 35.0, "the original ELECTRA-Small took 4 days for 1 M steps on a V100: about 2.9 steps/s"),
    ("base", 128, 128): ("sequences_per_second", 3000.0, "NVIDIA's TF2 ELECTRA-Base: 955 sequences/s on an A100 with AMP"),
    ("base", 512, 32): ("sequences_per_second", 550.0, "issue 14's bar for long sequences"),
}  # fmt: skip


def case_label(size: str) -> str:
    """``ELECTRA-Small`` for ``small``; for a ``--hparams`` file, its folder's name (``bioelectra-small``)."""
    return Path(size).parent.name or Path(size).stem if size.endswith(".json") else f"ELECTRA-{size.capitalize()}"


def markdown(report: dict, compiled: dict | None = None) -> str:
    """A report of ``pretrain_throughput.py`` as Markdown for a README: one row per case (ours, the naive loop, their
    same-run ratio, MFU against the measured bf16 matmul rate and against the data sheet, the speed under
    ``torch.compile`` from ``compiled``, a ``--compile`` report of the same cases, and the target of
    :data:`TARGETS`), then what limits each case: the profile's device-busy share, kernel launches and device
    time by kernel group, and the host synchronisations per step. A figure that is not there is ``-``."""

    def num(value, fmt: str = ".1f") -> str:
        return "-" if value is None else format(value, fmt)

    def pct(value) -> str:
        return "-" if value is None else f"{100 * value:.1f}%"

    matmul = report.get("measured_bf16_matmul_flops")
    lines = [f"Device: {report.get('device', '-')}, torch {report.get('torch', '-')}; measured bf16 matmul rate: "
             + (f"{matmul / 1e12:.0f} TFLOP/s" if matmul else "-") + ".", "",
             "| case | batch x length | steps/s | sequences/s | naive fp32 eager steps/s | same-run ratio | MFU (measured matmul) "
             "| MFU (data sheet) | compiled steps/s (x eager) | target |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    limits = []
    for case in report.get("cases", []):
        opt, naive = case.get("optimized", {}), case.get("naive", {})
        label = case_label(case["size"])
        same = next((c for c in (compiled or {}).get("cases", [])
                     if (c["size"], c["seq_len"], c["batch_size"]) == (case["size"], case["seq_len"], case["batch_size"])), {})  # fmt: skip
        fast = same.get("optimized", {})
        compiled_cell = ("failed" if "error" in fast else f"{num(fast.get('steps_per_second'))} (x{num(same.get('speedup_over_eager'), '.2f')})") if fast else "-"
        target = TARGETS.get((case["size"], case["seq_len"], case["batch_size"]))
        target_cell = "-"
        if target is not None:
            figure, bar, _ = target
            best = max((f.get(figure) or 0.0 for f in (opt, fast) if "error" not in f), default=0.0)
            target_cell = f">= {bar:,.0f} {figure.split('_')[0]}/s on an H100: " + ("met" if best >= bar else "not met")
        if "error" in opt:
            lines.append(f"| {label} | {case['batch_size']} x {case['seq_len']} | failed: {opt['error']} | | | | | | {compiled_cell} | {target_cell} |")
            continue
        lines.append(
            f"| {label} | {case['batch_size']} x {case['seq_len']} | {num(opt.get('steps_per_second'), '.2f')} | "
            f"{num(opt.get('sequences_per_second'), ',.0f')} | "
            + (f"failed: {naive['error']}" if "error" in naive else num(naive.get("steps_per_second"), ".2f"))
            + f" | {('x' + num(case.get('speedup'), '.2f')) if case.get('speedup') else '-'} | {pct(opt.get('mfu_measured'))} | "
            f"{pct(opt.get('mfu'))} | {compiled_cell} | {target_cell} |"
        )  # fmt: skip
        profile, syncs = opt.get("profile") or {}, opt.get("host_syncs") or {}
        parts = []
        if profile.get("kernel_launches_per_step"):  # device kernels were seen (CUDA); a CPU profile has none
            groups = ", ".join(f"{g} {1000 * t:.2f} ms" for g, t in list(profile.get("device_seconds_per_step_by_group", {}).items())[:5])
            parts.append(f"device busy {pct(profile.get('device_busy_fraction'))} of a {1000 * profile['wall_seconds_per_step']:.2f} ms step, "
                         f"{num(profile.get('kernel_launches_per_step'), ',.0f')} kernel launches per step"
                         + (f"; device time per step: {groups}" if groups else ""))  # fmt: skip
        share = opt.get("model_flops_share") or {}
        if share:
            parts.append("model FLOPs: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in share.items()))
        if syncs.get("host_syncs_per_step") is not None:
            where = ", ".join(f"{k} ({v})" for k, v in syncs.get("where", {}).items())
            parts.append(f"{syncs['host_syncs_per_step']:g} host synchronisations per step" + (f" at {where}" if where else ""))
        if parts:
            limits.append(f"- {label}, {case['batch_size']} x {case['seq_len']}: " + "; ".join(parts) + ".")
    if limits:
        lines += ["", "What limits each case (torch.profiler over the optimized loop's steps; host synchronisations "
                  "counted with torch.cuda.set_sync_debug_mode):", "", *limits]  # fmt: skip
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
