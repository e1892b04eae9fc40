"""Plots of a fine-tuning run, drawn from its ``results.json`` (whose trials hold ``dev_history`` and
``train_loss_history``, see :mod:`downstream.trial.analysis`) into ``<output-dir>/plots/``:

- ``dev_f1.png``: the development F1 after each epoch, one line per trial, the kept (best) epoch ringed;
- ``test_f1_spread.png``: each trial's test F1 (the kept epoch's model), with the mean and ± one sample
  std (ddof=1, as the summaries report);
- ``train_loss.png``: the logged training loss over optimizer steps, one line per trial.

PNG through matplotlib (:mod:`bioelectra.plotting`); without it nothing is drawn and one line is logged.
Trials recorded before the histories existed are left out of the per-epoch and loss plots.
"""

from __future__ import annotations

import json
import logging
import statistics
from pathlib import Path
from typing import Any

from bioelectra.plotting import pyplot, save_figure

logger = logging.getLogger(__name__)


def _title(report: dict[str, Any]) -> str:
    return f"{report.get('dataset_title') or report.get('dataset')}, checkpoint {report.get('checkpoint')}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _trial_label(trial: dict[str, Any]) -> str:
    return f"trial {trial.get('trial_index')} (seed {trial.get('seed')})"


def plot_report(report: dict[str, Any], output_dir: str | Path) -> list[Path]:
    """Draw the run's plots from ``report`` (the content of ``results.json`` of one run of trials) into
    ``output_dir/plots/``.

    Returns:
        The PNG files written: empty without matplotlib; a plot whose data no trial has is not drawn.
    """
    plt = pyplot()
    if plt is None:
        return []
    trials = report.get("trials") or []
    plots = Path(output_dir) / "plots"
    f1_name = report.get("f1_name") or "F1"
    written: list[Path] = []

    with_dev = [t for t in trials if any(_number(h.get("f1")) for h in t.get("dev_history") or [])]
    if with_dev:
        fig, ax = plt.subplots(figsize=(6, 4))
        for t in with_dev:
            points = [
                (h["epoch"], 100 * h["f1"])
                for h in t["dev_history"]
                if _number(h.get("epoch")) and _number(h.get("f1"))
            ]
            (line,) = ax.plot(
                [p[0] for p in points], [p[1] for p in points], marker="o", label=_trial_label(t)
            )
            best = [p for p in points if _number(t.get("best_epoch")) and abs(p[0] - t["best_epoch"]) < 0.006]
            if best:
                ax.scatter(
                    [best[-1][0]],
                    [best[-1][1]],
                    s=140,
                    facecolors="none",
                    edgecolors=line.get_color(),
                    zorder=3,
                )
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        ax.set_xlabel("epoch")
        ax.set_ylabel(f"development {f1_name} (%)")
        ax.set_title(f"Development {f1_name} per epoch (ring: kept epoch)\n{_title(report)}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        written.append(save_figure(fig, plots / "dev_f1.png"))

    scored = [t for t in trials if _number((t.get("test") or {}).get("f1"))]
    if scored:
        scores = [100 * t["test"]["f1"] for t in scored]
        fig, ax = plt.subplots(figsize=(4.5, 4))
        ax.scatter(range(len(scores)), scores, zorder=3, label="trials")
        mean = statistics.fmean(scores)
        ax.axhline(mean, color="C1", label=f"mean {mean:.2f}")
        if len(scores) > 1:
            std = statistics.stdev(scores)
            ax.axhspan(mean - std, mean + std, color="C1", alpha=0.15, label=f"± std {std:.2f} (ddof=1)")
        ax.set_xticks(
            range(len(scores)), [f"{t.get('trial_index')}\nseed {t.get('seed')}" for t in scored], fontsize=8
        )
        ax.set_xlabel("trial")
        ax.set_ylabel(f"test {f1_name} (%)")
        ax.set_title(f"Test {f1_name} over {len(scores)} trial(s)\n{_title(report)}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        written.append(save_figure(fig, plots / "test_f1_spread.png"))

    with_loss = [t for t in trials if t.get("train_loss_history")]
    if with_loss:
        fig, ax = plt.subplots(figsize=(6, 4))
        for t in with_loss:
            steps, losses = (
                [h["step"] for h in t["train_loss_history"]],
                [h["loss"] for h in t["train_loss_history"]],
            )
            ax.plot(steps, losses, marker="." if len(steps) < 30 else None, label=_trial_label(t))
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("training loss (cross-entropy, mean since the previous log)")
        ax.set_title(f"Training loss\n{_title(report)}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        written.append(save_figure(fig, plots / "train_loss.png"))
    return written


def plot_run(output_dir: str | Path) -> list[Path]:
    """Redraw the plots of a finished ``finetune`` run from its ``results.json`` (and nothing else).

    A cross-validation run (``--folds``) is drawn fold by fold into ``fold-<k>/plots/``.

    Returns:
        The PNG files written (empty without matplotlib).

    Raises:
        FileNotFoundError: no ``results.json`` in ``output_dir``.
        ValueError: ``results.json`` is not JSON.
    """
    output_dir = Path(output_dir)
    path = output_dir / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no results.json (expected a finetune --output-dir)")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if "fold_reports" in report:
        written = []
        for fold, fold_report in zip(report.get("folds") or [], report["fold_reports"], strict=False):
            written += plot_report(fold_report, output_dir / f"fold-{fold}")
        return written
    return plot_report(report, output_dir)
