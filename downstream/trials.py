"""Repeated seeded fine-tuning trials with the Hugging Face Trainer, and their reports.

``run_trials(settings)`` reads the benchmark once, tokenises it once, then for trial ``i`` (seed
``seed + i``) loads a fresh copy of the checkpoint, fine-tunes it, keeps the epoch that is best on the
development set by ``settings.metric``, evaluates that model on the test set, and writes:

- ``output_dir/results.json``: settings, split counts, per-trial dev and test metrics (seed, best epoch,
  epochs, seconds), and a summary (mean, std with its ddof, min, max) of each headline metric;
- ``output_dir/results.md``: the same as Markdown tables;
- ``output_dir/trial-<i>/test_predictions.txt`` (NER: ``token gold predicted``) or
  ``test_predictions.tsv`` (RE: ``index<TAB>gold<TAB>predicted``), and
  ``output_dir/trial-<i>/model/`` (``save_pretrained``, loadable with ``AutoModelFor...`` and usable in a
  ``transformers.pipeline``).

What differs between task kinds (metrics summarised, count columns, prediction files, how the metric is
stated) comes from the task adapter (``downstream.tasks``). ``run_folds`` runs ``run_trials`` once per
cross-validation fold (GAD) into ``output_dir/fold-<k>/`` and writes the mean over folds.

Running the same command again reuses finished trials (``trial-<i>/trial.json`` with the same settings)
and runs only the missing ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from downstream.checkpoints import check_max_seq_length, load_tokenizer
from downstream.errors import DownstreamError
from downstream.metrics import summarize
from downstream.registry import find_split_files, get_spec, locate_dataset, locate_dataset_dir
from downstream.tasks import argmax_logits, build_task

logger = logging.getLogger(__name__)

#: Standard deviation reported over trials: sample std (ddof=1).
STD_DDOF = 1

#: Settings that only relation extraction uses.
RE_ONLY_SETTINGS = ("fold", "re_head", "dev_fraction", "dev_split_seed")


@dataclass
class FinetuneSettings:
    """Everything that defines a fine-tuning run.

    Attributes:
        task: ``"ner"`` or ``"re"``.
        dataset: registry name (optional when ``data_dir`` is given).
        data_dir: local folder with ``train``/``devel`` (or ``dev``)/``test`` files; overrides the registry.
        checkpoint: a directory or hub id ``from_pretrained`` loads.
        checkpoint_name: what the user passed as ``--ckpt`` (reported).
        output_dir: where results and trial outputs go.
        metric: development metric that picks the best epoch (``f1``, ``precision``, ``recall``,
            ``accuracy`` or ``loss``).
        greater_is_better: whether a larger ``metric`` is better.
        num_trials: number of runs, seeds ``seed .. seed + num_trials - 1``.
        num_train_epochs: epochs per trial.
        learning_rate: peak learning rate (linear warmup over ``warmup_ratio`` of the steps, then linear
            decay to 0).
        per_device_train_batch_size: training batch size per device.
        per_device_eval_batch_size: evaluation batch size per device.
        max_seq_length: sub-tokens per input, [CLS] and [SEP] included.
        seed: seed of the first trial.
        max_steps: if > 0, optimizer steps per trial (overrides ``num_train_epochs``).
        warmup_ratio: fraction of steps with linear warmup.
        weight_decay: AdamW weight decay.
        precision: ``auto`` (bf16 on a GPU that supports it, else fp32), ``fp32``, ``bf16``, ``fp16``.
        iob1_policy: ``repair`` or ``reject`` IOB1 tags (NER).
        max_train_examples: keep only the first N training sentences / examples (smoke runs).
        fold: cross-validation fold to run (RE datasets with fold folders, e.g. GAD ``1`` .. ``10``).
        re_head: RE classifier head, ``electra`` (dropout + linear over [CLS]) or ``hf``
            (``ElectraClassificationHead``).
        dev_fraction: RE: fraction of train cut off as the development split when there is none.
        dev_split_seed: RE: seed of that cut (shared by all trials).
        layerwise_lr_decay: each encoder layer below the task head gets this factor of the learning rate of
            the one above it: the head ``learning_rate``, the top layer ``decay**2``, the embeddings
            ``decay**(num_hidden_layers + 2)`` (original ELECTRA fine-tuning ``layerwise_lr_decay``,
            ``model/optimization.py: _get_layer_lrs``; paper Appendix A: 0.8 for Small and Base). 1.0: one
            learning rate for all.
        micro_batch_tokens: a training batch with more (padded) tokens than this runs as several
            forward/backward passes whose gradients add up to the whole batch's: the same update (only
            dropout's random draws differ) with the activation memory of a smaller batch. ``None``:
            :data:`CPU_MICRO_BATCH_TOKENS` on CPU, no splitting on a GPU; ``0``: never split. Not part of
            the trial fingerprint.
    """

    task: str
    checkpoint: str
    output_dir: Path
    dataset: str | None = None
    data_dir: Path | None = None
    checkpoint_name: str | None = None
    metric: str = "f1"
    greater_is_better: bool = True
    num_trials: int = 1
    num_train_epochs: float = 3.0
    learning_rate: float = 1e-4
    per_device_train_batch_size: int = 32
    per_device_eval_batch_size: int = 64
    max_seq_length: int = 128
    seed: int = 42
    max_steps: int = -1
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    precision: str = "auto"
    iob1_policy: str = "repair"
    max_train_examples: int | None = None
    fold: int | None = None
    re_head: str = "electra"
    dev_fraction: float = 0.1
    dev_split_seed: int = 42
    layerwise_lr_decay: float = 1.0
    micro_batch_tokens: int | None = None

    def __post_init__(self) -> None:
        """Refuse values that would finish with exit 0 and a meaningless result, or crash later.

        Raises:
            ValueError: the option named, with the value and what is expected.
        """
        checks = [
            (math.isfinite(self.learning_rate) and self.learning_rate > 0, "--learning-rate", "a finite number > 0"),
            (
                self.max_steps > 0 or (math.isfinite(self.num_train_epochs) and self.num_train_epochs > 0),
                "--epochs",
                "a finite number > 0 (or --max-steps > 0)",
            ),
            (self.max_train_examples is None or self.max_train_examples >= 1, "--max-train-examples", "at least 1"),
            (self.num_trials >= 1, "--trials", "at least 1"),
            (self.max_seq_length >= 8, "--max-seq-length", "at least 8"),
            (math.isfinite(self.weight_decay) and self.weight_decay >= 0, "--weight-decay", "a finite number >= 0"),
            (0.0 <= self.warmup_ratio < 1.0 or self.warmup_ratio == 1.0, "--warmup-ratio", "a fraction in [0, 1]"),
        ]
        values = {
            "--learning-rate": self.learning_rate,
            "--epochs": self.num_train_epochs,
            "--max-train-examples": self.max_train_examples,
            "--trials": self.num_trials,
            "--max-seq-length": self.max_seq_length,
            "--weight-decay": self.weight_decay,
            "--warmup-ratio": self.warmup_ratio,
        }
        for ok, option, expected in checks:
            if not ok:
                raise ValueError(f"{option} {values[option]!r}: expected {expected}")

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in data.items()}

    def fingerprint(self) -> str:
        """Hash of the settings that change a trial's result (not the trial count or output folder)."""
        data = self.to_json()
        for key in ("num_trials", "output_dir", "checkpoint", "micro_batch_tokens"):
            data.pop(key)
        if self.task == "ner":  # RE-only settings: NER fingerprints stay what they were
            for key in RE_ONLY_SETTINGS:
                data.pop(key)
        if self.layerwise_lr_decay == 1.0:  # the default: fingerprints from before the option stay valid
            data.pop("layerwise_lr_decay")
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def resolve_precision(precision: str) -> dict[str, bool]:
    """TrainingArguments precision flags: ``auto`` is bf16 where the GPU supports it, fp32 on CPU.

    Raises:
        DownstreamError: unknown value, or fp16 requested without a GPU.
    """
    import torch

    cuda = torch.cuda.is_available()
    if precision == "auto":
        return {"bf16": bool(cuda and torch.cuda.is_bf16_supported()), "fp16": False}
    if precision == "fp32":
        return {"bf16": False, "fp16": False}
    if precision == "bf16":
        return {"bf16": True, "fp16": False}
    if precision == "fp16":
        if not cuda:
            raise DownstreamError("--precision fp16 needs a CUDA GPU (use fp32 or bf16 on CPU)")
        return {"bf16": False, "fp16": True}
    raise DownstreamError(f"unknown precision {precision!r}; expected auto, fp32, bf16 or fp16")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _resolve_files(settings: FinetuneSettings) -> dict[str, Path]:
    if settings.task == "re":
        from downstream.re import find_re_files

        return find_re_files(_re_folder(settings), fold=settings.fold)
    if settings.data_dir is not None:
        return find_split_files(Path(settings.data_dir))
    if not settings.dataset:
        raise DownstreamError("no data: give a registered dataset name or a data directory")
    return locate_dataset(settings.dataset, task=settings.task)


