"""The learning-rate range test (``finetune --find-lr``): Smith, "Cyclical Learning Rates for Training
Neural Networks" (WACV 2017, arXiv:1506.01186), section 3.3, in the form fastai's ``lr_find`` made common.

The model, optimizer and training batches are those of a trial (:func:`downstream.trial.trainer.build_trainer`
with the same settings and the first trial's seed): a fresh copy of the checkpoint with the task head, the
trial's optimizer (AdamW or ELECTRA's, with its weight-decay groups and any layer-wise learning-rate
decay), the length-grouped training batches, the precision, the gradient clipping and the micro-batches.
Only the learning rate differs: instead of the warmup and decay schedule, it rises exponentially from
``start`` to ``end`` over ``num_steps`` optimizer steps::

    lr_i = start * (end / start) ** (i / (num_steps - 1))

(the rate of the task head; with ``layerwise_lr_decay`` < 1 the lower layers get their usual fraction of
it), and the training loss of each step's batch is recorded. The loss is smoothed with an exponential moving
average with bias correction (fastai's ``beta = 0.98``)::

    avg_i = beta * avg_{i-1} + (1 - beta) * loss_i        smoothed_i = avg_i / (1 - beta ** (i + 1))

and the sweep stops early once the smoothed loss exceeds 4 times its minimum (diverged) or a loss is not
finite. Suggested rate: the rate at the steepest descent of the smoothed loss against log10(rate), looked
for up to just past the minimum; also reported, the rate of the minimum smoothed loss divided by 10 (the
other usual rule). The weights are thrown away; no trial is trained and no ``results.json`` written.
Results: ``<output-dir>/lr_find.json`` and ``<output-dir>/plots/lr_find.png``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import tempfile
from pathlib import Path
from typing import Any

from bioelectra.plotting import pyplot, save_figure
from bioelectra.textio import atomic_write_text
from downstream.errors import DownstreamError
from downstream.kinds import prepare_task
from downstream.settings import FinetuneSettings, check_layerwise_lr_decay

logger = logging.getLogger(__name__)

#: Smoothing factor of the loss (fastai's ``lr_find``).
SMOOTHING_BETA = 0.98
#: The sweep stops once the smoothed loss exceeds this multiple of its minimum.
DIVERGENCE_FACTOR = 4.0


def sweep_rates(start: float, end: float, num_steps: int) -> list[float]:
    """The exponentially spaced rates of the sweep: ``num_steps`` values from ``start`` to ``end``, each the
    previous one times ``(end / start) ** (1 / (num_steps - 1))``.

    Raises:
        ValueError: not ``0 < start < end`` (finite), or fewer than 2 steps.
    """
    if not (0 < start < end) or not math.isfinite(end):
        raise ValueError(f"--find-lr-start {start:g} / --find-lr-end {end:g}: expected 0 < start < end")
    if num_steps < 2:
        raise ValueError(f"--find-lr-steps {num_steps}: expected at least 2")
    return [start * (end / start) ** (i / (num_steps - 1)) for i in range(num_steps)]


def smooth_losses(losses: list[float], beta: float = SMOOTHING_BETA) -> list[float]:
    """Bias-corrected exponential moving average of ``losses`` (see the module docstring): a constant
    sequence stays that constant (no pull towards the average's zero start)."""
    avg, out = 0.0, []
    for i, loss in enumerate(losses):
        avg = beta * avg + (1 - beta) * loss
        out.append(avg / (1 - beta ** (i + 1)))
    return out


def suggest(rates: list[float], smoothed: list[float]) -> dict[str, float]:
    """The suggested rates of a sweep.

    Args:
        rates: the rates tried, increasing (at least 2).
        smoothed: the smoothed loss at each.

    Returns:
        ``steepest``: the rate where the smoothed loss falls fastest against log10(rate) (central
        differences, one-sided at the ends), looked for up to one point past the minimum (beyond it the loss
        rises towards divergence); ``min_loss``: the rate of the lowest smoothed loss;
        ``min_loss_over_10``: that rate divided by 10.
    """
    if len(rates) != len(smoothed) or len(rates) < 2:
        raise ValueError(
            f"{len(rates)} rates and {len(smoothed)} losses: expected the same number, at least 2"
        )
    best = min(range(len(smoothed)), key=smoothed.__getitem__)
    usable = max(2, min(len(rates), best + 2))
    logs = [math.log10(r) for r in rates[:usable]]
    slopes = []
    for i in range(usable):
        lo, hi = max(0, i - 1), min(usable - 1, i + 1)
        slopes.append((smoothed[hi] - smoothed[lo]) / (logs[hi] - logs[lo]))
    steepest = min(range(usable), key=slopes.__getitem__)
    return {"steepest": rates[steepest], "min_loss": rates[best], "min_loss_over_10": rates[best] / 10}


def _labelled(batch: dict[str, Any]) -> int:
    """The number of terms the model's mean loss averages over (labels != -100; rows without labels)."""
    labels = batch.get("labels")
    return int(labels.ne(-100).sum()) if labels is not None else int(batch["input_ids"].shape[0])


def run_sweep(trainer, rates: list[float]) -> tuple[list[float], str | None]:
    """Train ``trainer.model`` one batch per rate with ``trainer``'s optimizer, the rate set to each of
    ``rates`` in turn (times each parameter group's layer-wise factor).

    Returns:
        ``(losses, stop_reason)``: the loss of each step run (the batch's mean training loss before the
        update), and why the sweep stopped early (``None``: it ran every rate).
    """
    import torch

    from downstream.trial.trainer import split_batch

    args = trainer.args
    model = trainer.model
    device = args.device
    model.to(device).train()
    optimizer = trainer.create_optimizer()
    factors = [group["lr"] / args.learning_rate for group in optimizer.param_groups]  # layer-wise decay
    dtype = torch.bfloat16 if args.bf16 else torch.float16 if args.fp16 else None
    scaler = torch.amp.GradScaler(device.type) if args.fp16 else None
    loader = trainer.get_train_dataloader()
    batches = iter(loader)
    losses: list[float] = []
    for step, rate in enumerate(rates):
        try:
            batch = next(batches)
        except StopIteration:  # fewer batches than steps: another pass over the data
            batches = iter(loader)
            batch = next(batches)
        for group, factor in zip(optimizer.param_groups, factors, strict=True):
            group["lr"] = rate * factor
        chunks = split_batch(
            {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}, trainer.micro_batch_tokens
        )
        counts = [_labelled(c) for c in chunks]
        total = sum(counts)
        value = 0.0
        for chunk, count in zip(chunks, counts, strict=True):
            if total and not count:
                continue
            weight = count / total if total else 1 / len(chunks)
            with torch.autocast(device.type, dtype=dtype) if dtype else contextlib.nullcontext():
                loss = model(**chunk).loss.float() * weight  # ()
            if not torch.isfinite(loss):
                return losses, f"the loss became {loss.item()} at rate {rate:.3g}"
            (scaler.scale(loss) if scaler else loss).backward()
            value += loss.item()
        if scaler:
            scaler.unscale_(optimizer)
        if args.max_grad_norm and args.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(value)
        smoothed = smooth_losses(losses)
        if step > 0 and smoothed[-1] > DIVERGENCE_FACTOR * min(smoothed):
            return losses, f"the smoothed loss passed {DIVERGENCE_FACTOR:g}x its minimum at rate {rate:.3g}"
    return losses, None


def lr_range_test(
    settings: FinetuneSettings,
    *,
    start: float = 1e-7,
    end: float = 1.0,
    num_steps: int = 100,
) -> dict[str, Any]:
    """Run the range test (see the module docstring) on ``settings``' data and checkpoint, with the first
    trial's seed (``settings.seed``); write ``lr_find.json`` and ``plots/lr_find.png`` under
    ``settings.output_dir``.

    Args:
        settings: the fine-tuning settings (its ``learning_rate`` and schedule are not used).
        start: the first rate of the sweep.
        end: the last rate of the sweep.
        num_steps: optimizer steps of the sweep (one training batch each; the data is passed over again
            when it has fewer batches).

    Returns:
        The content of ``lr_find.json``: ``learning_rates``, ``losses`` and ``smoothed_losses`` of the steps
        run, ``suggested_learning_rate`` (steepest descent), ``min_loss_learning_rate`` and
        ``min_loss_learning_rate_over_10``, ``steps_run``, ``stopped_early`` and ``stop_reason``, and the
        settings that shaped the sweep.

    Raises:
        DownstreamError: bad data or checkpoint, or fewer than 2 steps ran (a loss not finite at once).
        ValueError: bad sweep settings.
    """
    from downstream.trial.trainer import build_trainer

    rates = sweep_rates(start, end, num_steps)
    check_layerwise_lr_decay(settings.layerwise_lr_decay)
    task, tokenizer = prepare_task(settings)
    with tempfile.TemporaryDirectory(prefix="bioelectra-lr-find-") as scratch:  # the Trainer's output_dir
        trainer, _ = build_trainer(settings, task, tokenizer, seed=settings.seed, output_dir=Path(scratch))
        losses, stop_reason = run_sweep(trainer, rates)
        precision = "bf16" if trainer.args.bf16 else "fp16" if trainer.args.fp16 else "fp32"
        max_grad_norm = trainer.args.max_grad_norm
        del trainer  # the swept weights are thrown away
    if stop_reason:
        logger.info("range test stopped after %d of %d steps: %s", len(losses), num_steps, stop_reason)
    if len(losses) < 2:
        raise DownstreamError(
            f"the range test ran {len(losses)} step(s) ({stop_reason}): lower --find-lr-start"
        )
    smoothed = smooth_losses(losses)
    tried = rates[: len(losses)]
    found = suggest(tried, smoothed)
    result = {
        "method": "learning-rate range test (Smith 2017, section 3.3; fastai lr_find): exponential sweep, one "
        f"training batch per step, loss smoothed by a bias-corrected EMA (beta {SMOOTHING_BETA}), stopped at "
        f"{DIVERGENCE_FACTOR:g}x the minimum; suggestion: steepest descent of the smoothed loss against log10(rate)",
        "dataset": settings.dataset or str(settings.data_dir),
        "checkpoint": settings.checkpoint_name or str(settings.checkpoint),
        "start": start,
        "end": end,
        "num_steps": num_steps,
        "steps_run": len(losses),
        "stopped_early": stop_reason is not None,
        "stop_reason": stop_reason,
        "seed": settings.seed,
        "per_device_train_batch_size": settings.per_device_train_batch_size,
        "max_seq_length": settings.max_seq_length,
        "optimizer": settings.optimizer,
        "weight_decay": settings.weight_decay,
        "layerwise_lr_decay": settings.layerwise_lr_decay,
        "max_grad_norm": max_grad_norm,
        "precision": precision,
        "learning_rates": tried,
        "losses": losses,
        "smoothed_losses": smoothed,
        "suggested_learning_rate": found["steepest"],
        "min_loss_learning_rate": found["min_loss"],
        "min_loss_learning_rate_over_10": found["min_loss_over_10"],
    }
    output_dir = Path(settings.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(output_dir / "lr_find.json", json.dumps(result, indent=2))
    plot_range_test(result, output_dir / "plots" / "lr_find.png")
    return result


def plot_range_test(result: dict[str, Any], path: str | Path) -> Path | None:
    """The loss against the rate (log scale), raw and smoothed, with the two suggestions marked.

    Returns:
        The PNG written, or ``None`` without matplotlib.
    """
    plt = pyplot()
    if plt is None:
        return None
    rates, raw, smoothed = result["learning_rates"], result["losses"], result["smoothed_losses"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(rates, raw, alpha=0.35, label="loss of the step's batch")
    ax.plot(rates, smoothed, label=f"smoothed (EMA, beta {SMOOTHING_BETA}, bias-corrected)")
    steepest, tenth = result["suggested_learning_rate"], result["min_loss_learning_rate_over_10"]
    ax.axvline(steepest, color="C2", linestyle="--", label=f"steepest descent {steepest:.2g} (suggested)")
    ax.axvline(tenth, color="C3", linestyle=":", label=f"minimum / 10 {tenth:.2g}")
    ax.set_xscale("log")
    # up to the smoothed loss's highest point: a diverging raw loss would flatten the rest of the curve
    ax.set_ylim(min(*raw, *smoothed) * 0.95, max(smoothed) * 1.1)
    ax.set_xlabel("learning rate (log scale)")
    ax.set_ylabel("training loss (cross-entropy)")
    stopped = (
        f", stopped after {result['steps_run']} of {result['num_steps']} steps"
        if result.get("stopped_early")
        else ""
    )
    ax.set_title(
        f"Learning-rate range test{stopped}\n{result['dataset']}, checkpoint {result['checkpoint']}",
        fontsize=10,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return save_figure(fig, path)
