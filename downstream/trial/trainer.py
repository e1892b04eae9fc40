"""The Trainer of one fine-tuning trial: ``FinetuneTrainer`` (sequential evaluation, micro-batches,
layer-wise learning-rate decay) and ``build_trainer``."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import SequentialSampler
from transformers import Trainer

from bioelectra.optimization import NO_DECAY_NAME_PARTS, ElectraAdamW, electra_lr_scheduler
from bioelectra.reporting import check_report_to, tensorboard_dir
from bioelectra.trainer_args import asynchronous_step_arguments
from downstream.settings import (
    FinetuneSettings,
    check_layerwise_lr_decay,
    metric_key,
    resolve_micro_batch_tokens,
    resolve_precision,
)


def split_batch(inputs: dict[str, Any], max_tokens: int) -> list[dict[str, Any]]:
    """Cut a padded batch into row slices of at most ``max_tokens`` tokens (``rows x padded length``).

    Args:
        inputs: the collator's batch; ``input_ids`` has shape ``(batch_size, sequence_length)``. Every tensor
            whose first dimension is ``batch_size`` is sliced along it; anything else is passed as is.
        max_tokens: token budget per slice; ``<= 0`` means no splitting. A slice has at least one row.

    Returns:
        ``[inputs]`` when the batch fits, else the slices in order (their rows add up to the batch).
    """

    ids = inputs["input_ids"]
    rows, length = ids.shape[0], ids.shape[-1]
    if max_tokens <= 0 or rows * length <= max_tokens or rows == 1:
        return [inputs]
    step = max(1, max_tokens // length)
    return [
        {
            k: (v[start : start + step] if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == rows else v)
            for k, v in inputs.items()
        }
        for start in range(0, rows, step)
    ]


def _loss_items(inputs: dict[str, Any]) -> int:
    """Number of terms the model's mean loss averages over: labelled positions (labels != -100)."""
    labels = inputs.get("labels")
    if labels is None:
        return int(inputs["input_ids"].shape[0])
    return int(labels.ne(-100).sum())


#: Parameter names of encoder layer i, and of the embedding block (and its projection), in ELECTRA/BERT models.
_ENCODER_LAYER = re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.")


_EMBEDDINGS = re.compile(r"(?:^|\.)embeddings(?:_project)?\.")


def layerwise_lr_scales(model, decay: float) -> dict[str, float]:
    """Learning-rate factor of each trainable parameter of an ELECTRA/BERT-style fine-tuning model.

    The rule of the original ELECTRA fine-tuning (google-research/electra ``model/optimization.py:
    _get_layer_lrs``): with L encoder layers, the embeddings (and ``embeddings_project``) are at depth 0,
    encoder layer i (0-based) at depth i + 1, everything else (the task head) at depth L + 2, and a parameter
    at depth d gets ``decay ** (L + 2 - d)``: the head 1, the top layer ``decay**2``, the embeddings
    ``decay**(L + 2)``.

    Args:
        model: a ``PreTrainedModel`` whose config has ``num_hidden_layers``.
        decay: the factor per layer, in (0, 1].

    Returns:
        ``{parameter name: factor}`` for the parameters that require gradients.

    Raises:
        ValueError: ``decay`` outside (0, 1].
    """
    check_layerwise_lr_decay(decay)
    num_layers = model.config.num_hidden_layers
    scales = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        match = _ENCODER_LAYER.search(name)
        if match:
            depth = int(match.group(1)) + 1
        elif _EMBEDDINGS.search(name):
            depth = 0
        else:
            depth = num_layers + 2
        scales[name] = decay ** (num_layers + 2 - depth)
    return scales


def electra_optimizer(model, *, lr: float, weight_decay: float, decay: float = 1.0) -> ElectraAdamW:
    """The original ELECTRA fine-tuning optimizer (google-research/electra ``model/optimization.py:
    create_optimizer``, ``AdamWeightDecayOptimizer``): Adam without bias correction, betas (0.9, 0.999),
    epsilon 1e-6, decoupled weight decay on every parameter but LayerNorm and biases
    (:data:`bioelectra.optimization.NO_DECAY_NAME_PARTS`), and the layer-wise rates of
    :func:`layerwise_lr_scales` (``decay`` 1.0: one rate). One parameter group per (rate, decayed) pair.
    """
    scales = layerwise_lr_scales(model, decay)
    groups: dict[tuple[float, bool], list] = {}
    for name, param in model.named_parameters():
        if name in scales:
            decayed = not any(part in name for part in NO_DECAY_NAME_PARTS)
            groups.setdefault((scales[name], decayed), []).append(param)
    return ElectraAdamW(
        [
            {"params": params, "lr": lr * scale, "weight_decay": weight_decay if decayed else 0.0}
            for (scale, decayed), params in sorted(groups.items(), key=lambda kv: (-kv[0][0], not kv[0][1]))
        ],
        lr=lr,
        betas=(0.9, 0.999),
        eps=1e-6,
        weight_decay=weight_decay,
        bias_correction=False,
    )


