"""The ``Trainer`` of pre-training, extended only through its hooks (loss, optimizer, schedule,
evaluation), and its ``TrainingArguments``; its callbacks (save at the end, wall-clock deadline, logs) are
in :mod:`bioelectra.pretraining.callbacks`."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from transformers import Trainer, TrainingArguments

from bioelectra.compile_records import FIRST_COMPILED_STEP_FILE, describe_cache_counts
from bioelectra.diagnostics import pretraining_attention_report
from bioelectra.optimization import (
    ElectraAdamW,
    UpdatedInStepAdamW,
    decay_parameter_groups,
    electra_lr_scheduler,
)
from bioelectra.pretraining.compile_cache import (
    compile_cache_counts,
    load_compile_cache,
    save_compile_cache,
)
from bioelectra.pretraining.compile_options import inductor_options
from bioelectra.pretraining.metrics import pretraining_metrics
from bioelectra.pretraining.settings import PretrainingHparams
from bioelectra.pretraining.step import WholeTrainingStep
from bioelectra.reporting import check_report_to
from bioelectra.textio import atomic_write_text
from bioelectra.trainer_args import asynchronous_step_arguments

logger = logging.getLogger(__name__)


def make_optimizer(
    param_groups: list[dict], hparams: PretrainingHparams, *, cuda: bool
) -> torch.optim.Optimizer:
    """ELECTRA's optimizer for ``hparams``: :class:`ElectraAdamW` (no bias correction, the original), or,
    with ``adam_bias_correction`` on a CUDA device, torch's fused ``AdamW`` (the same update with bias
    correction and decoupled weight decay ``w *= 1 - lr * wd``). With ``train_step`` ``whole`` or ``captured``,
    :class:`UpdatedInStepAdamW` (bias-corrected or not): the whole step applies its update."""
    common = dict(
        lr=hparams.learning_rate,
        betas=(hparams.adam_beta1, hparams.adam_beta2),
        eps=hparams.adam_epsilon,
        weight_decay=hparams.weight_decay,
    )
    if hparams.train_step != "trainer":
        return UpdatedInStepAdamW(param_groups, bias_correction=hparams.adam_bias_correction, **common)
    if hparams.adam_bias_correction and cuda:
        return torch.optim.AdamW(param_groups, fused=True, **common)
    return ElectraAdamW(param_groups, bias_correction=hparams.adam_bias_correction, **common)


def _no_gradients_to_clear(set_to_none: bool = True) -> None:
    """``Module.zero_grad`` of a model trained by the whole step: no parameter has a ``.grad`` to clear."""


class ElectraPretrainer(Trainer):
    """``Trainer`` for :class:`ElectraPretrainingModel`, extended only through its hooks.

    Each training log also carries the speed since the previous one: ``steps_per_second`` (optimizer steps
    over wall-clock seconds, the time spent in :meth:`evaluate` left out, checkpoint saves kept in) and
    ``data_wait_fraction`` (the share of those seconds the host spent waiting for the data loader, in
    [0, 1]). Both end at a logging step, where the Trainer reads the loss from the device, so on a GPU they
    count the device's work too. A ``data_wait_fraction`` well above 0 means the loader limits the run (more
    ``dataloader_num_workers``); near 0, the model's step does.

    With ``hparams.train_step`` ``whole`` or ``captured`` the Trainer keeps its loop (data, callbacks, logs,
    schedule, checkpoints, resume, evaluation, deadline) and the step is ours: :meth:`training_step` runs
    :class:`bioelectra.pretraining.step.WholeTrainingStep` (forward, gradients, clip, update), the Trainer's own
    clip returns that step's gradient norm, and its ``optimizer.step()`` is a no-op
    (:class:`bioelectra.optimization.UpdatedInStepAdamW`).

    Args:
        hparams: resolved :class:`PretrainingHparams` (optimizer and schedule settings, eval sizes, seed).
        *args, **kwargs: ``Trainer``'s.
    """

    def __init__(self, *args: Any, hparams: PretrainingHparams, **kwargs: Any) -> None:
        self.hparams = hparams
        self._component_sums: dict[str, float | torch.Tensor] = {"mlm_loss": 0.0, "disc_loss": 0.0}
        self._component_count = 0
        self._window: dict[str, float] | None = None  # since the last training log: start, step, waits
        self._whole_step: WholeTrainingStep | None = None
        self._flops_by_shape: dict[tuple[int, ...], float] = {}
        self._compile_cache_written = False
        super().__init__(*args, **kwargs)

    def training_step(self, model, inputs, num_items_in_batch=None):
        """The Trainer's step, or with ``train_step`` ``whole`` / ``captured`` ours (the class docstring): the
        loss of the step, a `()` device tensor. With ``torch_compile`` the first step loads ``hparams.compile_cache``
        before compiling, writes it after, logs how torch's compile caches served its graphs and records it all
        in :data:`FIRST_COMPILED_STEP_FILE` (:meth:`_record_first_compiled_step`)."""
        first_compiled = self.hparams.torch_compile and not self._compile_cache_written
        if first_compiled:
            loaded = load_compile_cache(self.hparams.compile_cache)
            before = compile_cache_counts()
            started = time.perf_counter()
        if self.hparams.train_step == "trainer":
            loss = super().training_step(model, inputs, num_items_in_batch)
        else:
            if self._whole_step is None:
                self._whole_step = self._make_whole_step(model)
                # its gradients never live in .grad (torch.autograd.grad returns them): the Trainer's
                # model.zero_grad() after every step, which walks every module (about 0.5 ms a step for a
                # 2-layer model on a CPU core, more with more layers), has nothing to clear
                model.zero_grad = _no_gradients_to_clear
            if not model.training:  # an evaluation left it in eval mode (captured: the mode is in the graph)
                model.train()
            loss = self._whole_step(self._prepare_inputs(inputs))
        if first_compiled:
            seconds = time.perf_counter() - started
            save_compile_cache(self.hparams.compile_cache)
            self._compile_cache_written = True
            self._record_first_compiled_step(seconds, loaded, compile_cache_counts(since=before))
        return loss

    def _record_first_compiled_step(self, seconds: float, loaded: bool, counts: dict[str, int]) -> None:
        """Log the first compiled step and write :data:`FIRST_COMPILED_STEP_FILE` into the output directory
        (the main process; atomically): ``seconds`` (the host's wall seconds of the step: loading the cache,
        compiling, with ``captured`` the warm-up and the capture; the device may still be running its last
        kernels, milliseconds against the compilation's seconds), ``global_step`` (0, or where a resumed run
        began), ``compile_cache`` (the file, or ``null``) and ``compile_cache_loaded``, ``compile_cache_counts``
        (:func:`compile_cache_counts` over the step), ``train_step``, ``compile_scope``, ``compile_mode``. So a
        run's compile time with and without a carried cache is read from its folder, not from its console."""
        logger.info("the first compiled step: %.1f s; %s", seconds, describe_cache_counts(counts))
        if not self.is_world_process_zero():
            return
        record = {"seconds": round(seconds, 3), "global_step": self.state.global_step,
                  "compile_cache": self.hparams.compile_cache or None, "compile_cache_loaded": loaded,
                  "compile_cache_counts": counts, "train_step": self.hparams.train_step,
                  "compile_scope": self.hparams.compile_scope, "compile_mode": self.hparams.compile_mode}  # fmt: skip
        output_dir = Path(self.args.output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(output_dir / FIRST_COMPILED_STEP_FILE, json.dumps(record, indent=2) + "\n")

    def _make_whole_step(self, model) -> WholeTrainingStep:
        """The whole step over the unwrapped model and the Trainer's optimizer (accelerate's wrappers left
        out: their autocast converts every output to float32, the generator's logits included)."""
        capture = self.hparams.train_step == "captured" and self.args.device.type == "cuda"
        if self.hparams.train_step == "captured" and not capture:
            logger.warning("train_step=captured needs a CUDA device (this is %s): running the whole step uncaptured", self.args.device)
        unwrapped = self.accelerator.unwrap_model(model)
        unwrapped.train()
        bf16 = whole_step_bf16(self.hparams.precision, self.args.device)
        if self.hparams.bf16_weight_copies and not bf16:
            logger.warning("bf16_weight_copies: no bf16 autocast in this run (%s), so no casts to spare: not used", self.args.device)
        return WholeTrainingStep(
            unwrapped,
            getattr(self.optimizer, "optimizer", self.optimizer),  # accelerate's AcceleratedOptimizer wraps ours
            max_grad_norm=self.args.max_grad_norm,
            bf16=bf16,
            compile=bool(self.hparams.torch_compile),
            capture=capture,
            compile_scope=self.hparams.compile_scope,
            compile_options=inductor_options(self.hparams.compile_mode, self.hparams.compile_options, capture=capture),
            bf16_weight_copies=bool(self.hparams.bf16_weight_copies) and bf16,
        )

    def _clip_grad_norm(self, model):
        """The Trainer's clip, or the whole step's gradient norm (it clipped already)."""
        if self._whole_step is not None:
            return self._whole_step.grad_norm
        return super()._clip_grad_norm(model)

    def _get_grad_norm(self, model, grad_norm=None):
        """The Trainer's gradient norm for the logs, or the whole step's (a device tensor, read when logged)."""
        if self._whole_step is not None:
            return self._whole_step.grad_norm
        return super()._get_grad_norm(model, grad_norm=grad_norm)

    def floating_point_ops(self, inputs) -> float:
        """The Trainer's FLOPs estimate of a batch (``6 x parameters x tokens``), computed once per batch shape:
        the Trainer asks every step, and the estimate walks every parameter each time."""
        ids = inputs.get("input_ids") if isinstance(inputs, dict) else None
        key = tuple(ids.shape) if ids is not None else None
        if key is None:
            return super().floating_point_ops(inputs)
        if key not in self._flops_by_shape:
            self._flops_by_shape[key] = float(super().floating_point_ops(inputs))
        return self._flops_by_shape[key]

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        """Trainer's, timed: the host's wait for the next batches (``data_wait_fraction`` in the logs)."""
        start = time.perf_counter()
        if self._window is None:
            self._window = {"start": start, "step": self.state.global_step, "data_wait": 0.0, "eval": 0.0}
        try:
            return super().get_batch_samples(epoch_iterator, num_batches, device)
        finally:
            self._window["data_wait"] += time.perf_counter() - start

    def _log_speed(self, logs: dict[str, float]) -> None:
        """Add ``steps_per_second`` and ``data_wait_fraction`` since the previous training log to ``logs``
        (see the class docstring) and start the next window."""
        window, now = self._window, time.perf_counter()
        if window is None:
            return
        seconds = now - window["start"] - window["eval"]
        steps = self.state.global_step - window["step"]
        if seconds > 0 and steps > 0:
            logs["steps_per_second"] = round(steps / seconds, 3)
            logs["data_wait_fraction"] = round(min(window["data_wait"] / seconds, 1.0), 4)
        self._window = {"start": now, "step": self.state.global_step, "data_wait": 0.0, "eval": 0.0}

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """``gen_weight * mlm_loss + disc_weight * disc_loss`` (the model computes it); the two parts are
        kept for logging. The mean over this micro-batch: Trainer divides by the accumulation steps."""
        outputs = model(**inputs)
        # summed on the device: no host sync per step (read at logging time only)
        for key in ("mlm_loss", "disc_loss"):
            self._component_sums[key] = self._component_sums[key] + getattr(outputs, key).detach().float()
        self._component_count += 1
        return (outputs.loss, outputs) if return_outputs else outputs.loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Add the mean generator and discriminator losses since the last log to a training log (averaged
        over the processes, as the Trainer's ``loss``: every rank logs at the same steps), and the speed
        since then (:meth:`_log_speed`)."""
        if "loss" in logs and self._whole_step is not None:
            sums, count = self._whole_step.take_sums()
            self._component_sums = {key: sums[key] for key in self._component_sums}
            self._component_count = count
        if "loss" in logs and self._component_count:
            means = torch.stack(
                [torch.as_tensor(total, dtype=torch.float32, device=self.args.device) for total in self._component_sums.values()]
            ) / self._component_count  # (2,)
            if self.args.world_size > 1:
                means = self.accelerator.reduce(means, reduction="mean")
            for key, value in zip(self._component_sums, means.tolist(), strict=True):
                logs[key] = round(value, 4)
            self._component_sums = {k: 0.0 for k in self._component_sums}
            self._component_count = 0
        if "loss" in logs:
            self._log_speed(logs)
        if "train_steps_per_second" in logs and "train_samples_per_second" in logs:
            # the Trainer's samples/s scales the samples of its planned max_steps by the share of steps run,
            # a million-step bound's samples under fit_schedule_to_time: steps/s x the global batch instead
            batch = self.args.per_device_train_batch_size * self.args.gradient_accumulation_steps * self.args.world_size
            logs["train_samples_per_second"] = round(logs["train_steps_per_second"] * batch, 3)
        super().log(logs, start_time)

    def _issue_warnings_after_load(self, load_result: Any) -> None:
        """Trainer's warnings after a resume loads a checkpoint, without the tied parameters.

        A checkpoint stores a tied parameter once, under its source: the generator's shared embeddings, its
        output layer and, with ``untied_generator: false``, its whole encoder are absent by design (the
        targets of ``_tied_weights_keys``), and the Trainer listed them all as "missing keys" on every
        resume. They are tied again here; any other missing or unexpected key is still warned about.
        """
        tied = set(getattr(self.model, "_tied_weights_keys", None) or ())
        missing = list(getattr(load_result, "missing_keys", ()))
        if tied & set(missing):
            self.model.tie_weights()
            load_result = SimpleNamespace(
                missing_keys=[key for key in missing if key not in tied],
                unexpected_keys=list(getattr(load_result, "unexpected_keys", ())),
            )
        super()._issue_warnings_after_load(load_result)

    def create_optimizer(self, model=None) -> torch.optim.Optimizer:
        """:class:`ElectraAdamW` over two groups (weight decay / none for LayerNorm and biases)."""
        if self.optimizer is None:
            opt_model = self.model if model is None else model
            hp = self.hparams
            self.optimizer = make_optimizer(
                decay_parameter_groups(opt_model, weight_decay=hp.weight_decay),
                hp,
                cuda=next(opt_model.parameters()).is_cuda or self.args.device.type == "cuda",
            )
        return self.optimizer

    def create_scheduler(self, num_training_steps: int, optimizer: torch.optim.Optimizer | None = None):
        """ELECTRA's warmup x polynomial decay (:func:`bioelectra.optimization.electra_lr_lambda`)."""
        if self.lr_scheduler is None:
            self.lr_scheduler = electra_lr_scheduler(
                optimizer or self.optimizer,
                warmup_steps=self.hparams.warmup_steps,
                num_train_steps=num_training_steps,
                power=self.hparams.lr_decay_power,
            )
            self._created_lr_scheduler = True
        return self.lr_scheduler

    def _attention_entropy(self, dataset) -> dict[str, float]:
        """``disc_attention_entropy`` / ``gen_attention_entropy``: the mean normalised attention entropy
        (:mod:`bioelectra.diagnostics`) of each encoder on the first :data:`bioelectra.diagnostics.ATTENTION_PROBE_EXAMPLES`
        examples of ``dataset``, unmasked; 1.0 is uniform attention, as at initialisation. Empty without a
        dataset or a collator that pads."""
        pad = getattr(self.data_collator, "pad", None)
        if dataset is None or pad is None or len(dataset) == 0:
            return {}
        report = pretraining_attention_report(self.accelerator.unwrap_model(self.model), dataset, pad, self.args.device)
        return {
            "disc_attention_entropy": report["discriminator"]["attention_entropy"],
            "gen_attention_entropy": report["generator"]["attention_entropy"],
        }

    def evaluate(
        self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval"
    ) -> dict[str, float]:
        """The original pre-training metrics (:func:`pretraining_metrics`) on ``num_eval_steps`` batches,
        and the attention entropy of both encoders (:meth:`_attention_entropy`).

        Masking and sampling use a generator seeded with ``hparams.seed``, inside a forked RNG, so the
        same checkpoint always gets the same metrics and the training's random stream is untouched.
        """
        started = time.perf_counter()
        dataloader = self.get_eval_dataloader(eval_dataset)
        devices = [self.args.device] if self.args.device.type == "cuda" else []
        was_training = self.model.training
        eager = self._whole_step.eager_outside_step() if self._whole_step is not None else contextlib.nullcontext()
        with eager, torch.random.fork_rng(devices=devices):
            torch.manual_seed(self.hparams.seed + self.args.process_index)
            if devices:
                torch.cuda.manual_seed(self.hparams.seed + self.args.process_index)
            raw = pretraining_metrics(
                self.model,
                dataloader,
                num_eval_steps=self.hparams.num_eval_steps,
                device=self.args.device,
                autocast=self.autocast_smart_context_manager(),
                accelerator=self.accelerator,
            )
            raw.update(self._attention_entropy(eval_dataset if eval_dataset is not None else self.eval_dataset))
        if was_training:
            self.model.train()
        metrics = {f"{metric_key_prefix}_{k}": v for k, v in raw.items()}
        metrics[f"{metric_key_prefix}_step"] = self.state.global_step
        self.log(dict(metrics))
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        if self._window is not None:  # not training time: left out of the next log's steps_per_second
            self._window["eval"] += time.perf_counter() - started
        return metrics


def uses_bf16(precision: str) -> bool:
    """Whether hparam ``precision`` means bf16 autocast here (``bf16``; ``auto`` on a CUDA device with bf16)."""
    cuda = torch.cuda.is_available()
    if precision == "bf16":
        return True
    return precision == "auto" and cuda and torch.cuda.is_bf16_supported()


def whole_step_bf16(precision: str, device: torch.device) -> bool:
    """Whether the whole training step runs under bf16 autocast (and so may use ``bf16_weight_copies``): on CUDA,
    where hparam ``precision`` means bf16 (:func:`uses_bf16`, the Trainer's ``bf16``)."""
    return device.type == "cuda" and uses_bf16(precision)


def training_arguments(output_dir: Path, hparams: PretrainingHparams, **extra: Any) -> TrainingArguments:
    """``TrainingArguments`` for resolved ``hparams``. The learning-rate schedule and optimizer are
    ELECTRA's (set in :class:`ElectraPretrainer`); ``warmup_steps`` here stays 0 on purpose."""
    trainer_compiles = hparams.torch_compile and hparams.train_step == "trainer"
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=hparams.max_steps,
        per_device_train_batch_size=hparams.per_device_train_batch_size,
        per_device_eval_batch_size=hparams.per_device_eval_batch_size,
        gradient_accumulation_steps=hparams.gradient_accumulation_steps,
        learning_rate=hparams.learning_rate,
        weight_decay=hparams.weight_decay,
        adam_beta1=hparams.adam_beta1,
        adam_beta2=hparams.adam_beta2,
        adam_epsilon=hparams.adam_epsilon,
        max_grad_norm=hparams.max_grad_norm,
        logging_steps=hparams.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=hparams.save_steps,
        save_total_limit=hparams.save_total_limit,
        eval_strategy="steps" if hparams.eval_steps > 0 else "no",
        eval_steps=hparams.eval_steps if hparams.eval_steps > 0 else None,
        seed=hparams.seed,
        data_seed=hparams.seed,  # the sampler's order: the same on every rank, whatever their RNG streams
        bf16=uses_bf16(hparams.precision),
        use_cpu=not torch.cuda.is_available(),
        torch_compile=trainer_compiles,  # else the whole step compiles
        # a mode turns the Trainer's torch_compile on, whatever torch_compile says: given only where it compiles
        torch_compile_mode=hparams.compile_mode if trainer_compiles and hparams.compile_mode != "default" else None,
        dataloader_num_workers=hparams.dataloader_num_workers,
        # every training batch full, as the original's input_fn (drop_remainder=True): under torch.compile
        # an epoch's one short last batch is a new shape, and recompiling for it cost the first GPU run 70 s
        # of its 403 (docs/results/pretraining-findings.md); prepare_pretraining turns it off for a training
        # split smaller than one batch
        dataloader_drop_last=True,
        remove_unused_columns=False,
        report_to=check_report_to(hparams.report_to),
        ddp_find_unused_parameters=False,
        disable_tqdm=False,
        **asynchronous_step_arguments(torch.cuda.is_available()),
    )
    kwargs.update(extra)
    return TrainingArguments(**kwargs)
