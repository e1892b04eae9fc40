"""What ``bench/pretrain_throughput.py`` measures beside a loop's time: the model FLOPs of a training step (the
MFU numerator, counted as its module docstring says), the device's dense bf16 peak and its measured matmul
rate (the denominators), the kernels of profiled steps by group (``torch.profiler``), the host
synchronisations of a step, and the warm-up steps' time and compile-cache counts (:func:`warm_up`). Imported
by ``pretrain_throughput.py`` (and the campaign's ``setup``, for the matmul rate), which puts this folder on
``sys.path``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from bioelectra.configuration import ElectraPretrainingConfig

#: Dense bf16 peak FLOP/s by device name fragment (vendor data sheets, SXM parts, no sparsity).
PEAK_BF16_FLOPS = {"H200": 989.4e12, "H100": 989.4e12, "A100": 312e12, "L40S": 362e12, "A10G": 70e12}


def encoder_flops_per_token(cfg, seq_len: int) -> float:
    """Training FLOPs per token of one ELECTRA encoder (no embeddings lookups), 3 x forward."""
    h, layers, inter = cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size
    per_layer_params = 4 * h * h + 2 * h * inter  # Q, K, V, O and the two FFN matrices
    project = cfg.embedding_size * h if cfg.embedding_size != h else 0
    return 6 * (layers * per_layer_params + project) + 12 * layers * seq_len * h


def model_flops_parts(config: ElectraPretrainingConfig, batch: int, seq_len: int, masked: int) -> dict[str, float]:
    """Model FLOPs of one training step by part (see the module docstring): ``discriminator`` (encoder and
    head), ``generator encoder`` and ``generator vocabulary projection`` (its masked-LM head at the ``masked``
    positions of the batch)."""
    d, g = config.discriminator_config, config.generator_config
    tokens = batch * seq_len
    disc = tokens * (encoder_flops_per_token(d, seq_len) + 6 * (d.hidden_size * d.hidden_size + d.hidden_size))
    return {
        "discriminator": float(disc),
        "generator encoder": float(tokens * encoder_flops_per_token(g, seq_len)),
        "generator vocabulary projection": float(6 * masked * (g.hidden_size * g.embedding_size + g.embedding_size * g.vocab_size)),
    }


def model_flops_per_step(config: ElectraPretrainingConfig, batch: int, seq_len: int, masked: int) -> float:
    """Model FLOPs of one training step: the sum of :func:`model_flops_parts`."""
    return float(sum(model_flops_parts(config, batch, seq_len, masked).values()))


def measured_matmul_flops(device: torch.device, n: int = 8192, repeats: int = 10) -> float:
    """bf16 FLOP/s of an ``n x n x n`` matrix product on random data: the median of ``repeats`` timed
    products after 3 warm-ups (CUDA events). The MFU denominator measured on the machine (device README)."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize(device)
        times.append(start.elapsed_time(end) / 1000.0)
    times.sort()
    return 2 * n**3 / times[len(times) // 2]


#: Kernel-name fragments -> the group a profiled kernel is counted in (first match wins).
KERNEL_GROUPS = (
    ("attention", ("flash", "fmha", "attention", "sdpa", "efficient_attention")),
    ("matmul", ("gemm", "sm90_xmma", "cutlass", "cublas", "matmul", "wgmma", "nvjet")),
    ("optimizer", ("multi_tensor", "foreach", "adam", "fused_adam")),
    ("softmax/cross-entropy", ("softmax", "nll_loss", "cross_entropy", "log_softmax")),
    ("layer_norm", ("layer_norm", "layernorm")),
    ("reduction", ("reduce",)),
    ("copy/cast", ("copy", "cast", "fill", "memcpy", "memset")),
    ("indexing/sampling", ("index", "gather", "scatter", "embedding", "multinomial", "cumsum", "sort", "randperm", "uniform", "exponential", "bernoulli", "random")),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "gelu", "dropout")),
)


def kernel_group(name: str) -> str:
    low = name.lower()
    return next((group for group, keys in KERNEL_GROUPS if any(k in low for k in keys)), "other")


