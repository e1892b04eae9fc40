"""The ``Trainer`` of pre-training, extended only through its hooks (loss, optimizer, schedule,
evaluation) and callbacks (save at the end, wall-clock deadline, logs), and its ``TrainingArguments``."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from transformers import ProgressCallback, Trainer, TrainerCallback, TrainingArguments

from bioelectra.diagnostics import pretraining_attention_report
from bioelectra.optimization import (
    ElectraAdamW,
    UpdatedInStepAdamW,
    decay_parameter_groups,
    electra_lr_scheduler,
)
from bioelectra.pretraining.metrics import pretraining_metrics
from bioelectra.pretraining.settings import PretrainingHparams
from bioelectra.pretraining.step import WholeTrainingStep, load_compile_cache, save_compile_cache
from bioelectra.reporting import check_report_to
from bioelectra.trainer_args import asynchronous_step_arguments

logger = logging.getLogger(__name__)


class SaveAtEndCallback(TrainerCallback):
    """Write a checkpoint at the last step even when it is not a multiple of ``save_steps`` (the original
    saves the final model), so a re-run of a finished command resumes at the end instead of redoing steps."""

    def on_step_end(self, args, state, control, **kwargs):
        if state.max_steps and state.global_step >= state.max_steps:
            control.should_save = True
        return control


class DeadlineCallback(TrainerCallback):
    """Stop training, with a checkpoint, at the first optimizer step after ``seconds`` of wall-clock time
    since the loop began (``hparams.max_train_seconds``): a run on leased time ends saved, not killed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.start: float | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        expired = self.start is not None and time.monotonic() - self.start >= self.seconds
        if args.world_size > 1:  # every rank stops at the same step: process 0's clock decides
            expired = _process_zero_decides(expired, args.device)
        if expired:
            logger.info(
                "max_train_seconds=%g reached at step %d of %d: saving and stopping",
                self.seconds,
                state.global_step,
                state.max_steps,
            )
            control.should_save = True
            control.should_training_stop = True
        return control


