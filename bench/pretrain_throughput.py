#!/usr/bin/env python
"""Pre-training throughput of ElectraPretrainingModel: steps/s, tokens/s, peak memory, MFU; printed as JSON.

For each case (preset x sequence length) two loops train the same model on the same synthetic masked
batches:

- ``optimized``: SDPA attention, bf16 autocast on CUDA, ELECTRA's AdamW with multi-tensor (foreach)
  kernels, optional ``torch.compile``;
- ``naive``: a plain fp32 eager loop (eager attention, no autocast, per-parameter optimizer loop).

``speedup`` is optimized steps/s over naive steps/s. No timed asserts: this prints figures.

Targets on one H100 (issue 3): ELECTRA-Small (batch 128, seq 128) >= 35 steps/s; ELECTRA-Base (seq 128)
>= 3,000 sequences/s.

Examples::

    python bench/pretrain_throughput.py    # GPU: small@128 batch 128, base@128 batch 128, base@512 batch 32
    python bench/pretrain_throughput.py --cases small:128 --batch-size 8 --steps 3 --warmup 1   # CPU smoke
    python bench/pretrain_throughput.py --compile --no-baseline

MFU: model FLOPs per step / step time / the device's dense bf16 peak. Model FLOPs per step (training =
3 x forward) for each of the generator and the discriminator: ``6 * N_layers_params * tokens`` (encoder
matrices, embedding projection, heads) ``+ 12 * layers * seq * hidden * tokens`` (attention scores and
values), plus the generator's vocabulary projection at the masked positions only
(``6 * embedding_size * vocab * masked``). Embedding lookups, softmax, LayerNorm are not counted.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bioelectra.configuration import ElectraPretrainingConfig  # noqa: E402
from bioelectra.masking import ElectraMaskingCollator  # noqa: E402
from bioelectra.modeling import ElectraPretrainingModel  # noqa: E402
from bioelectra.optimization import ElectraAdamW, decay_parameter_groups, electra_lr_scheduler  # noqa: E402

#: Dense bf16 peak FLOP/s by device name fragment (vendor data sheets, SXM parts, no sparsity).
PEAK_BF16_FLOPS = {"H200": 989.4e12, "H100": 989.4e12, "A100": 312e12, "L40S": 362e12, "A10G": 70e12}
BIO_ELECTRA_VOCAB_SIZE = 31620
SPECIAL = {"pad_token_id": 0, "cls_token_id": 2, "sep_token_id": 3, "mask_token_id": 4}
DEFAULT_BATCH = {"small": 128, "base": 128, "large": 32}  # when a case gives no batch size


def encoder_flops_per_token(cfg, seq_len: int) -> float:
    """Training FLOPs per token of one ELECTRA encoder (no embeddings lookups), 3 x forward."""
    h, layers, inter = cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size
    per_layer_params = 4 * h * h + 2 * h * inter  # Q, K, V, O and the two FFN matrices
    project = cfg.embedding_size * h if cfg.embedding_size != h else 0
    return 6 * (layers * per_layer_params + project) + 12 * layers * seq_len * h


def model_flops_per_step(config: ElectraPretrainingConfig, batch: int, seq_len: int, masked: int) -> float:
    """Model FLOPs of one training step (see the module docstring)."""
    d, g = config.discriminator_config, config.generator_config
    tokens = batch * seq_len
    disc = tokens * (
        encoder_flops_per_token(d, seq_len) + 6 * (d.hidden_size * d.hidden_size + d.hidden_size)
    )
    gen = tokens * encoder_flops_per_token(g, seq_len)
    gen += 6 * masked * (g.hidden_size * g.embedding_size + g.embedding_size * g.vocab_size)
    return float(disc + gen)


def make_batches(n: int, batch: int, seq_len: int, vocab: int, mask_prob: float, seed: int) -> list[dict]:
    """``n`` full-length synthetic batches ([CLS] ... [SEP]), masked by the real collator."""
    gen = torch.Generator().manual_seed(seed)
    collator = ElectraMaskingCollator(**SPECIAL, mask_prob=mask_prob, max_seq_length=seq_len, generator=gen)
    batches = []
    for _ in range(n):
        body = torch.randint(5, vocab, (batch, seq_len - 2), generator=gen)
        examples = [{"input_ids": [2, *row.tolist(), 3]} for row in body]
        batches.append(collator(examples))
    return batches


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
) -> dict:
    """Train ``steps`` timed steps (after ``warmup`` untimed ones); return the figures."""
    torch.manual_seed(seed)
    config = ElectraPretrainingConfig.from_dict(config.to_dict())
    config._attn_implementation = "sdpa" if optimized else "eager"
    model = ElectraPretrainingModel(config).to(device).train()
    groups = decay_parameter_groups(model, weight_decay=0.01)
    if optimized and fused_adamw and device.type == "cuda":  # bias-corrected: not the original's update
        optimizer = torch.optim.AdamW(groups, lr=5e-4, eps=1e-6, weight_decay=0.01, fused=True)
    else:
        optimizer = ElectraAdamW(groups, lr=5e-4, eps=1e-6, weight_decay=0.01, foreach=optimized)
    scheduler = electra_lr_scheduler(optimizer, warmup_steps=10, num_train_steps=10_000)
    forward = torch.compile(model) if (optimized and compile_model) else model
    use_bf16 = optimized and device.type == "cuda" and torch.cuda.is_bf16_supported()
    batches = [{k: v.to(device, non_blocking=True) for k, v in b.items()} for b in batches]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def step(i: int) -> torch.Tensor:
        batch = batches[i % len(batches)]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
            loss = forward(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=optimized)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    for i in range(warmup):
        step(i)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for i in range(steps):
        loss = step(warmup + i)
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
        "final_loss": round(loss_value, 4),
        "bf16_autocast": use_bf16,
        "attention": config._attn_implementation,
        "compiled": bool(optimized and compile_model),
        "optimizer": type(optimizer).__name__,
    }
    if device.type == "cuda":
        result["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated(device))
    else:  # process-wide peak resident set (ru_maxrss is KiB on Linux): includes earlier cases
        result["peak_rss_bytes_process"] = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    masked = int(sum((bb["labels"] != -100).sum().item() for bb in batches) / len(batches))
    flops = model_flops_per_step(config, b, s, masked)
    result["model_flops_per_step"] = flops
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = next((v for k, v in PEAK_BF16_FLOPS.items() if k in name), None)
        if peak is not None:
            result["mfu"] = round(flops * steps_per_second / peak, 4)
    return result


def guarded(fn, *args, **kwargs) -> dict:
    """``fn(...)``, or ``{"error": ...}`` when the device runs out of memory (e.g. the naive loop's eager
    attention at sequence 512), so the other cases still report."""
    try:
        return fn(*args, **kwargs)
    except torch.OutOfMemoryError as exc:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return {"error": f"out of memory: {str(exc).splitlines()[0]}"}


def main(argv: list[str] | None = None) -> dict:
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
    parser.add_argument(
        "--fused-adamw",
        action="store_true",
        help="CUDA: torch's fused AdamW (with bias correction) instead of ELECTRA's foreach AdamW",
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the naive fp32 eager loop")
    parser.add_argument("--vocab-size", type=int, default=BIO_ELECTRA_VOCAB_SIZE)
    parser.add_argument(
        "--layers", type=int, default=None, help="override the discriminator's layers (CPU smoke)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    report = {
        "device": torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else platform.processor() or "cpu",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cases": [],
    }
    for case in args.cases.split(","):
        if device.type == "cuda":
            torch.cuda.empty_cache()
        size, seq, *rest = case.split(":")
        seq_len = int(seq)
        batch = args.batch_size or (int(rest[0]) if rest else DEFAULT_BATCH[size])
        overrides = {"max_position_embeddings": max(512, seq_len)}
        if args.layers:
            overrides["num_hidden_layers"] = args.layers
        config = ElectraPretrainingConfig.from_size(
            size,
            vocab_size=args.vocab_size,
            model_overrides=overrides,
            mask_prob=0.25 if size == "large" else 0.15,
        )
        batches = make_batches(4, batch, seq_len, args.vocab_size, config.mask_prob, args.seed)
        entry = {
            "size": size,
            "seq_len": seq_len,
            "batch_size": batch,
            "layers": config.discriminator_config.num_hidden_layers,
        }
        common = dict(
            device=device,
            compile_model=args.compile,
            fused_adamw=args.fused_adamw,
            steps=args.steps,
            warmup=args.warmup,
            seed=args.seed,
        )
        entry["optimized"] = guarded(run_loop, config, batches, optimized=True, **common)
        if not args.no_baseline:
            entry["naive"] = guarded(run_loop, config, batches, optimized=False, **common)
            if "error" not in entry["optimized"] and "error" not in entry["naive"]:
                ratio = entry["optimized"]["steps_per_second"] / entry["naive"]["steps_per_second"]
                entry["speedup"] = round(ratio, 3)
        report["cases"].append(entry)
        print(json.dumps(entry), file=sys.stderr, flush=True)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