def profile_steps(step_fn, steps: int, device: torch.device, top: int = 15) -> dict:
    """``torch.profiler`` over ``steps`` calls of ``step_fn``: device time and launches per kernel group and the
    ``top`` kernels (:func:`kernel_summary`), the host (CPU) time of the steps, and the share of the wall time
    the device was busy. Off CUDA there are no device kernels: the figures are zeros and empty tables."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    torch.cuda.synchronize(device) if device.type == "cuda" else None
    start = time.perf_counter()
    with profile(activities=activities) as prof:
        for i in range(steps):
            step_fn(i)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    wall = time.perf_counter() - start
    events = ((e.name, e.device_time / 1e6) for e in prof.events() if e.device_type.name == "CUDA")  # us -> s
    summary = kernel_summary(events, steps, top)
    busy = summary.pop("device_busy_seconds")
    return {
        "steps": steps,
        "wall_seconds_per_step": round(wall / steps, 6),
        "device_busy_seconds_per_step": round(busy / steps, 6),
        "device_busy_fraction": round(busy / wall, 4) if wall else None,
        **summary,
    }


def kernel_summary(events: Iterable[tuple[str, float]], steps: int, top: int = 15) -> dict:
    """The device kernels of ``steps`` profiled steps, from ``(kernel name, device seconds)`` per launch:
    launches per step, device seconds and launches per step by :func:`kernel_group` (largest first), and the
    ``top`` kernels by device time (name cut to 120 characters, launches, device seconds per step, group);
    ``device_busy_seconds`` is the sum over all launches."""
    kernels: dict[str, dict] = {}
    for name, seconds in events:
        k = kernels.setdefault(name, {"name": name[:120], "count": 0, "device_seconds": 0.0})
        k["count"] += 1
        k["device_seconds"] += seconds
    groups: dict[str, list] = {}  # group -> [device seconds, launches]
    for k in kernels.values():
        totals = groups.setdefault(kernel_group(k["name"]), [0.0, 0])
        totals[0] += k["device_seconds"]
        totals[1] += k["count"]
    busy = sum(t for t, _ in groups.values())
    top_kernels = [dict(k) for k in sorted(kernels.values(), key=lambda k: -k["device_seconds"])[:top]]
    for k in top_kernels:
        k["device_seconds_per_step"] = round(k.pop("device_seconds") / steps, 6)
        k["group"] = kernel_group(k["name"])
    by_time = sorted(groups.items(), key=lambda kv: -kv[1][0])
    return {
        "device_busy_seconds": busy,
        "kernel_launches_per_step": round(sum(k["count"] for k in kernels.values()) / steps, 1),
        "device_seconds_per_step_by_group": {g: round(t / steps, 6) for g, (t, _) in by_time},
        "kernels_per_step_by_group": {g: round(n / steps, 1) for g, (_, n) in sorted(groups.items(), key=lambda kv: -kv[1][1])},
        "top_kernels": top_kernels,
    }


def host_syncs(step_fn, steps: int, device: torch.device, top: int = 8) -> dict:
    """How often ``steps`` calls of ``step_fn`` make the host wait for the device (CUDA only), counted with
    ``torch.cuda.set_sync_debug_mode("warn")``: each synchronising call (``.item()``, a tensor in an ``if``,
    boolean indexing, a blocking copy) raises a warning that names the Python line that made it. A known
    synchronisation (one ``.item()``) is counted first, so a count of 0 means none, not a silent counter; the
    warning that the mode itself gives when enabled is cleared before it.
    torch says the mode does not see every kind of synchronisation (torch.distributed, torch.sparse)."""
    import warnings
    from collections import Counter

    if device.type != "cuda":
        return {"host_syncs_per_step": None, "why": "counted on CUDA only"}
    torch.cuda.synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        caught.clear()  # enabling the mode warns once that it is on: not a synchronisation
        try:
            torch.ones((), device=device).item()  # the calibration: exactly one synchronisation
            calibration = sum("synchroniz" in str(w.message) for w in caught)
            caught.clear()
            for i in range(steps):
                step_fn(i)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [w for w in caught if "synchroniz" in str(w.message)]
    if calibration != 1:
        return {"host_syncs_per_step": None, "why": f"the calibration .item() was counted {calibration} times"}
    where = Counter(f"{Path(w.filename).name}:{w.lineno}" for w in syncs)
    return {
        "host_syncs_per_step": round(len(syncs) / steps, 2),
        "steps": steps,
        "where": {loc: n for loc, n in where.most_common(top)},
    }


def flops_figures(
    config: ElectraPretrainingConfig,
    batches: list[dict],
    steps_per_second: float,
    *,
    device: torch.device,
    matmul_flops: float | None,
) -> dict:
    """A loop's model FLOPs per step, their share by part, and on CUDA its MFU against the data-sheet peak
    (``mfu``) and against the measured matmul rate (``mfu_measured``)."""
    b, s = batches[0]["input_ids"].shape
    result: dict = {}
    masked = int(sum((bb["labels"] != -100).sum().item() for bb in batches) / len(batches))
    parts = model_flops_parts(config, b, s, masked)
    flops = sum(parts.values())
    result["model_flops_per_step"] = flops
    result["model_flops_share"] = {part: round(value / flops, 3) for part, value in parts.items()}
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = next((v for k, v in PEAK_BF16_FLOPS.items() if k in name), None)
        if peak is not None:
            result["mfu"] = round(flops * steps_per_second / peak, 4)
        if matmul_flops:
            result["mfu_measured"] = round(flops * steps_per_second / matmul_flops, 4)
    return result


def warm_up(step, warmup: int, device: torch.device) -> tuple[float, dict[str, int]]:
    """Run ``step(i)`` for the ``warmup`` untimed steps; return their seconds (with torch.compile mostly the
    compilation, with capture the capture too: the time to the first fast step) and how torch's compile caches
    served the compilations in them (:func:`bioelectra.pretraining.compile_cache.compile_cache_counts`)."""
    # imported here: campaign.py's setup imports this module for the matmul rate alone, before the packages
    from bioelectra.pretraining.compile_cache import compile_cache_counts

    before = compile_cache_counts()
    start = time.perf_counter()
    for i in range(warmup):
        step(i)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start, compile_cache_counts(since=before)
