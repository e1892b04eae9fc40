"""What a person sees while ``finetune`` runs: one progress bar per trial and one table row per epoch.

The Trainer's own display (a tqdm training bar, a nested evaluation bar, and each log written as a
dictionary of numbers formatted as strings) is replaced by :class:`TrialProgress`: a rich progress bar over
the trial's optimizer steps, and after each evaluation a row ``epoch | train loss | dev loss`` and the task's
development metrics (NER, RE: ``dev F1 | dev P | dev R``) (the training loss of an epoch is the mean of the losses the Trainer logged during it,
``-`` when it logged none). Everything goes to stderr; the final results table stays on stdout.
"""

from __future__ import annotations

import math
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

#: The fixed columns of an epoch row: (title, log key, width); the task's metrics follow them.
_FIXED_COLUMNS = (("epoch", "epoch", 6), ("train loss", "train_loss", 10), ("dev loss", "eval_loss", 9))

#: The metric columns of NER and RE (their ``report_metrics``).
DEFAULT_METRICS = ("f1", "precision", "recall")


def _columns(metrics=DEFAULT_METRICS) -> tuple[tuple[str, str, int], ...]:
    """The columns of an epoch row: the fixed ones, then ``dev <title>`` per metric (fractions, printed as
    percentages)."""
    from downstream.trial.reports import METRIC_TITLES

    extra = tuple((f"dev {METRIC_TITLES.get(m, m)}", f"eval_{m}", max(7, len(METRIC_TITLES.get(m, m)) + 4)) for m in metrics)
    return _FIXED_COLUMNS + extra


def _cell(key: str, value: Any, width: int) -> str:
    if not isinstance(value, int | float) or (isinstance(value, float) and not math.isfinite(value)):
        return f"{'-':>{width}}"
    if key == "epoch":
        return f"{value:>{width}.2f}".rstrip("0").rstrip(".").rjust(width)
    if key.endswith("loss"):
        return f"{value:>{width}.4f}"
    return f"{100 * value:>{width}.2f}"


def epoch_header(metrics=DEFAULT_METRICS) -> str:
    """The header line of the epoch rows."""
    return " ".join(f"{title:>{width}}" for title, _, width in _columns(metrics))


def epoch_row(values: dict[str, Any], metrics=DEFAULT_METRICS) -> str:
    """One epoch's row from ``{"epoch", "train_loss", "eval_loss", "eval_f1", ...}`` (missing values: ``-``)."""
    return " ".join(_cell(key, values.get(key), width) for _, key, width in _columns(metrics))


class TrialProgress(TrainerCallback):
    """One rich progress bar over the trial's optimizer steps, and a row per evaluation (epoch).

    Args:
        description: the bar's label, e.g. ``"trial 1/3 (seed 42)"``.
        console: a ``rich.console.Console`` (default: a new one on stderr).
        metrics: the development metrics of the epoch rows (the task's ``report_metrics``).
    """

    def __init__(self, description: str, *, console=None, metrics=DEFAULT_METRICS):
        from rich.console import Console

        self.metrics = tuple(metrics)
        self.description = description
        self.console = console or Console(stderr=True)
        self.progress = None
        self.task_id = None
        self.epoch_losses: list[float] = []
        self.rows: list[dict[str, Any]] = []

    def on_train_begin(self, args, state, control, **kwargs):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if not state.is_world_process_zero:
            return
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("steps"),
            TimeElapsedColumn(),
            TextColumn("<"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.progress.start()
        self.task_id = self.progress.add_task(self.description, total=state.max_steps or None)

    def on_step_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task_id, completed=state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")
        if isinstance(loss, int | float):
            self.epoch_losses.append(float(loss))

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if self.progress is None or not state.is_world_process_zero:
            return
        row = dict(metrics or {})
        row["epoch"] = state.epoch
        row["train_loss"] = sum(self.epoch_losses) / len(self.epoch_losses) if self.epoch_losses else None
        self.epoch_losses = []
        if not self.rows:
            self.progress.console.print(epoch_header(self.metrics), highlight=False)
        self.rows.append(row)
        self.progress.console.print(epoch_row(row, self.metrics), highlight=False)

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task_id, completed=state.global_step)
            self.progress.stop()
            self.progress = None


def use_trial_progress(trainer, description: str, *, console=None, metrics=DEFAULT_METRICS) -> TrialProgress:
    """Replace the Trainer's tqdm bars and log printing with a :class:`TrialProgress`; returns it."""
    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    callback = TrialProgress(description, console=console, metrics=metrics)
    trainer.add_callback(callback)
    return callback