def dropout_overrides(dropout: float | None) -> dict[str, float]:
    """Config overrides that set every dropout of an ELECTRA/BERT fine-tuning model to ``dropout`` (hidden,
    attention and classifier); none for None (the checkpoint's own values)."""
    if dropout is None:
        return {}
    return {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout, "classifier_dropout": dropout}


class FinetuneTrainer(Trainer):
    """Trainer with sequential evaluation and optional micro-batches for long training batches.

    Evaluation: transformers 5 applies ``train_sampling_strategy="group_by_length"`` to evaluation too (a
    shuffled length-grouped sampler); predictions are mapped back to words by position, so evaluation
    must be sequential. Our eval features are already sorted by length, which gives the padding saving.

    Micro-batches (``micro_batch_tokens`` > 0, one process): a batch over the budget runs as row slices
    (:func:`split_batch`), each slice's mean loss weighted by its share of the batch's labelled
    positions, so the summed gradients equal the whole batch's mean-loss gradient (dropout aside) and
    the optimizer takes one step, as with the whole batch. Only the activations of one slice are alive
    at a time. Under DDP (several processes) batches are never split: every backward would all-reduce.
    """

    micro_batch_tokens: int = 0
    layerwise_lr_decay: float = 1.0
    optimizer_kind: str = "adamw"
    _loss_weight: float = 1.0

    def create_optimizer(self, model=None):
        """Trainer's AdamW, with one parameter group per (learning-rate factor, weight decay) pair when
        ``layerwise_lr_decay`` < 1 (:func:`layerwise_lr_scales`); the linear schedule then scales every
        group's rate alike. With ``optimizer_kind == "electra"``: the original's optimizer instead
        (:func:`electra_optimizer`)."""
        opt_model = self.model if model is None else model
        if self.optimizer is None and self.optimizer_kind == "electra":
            self.optimizer = electra_optimizer(
                opt_model, lr=self.args.learning_rate, weight_decay=self.args.weight_decay, decay=self.layerwise_lr_decay
            )
            return self.optimizer
        if self.layerwise_lr_decay == 1.0 or self.optimizer is not None:
            return super().create_optimizer(model)
        scales = layerwise_lr_scales(opt_model, self.layerwise_lr_decay)
        decay_names = set(self.get_decay_parameter_names(opt_model))
        groups: dict[tuple[float, bool], list] = {}
        for name, param in opt_model.named_parameters():
            if name in scales:
                groups.setdefault((scales[name], name in decay_names), []).append(param)
        optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
        lr = optimizer_kwargs.pop("lr", self.args.learning_rate)
        self.optimizer = optimizer_cls(
            [
                {"params": params, "lr": lr * scale, "weight_decay": self.args.weight_decay if decayed else 0.0}
                for (scale, decayed), params in sorted(groups.items(), key=lambda kv: (-kv[0][0], not kv[0][1]))
            ],
            lr=lr,
            **optimizer_kwargs,
        )
        return self.optimizer

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        """The Trainer's schedule, or with ``optimizer_kind == "electra"`` the original's: linear warmup over
        ``warmup_ratio`` of the steps multiplied by a linear decay to 0 computed from step 0
        (:func:`bioelectra.optimization.electra_lr_lambda`)."""
        if self.optimizer_kind != "electra" or self.lr_scheduler is not None:
            return super().create_scheduler(num_training_steps, optimizer)
        self.lr_scheduler = electra_lr_scheduler(
            optimizer or self.optimizer,
            warmup_steps=self.args.get_warmup_steps(num_training_steps),
            num_train_steps=num_training_steps,
        )
        self._created_lr_scheduler = True
        return self.lr_scheduler

    def _get_eval_sampler(self, eval_dataset):
        if self.args.world_size <= 1:
            return SequentialSampler(eval_dataset)
        return super()._get_eval_sampler(eval_dataset)

    def training_step(self, model, inputs, num_items_in_batch=None):
        chunks = split_batch(inputs, self.micro_batch_tokens if self.args.world_size <= 1 else 0)
        if len(chunks) == 1:
            return super().training_step(model, inputs, num_items_in_batch)
        # A model that divides its summed loss by num_items_in_batch is already weighted per item.
        pre_scaled = self.model_accepts_loss_kwargs and num_items_in_batch is not None
        counts = [_loss_items(c) for c in chunks]
        total = sum(counts)
        loss = None
        for chunk, count in zip(chunks, counts, strict=True):
            if count == 0 and total > 0:
                continue  # nothing to learn from: its mean loss would be 0/0
            self._loss_weight = 1.0 if pre_scaled or total == 0 else count / total
            try:
                part = super().training_step(model, chunk, num_items_in_batch)
            finally:
                self._loss_weight = 1.0
            loss = part if loss is None else loss + part
        return loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        result = super().compute_loss(
            model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
        )
        weight = self._loss_weight
        if weight == 1.0:
            return result
        if return_outputs:
            return result[0] * weight, result[1]
        return result * weight


