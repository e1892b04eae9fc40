"""The original pre-training metrics (``run_pretraining.py: metric_fn``): masked-LM accuracy and loss,
the discriminator's loss, AUC, accuracy, precision and recall, accumulated over evaluation batches."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from bioelectra.modeling import ElectraPretrainingModel

logger = logging.getLogger(__name__)


#: The original's metric names (``run_pretraining.py: metric_fn``); all but the losses are fractions.
METRIC_NAMES = (
    "masked_lm_accuracy",
    "masked_lm_loss",
    "sampled_masked_lm_accuracy",
    "disc_loss",
    "disc_auc",
    "disc_accuracy",
    "disc_precision",
    "disc_recall",
)


def binary_auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """Area under the ROC curve by ranks (Mann-Whitney U), ties given their average rank.

    Args:
        scores: `(n,)` real scores (higher = more likely positive).
        labels: `(n,)` 0/1 labels.

    Returns:
        The AUC in [0, 1]; ``nan`` when one class is absent. (The original uses ``tf.metrics.auc``, a
        200-threshold approximation of the same quantity.)
    """
    scores = scores.double().flatten()
    labels = labels.flatten().bool()
    n_pos = int(labels.sum())
    n_neg = labels.numel() - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, inverse, counts = torch.unique(scores, return_inverse=True, return_counts=True)  # sorted unique
    ends = torch.cumsum(counts, 0).double()  # (U,) 1-based rank of the last element of each tie group
    avg_rank = ends - (counts.double() - 1.0) / 2.0  # (U,) average 1-based rank of each tie group
    rank_sum = avg_rank[inverse][labels].sum().item()
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


@dataclass
class _MetricSums:
    """Streaming sums behind :data:`METRIC_NAMES`."""

    masked: float = 0.0
    mlm_correct: float = 0.0
    mlm_loss_sum: float = 0.0
    sampled_correct: float = 0.0
    real: float = 0.0
    disc_loss_sum: float = 0.0
    disc_correct: float = 0.0
    pred_pos: float = 0.0
    true_pos: float = 0.0
    label_pos: float = 0.0
    probs: list[torch.Tensor] = field(default_factory=list)
    labels: list[torch.Tensor] = field(default_factory=list)

    def update(self, out: Any, labels: torch.Tensor, attention_mask: torch.Tensor) -> None:
        slots = out.masked_lm_weights  # (B, N): the slots holding a masked position
        mlm_labels = labels.gather(1, out.masked_lm_positions)[slots]  # (M,)
        gen_logits = out.gen_logits.float()[slots]  # (M, V)
        sampled_ids = out.sampled_ids[slots]  # (M,)
        self.masked += mlm_labels.numel()
        self.mlm_correct += (gen_logits.argmax(-1) == mlm_labels).sum().item()
        self.mlm_loss_sum += torch.nn.functional.cross_entropy(gen_logits, mlm_labels, reduction="sum").item()
        self.sampled_correct += (sampled_ids == mlm_labels).sum().item()
        real = attention_mask.bool()  # (B, L)
        logits = out.disc_logits.float()[real]  # (T,) real tokens only
        target = out.is_replaced[real].float()  # (T,)
        preds = (logits > 0).float()  # (T,) sigmoid(logit) > 0.5
        self.real += target.numel()
        self.disc_loss_sum += torch.nn.functional.binary_cross_entropy_with_logits(
            logits, target, reduction="sum"
        ).item()
        self.disc_correct += (preds == target).sum().item()
        self.pred_pos += preds.sum().item()
        self.true_pos += (preds * target).sum().item()
        self.label_pos += target.sum().item()
        self.probs.append(torch.sigmoid(logits).cpu())
        self.labels.append(target.cpu())

    def scalars(self) -> torch.Tensor:
        return torch.tensor(
            [
                self.masked,
                self.mlm_correct,
                self.mlm_loss_sum,
                self.sampled_correct,
                self.real,
                self.disc_loss_sum,
                self.disc_correct,
                self.pred_pos,
                self.true_pos,
                self.label_pos,
            ],
            dtype=torch.float64,
        )


def _finish_metrics(s: torch.Tensor, probs: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    (
        masked,
        mlm_correct,
        mlm_loss_sum,
        sampled_correct,
        real,
        disc_loss_sum,
        disc_correct,
        pred_pos,
        tp,
        pos,
    ) = s.tolist()

    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else 0.0

    return {
        "masked_lm_accuracy": ratio(mlm_correct, masked),
        "masked_lm_loss": ratio(mlm_loss_sum, masked),
        "sampled_masked_lm_accuracy": ratio(sampled_correct, masked),
        "disc_loss": ratio(disc_loss_sum, real),
        "disc_auc": binary_auc(probs, labels),
        "disc_accuracy": ratio(disc_correct, real),
        "disc_precision": ratio(tp, pred_pos),
        "disc_recall": ratio(tp, pos),
    }


@torch.no_grad()
def pretraining_metrics(
    model: ElectraPretrainingModel,
    batches: Iterable[Mapping[str, torch.Tensor]],
    *,
    num_eval_steps: int | None = None,
    device: torch.device | str | None = None,
    autocast: contextlib.AbstractContextManager | None = None,
    accelerator: Any = None,
) -> dict[str, float]:
    """The original pre-training metrics (``run_pretraining.py: metric_fn``) over masked batches.

    - ``masked_lm_accuracy`` / ``masked_lm_loss``: the generator's argmax accuracy and mean cross-entropy
      (nats) over the masked positions;
    - ``sampled_masked_lm_accuracy``: how often the sampled token equals the original;
    - ``disc_loss``: mean binary cross-entropy over the real tokens (the original averages the per-token
      losses with zeros on padding; this counts real tokens only);
    - ``disc_auc``, ``disc_accuracy``, ``disc_precision``, ``disc_recall``: the discriminator on real tokens,
      "replaced" = positive, prediction = ``sigmoid(logit) > 0.5``; precision is 0 without positive
      predictions.

    Args:
        model: the joint model (switched to eval mode; left so).
        batches: collated batches (``input_ids``, ``attention_mask``, ``token_type_ids``, ``labels``).
        num_eval_steps: stop after this many batches (``None``: all).
        device: where to move the batches (the model's device when omitted).
        autocast: a context manager for the forward (e.g. bf16 autocast).
        accelerator: an ``accelerate.Accelerator``; sums and AUC inputs are gathered over its processes.

    Returns:
        ``{name: value}`` for :data:`METRIC_NAMES`; fractions in [0, 1], losses in nats.
    """
    model.eval()
    device = device or next(model.parameters()).device
    sums = _MetricSums()
    for step, batch in enumerate(batches):
        if num_eval_steps is not None and step >= num_eval_steps:
            break
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast or contextlib.nullcontext():
            out = model(**batch)
        sums.update(out, batch["labels"], batch["attention_mask"])
    scalars = sums.scalars()
    if accelerator is None and sums.real == 0:
        raise ValueError("no held-out tokens to evaluate: the evaluation data is empty")
    probs = torch.cat(sums.probs) if sums.probs else torch.zeros(0)
    labels = torch.cat(sums.labels) if sums.labels else torch.zeros(0)
    if accelerator is not None and accelerator.num_processes > 1:
        scalars = accelerator.reduce(scalars.to(accelerator.device), reduction="sum").cpu()
        padded = torch.stack([probs, labels]).T.to(accelerator.device)  # (T, 2)
        padded = accelerator.pad_across_processes(padded, dim=0, pad_index=-1.0)
        gathered = accelerator.gather(padded).cpu()  # (world * T_max, 2)
        gathered = gathered[gathered[:, 1] >= 0]
        probs, labels = gathered[:, 0], gathered[:, 1]
    return _finish_metrics(scalars, probs, labels)


def _json_safe(metrics: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
