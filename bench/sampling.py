#!/usr/bin/env python
"""The generator's head with each replacement sampler: vocabulary projection, masked-LM loss, sampling, backward.

ELECTRA's generator scores every vocabulary entry at each masked slot, takes the cross-entropy against the
original token and samples a replacement from the same scores (``bioelectra/sampling.py``). This times that
part of a training step alone, for each sampler of ``bioelectra.sampling``, eager and under ``torch.compile``
(where the loss's log-softmax and the sampling fuse into one pass over the logits), on the device at hand
(bf16 autocast on CUDA, fp32 on a CPU). Each case is ``rows:vocab``: rows = batch x ``max_predictions_per_seq``
(ELECTRA-Small 128 x 128: 128 x 19 = 2,432; bioelectra-small's recipe: 256 x 19 = 4,864).

Prints one JSON object: ``device``, ``torch``, and ``cases[]`` with ``rows``, ``vocab``, ``embedding``,
``sampler``, ``block`` (two-stage only), ``compiled``, ``compile_seconds`` (the first call, compiled only),
``median_ms`` / ``min_ms`` per call (forward, sampling and backward; CUDA synchronised), and ``random_per_row``
(random numbers drawn per row); ``--out`` is written after every case.

Usage: ``python bench/sampling.py [--cases 2432:30522,4864:30522] [--blocks 64,128,256] [--repeats 20]
[--no-compile] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import device_name  # noqa: E402

from bioelectra.sampling import SAMPLING_BLOCK, gumbel_sample, two_stage_gumbel_sample  # noqa: E402


def head_forward(hidden, weight, bias, labels, sample):
    """The generator's head: `(M, E)` hidden states, `(V, E)` / `(V,)` projection, `(M,)` labels; returns the
    `()` masked-LM loss and the `(M,)` samples. Compiled as the training step's forward scope is: the autocast
    and the backward (``torch.autograd.grad``) outside, AOT autograd compiling the backward with the forward."""
    logits = F.linear(hidden, weight, bias)  # (M, V)
    loss = F.cross_entropy(logits.float(), labels)
    with torch.no_grad():
        samples = sample(logits)  # (M,)
    return loss, samples


def time_case(rows: int, vocab: int, embedding: int, sample, compiled: bool, repeats: int, device) -> dict:
    """One sampler on one shape: the first call (compilation) and ``repeats`` timed calls after 2 warm-ups."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    hidden = torch.randn(rows, embedding, generator=gen).to(device).requires_grad_()
    weight = (torch.randn(vocab, embedding, generator=gen) * 0.02).to(device).requires_grad_()
    bias = torch.zeros(vocab, device=device, requires_grad=True)
    labels = torch.randint(0, vocab, (rows,), generator=gen).to(device)
    bf16 = device.type == "cuda"
    fn = head_forward
    if compiled:
        torch._dynamo.reset()
        fn = torch.compile(head_forward, fullgraph=True, dynamic=False)

    def call():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16, cache_enabled=False):
            loss, samples = fn(hidden, weight, bias, labels, sample)
        grads = torch.autograd.grad(loss, (hidden, weight, bias))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return samples, grads

    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    for _ in range(2):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    times.sort()
    return {"median_ms": round(1e3 * times[len(times) // 2], 3), "min_ms": round(1e3 * times[0], 3),
            "compile_seconds": round(first, 1) if compiled else None}


def samplers(blocks: list[int]) -> list[tuple[str, int | None, object]]:
    """``(name, block, function)``: the original's Gumbel-max, then the two-stage draw at each block size."""
    out: list[tuple[str, int | None, object]] = [("gumbel", None, gumbel_sample)]
    for block in blocks:
        out.append(("two_stage", block, lambda x, b=block: two_stage_gumbel_sample(x, block=b)))
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="2432:30522,4864:30522", help="rows:vocab, comma-separated")
    p.add_argument("--embedding", type=int, default=128, help="the projection's input width (ELECTRA-Small: 128)")
    p.add_argument("--blocks", default=f"64,{SAMPLING_BLOCK},256", help="two-stage block sizes")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--no-compile", action="store_true", help="eager only")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    cases, blocks = parse_cases(p, args.cases), parse_positive(p, "--blocks", args.blocks)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    report = {
        "device": device_name(device),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cases": [],
    }
    for rows, vocab in cases:
        for compiled in (False,) if args.no_compile else (False, True):
            for name, block, sample in samplers(blocks):
                timing = time_case(rows, vocab, args.embedding, sample, compiled, args.repeats, device)
                random_per_row = vocab if block is None else math.ceil(vocab / block) + block
                report["cases"].append({"rows": rows, "vocab": vocab, "embedding": args.embedding, "sampler": name,
                                        "block": block, "compiled": compiled, **timing, "random_per_row": random_per_row})
                print(json.dumps(report["cases"][-1]), file=sys.stderr, flush=True)
                write_report(report, args.out)  # after every case: a run stopped by a timeout keeps what it did
    print(json.dumps(report, indent=2))
    return report


def parse_positive(parser: argparse.ArgumentParser, flag: str, text: str, sep: str = ",") -> list[int]:
    """``text``'s ``sep``-separated positive integers; anything else is the parser's usage error naming ``flag``."""
    try:
        values = [int(x) for x in text.split(sep)]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        parser.error(f"{flag} {text!r}: expected positive integers separated by {sep!r}")
    return values


def parse_cases(parser: argparse.ArgumentParser, text: str) -> list[tuple[int, int]]:
    """``--cases``' ``rows:vocab`` pairs."""
    cases = [parse_positive(parser, "--cases", case, ":") for case in text.split(",")]
    if any(len(case) != 2 for case in cases):
        parser.error(f"--cases {text!r}: expected rows:vocab pairs separated by ','")
    return [(rows, vocab) for rows, vocab in cases]


def write_report(report: dict, out: Path | None) -> None:
    """``report`` as JSON at ``out`` (nothing when None), through a temporary name."""
    if out is None:
        return
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