def _re_folder(settings: FinetuneSettings) -> Path:
    if settings.data_dir is not None:
        return Path(settings.data_dir)
    if not settings.dataset:
        raise DownstreamError("no data: give a registered dataset name or a data directory")
    return locate_dataset_dir(settings.dataset, task="re")


def _task_options(settings: FinetuneSettings) -> dict[str, Any]:
    if settings.task == "re":
        return {
            "max_train_examples": settings.max_train_examples,
            "dev_fraction": settings.dev_fraction,
            "dev_split_seed": settings.dev_split_seed,
            "re_head": settings.re_head,
        }
    return {"iob1_policy": settings.iob1_policy, "max_train_examples": settings.max_train_examples}


#: Development metrics that can pick the best epoch (``--metric``); each task reports all of them.
SELECTION_METRICS = ("f1", "precision", "recall", "accuracy", "loss")


def check_metric(metric: str) -> None:
    """Refuse an unknown ``--metric`` before any training (the Trainer would only fail after an epoch).

    Raises:
        DownstreamError: ``metric`` is not one of :data:`SELECTION_METRICS` (``eval_`` prefix allowed).
    """
    if metric.removeprefix("eval_") not in SELECTION_METRICS:
        raise DownstreamError(f"--metric {metric!r}: expected one of {', '.join(SELECTION_METRICS)}")