class TimeFittedScheduleCallback(TrainerCallback):
    """Fit the learning-rate schedule's length to a wall-clock budget (``hparams.fit_schedule_to_time``).

    The run is to end, its learning rate decayed to 0, when ``seconds`` of training-loop time are spent.
    After the first ``skip_steps`` optimizer steps of this process (compilation, data-loader start), the
    speed is measured; once it has been measured over ``min_window_steps`` steps (so that one slow step, a
    data-loader stall or a recompilation, cannot plan the run from a speed of one step), and at every
    ``refit_steps``-th step after that (every step by default: it costs a few arithmetic operations, and an
    evaluation just before the end must not leave the schedule's end past the budget), the schedule's
    length is set to
    ``step + speed * remaining seconds * margin``, where the speed is the steps over the wall-clock seconds
    since the measurement began (evaluations and checkpoint saves counted, as they recur), capped at the
    Trainer's ``max_steps``, which becomes an upper bound. While the warmup is under way it is refitted at
    the recipe's peak (:meth:`bioelectra.optimization.ElectraSchedule.refit`: at most a quarter of the
    run). When the step reaches the fitted length, training stops with a checkpoint and an evaluation, as
    at ``max_steps``; ``TrainerState.max_steps`` follows the fitted length, so the checkpoint records it.
    The schedule is logged, and written to :data:`FITTED_SCHEDULE_FILE`, when it moves by more than 2% and
    every ``record_steps`` steps.

    The budget is this process's: a resumed run refits the rest of its schedule to its own
    ``max_train_seconds``. Not in the original (its schedule is a number of steps); budget-based schedules
    follow Izsak et al. 2021 ("How to Train BERT with an Academic Budget") and Geiping & Goldstein 2023
    ("Cramming"). :class:`DeadlineCallback` stays the hard stop.

    Args:
        seconds: the training loop's budget (``hparams.max_train_seconds``), > 0.
        skip_steps: steps before the speed is measured.
        min_window_steps: steps the speed is measured over before the first fit. Before it the schedule is
            the Trainer's own (``max_steps`` long, the recipe's warmup: the gentlest start a fit can give).
            With one step (the rule until 2026-11-26), a step of about 6 s right after ``skip_steps`` (on a
            7-minute budget) planned a run so short that a quarter of it lay behind the current step, and the
            warmup ended at once, at the whole peak.
        refit_steps: steps between refits.
        record_steps: steps between writes of :data:`FITTED_SCHEDULE_FILE` (and whenever the fit moves by 2%).
        margin: fraction of the remaining time planned for, < 1 so that the final evaluation and save fit.
    """

    def __init__(
        self,
        seconds: float,
        *,
        skip_steps: int = 20,
        min_window_steps: int = 20,
        refit_steps: int = 1,
        record_steps: int = 50,
        margin: float = 0.97,
    ) -> None:
        if not seconds > 0 or skip_steps < 1 or min_window_steps < 1 or refit_steps < 1 or not 0 < margin <= 1:
            raise ValueError(
                f"seconds={seconds}, skip_steps={skip_steps}, min_window_steps={min_window_steps}, "
                f"refit_steps={refit_steps}, margin={margin}: expected > 0, >= 1, >= 1, >= 1 and a fraction in (0, 1]"
            )
        self.seconds = float(seconds)
        self.skip_steps, self.refit_steps, self.margin = int(skip_steps), int(refit_steps), float(margin)
        self.min_window_steps = int(min_window_steps)
        self.record_steps = max(1, int(record_steps))
        self.start: float | None = None
        self.first_step = 0
        self.measured_from: tuple[int, float] | None = None  # (step, monotonic time)
        self.fitted: int | None = None
        self.logged: int | None = None  # the fit last logged and recorded

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()
        self.first_step = state.global_step
        self.measured_from, self.fitted, self.logged = None, None, None

    def on_step_end(self, args, state, control, lr_scheduler=None, **kwargs):
        if self.start is None:
            return control
        step, now = state.global_step, time.monotonic()
        if self.measured_from is None:
            if step - self.first_step >= self.skip_steps:
                self.measured_from = (step, now)
            return control
        measured_steps = step - self.measured_from[0]
        if measured_steps < 1 or (self.fitted is None and measured_steps < self.min_window_steps):
            return control
        speed = measured_steps / max(now - self.measured_from[1], 1e-9)  # steps / s
        remaining = max(self.start + self.seconds - now, 0.0)
        if control.should_training_stop:  # at the fitted end (DefaultFlowCallback) or the deadline: no refit
            if self.fitted is not None and step >= FINISHED_FRACTION * self.fitted:
                # ended where the fit ends: recorded as finished, so that a re-run does not train on
                self.fitted = state.max_steps = step
                if state.is_world_process_zero:
                    self._record(args, step, step, speed, remaining, _electra_schedule(lr_scheduler))
            return control
        if measured_steps % self.refit_steps:
            return control
        fitted = min(max(step + int(speed * remaining * self.margin), step), args.max_steps)
        if args.world_size > 1:  # every rank must stop at the same step: process 0's plan decides
            fitted = _process_zero_value(fitted, args.device)
        schedule = _electra_schedule(lr_scheduler)
        if schedule is not None:
            schedule.refit(step, max(fitted, 1))
        moved = self.logged is None or abs(fitted - self.logged) > 0.02 * self.logged  # since the last log
        if moved:
            self.logged = fitted
            logger.info(
                "schedule fitted to max_train_seconds=%g: %d steps at %.3g steps/s (%.0f s left)%s",
                self.seconds, fitted, speed, remaining,
                "" if schedule is None else f", warmup {schedule.warmup_steps}",
            )  # fmt: skip
        self.fitted = fitted
        state.max_steps = fitted
        if state.is_world_process_zero and (moved or measured_steps % self.record_steps == 0 or step >= fitted):
            self._record(args, step, fitted, speed, remaining, schedule)
        if step >= fitted:
            control.should_training_stop = True
            control.should_save = True
            if args.eval_strategy == "steps" and state.eval_steps and step % state.eval_steps != 0:
                control.should_evaluate = True
        return control


    def _record(self, args, step: int, fitted: int, speed: float, remaining: float, schedule) -> None:
        """The schedule as last fitted, in ``<output_dir>/``:data:`FITTED_SCHEDULE_FILE` (written atomically)."""
        from bioelectra.textio import atomic_write_text

        record = {
            "step": step,
            "max_steps": fitted,
            "max_train_seconds": self.seconds,
            "seconds_left": round(remaining, 1),
            "steps_per_second": round(speed, 3),
        }
        if schedule is not None:
            record.update(warmup_steps=schedule.warmup_steps, peak_learning_rate=args.learning_rate)
        atomic_write_text(Path(args.output_dir) / FITTED_SCHEDULE_FILE, json.dumps(record, indent=2) + "\n")


