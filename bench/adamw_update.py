#!/usr/bin/env python
"""The original ELECTRA AdamW update over a model's parameters: the foreach passes against torch's fused kernel.

:func:`bioelectra.optimization.adamw_update_` updates in place, one call per parameter group (with weight decay,
without), the learning rate a 0-d device tensor as in the whole training step. ``foreach`` is eight multi-tensor
passes over the parameters and the two moments; ``fused`` is one pass of ``torch._fused_adamw_`` given
:data:`bioelectra.optimization.NO_BIAS_CORRECTION_STEP`. Both run on the same random gradients and moments; the
report gives the milliseconds per update (median of ``--repeats`` timed updates after 3 warm-ups; CUDA timed
with a synchronisation around each), the ratio, and the largest difference between the parameters the two
reach from the same state. Prints JSON (``--out`` also writes it).

    python bench/adamw_update.py                    # ELECTRA-Small and ELECTRA-Base, 30,522 entries
    python bench/adamw_update.py --sizes small --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bioelectra.configuration import ElectraPretrainingConfig  # noqa: E402
from bioelectra.modeling import ElectraPretrainingModel  # noqa: E402
from bioelectra.optimization import adamw_update_, decay_parameter_groups, fused_adamw_available  # noqa: E402
from bioelectra.presets import ELECTRA_SIZES  # noqa: E402
from bioelectra.textio import atomic_write_text  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import device_name  # noqa: E402

WARMUP = 3


def _timed(update, device: torch.device, repeats: int) -> float:
    """Median milliseconds of ``update()`` over ``repeats`` calls after :data:`WARMUP`."""
    times = []
    for i in range(WARMUP + repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        update()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if i >= WARMUP:
            times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def measure(size: str, *, vocab_size: int, device: torch.device, repeats: int) -> dict:
    """One preset's parameter groups updated both ways (see the module docstring)."""
    config = ElectraPretrainingConfig.from_size(size, vocab_size=vocab_size)
    model = ElectraPretrainingModel(config).to(device)
    groups = [[p.detach() for p in g["params"]] for g in decay_parameter_groups(model, weight_decay=0.01)]
    decays = (0.01, 0.0)
    generator = torch.Generator(device=device).manual_seed(0)

    def like(tensors, positive=False):
        out = [torch.randn(t.shape, device=device, generator=generator) for t in tensors]
        return [x.abs() for x in out] if positive else out

    grads = [like(ps) for ps in groups]
    moments = [(like(ps), like(ps, positive=True)) for ps in groups]
    start_params = [[p.clone() for p in ps] for ps in groups]
    lr = torch.tensor(5e-4, device=device)
    entry = {"size": size, "parameters": sum(p.numel() for ps in groups for p in ps),
             "tensors": sum(len(ps) for ps in groups)}  # fmt: skip
    reached = {}
    for name in ("foreach", "fused"):
        fused = name == "fused"
        if fused and not fused_adamw_available(str(device)):
            entry[name] = {"error": f"torch's fused AdamW kernel does not run on {device}"}
            continue
        for ps, start in zip(groups, start_params, strict=True):
            torch._foreach_copy_(ps, start)
        state = [([m.clone() for m in ms], [v.clone() for v in vs]) for ms, vs in moments]

        def update(state=state, fused=fused):
            for ps, gs, (ms, vs), wd in zip(groups, grads, state, decays, strict=True):
                adamw_update_(ps, gs, ms, vs, lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=wd, fused=fused)

        update()  # one update from the common state, compared below
        reached[name] = [p.clone() for ps in groups for p in ps]
        entry[name] = {"ms_per_update": round(_timed(update, device, repeats), 3)}
    if "ms_per_update" in entry.get("fused", {}):
        entry["fused_speedup"] = round(entry["foreach"]["ms_per_update"] / entry["fused"]["ms_per_update"], 2)
        entry["max_parameter_difference"] = max(
            float((a - b).abs().max()) for a, b in zip(reached["foreach"], reached["fused"], strict=True)
        )
    return entry


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="small,base", help="presets, comma-separated")
    parser.add_argument("--vocab-size", type=int, default=30522)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in ELECTRA_SIZES]
    if unknown or not sizes:
        parser.error(f"--sizes {args.sizes!r}: expected presets among {', '.join(sorted(ELECTRA_SIZES))}, comma-separated")
    if args.repeats < 1:
        parser.error(f"--repeats {args.repeats}: expected at least 1 timed update")
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device)
    report = {
        "device": device_name(device),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cases": [],
    }
    for size in sizes:
        report["cases"].append(measure(size, vocab_size=args.vocab_size, device=device, repeats=args.repeats))
        if args.out:
            atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