def _metric_key(metric: str) -> str:
    return metric if metric.startswith("eval_") else f"eval_{metric}"


#: Default ``micro_batch_tokens`` on CPU: 1,024 padded tokens (8 rows of 128) per forward pass. At
#: ELECTRA-small's shape a 32 x 128 batch keeps about 1 GB of activations (with dropout masks) for the backward
#: pass. Measured peak RSS over the 320 longest NCBI-disease training sentences (10 steps of 32 x 128):
#: 2,280 MB whole, 1,717 MB with 2,048-token passes, 1,270 MB with 1,024-token passes.
CPU_MICRO_BATCH_TOKENS = 1024


def split_batch(inputs: dict[str, Any], max_tokens: int) -> list[dict[str, Any]]:
    """Cut a padded batch into row slices of at most ``max_tokens`` tokens (``rows x padded length``).

    Args:
        inputs: the collator's batch; ``input_ids`` has shape ``(batch_size, sequence_length)``. Every tensor
            whose first dimension is ``batch_size`` is sliced along it; anything else is passed as is.
        max_tokens: token budget per slice; ``<= 0`` means no splitting. A slice has at least one row.

    Returns:
        ``[inputs]`` when the batch fits, else the slices in order (their rows add up to the batch).
    """
    import torch

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


def check_layerwise_lr_decay(decay: float) -> None:
    """Raises ``ValueError`` unless ``decay`` is a factor in (0, 1]."""
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"layerwise_lr_decay={decay}: expected a factor in (0, 1]")


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


