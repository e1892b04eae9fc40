"""ELECTRA's optimizer and learning-rate schedule.

Source: the original ``model/optimization.py`` (google-research/electra), ``create_optimizer`` and
``AdamWeightDecayOptimizer``:

- Adam with beta1 0.9, beta2 0.999, epsilon 1e-6, *without* bias correction:
  ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``, ``update = m / (sqrt(v) + eps) + wd * w``,
  ``w = w - lr * update``;
- weight decay 0.01 on every parameter but LayerNorm weights/biases and biases;
- the gradients are clipped to a global norm of 1.0 (done by Trainer with ``max_grad_norm``);
- ``lr(step) = peak * (1 - step / num_train_steps) ** power * min(1, step / warmup_steps)``: the linear
  warmup is *multiplied into* a polynomial decay that starts at step 0 (they run together).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

import torch
from torch import nn

logger = logging.getLogger(__name__)

#: Parameter names containing one of these get no weight decay (original ``exclude_from_weight_decay``).
NO_DECAY_NAME_PARTS = ("LayerNorm", "layer_norm", "bias")


def electra_lr_lambda(step: int, *, warmup_steps: int, num_train_steps: int, power: float = 1.0) -> float:
    """Multiplier of the peak learning rate at optimizer step ``step`` (0-based).

    ``(1 - min(step, T) / T) ** power * min(1, step / W)``; without warmup (``W == 0``) the second factor
    is 1. Source: original ``model/optimization.py: create_optimizer`` (``tf.train.polynomial_decay`` to
    0 with ``cycle=False``, then ``learning_rate *= min(1, global_step / warmup_steps)``).

    Raises:
        ValueError: ``num_train_steps < 1`` or ``warmup_steps < 0``.
    """
    if num_train_steps < 1:
        raise ValueError(f"num_train_steps={num_train_steps}: expected >= 1")
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps={warmup_steps}: expected >= 0")
    decay = (1.0 - min(step, num_train_steps) / num_train_steps) ** power
    warmup = min(1.0, step / warmup_steps) if warmup_steps > 0 else 1.0
    return decay * warmup


#: A run's warmup takes at most this fraction of its steps when :func:`fit_warmup` shortens it.
WARMUP_MAX_FRACTION = 0.25


def fit_warmup(warmup_steps: int, num_train_steps: int, *, max_fraction: float = WARMUP_MAX_FRACTION) -> int:
    """A warmup that fits a run of ``num_train_steps``: ``warmup_steps``, shortened to ``max_fraction`` of
    the run when longer. The peak learning rate stays the one asked for, so a shorter warmup is a steeper one.

    Why not lower the peak with the warmup, to keep the warmup's slope: a CPU test of the bioelectra-small
    recipe (docs/results/pretraining-findings.md, "A run fitted to its time"): two runs of 5,228 and 5,501
    steps fitted to the same time, one warming up 1,253 steps to a quarter of the peak, the other 1,250 steps
    to the whole peak, both fell into the majority-class dip, and the one at the whole
    peak left it with a linear probe's NCBI-disease F1 of 19.0 against 8.0 (untrained: 2.2).

    Raises:
        ValueError: ``warmup_steps < 0``, ``num_train_steps < 1`` or ``max_fraction`` outside (0, 1].
    """
    if warmup_steps < 0 or num_train_steps < 1 or not 0.0 < max_fraction <= 1.0:
        raise ValueError(
            f"warmup_steps={warmup_steps}, num_train_steps={num_train_steps}, max_fraction={max_fraction}: "
            "expected >= 0, >= 1 and a fraction in (0, 1]"
        )
    return min(warmup_steps, max(1, int(num_train_steps * max_fraction)))


class ElectraSchedule:
    """:func:`electra_lr_lambda` as a ``LambdaLR`` multiplier whose length can change during the run.

    ``schedule(step) = electra_lr_lambda(step, warmup_steps, num_train_steps, power)``. It is
    a callable object, so ``LambdaLR.state_dict()`` saves its attributes with the checkpoint and a resumed
    run continues on the schedule it had, also after :meth:`refit` changed it.

    Attributes:
        warmup_steps, num_train_steps, power: as in :func:`electra_lr_lambda`.
        recipe_warmup_steps: the warmup asked for, which :meth:`refit` shortens from (never lengthens past).
    """

    def __init__(self, *, warmup_steps: int, num_train_steps: int, power: float = 1.0) -> None:
        electra_lr_lambda(0, warmup_steps=warmup_steps, num_train_steps=num_train_steps, power=power)  # validates
        self.warmup_steps = int(warmup_steps)
        self.num_train_steps = int(num_train_steps)
        self.power = float(power)
        self.recipe_warmup_steps = int(warmup_steps)

    def __call__(self, step: int) -> float:
        return electra_lr_lambda(
            step, warmup_steps=self.warmup_steps, num_train_steps=self.num_train_steps, power=self.power
        )

    def refit(self, step: int, num_train_steps: int, *, max_fraction: float = WARMUP_MAX_FRACTION) -> None:
        """Make the run ``num_train_steps`` long, from optimizer step ``step`` on.

        While the warmup is still under way (``step < warmup_steps``), the warmup is refitted to the new
        length by :func:`fit_warmup` from ``recipe_warmup_steps`` (at most a quarter of the run, to the
        same peak); once it is over, the warmup stays as it is and only the decay's end moves.

        Raises:
            ValueError: ``num_train_steps < 1``.
        """
        if num_train_steps < 1:
            raise ValueError(f"num_train_steps={num_train_steps}: expected >= 1")
        if step < self.warmup_steps:
            self.warmup_steps = fit_warmup(self.recipe_warmup_steps, num_train_steps, max_fraction=max_fraction)
        self.num_train_steps = int(num_train_steps)


def electra_lr_scheduler(
    optimizer: torch.optim.Optimizer, *, warmup_steps: int, num_train_steps: int, power: float = 1.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` following :func:`electra_lr_lambda`, through an :class:`ElectraSchedule` (saved with
    the scheduler's state, refittable)."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, ElectraSchedule(warmup_steps=warmup_steps, num_train_steps=num_train_steps, power=power)
    )


def decay_parameter_groups(
    model: nn.Module, *, weight_decay: float, no_decay: Iterable[str] = NO_DECAY_NAME_PARTS
) -> list[dict]:
    """Two parameter groups: with ``weight_decay`` and with none (names containing a ``no_decay`` part).

    Shared (tied) parameters appear once; frozen parameters are left out.
    """
    no_decay = tuple(no_decay)
    decay, plain = [], []
    for name, param in model.named_parameters():  # named_parameters() yields a shared tensor once
        if not param.requires_grad:
            continue
        (plain if any(part in name for part in no_decay) else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


#: The step count given to torch's fused AdamW kernel (``torch._fused_adamw_``, which always applies Adam's bias
#: correction) for the original's update, which has none: ``1 - beta ** 2**40`` is exactly 1 in float32 and in
#: float64 for every beta below ``1 - 4e-11`` (``beta ** 2**40 < 2**-53``), so the kernel divides by 1.
NO_BIAS_CORRECTION_STEP = float(2**40)

#: Betas at or above this keep the foreach update (the kernel's correction would no longer be exactly 1).
FUSED_MAX_BETA = 1.0 - 1e-10


@functools.cache
def fused_adamw_available(device: str) -> bool:
    """Whether torch's fused AdamW kernel runs on ``device`` (a ``torch.device``'s string) with the learning rate
    and the step count as device tensors, as :class:`bioelectra.pretraining.step.WholeTrainingStep` calls it:
    tried once per device on a 2-element tensor (an older torch or another device type says no, logged)."""
    if not hasattr(torch, "_fused_adamw_"):
        return False
    try:  # as adamw_update_ calls it: two tensors sharing one step-count tensor, a tensor learning rate
        params = [torch.zeros(2, device=device), torch.zeros(3, device=device)]
        moments = [[torch.zeros_like(p) for p in params] for _ in range(2)]
        step = torch.full((), NO_BIAS_CORRECTION_STEP, device=device)
        torch._fused_adamw_(params, [torch.ones_like(p) for p in params], *moments, [], [step, step],
                            lr=torch.full((), 1e-3, device=device), beta1=0.9, beta2=0.999, weight_decay=0.0,
                            eps=1e-6, amsgrad=False, maximize=False)  # fmt: skip
        # the first update without bias correction: -lr * 0.1 / (sqrt(0.001) + eps) on every entry
        expected = -1e-3 * 0.1 / (0.001**0.5 + 1e-6)
        return all(torch.allclose(p.cpu(), torch.full_like(p.cpu(), expected), rtol=1e-4) for p in params)
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        logger.info("torch's fused AdamW kernel does not run on %s (%s): the foreach update is used", device, exc)
        return False


def adamw_update_(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avgs: list[torch.Tensor],
    exp_avg_sqs: list[torch.Tensor],
    *,
    lr: float | torch.Tensor,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
    step: int | torch.Tensor | None = None,
    fused: bool = False,
) -> None:
    """One update of the original ELECTRA AdamW, in place, with the multi-tensor ``torch._foreach_*`` kernels, or
    with ``fused`` through torch's fused AdamW kernel.

    ``m = b1 m + (1 - b1) g``; ``v = b2 v + (1 - b2) g^2``; ``w = w (1 - lr wd) - lr m / (sqrt(v) + eps)``
    (original ``model/optimization.py: AdamWeightDecayOptimizer``, no bias correction); with ``step``, Adam's
    bias correction: ``m / (1 - b1^t)`` and ``sqrt(v / (1 - b2^t))``.

    Every operation takes a Python number or a 0-d tensor on the parameters' device for ``lr`` and ``step``.
    With tensors nothing in the update reads a value on the host: ``torch.compile`` traces it once whatever
    the learning rate (a Python float is a guard: a recompilation at each new rate), and a CUDA graph that
    captured it follows the tensor's value at each replay
    (:class:`bioelectra.pretraining.step.WholeTrainingStep`).

    Args:
        params, grads, exp_avgs, exp_avg_sqs: equally long lists of tensors of matching shapes; ``params``,
            ``exp_avgs`` and ``exp_avg_sqs`` are updated in place.
        lr: the learning rate of this step.
        betas: ``(beta1, beta2)``.
        eps: added to ``sqrt(v)`` (after the bias correction of ``v``).
        weight_decay: decoupled decay factor (0 for LayerNorm and biases).
        step: the step count including this update (1 on the first), for the bias correction; None: none
            (the original).
        fused: one pass of ``torch._fused_adamw_`` (the same formulas, decoupled decay first; without
            ``step`` it is given :data:`NO_BIAS_CORRECTION_STEP`) instead of eight foreach passes over the
            parameters and moments: for ELECTRA-Small's 402 parameters (14.2 M) on the 2-core CPU, 17 ms against
            61-65 ms, the parameters equal within 6e-8. Only where :func:`fused_adamw_available` says so; while
            ``torch.compile`` traces (torch 2.13 has no fake kernel for its tensor learning rate) and for a beta
            from :data:`FUSED_MAX_BETA` on, the foreach update runs.
    """
    beta1, beta2 = betas
    if fused and params and max(betas) < FUSED_MAX_BETA and not torch.compiler.is_compiling():
        device = params[0].device
        if isinstance(step, torch.Tensor):  # a loaded checkpoint's count may be elsewhere
            step = step.to(device=device, dtype=torch.float32)
        else:  # a fill kernel: nothing read from the host in a captured step
            step = torch.full((), NO_BIAS_CORRECTION_STEP if step is None else float(step), device=device)
        torch._fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, [], [step] * len(params), lr=lr, beta1=beta1,
                            beta2=beta2, weight_decay=weight_decay, eps=eps, amsgrad=False, maximize=False)  # fmt: skip
        return
    torch._foreach_lerp_(exp_avgs, grads, 1.0 - beta1)  # m = b1 m + (1 - b1) g
    torch._foreach_mul_(exp_avg_sqs, beta2)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1.0 - beta2)  # v = b2 v + (1 - b2) g^2
    denom = torch._foreach_sqrt(exp_avg_sqs)
    step_size = lr
    if step is not None:
        torch._foreach_div_(denom, (1.0 - beta2**step) ** 0.5)  # sqrt(v / (1 - b2^t))
        step_size = lr / (1.0 - beta1**step)  # lr / (1 - b1^t)
    torch._foreach_add_(denom, eps)
    if weight_decay != 0:
        torch._foreach_mul_(params, 1.0 - lr * weight_decay)  # w -= lr * wd * w
    torch._foreach_div_(denom, -step_size)  # (sqrt(v) + eps) / -lr
    torch._foreach_addcdiv_(params, exp_avgs, denom)  # w -= lr * m / (sqrt(v) + eps)


class ElectraAdamW(torch.optim.Optimizer):
    """Adam with decoupled weight decay, with the original ELECTRA's update (optionally bias-corrected).

    ``update = m_hat / (sqrt(v_hat) + eps) + weight_decay * w`` and ``w -= lr * update``, where ``m_hat``
    and ``v_hat`` are ``m`` and ``v`` themselves unless ``bias_correction`` (original
    ``AdamWeightDecayOptimizer`` has none). Uses the multi-tensor ``torch._foreach_*`` kernels when
    ``foreach`` (the default), a per-parameter loop otherwise.

    Args:
        params: parameters or parameter groups (each group may set ``weight_decay``).
        lr: peak learning rate.
        betas: ``(beta1, beta2)``, defaults ``(0.9, 0.999)``.
        eps: added to ``sqrt(v)``, default 1e-6.
        weight_decay: default decay of groups that do not set their own, 0.01.
        bias_correction: divide ``m`` and ``v`` by ``1 - beta ** t`` (standard Adam); False in the original.
        foreach: use the multi-tensor kernels.
        fused: with ``foreach``, update through torch's fused AdamW kernel (:func:`adamw_update_`); None (the
            default): where :func:`fused_adamw_available` says it runs on the parameters' device.

    Raises:
        ValueError: a negative learning rate, epsilon or weight decay, or a beta outside [0, 1).
    """

    def __init__(
        self,
        params,
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.01,
        bias_correction: bool = False,
        foreach: bool = True,
        fused: bool | None = None,
    ) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"lr={lr}, eps={eps}, weight_decay={weight_decay}: expected >= 0")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas={betas}: expected each in [0, 1)")
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            bias_correction=bias_correction,
            foreach=foreach,
            fused=fused,
        )
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D401 - torch's signature
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs = [], [], [], []
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("ElectraAdamW does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                params.append(p)
                grads.append(p.grad)
                exp_avgs.append(state["exp_avg"])
                exp_avg_sqs.append(state["exp_avg_sq"])
            if not params:
                continue
            step = self.state[params[0]]["step"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            if group["foreach"]:
                adamw_update_(
                    params, grads, exp_avgs, exp_avg_sqs, lr=lr, betas=(beta1, beta2), eps=eps,
                    weight_decay=wd, step=step if group["bias_correction"] else None, fused=uses_fused(group, params[0]),
                )  # fmt: skip
            else:
                if group["bias_correction"]:
                    step_size = lr / (1.0 - beta1**step)
                    denom_scale = (1.0 - beta2**step) ** 0.5
                else:
                    step_size, denom_scale = lr, 1.0
                for p, g, m, v in zip(params, grads, exp_avgs, exp_avg_sqs, strict=True):
                    m.lerp_(g, 1.0 - beta1)
                    v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                    denom = (v.sqrt() / denom_scale).add_(eps)
                    if wd != 0:
                        p.mul_(1.0 - lr * wd)
                    p.addcdiv_(m, denom, value=-step_size)
        return loss


def uses_fused(group: dict, param: torch.Tensor) -> bool:
    """Whether an :class:`ElectraAdamW` group updates through torch's fused kernel: its ``fused`` when set, else
    (None, or a checkpoint of a version without the key) :func:`fused_adamw_available` on ``param``'s device."""
    fused = group.get("fused")
    return fused_adamw_available(str(param.device)) if fused is None else bool(fused)


class UpdatedInStepAdamW(ElectraAdamW):
    """:class:`ElectraAdamW` whose update runs inside the whole training step
    (:class:`bioelectra.pretraining.step.WholeTrainingStep`, ``pretrain train`` with ``train_step`` ``whole`` or
    ``captured``): its ``step()`` does nothing, since the Trainer calls it after a training step that has
    already applied the update. Its parameter groups (the scheduler's learning rates) and its state (saved in
    checkpoints, loaded on resume) are the ones the whole step reads and updates; a checkpoint of either class
    resumes with the other."""

    def step(self, closure=None):  # noqa: D401 - torch's signature
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()
