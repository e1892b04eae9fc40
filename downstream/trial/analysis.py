"""What a person reads after a trial: ``classification_report.txt`` and ``errors.txt`` (each task kind
writes its own text: ``Task.analysis``), and the per-epoch histories a trial keeps in ``trial.json``
(:func:`epoch_losses`, :func:`dev_history`, :func:`train_loss_history`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text

#: The metrics of an evaluation kept per epoch in ``trial.json``'s ``dev_history`` (those logged).
HISTORY_METRICS = ("f1", "precision", "recall", "accuracy", "loss", "exact_match")


def epoch_losses(log_history: list[dict[str, Any]], epoch: float | None) -> dict[str, float | None]:
    """The training and validation loss of the evaluation at ``epoch``, from the Trainer's ``log_history``.

    The evaluation is the last ``eval_loss`` entry whose ``epoch`` rounded to 2 decimals is ``epoch`` (the
    trial runner's best epoch is rounded so). Its training loss is the mean of the ``loss`` entries logged
    after the previous evaluation up to it (each the Trainer's mean over the steps since its previous log;
    the same definition as the epoch table ``finetune`` shows), ``None`` when none was logged (an epoch
    shorter than ``logging_steps``).

    Returns:
        ``{"train_loss", "dev_loss"}``, ``None`` where unknown.
    """
    none = {"train_loss": None, "dev_loss": None}
    if epoch is None:
        return none
    evals = [i for i, e in enumerate(log_history) if "eval_loss" in e]
    at = [
        i
        for i in evals
        if isinstance(log_history[i].get("epoch"), int | float)
        and abs(round(log_history[i]["epoch"], 2) - epoch) < 1e-6
    ]
    if not at:
        return none
    end = at[-1]
    start = max((i for i in evals if i < end), default=-1)
    losses = [e["loss"] for e in log_history[start + 1 : end] if isinstance(e.get("loss"), int | float)]
    return {
        "train_loss": sum(losses) / len(losses) if losses else None,
        "dev_loss": log_history[end]["eval_loss"],
    }


def dev_history(log_history: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """``trial.json``'s ``dev_history``: one entry per development evaluation, in order.

    Args:
        log_history: ``trainer.state.log_history``.
        metric: the selection metric (``settings.metric``, with or without ``eval_``).

    Returns:
        ``[{"epoch", "step", "f1", "precision", "recall", "accuracy", "loss", "selection_metric",
        "selection_value"}]`` (a metric the task does not log is ``None``; fractions in [0, 1]).
    """
    name = metric.removeprefix("eval_")
    return [
        {
            "epoch": e.get("epoch"),
            "step": e.get("step"),
            **{k: e.get(f"eval_{k}") for k in HISTORY_METRICS},
            "selection_metric": name,
            "selection_value": e.get(f"eval_{name}"),
        }
        for e in log_history
        if "eval_loss" in e
    ]


def train_loss_history(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``trial.json``'s ``train_loss_history``: each logged training loss (the Trainer's mean over the
    steps since its previous log, every ``logging_steps`` optimizer steps) as ``{"step", "epoch", "loss",
    "learning_rate"}``."""
    return [
        {
            "step": e["step"],
            "epoch": e.get("epoch"),
            "loss": e["loss"],
            "learning_rate": e.get("learning_rate"),
        }
        for e in log_history
        if isinstance(e.get("loss"), int | float) and "step" in e
    ]


def write_trial_analysis(trial_dir: Path, task, results: dict[str, Any], info: dict[str, Any]) -> list[Path]:
    """Write ``classification_report.txt`` and ``errors.txt`` of one trial into ``trial_dir`` (atomically).

    Args:
        trial_dir: the trial's folder.
        task: the task adapter (its ``analysis`` gives the two texts, or ``None``).
        results: ``{"dev": EvalResult, "test": EvalResult}`` (metrics and predicted tags / labels).
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.

    Returns:
        The files written (none for a task kind without an analysis).
    """
    texts = task.analysis(results, info)
    if texts is None:
        return []
    report, errors = texts
    paths = [Path(trial_dir) / "classification_report.txt", Path(trial_dir) / "errors.txt"]
    atomic_write_text(paths[0], report)
    atomic_write_text(paths[1], errors)
    return paths