def _finetune_trainer_class():
    from torch.utils.data import SequentialSampler
    from transformers import Trainer

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
        _loss_weight: float = 1.0

        def create_optimizer(self, model=None):
            """Trainer's AdamW, with one parameter group per (learning-rate factor, weight decay) pair when
            ``layerwise_lr_decay`` < 1 (:func:`layerwise_lr_scales`); the linear schedule then scales every
            group's rate alike."""
            opt_model = self.model if model is None else model
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

    return FinetuneTrainer


def resolve_micro_batch_tokens(value: int | None, *, cuda: bool) -> int:
    """``micro_batch_tokens`` to use: ``None`` -> :data:`CPU_MICRO_BATCH_TOKENS` on CPU, 0 on a GPU.

    Raises:
        ValueError: a negative value.
    """
    if value is None:
        return 0 if cuda else CPU_MICRO_BATCH_TOKENS
    if value < 0:
        raise ValueError(f"micro_batch_tokens={value}: expected >= 0 (0 = never split)")
    return value


def build_trainer(settings: FinetuneSettings, task, tokenizer, *, seed: int, output_dir: Path):
    """The Trainer of one trial: a fresh model from the checkpoint, the task's data and dev evaluator.

    Length-grouped training batches (``train_sampling_strategy="group_by_length"``), dynamic padding,
    evaluation in length order, argmax before gathering predictions, one checkpoint kept (the best epoch
    by ``settings.metric`` on the development set), bf16 on GPUs that support it.

    Returns:
        ``(trainer, dev_evaluator)``.
    """
    import torch
    from transformers import TrainingArguments, set_seed

    set_seed(seed)  # before building the model: the new head's initialisation depends on it
    model = task.build_model(settings.checkpoint)
    cuda = torch.cuda.is_available()
    args = TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=settings.num_train_epochs,
        max_steps=settings.max_steps,
        learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.per_device_train_batch_size,
        per_device_eval_batch_size=settings.per_device_eval_batch_size,
        warmup_steps=settings.warmup_ratio,  # transformers 5: a float < 1 is a ratio of the total steps
        weight_decay=settings.weight_decay,
        lr_scheduler_type="linear",
        eval_strategy="epoch",
        save_strategy="epoch",
        logging_strategy="steps",
        logging_steps=50,
        save_only_model=True,
        save_total_limit=1,
        load_best_model_at_end=True,
        metric_for_best_model=_metric_key(settings.metric),
        greater_is_better=settings.greater_is_better,
        seed=seed,
        data_seed=seed,
        train_sampling_strategy="group_by_length",
        use_cpu=not cuda,
        dataloader_pin_memory=cuda,
        report_to="none",
        **resolve_precision(settings.precision),
    )
    dev_evaluator = _RecordingEvaluator(task.evaluator("dev"))
    trainer = _finetune_trainer_class()(
        model=model,
        args=args,
        train_dataset=task.dataset("train"),
        eval_dataset=task.dataset("dev"),
        data_collator=task.data_collator(tokenizer, pad_to_multiple_of=8 if cuda else None),
        processing_class=tokenizer,
        compute_metrics=dev_evaluator,
        preprocess_logits_for_metrics=argmax_logits,
    )
    trainer.micro_batch_tokens = resolve_micro_batch_tokens(settings.micro_batch_tokens, cuda=cuda)
    trainer.layerwise_lr_decay = settings.layerwise_lr_decay
    return trainer, dev_evaluator