#: A time-fitted run stopped (by its deadline, or at its fitted end) at this fraction of its fitted length or
#: more is finished: its checkpoint records the step reached as the run's length.
FINISHED_FRACTION = 0.99

#: The schedule a :class:`TimeFittedScheduleCallback` fitted last, in the run's output directory: ``{"step",
#: "max_steps", "warmup_steps", "peak_learning_rate", "steps_per_second", "seconds_left", "max_train_seconds"}``.
FITTED_SCHEDULE_FILE = "fitted_schedule.json"


def _electra_schedule(lr_scheduler):
    """The :class:`ElectraSchedule` inside a ``LambdaLR``, or None (another scheduler: its length stays)."""
    from bioelectra.optimization import ElectraSchedule

    lr_scheduler = getattr(lr_scheduler, "scheduler", lr_scheduler)  # accelerate's wrapper, where there is one
    lambdas = getattr(lr_scheduler, "lr_lambdas", None) or []
    return next((fn for fn in lambdas if isinstance(fn, ElectraSchedule)), None)


def _process_zero_value(value: int, device: torch.device) -> int:
    """``value`` as process 0 has it, on every process (one broadcast)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return value
    decided = torch.tensor([int(value)], device=device)
    dist.broadcast(decided, src=0)
    return int(decided.item())


def _process_zero_decides(flag: bool, device: torch.device) -> bool:
    """``flag`` as process 0 has it, on every process (:func:`_process_zero_value`). A decision to stop must
    be the same on all ranks: a rank that stops alone leaves the others waiting in the next gradient
    all-reduce."""
    return bool(_process_zero_value(int(flag), device))


def close_process_group() -> None:
    """Tear down this process's ``torch.distributed`` process group when one is open; nothing on one process.

    Call it when a process's distributed work is over (``pretrain train`` does, after its summary). Neither
    the Trainer nor accelerate destroys the group, and a process that exits with it open can abort in the
    C++ runtime at interpreter exit ("terminate called without an active exception", SIGABRT) after its
    work is done: its launcher then reports the rank as failed. Destroying the group is local to the
    process, so the ranks need not wait for one another here."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


class RankSeedCallback(TrainerCallback):
    """Seed each process's random stream (masking, generator sampling, dropout) with ``seed +
    process_index`` when training begins on several processes.

    The Trainer seeds every process with the same ``seed``, so without this every rank draws the same
    masked positions, [MASK]/kept choices, Gumbel noise and dropout masks for batches of the same shape
    (packed examples nearly always are): a global batch of N copies of one random pattern where one
    process draws N independent ones. The data order is not affected (the sampler has its own generator,
    seeded with ``data_seed``); a resume on as many processes restores each rank's saved stream."""

    def on_train_begin(self, args, state, control, **kwargs):
        if args.world_size > 1:
            from transformers import set_seed

            set_seed(args.seed + args.process_index)
        return control


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


#: The run's logs, one JSON object per line (``{"step": N, ...the Trainer's log}``), in the output directory:
#: training logs (``loss``, ``steps_per_second`` ...), evaluations (``eval_*``) and the final ``train_runtime``
#: record, as they happen. The console's copy is wrapped for reading; this one is for programs (a run being
#: watched, plots, reports). A resumed run appends: steps redone after the last checkpoint appear twice.
LOG_HISTORY_FILE = "log_history.jsonl"


