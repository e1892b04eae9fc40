"""The ``TrainerCallback`` classes of pre-training and their helpers: save at the end, the wall-clock
deadline, the schedule fitted to the time left, per-rank seeds, the logs (``log_history.jsonl``) and the
progress bars; and the tear-down of the process group when a process's distributed work is over."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import torch
from transformers import ProgressCallback, TrainerCallback

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
            Why more than one step: measured over one, a step of about 6 s right after ``skip_steps`` (on a
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