def run_trial(settings: FinetuneSettings, task, tokenizer, trial_index: int) -> dict[str, Any]:
    """Fine-tune one trial and return its record (also written to ``trial-<i>/trial.json``)."""
    seed = settings.seed + trial_index
    trial_dir = Path(settings.output_dir) / f"trial-{trial_index}"
    trial_dir.mkdir(parents=True, exist_ok=True)
    ckpt_dir = trial_dir / "checkpoints"
    trainer, dev_evaluator = build_trainer(settings, task, tokenizer, seed=seed, output_dir=ckpt_dir)
    trainer.add_callback(_non_finite_loss_callback(trial_index))
    started = time.perf_counter()
    try:
        train_output = trainer.train()
    except BaseException:
        shutil.rmtree(ckpt_dir, ignore_errors=True)  # nothing half-done left behind
        with contextlib.suppress(OSError):
            trial_dir.rmdir()  # only when empty (a finished trial's files stay)
        raise
    train_seconds = time.perf_counter() - started
    best_epoch = _best_epoch(trainer)

    # The Trainer has reloaded the best epoch's weights. Its dev scores were computed during training;
    # score the test set once with them.
    dev, dev_loss = _best_dev_result(trainer, dev_evaluator)
    if dev is None:  # no evaluation happened during training: score dev now
        dev_loss = trainer.evaluate(task.dataset("dev")).get("eval_loss", float("nan"))
        dev = dev_evaluator.last
    test_evaluator = task.evaluator("test")
    trainer.compute_metrics = test_evaluator
    started_test = time.perf_counter()
    trainer.predict(task.dataset("test"))
    test_seconds = time.perf_counter() - started_test
    test = test_evaluator.last
    if dev is None or test is None:
        raise DownstreamError("evaluation produced no metrics")
    dev.metrics["loss"] = float(dev_loss)

    predictions_file = trial_dir / task.predictions_filename
    task.write_predictions(predictions_file, "test", test)
    model_dir = trial_dir / "model"
    tmp_model_dir = trial_dir / ".model.tmp"
    shutil.rmtree(tmp_model_dir, ignore_errors=True)
    trainer.save_model(str(tmp_model_dir))
    tokenizer.save_pretrained(str(tmp_model_dir))
    (tmp_model_dir / "training_args.bin").unlink(missing_ok=True)  # a pickle; the settings are in results.json
    shutil.rmtree(model_dir, ignore_errors=True)
    os.replace(tmp_model_dir, model_dir)
    shutil.rmtree(ckpt_dir, ignore_errors=True)

    record = {
        "trial_index": trial_index,
        "seed": seed,
        "best_epoch": best_epoch,
        "epochs": settings.num_train_epochs,
        "global_steps": trainer.state.global_step,
        "train_seconds": round(train_seconds, 2),
        "train_samples_per_second": train_output.metrics.get("train_samples_per_second"),
        "test_seconds": round(test_seconds, 2),
        "dev": dev.metrics,
        "test": test.metrics,
        "model_dir": str(model_dir),
        "predictions_file": str(predictions_file),
        "fingerprint": settings.fingerprint(),
    }
    _atomic_write(trial_dir / "trial.json", json.dumps(record, indent=2))
    return record