def read_log_history(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a :data:`LOG_HISTORY_FILE`, in order; ``[]`` when there is no such file. A line that does
    not parse (the one being written while the run goes on) is skipped."""
    path = Path(path)
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


class LogMetricsCallback(TrainerCallback):
    """Send the Trainer's logs (losses, learning rate, metrics) to this module's logger instead of stdout
    (replaces ``PrinterCallback``: only the CLI prints), and append each to ``log_file``
    (:data:`LOG_HISTORY_FILE`) when one is given. Only the main process logs."""

    def __init__(self, log_file: str | os.PathLike | None = None) -> None:
        self.log_file = Path(log_file) if log_file is not None else None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            shown = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in logs.items()}
            logger.info("step %d: %s", state.global_step, json.dumps(shown))
            if self.log_file is not None:
                with open(self.log_file, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"step": state.global_step, **logs}) + "\n")


class StepProgressCallback(ProgressCallback):
    """The Trainer's progress bars without its printing of the logs (:class:`LogMetricsCallback` logs them)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        return None

    def on_step_end(self, args, state, control, **kwargs):
        bar = getattr(self, "training_bar", None)
        if bar is not None:  # a schedule fitted to the time moves max_steps (TimeFittedScheduleCallback)
            bar.total = state.max_steps  # drawn by the update below, at tqdm's own pace (a refresh here drew every step twice)
        return super().on_step_end(args, state, control, **kwargs)


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
        loss of the step, a `()` device tensor. The first step loads ``hparams.compile_cache`` before compiling
        and writes it after."""
        cache = self.hparams.compile_cache if self.hparams.torch_compile and not self._compile_cache_written else ""
        if cache:
            load_compile_cache(cache)
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
        if cache:
            save_compile_cache(cache)
            self._compile_cache_written = True
        return loss

    def _make_whole_step(self, model) -> WholeTrainingStep:
        """The whole step over the unwrapped model and the Trainer's optimizer (accelerate's wrappers left
        out: their autocast converts every output to float32, the generator's logits included)."""
        capture = self.hparams.train_step == "captured" and self.args.device.type == "cuda"
        if self.hparams.train_step == "captured" and not capture:
            logger.warning("train_step=captured needs a CUDA device (this is %s): running the whole step uncaptured", self.args.device)
        unwrapped = self.accelerator.unwrap_model(model)
        unwrapped.train()
        return WholeTrainingStep(
            unwrapped,
            getattr(self.optimizer, "optimizer", self.optimizer),  # accelerate's AcceleratedOptimizer wraps ours
            max_grad_norm=self.args.max_grad_norm,
            bf16=bool(self.args.bf16) and self.args.device.type == "cuda",
            compile=bool(self.hparams.torch_compile),
            capture=capture,
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
        with torch.random.fork_rng(devices=devices):
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


def _use_bf16(precision: str) -> bool:
    cuda = torch.cuda.is_available()
    if precision == "bf16":
        return True
    return precision == "auto" and cuda and torch.cuda.is_bf16_supported()


def training_arguments(output_dir: Path, hparams: PretrainingHparams, **extra: Any) -> TrainingArguments:
    """``TrainingArguments`` for resolved ``hparams``. The learning-rate schedule and optimizer are
    ELECTRA's (set in :class:`ElectraPretrainer`); ``warmup_steps`` here stays 0 on purpose."""
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
        bf16=_use_bf16(hparams.precision),
        use_cpu=not torch.cuda.is_available(),
        torch_compile=hparams.torch_compile and hparams.train_step == "trainer",  # else the whole step compiles
        dataloader_num_workers=hparams.dataloader_num_workers,
        # every training batch full, as the original's input_fn (drop_remainder=True): under torch.compile
        # an epoch's one short last batch is a new shape, and recompiling for it cost the first GPU run 70 s
        # of its 403 (recipes/bioelectra-small/RUNBOOK.md); prepare_pretraining turns it off for a training
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