def warmup_steps(settings: FinetuneSettings, num_train_examples: int) -> float | int:
    """``TrainingArguments.warmup_steps`` for ``settings.warmup_ratio``. transformers 5 reads a value < 1
    as a ratio of the total steps and a value >= 1 as steps, so a ratio of 1.0 (warm up over the whole run)
    is given as the run's number of optimizer steps (as the Trainer counts them, one process per device)."""
    if settings.warmup_ratio < 1.0:
        return settings.warmup_ratio
    if settings.max_steps > 0:
        return settings.max_steps
    world = int(os.environ.get("WORLD_SIZE", "1"))
    per_epoch = math.ceil(num_train_examples / (settings.per_device_train_batch_size * world))
    return max(1, math.ceil(settings.num_train_epochs * per_epoch))


def build_trainer(settings: FinetuneSettings, task, tokenizer, *, seed: int, output_dir: Path):
    """The Trainer of one trial: a fresh model from the checkpoint, the task's data and dev evaluator.

    Length-grouped training batches (``train_sampling_strategy="group_by_length"``), dynamic padding,
    evaluation in length order, argmax before gathering predictions, one checkpoint kept (the best epoch
    by ``settings.metric`` on the development set), bf16 on GPUs that support it, no per-step wait on the device
    (:func:`bioelectra.trainer_args.asynchronous_step_arguments`). With
    ``settings.report_to`` naming TensorBoard, its event files go to ``<output_dir>/../tensorboard`` (the
    trial's folder, which outlives the checkpoints).

    Returns:
        ``(trainer, dev_evaluator)``.
    """
    from transformers import TrainingArguments, set_seed

    set_seed(seed)  # before building the model: the new head's initialisation depends on it
    model = task.build_model(settings.checkpoint, **dropout_overrides(settings.dropout))
    cuda = torch.cuda.is_available()
    args = TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=settings.num_train_epochs,
        max_steps=settings.max_steps,
        learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.per_device_train_batch_size,
        per_device_eval_batch_size=settings.per_device_eval_batch_size,
        warmup_steps=warmup_steps(settings, len(task.dataset("train"))),
        weight_decay=settings.weight_decay,
        lr_scheduler_type="linear",
        eval_strategy="epoch",
        save_strategy="epoch",
        logging_strategy="steps",
        logging_steps=50,
        save_only_model=True,
        save_total_limit=1,
        load_best_model_at_end=True,
        metric_for_best_model=metric_key(settings.metric),
        greater_is_better=settings.greater_is_better,
        seed=seed,
        data_seed=seed,
        train_sampling_strategy="group_by_length",
        use_cpu=not cuda,
        report_to=check_report_to(settings.report_to),
        **resolve_precision(settings.precision),
        **asynchronous_step_arguments(cuda),
    )
    dev_evaluator = RecordingEvaluator(task.evaluator("dev"))
    with tensorboard_dir(Path(output_dir).parent / "tensorboard"):  # read when the Trainer makes its callbacks
        trainer = FinetuneTrainer(
            model=model,
            args=args,
            train_dataset=task.dataset("train"),
            eval_dataset=task.dataset("dev"),
            data_collator=task.data_collator(tokenizer, pad_to_multiple_of=8 if cuda else None),
            processing_class=tokenizer,
            compute_metrics=dev_evaluator,
            preprocess_logits_for_metrics=task.reduce_logits,
        )
    trainer.micro_batch_tokens = resolve_micro_batch_tokens(settings.micro_batch_tokens, cuda=cuda)
    trainer.layerwise_lr_decay = settings.layerwise_lr_decay
    trainer.optimizer_kind = settings.optimizer
    return trainer, dev_evaluator


class RecordingEvaluator:
    """Wraps a task evaluator and keeps each evaluation's full result, in call order."""

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self.history: list = []

    @property
    def last(self):
        return self.evaluator.last

    def __call__(self, eval_prediction) -> dict[str, float]:
        metrics = self.evaluator(eval_prediction)
        self.history.append(self.evaluator.last)
        return metrics