def _non_finite_loss_callback(trial_index: int):
    """A callback that stops the trial when a logged training loss is NaN or infinite (a learning rate far
    too high, say), naming the step and the learning rate, instead of reporting an untrained model's F1."""
    from transformers import TrainerCallback

    class NonFiniteLoss(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            for key in ("loss", "train_loss", "eval_loss"):  # eval: the updated weights themselves blew up
                value = (logs or {}).get(key)
                if isinstance(value, int | float) and not math.isfinite(value):
                    raise DownstreamError(
                        f"trial {trial_index}: the {'development' if key == 'eval_loss' else 'training'} loss "
                        f"became {value} by step {state.global_step} (learning rate {args.learning_rate:g}); "
                        "lower --learning-rate"
                    )

    return NonFiniteLoss()


class _RecordingEvaluator:
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


def _best_dev_result(trainer, recorder: _RecordingEvaluator):
    """The recorded dev result and loss of the checkpoint the Trainer kept as best, or ``(None, None)``."""
    best = trainer.state.best_model_checkpoint
    evals = [entry for entry in trainer.state.log_history if "eval_loss" in entry]
    if best is None or len(evals) != len(recorder.history):
        return None, None
    step = int(Path(best).name.rsplit("-", 1)[-1])
    for entry, result in zip(evals, recorder.history, strict=True):
        if entry.get("step") == step:
            return result, entry["eval_loss"]
    return None, None


def _best_epoch(trainer) -> float | None:
    """The epoch of the checkpoint the Trainer kept as best (from its log history)."""
    best = trainer.state.best_model_checkpoint
    if best is None:
        return None
    step = int(Path(best).name.rsplit("-", 1)[-1])
    for entry in trainer.state.log_history:
        if entry.get("step") == step and "epoch" in entry:
            return round(float(entry["epoch"]), 2)
    return None


def run_trials(settings: FinetuneSettings) -> dict[str, Any]:
    """Run ``settings.num_trials`` seeded fine-tunings and write the reports (see the module docstring).

    Returns:
        The content of ``results.json``.

    Raises:
        DownstreamError: bad data, missing dataset, unusable checkpoint.
    """
    check_metric(settings.metric)
    check_layerwise_lr_decay(settings.layerwise_lr_decay)
    output_dir = Path(settings.output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise DownstreamError(f"--output-dir {output_dir}: exists and is a file, not a folder")
    files = _resolve_files(settings)
    task = build_task(settings.task, files, **_task_options(settings))
    tokenizer = load_tokenizer(settings.checkpoint)
    check_max_seq_length(settings.checkpoint, settings.max_seq_length)
    task.encode(tokenizer, max_seq_length=settings.max_seq_length)
    output_dir.mkdir(parents=True, exist_ok=True)  # only once the inputs are known good: no empty folders
    counts = task.counts()
    logger.info(
        "%s: train %d / dev %d / test %d %s, labels %s",
        settings.dataset or settings.data_dir,
        counts["train"][task.size_key],
        counts["dev"][task.size_key],
        counts["test"][task.size_key],
        task.size_key,
        task.labels,
    )
    for split in ("train", "dev", "test"):
        if "labels" in counts[split]:
            logger.info("%s examples per label: %s", split, counts[split]["labels"])
    records = []
    for trial_index in range(settings.num_trials):
        record_path = output_dir / f"trial-{trial_index}" / "trial.json"
        if record_path.is_file():
            try:
                previous = json.loads(record_path.read_text())
            except (ValueError, OSError) as exc:
                logger.warning("%s: unreadable (%s); running trial %d again", record_path, exc, trial_index)
                previous = {}
            if previous.get("fingerprint") == settings.fingerprint() and Path(previous.get("model_dir", "")).is_dir():
                logger.info("trial %d (seed %d): already done, reusing %s", trial_index, previous["seed"], record_path)
                records.append(previous)
                continue
        logger.info("trial %d/%d (seed %d)", trial_index + 1, settings.num_trials, settings.seed + trial_index)
        records.append(run_trial(settings, task, tokenizer, trial_index))
        _write_reports(settings, task, counts, records)
    return _write_reports(settings, task, counts, records)


def _write_reports(settings: FinetuneSettings, task, counts, records) -> dict[str, Any]:
    headline = task.headline_metrics
    summary = {
        split: {name: summarize([r[split][name] for r in records], ddof=STD_DDOF) for name in headline}
        for split in ("dev", "test")
    }
    spec = None
    if settings.dataset:
        try:
            spec = get_spec(settings.dataset)
        except DownstreamError:
            spec = None
    report = {
        "task": settings.task,
        "dataset": settings.dataset or str(settings.data_dir),
        "dataset_title": spec.title if spec else None,
        "checkpoint": settings.checkpoint_name or settings.checkpoint,
        "metric_mode": task.metric_mode,
        "f1_name": task.f1_name,
        "labels": task.labels,
        "settings": settings.to_json(),
        "count_columns": [list(c) for c in task.count_columns],
        "counts": counts,
        "num_trials": len(records),
        "trials": records,
        "summary": summary,
        "std_ddof": STD_DDOF,
    }
    if settings.task == "re":
        report["fold"] = settings.fold
        report["positive_labels"] = task.positive_labels
        report["model_class"] = task.model_class_name
    output_dir = Path(settings.output_dir)
    _atomic_write(output_dir / "results.json", json.dumps(report, indent=2))
    _atomic_write(output_dir / "results.md", format_markdown(report))
    return report


#: ``results.md`` count columns of reports written before tasks named theirs (NER).
DEFAULT_COUNT_COLUMNS = (("sentences", "sentences"), ("words", "words"), ("entities", "entities"), ("windows", "windows"))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _summary_rows(summary: dict[str, Any], *, mean_header: str) -> list[str]:
    """Markdown rows: mean, std, min and max (percent) of dev and test F1, precision and recall."""
    rows = ["", f"| split | metric | {mean_header} | std | min | max |", "|---|---|---:|---:|---:|---:|"]
    for split in ("dev", "test"):
        for name in ("f1", "precision", "recall"):
            s = summary[split][name]
            rows.append(f"| {split} | {name} | {_pct(s['mean'])} | {_pct(s['std'])} | {_pct(s['min'])} | {_pct(s['max'])} |")
    return rows


def format_markdown(report: dict[str, Any]) -> str:
    """``results.md``: per-trial dev/test entity-level P/R/F1 (percent) and the mean ± std over trials."""
    lines = [
        f"# {report['dataset']}: {report['task'].upper()} fine-tuning, {report['num_trials']} trial(s)",
        "",
        f"Checkpoint `{report['checkpoint']}`. Metrics in percent; {report.get('metric_mode') or ''}. "
        f"Std is the sample standard deviation (ddof={report['std_ddof']}).",
        "",
        "| trial | seed | best epoch | dev P | dev R | dev F1 | test P | test R | test F1 | train s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["trials"]:
        lines.append(
            f"| {r['trial_index']} | {r['seed']} | {r['best_epoch']} | {_pct(r['dev']['precision'])} | "
            f"{_pct(r['dev']['recall'])} | {_pct(r['dev']['f1'])} | {_pct(r['test']['precision'])} | "
            f"{_pct(r['test']['recall'])} | {_pct(r['test']['f1'])} | {r['train_seconds']:.0f} |"
        )
    lines += _summary_rows(report["summary"], mean_header="mean")
    counts = report["counts"]
    columns = report.get("count_columns") or DEFAULT_COUNT_COLUMNS
    lines += [
        "",
        "| split | file | " + " | ".join(title for _, title in columns) + " |",
        "|---|---|" + "---:|" * len(columns),
    ]
    for split in ("train", "dev", "test"):
        c = counts[split]
        lines.append(f"| {split} | `{c['file']}` | " + " | ".join(str(c.get(key, "-")) for key, _ in columns) + " |")
    if report["task"] == "re":
        lines += ["", "Examples per label (train: as in the file):", ""]
        for split in ("train", "dev", "test"):
            labels = ", ".join(f"{k} {v}" for k, v in counts[split].get("labels", {}).items())
            lines.append(f"- {split}: {labels}")
    return "\n".join(lines) + "\n"


def format_summary_table(report: dict[str, Any]) -> str:
    """A plain-text table for the terminal: dev and test F1 per trial, then mean ± std."""
    f1_name = report.get("f1_name") or "entity-level F1"
    rows = [f"{report['dataset']} ({report['task']}), checkpoint {report['checkpoint']}, {f1_name} (%)"]
    rows.append(f"{'trial':>5} {'seed':>6} {'best ep':>8} {'dev F1':>8} {'test F1':>8}")
    for r in report["trials"]:
        rows.append(f"{r['trial_index']:>5} {r['seed']:>6} {str(r['best_epoch']):>8} {_pct(r['dev']['f1']):>8} {_pct(r['test']['f1']):>8}")
    dev, test = report["summary"]["dev"]["f1"], report["summary"]["test"]["f1"]
    rows.append(
        f"{'mean':>5} {'':>6} {'':>8} {_pct(dev['mean']):>8} {_pct(test['mean']):>8}"
    )
    rows.append(f"{'std':>5} {'':>6} {'':>8} {_pct(dev['std']):>8} {_pct(test['std']):>8}   (ddof={report['std_ddof']})")
    return "\n".join(rows)


def run_folds(settings: FinetuneSettings, folds: list[int]) -> dict[str, Any]:
    """Cross-validation: ``run_trials`` on each fold into ``output_dir/fold-<k>/``, then the mean over folds.

    The usual GAD protocol (BioBERT, Lee et al. 2020): each fold's score is the mean over its trials; the
    summary gives the mean, sample std (ddof=1), min and max of those fold scores. ``results.json`` holds
    the summary and every fold's full report (with its trials).

    Raises:
        DownstreamError: no folds, or whatever a fold's run raises.
    """
    if not folds:
        raise DownstreamError("no folds to run")
    output_dir = Path(settings.output_dir)
    check_metric(settings.metric)
    output_dir.mkdir(parents=True, exist_ok=True)
    fold_reports = []
    for fold in folds:
        logger.info("fold %d (%d of %d)", fold, len(fold_reports) + 1, len(folds))
        fold_settings = dataclasses.replace(settings, fold=fold, output_dir=output_dir / f"fold-{fold}")
        fold_reports.append(run_trials(fold_settings))
    first = fold_reports[0]
    headline = list(first["summary"]["test"])
    summary = {
        split: {
            name: summarize([r["summary"][split][name]["mean"] for r in fold_reports], ddof=STD_DDOF)
            for name in headline
        }
        for split in ("dev", "test")
    }
    report = {
        "task": settings.task,
        "dataset": first["dataset"],
        "dataset_title": first.get("dataset_title"),
        "checkpoint": first["checkpoint"],
        "metric_mode": first.get("metric_mode"),
        "f1_name": first.get("f1_name"),
        "protocol": f"{len(folds)}-fold cross-validation: per fold the mean over trials, then mean/std over folds",
        "folds": folds,
        "settings": {**settings.to_json(), "fold": None},
        "num_trials_per_fold": settings.num_trials,
        "summary_over_folds": summary,
        "std_ddof": STD_DDOF,
        "fold_reports": fold_reports,
    }
    _atomic_write(output_dir / "results.json", json.dumps(report, indent=2))
    _atomic_write(output_dir / "results.md", format_folds_markdown(report))
    return report


def format_folds_markdown(report: dict[str, Any]) -> str:
    """``results.md`` of a cross-validation run: one row per fold (mean over its trials), then mean ± std."""
    lines = [
        f"# {report['dataset']}: {report['task'].upper()} fine-tuning, {len(report['folds'])} folds x "
        f"{report['num_trials_per_fold']} trial(s)",
        "",
        f"Checkpoint `{report['checkpoint']}`. Metrics in percent; {report.get('metric_mode') or ''}. "
        f"{report['protocol']}; std is the sample standard deviation (ddof={report['std_ddof']}).",
        "",
        "| fold | train | dev | test | dev F1 | test P | test R | test F1 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fold, r in zip(report["folds"], report["fold_reports"], strict=True):
        c, s = r["counts"], r["summary"]
        lines.append(
            f"| {fold} | {c['train'].get('training_examples', c['train'].get('examples', '-'))} | "
            f"{c['dev'].get('examples', '-')} | {c['test'].get('examples', '-')} | {_pct(s['dev']['f1']['mean'])} | "
            f"{_pct(s['test']['precision']['mean'])} | {_pct(s['test']['recall']['mean'])} | {_pct(s['test']['f1']['mean'])} |"
        )
    lines += _summary_rows(report["summary_over_folds"], mean_header="mean over folds")
    return "\n".join(lines) + "\n"


def format_folds_table(report: dict[str, Any]) -> str:
    """A plain-text table for the terminal: test F1 per fold, then mean ± std over folds."""
    rows = [f"{report['dataset']} ({report['task']}), checkpoint {report['checkpoint']}, {report.get('f1_name')} (%), "
            f"{len(report['folds'])} folds"]
    rows.append(f"{'fold':>5} {'dev F1':>8} {'test F1':>8}")
    for fold, r in zip(report["folds"], report["fold_reports"], strict=True):
        rows.append(f"{fold:>5} {_pct(r['summary']['dev']['f1']['mean']):>8} {_pct(r['summary']['test']['f1']['mean']):>8}")
    dev, test = report["summary_over_folds"]["dev"]["f1"], report["summary_over_folds"]["test"]["f1"]
    rows.append(f"{'mean':>5} {_pct(dev['mean']):>8} {_pct(test['mean']):>8}")
    rows.append(f"{'std':>5} {_pct(dev['std']):>8} {_pct(test['std']):>8}   (ddof={report['std_ddof']})")
    return "\n".join(rows)
