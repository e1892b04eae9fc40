#!/usr/bin/env python
"""The dense linker's training step and dictionary embedding on this machine: one padded batch against
length-grouped forwards (:meth:`downstream.linking.dense.DenseEncoder.forward`).

A training step of :func:`downstream.linking.dense.train_encoder` runs ``2 * --batch-size`` dictionary names
(SapBERT's pairs, drawn at random) through the encoder. Padded to the longest of the batch, most of what the
encoder computes is padding; grouped by length ``--group`` names at a time, little is. For each way
(``one-batch`` and each ``--groups`` value) the script trains a fresh copy of ``--ckpt`` for ``--steps`` steps
on the same pairs, after one step not timed (allocations, thread pools), and reports seconds per step; it also
counts the sub-tokens each way computes (``real_tokens``, ``padded_tokens``) over those steps, and times
:meth:`~downstream.linking.dense.DenseEncoder.embed` over ``--embed-names`` dictionary names (names a second).

Prints one JSON object (``--out``: also written there): ``benchmark``, ``date``, ``device``, ``versions``,
``load_average_before``, the settings, ``training_pairs``, ``ways`` (per way: ``group``, ``seconds_per_step``,
``real_tokens``, ``padded_tokens``, ``padding_ratio`` = padded / real), ``speedup`` (one-batch seconds per step
over each grouped way's) and ``embedding`` (``names``, ``seconds``, ``names_per_second``).

Usage: ``python bench/dense_linker_step.py [--dataset ncbi-disease] [--data-dir ../shared/data/linking]
[--ckpt bioelectra-small] [--batch-size 128] [--steps 5] [--groups 32 64 128] [--embed-names 4096] [--out FILE]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import cpu_device_name  # noqa: E402
from predict_linking import versions  # noqa: E402


def padding_counts(tokenizer, pairs: list, batch_size: int, steps: int, group: int | None) -> tuple[int, int]:
    """``(real, padded)`` sub-tokens the encoder sees over ``steps`` batches of ``pairs`` in order, padded per
    batch (``group`` ``None``) or per length group of ``group`` names (:meth:`DenseEncoder.forward`)."""
    from downstream.linking.dense import MAX_NAME_TOKENS

    real = padded = 0
    for start in range(0, steps * batch_size, batch_size):
        batch = pairs[start : start + batch_size]
        texts = [a for a, _, _ in batch] + [b for _, b, _ in batch]
        lengths = sorted(len(ids) for ids in tokenizer(texts, truncation=True, max_length=MAX_NAME_TOKENS)["input_ids"])
        size = len(lengths) if group is None else group
        real += sum(lengths)
        padded += sum(max(lengths[i : i + size]) * len(lengths[i : i + size]) for i in range(0, len(lengths), size))
    return real, padded


def time_way(checkpoint: str, pairs: list, args, group: int | None) -> dict:
    """Seconds per training step one way (module docstring)."""
    from downstream.linking.dense import DenseEncoder, train_encoder

    encoder = DenseEncoder(checkpoint)
    settings = {"seed": 0, "learning_rate": 1e-4, "batch_size": args.batch_size, "num_epochs": 1.0, "length_group": group}
    train_encoder(encoder, pairs[: args.batch_size], max_steps=1, **settings)  # not timed
    start = time.perf_counter()
    train_encoder(encoder, pairs[: args.steps * args.batch_size], max_steps=args.steps, **settings)
    seconds = time.perf_counter() - start
    real, padded = padding_counts(encoder.tokenizer, pairs, args.batch_size, args.steps, group)
    return {"way": "one-batch" if group is None else f"groups of {group}", "group": group,
            "seconds_per_step": round(seconds / args.steps, 3), "real_tokens": real, "padded_tokens": padded,
            "padding_ratio": round(padded / real, 3)}  # fmt: skip


def report(args) -> dict:
    import random

    import torch

    from bioelectra.checkpoints import resolve_checkpoint
    from downstream.linking.dense import EMBED_BATCH, DenseEncoder, training_pairs
    from downstream.linking.run import load_linking_data

    load = os.getloadavg()
    checkpoint = resolve_checkpoint(args.ckpt, Path(args.work_dir))
    data = load_linking_data(args.dataset, Path(args.data_dir))
    pairs = training_pairs(data.dictionaries["train"], data.queries["train"], seed=42)
    random.Random(0).shuffle(pairs)
    ways = [time_way(checkpoint, pairs, args, None)] + [time_way(checkpoint, pairs, args, g) for g in args.groups]
    names = data.dictionaries["train"].names
    names = [names[i] for i in random.Random(1).sample(range(len(names)), min(args.embed_names, len(names)))]
    encoder = DenseEncoder(checkpoint)
    start = time.perf_counter()
    encoder.embed(names)
    embed_seconds = time.perf_counter() - start
    base = ways[0]["seconds_per_step"]
    return {
        "benchmark": "dense_linker_step", "date": datetime.date.today().isoformat(), "device": cpu_device_name(),
        "versions": versions(), "torch_threads": torch.get_num_threads(), "load_average_before": [round(x, 2) for x in load],
        "dataset": args.dataset, "checkpoint": args.ckpt, "batch_size_pairs": args.batch_size, "steps": args.steps,
        "training_pairs": len(pairs), "ways": ways,
        "speedup": {w["way"]: round(base / w["seconds_per_step"], 2) for w in ways[1:]},
        "embedding": {"names": len(names), "batch_size": EMBED_BATCH, "seconds": round(embed_seconds, 2),
                      "names_per_second": round(len(names) / embed_seconds, 1)},
    }  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ncbi-disease")
    parser.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "linking"))
    parser.add_argument("--ckpt", default="bioelectra-small")
    parser.add_argument("--work-dir", default=str(REPO / "runs" / "bench-dense-linker"), help="where a preset is built")
    parser.add_argument("--batch-size", type=int, default=128, help="pairs a step (the linking kind's default)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--groups", type=int, nargs="*", default=[32, 64, 128])
    parser.add_argument("--embed-names", type=int, default=4096)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    result = report(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(text + "\n")
        tmp.replace(args.out)
    return result


if __name__ == "__main__":
    main()
