"""The cases of ``bench/pretrain_throughput.py``: each case's model (an original size, or a ``pretrain train
--hparams`` file's), its synthetic masked batches, and the optimizer (with the whole training step, where
asked) of one of its loops. Imported by ``pretrain_throughput.py``, which puts this folder and the repository
on ``sys.path``.
"""

from __future__ import annotations

import torch

from bioelectra.configuration import ElectraPretrainingConfig
from bioelectra.fused_attention import fuse_qkv_projections
from bioelectra.masking import ElectraMaskingCollator
from bioelectra.modeling import ElectraPretrainingModel
from bioelectra.optimization import (
    ElectraAdamW,
    UpdatedInStepAdamW,
    decay_parameter_groups,
    electra_lr_scheduler,
    uses_fused,
)
from bioelectra.pretraining.step import WholeTrainingStep

BIO_ELECTRA_VOCAB_SIZE = 31620
SPECIAL = {"pad_token_id": 0, "cls_token_id": 2, "sep_token_id": 3, "mask_token_id": 4}
DEFAULT_BATCH = {"small": 128, "base": 128, "large": 32}  # when a case gives no batch size


def case_config(size: str, vocab_size: int, seq_len: int, layers: int | None) -> tuple[ElectraPretrainingConfig, str]:
    """The model of a case: an original size, or a ``pretrain train --hparams`` JSON file's model."""
    overrides = {"max_position_embeddings": max(512, seq_len)}
    if size in DEFAULT_BATCH:
        if layers:
            overrides["num_hidden_layers"] = layers
        config = ElectraPretrainingConfig.from_size(
            size, vocab_size=vocab_size, model_overrides=overrides, mask_prob=0.25 if size == "large" else 0.15
        )
        return config, size
    from bioelectra.pretraining import build_model, parse_hparams_arg, resolve_hparams

    raw = parse_hparams_arg(size)
    model_size = raw.pop("model_size", "small")
    vocab_size = int(raw.pop("vocab_size", vocab_size))  # the recipe's vocabulary, when it names one
    hp = resolve_hparams(model_size, raw)
    hp.model_hparam_overrides = {**overrides, **hp.model_hparam_overrides}
    if layers:
        hp.model_hparam_overrides["num_hidden_layers"] = layers
    config = build_model(model_size, hp, vocab_size=vocab_size, pad_token_id=0).config
    return config, model_size


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


def update_label(optimizer: torch.optim.Optimizer, whole_step: WholeTrainingStep | None) -> str:
    """A loop's optimizer and how its update ran, for the report: ``UpdatedInStepAdamW (fused kernel)``,
    ``ElectraAdamW (foreach)``, ``ElectraAdamW (per parameter)``, ``UpdatedInStepAdamW (compiled)``, ``AdamW``."""
    name = type(optimizer).__name__
    if whole_step is not None:
        how = "fused kernel" if whole_step.fused_update else "compiled" if whole_step.compile_scope == "step" else "foreach"
    elif isinstance(optimizer, ElectraAdamW):
        group = optimizer.param_groups[0]
        how = ("fused kernel" if uses_fused(group, group["params"][0]) else "foreach") if group["foreach"] else "per parameter"
    else:
        return name
    return f"{name} ({how})"


def loop_model(
    config: ElectraPretrainingConfig, *, device: torch.device, optimized: bool, fuse_qkv: bool
) -> tuple[ElectraPretrainingModel, bool]:
    """A loop's model, in training mode on ``device``: SDPA attention when ``optimized``, eager attention for the
    naive loop; with ``fuse_qkv`` (optimized loops only) query, key and value as one projection
    (:func:`bioelectra.fused_attention.fuse_qkv_projections`). Returns the model and whether it was fused."""
    config = ElectraPretrainingConfig.from_dict(config.to_dict())
    config._attn_implementation = "sdpa" if optimized else "eager"
    model = ElectraPretrainingModel(config).to(device).train()
    return model, bool(optimized and fuse_qkv and fuse_qkv_projections(model))


def loop_optimizer(
    model: ElectraPretrainingModel,
    *,
    device: torch.device,
    optimized: bool,
    compile_model: bool,
    fused_adamw: bool,
    whole: str | None,
    use_bf16: bool,
    step_options: dict | None = None,
) -> tuple[torch.optim.Optimizer, WholeTrainingStep | None, torch.optim.lr_scheduler.LRScheduler]:
    """``(optimizer, whole step or None, scheduler)`` of a :func:`run_loop`: the whole step's
    :class:`UpdatedInStepAdamW`, torch's fused AdamW (``fused_adamw`` on CUDA), or ELECTRA's AdamW (foreach kernels
    when ``optimized``); ELECTRA's schedule (10 warmup steps). ``step_options``: the whole step's ``compile_scope``,
    ``compile_options`` (inductor's, :func:`bioelectra.pretraining.compile_options.inductor_options`) and
    ``bf16_weight_copies`` (used only with ``use_bf16``: without autocast there is no cast to spare)."""
    groups = decay_parameter_groups(model, weight_decay=0.01)
    whole_step = None
    if whole is not None:
        optimizer = UpdatedInStepAdamW(groups, lr=5e-4, eps=1e-6, weight_decay=0.01)
        options = dict(step_options or {})
        options["bf16_weight_copies"] = bool(options.get("bf16_weight_copies")) and use_bf16
        whole_step = WholeTrainingStep(
            model, optimizer, max_grad_norm=1.0, bf16=use_bf16, compile=compile_model,
            capture=whole == "captured" and device.type == "cuda", **options,
        )  # fmt: skip
    elif optimized and fused_adamw and device.type == "cuda":  # bias-corrected: not the original's update
        optimizer = torch.optim.AdamW(groups, lr=5e-4, eps=1e-6, weight_decay=0.01, fused=True)
    else:
        optimizer = ElectraAdamW(groups, lr=5e-4, eps=1e-6, weight_decay=0.01, foreach=optimized)
    scheduler = electra_lr_scheduler(optimizer, warmup_steps=10, num_train_steps=10_000)
    if whole_step is not None:  # a no-op (the update is in the whole step) that the Trainer calls too; else the
        optimizer.step()  # scheduler warns that it stepped first
    return optimizer, whole_step, scheduler
