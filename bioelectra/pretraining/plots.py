"""Plots of a pre-training run, drawn from what the Trainer logged, into ``<run folder>/plots/``:

- ``loss.png``: the training loss over optimizer steps, and below it (when logged) the generator's masked-LM
  loss ``mlm_loss`` and the discriminator's replaced token detection loss ``disc_loss``, each with its
  held-out value (``masked_lm_loss``, ``disc_loss`` of the evaluations) as points;
- ``masked_lm_accuracy.png``: the generator's held-out ``masked_lm_accuracy`` (argmax) and
  ``sampled_masked_lm_accuracy`` over steps;
- ``disc_auc.png``: the discriminator's held-out ``disc_auc`` over steps, with chance (0.5) marked, and
  (when logged) its attention entropy ``disc_attention_entropy`` on the same 0-1 scale: an AUC that rises
  while the attention stays uniform (entropy near 1) is detection by token rarity, not by context
  (:mod:`bioelectra.diagnostics`).

The numbers come from ``trainer_state.json``'s ``log_history`` in the run's newest checkpoint (or in the
folder given, when it is a checkpoint), plus ``eval_results.json`` (the evaluation after the last step, which
the Trainer logs after its last save). The training records hold ``loss``, ``mlm_loss``, ``disc_loss``; the
evaluation records ``eval_<name>`` for :data:`bioelectra.pretraining.metrics.METRIC_NAMES`.

PNG through matplotlib (:mod:`bioelectra.plotting`); without it nothing is drawn and one line is logged.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bioelectra.plotting import pyplot, save_figure

logger = logging.getLogger(__name__)

#: The folder under the run folder that receives the PNGs.
PLOTS_DIR = "plots"

#: The files :func:`plot_pretraining_log` writes (when their numbers were logged).
PLOT_FILES = ("loss.png", "masked_lm_accuracy.png", "disc_auc.png")


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _series(records: Sequence[Mapping[str, Any]], key: str) -> tuple[list[int], list[float]]:
    """``(steps, values)`` of the records that logged a finite ``key``."""
    points = [(int(r["step"]), float(r[key])) for r in records if _finite(r.get(key)) and "step" in r]
    return [s for s, _ in points], [v for _, v in points]


def read_log_history(run_dir: str | os.PathLike) -> tuple[list[dict[str, Any]], Path]:
    """The Trainer's log of a run: ``(log_history, trainer_state.json it came from)``.

    ``run_dir`` is a ``pretrain train`` output folder (its newest ``checkpoint-N`` with a readable
    ``trainer_state.json``) or a folder holding ``trainer_state.json`` itself (a checkpoint). The run's
    ``eval_results.json`` (beside the checkpoints), when its step is not in the log yet, is appended as an
    evaluation record (``eval_<name>`` keys), as the Trainer would have logged it.

    Raises:
        FileNotFoundError: no ``trainer_state.json`` in ``run_dir`` nor in any of its checkpoints.
    """
    from bioelectra.pretraining.checkpoints import _checkpoint_dirs

    run_dir = Path(run_dir)
    candidates = [path / "trainer_state.json" for _, path in reversed(_checkpoint_dirs(run_dir))]
    candidates.append(run_dir / "trainer_state.json")
    for state_file in candidates:
        if not state_file.is_file():
            continue
        try:
            history = list(json.loads(state_file.read_text(encoding="utf-8"))["log_history"])
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("skipping %s: unreadable (%s)", state_file, type(exc).__name__)
            continue
        break
    else:
        raise FileNotFoundError(
            f"{run_dir}: no trainer_state.json here or in a checkpoint-N folder (expected a `pretrain train` "
            "output folder or one of its checkpoints)"
        )
    for results_file in (run_dir / "eval_results.json", state_file.parent.parent / "eval_results.json"):
        if results_file.is_file():
            final = json.loads(results_file.read_text(encoding="utf-8"))
            step = final.get("step")
            logged = {r.get("step") for r in history if any(k.startswith("eval_") for k in r)}
            newest = max((r.get("step", 0) for r in history), default=0)
            if isinstance(step, int) and step not in logged and step == newest:
                history.append({"step": step, **{f"eval_{k}": v for k, v in final.items() if k != "step"}})
            break
    return history, state_file


def plot_pretraining_log(
    log_history: Sequence[Mapping[str, Any]],
    output_dir: str | os.PathLike,
    *,
    title: str = "",
    gen_weight: float | None = None,
    disc_weight: float | None = None,
) -> list[Path]:
    """Draw :data:`PLOT_FILES` from a Trainer ``log_history`` into ``output_dir`` (created when needed).

    Args:
        log_history: the Trainer's records (training: ``step``, ``loss``, ``mlm_loss``, ``disc_loss``;
            evaluation: ``step``, ``eval_masked_lm_accuracy``, ``eval_disc_auc``, ...).
        output_dir: where the PNGs go.
        title: a second title line (the run).
        gen_weight, disc_weight: the objective's weights, named in the loss plot when known.

    Returns:
        The PNG files written: none without matplotlib; a figure is left out when none of its numbers was
        logged (no evaluation: only ``loss.png``).
    """
    plt = pyplot()
    if plt is None:
        return []
    output_dir = Path(output_dir)
    written: list[Path] = []
    suffix = f"\n{title}" if title else ""

    loss = _series(log_history, "loss")
    parts = [
        ("mlm_loss", "generator masked-LM loss", "eval_masked_lm_loss"),
        ("disc_loss", "discriminator RTD loss", "eval_disc_loss"),
    ]
    panels = [p for p in parts if _series(log_history, p[0])[0] or _series(log_history, p[2])[0]]
    if loss[0] or panels:
        fig, axes = plt.subplots(
            1 + len(panels), 1, figsize=(6.5, 2.6 * (1 + len(panels))), sharex=True, squeeze=False
        )
        axes = axes[:, 0]
        ax = axes[0]
        ax.plot(*loss, color="C0", label="training loss")
        if gen_weight is not None and disc_weight is not None:
            what = f"loss = {gen_weight:g} x mlm_loss + {disc_weight:g} x disc_loss"
        else:
            what = "loss = gen_weight x mlm_loss + disc_weight x disc_loss"
        ax.set_ylabel("loss (nats)")
        ax.set_title(f"Pre-training loss ({what}){suffix}", fontsize=9)
        for ax, (key, name, eval_key) in zip(axes[1:], panels, strict=True):
            ax.plot(*_series(log_history, key), color="C1", label=f"training {key}")
            steps, values = _series(log_history, eval_key)
            if steps:
                ax.plot(steps, values, "o", color="C3", label=f"held-out {eval_key.removeprefix('eval_')}")
            ax.set_ylabel(f"{name}\n(nats)", fontsize=8)
        for ax in axes:
            ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
        axes[-1].set_xlabel("optimizer step")
        written.append(save_figure(fig, output_dir / "loss.png"))

    accuracy = _series(log_history, "eval_masked_lm_accuracy")
    sampled = _series(log_history, "eval_sampled_masked_lm_accuracy")
    if accuracy[0] or sampled[0]:
        fig, ax = plt.subplots(figsize=(6, 4))
        if accuracy[0]:
            ax.plot(*accuracy, marker="o", color="C0", label="masked_lm_accuracy (argmax)")
        if sampled[0]:
            ax.plot(*sampled, marker=".", linestyle="--", color="C2", label="sampled_masked_lm_accuracy")
        ax.set_ylim(0.0, 1.0)
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("fraction of the masked positions")
        ax.set_title(f"Generator: held-out masked-LM accuracy{suffix}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        written.append(save_figure(fig, output_dir / "masked_lm_accuracy.png"))

    auc = _series(log_history, "eval_disc_auc")
    if auc[0]:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(*auc, marker="o", color="C0", label="disc_auc")
        ax.axhline(0.5, color="grey", linestyle=":", label="chance (0.5)")
        entropy = _series(log_history, "eval_disc_attention_entropy")
        if entropy[0]:
            ax.plot(*entropy, marker="s", linestyle="--", color="C1", label="attention entropy (1 = uniform)")
        ax.set_ylim(0.0, 1.03 if entropy[0] else 1.0)  # room for the entropy's points at 1.0
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("ROC AUC (replaced = positive)" + (" / normalised entropy" if entropy[0] else ""))
        title = "replaced token detection AUC" + (" and attention entropy" if entropy[0] else "")
        ax.set_title(f"Discriminator: held-out {title}{suffix}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        written.append(save_figure(fig, output_dir / "disc_auc.png"))
    return written


def plot_pretraining_run(run_dir: str | os.PathLike) -> list[Path]:
    """Draw the plots of a ``pretrain train`` output folder (or checkpoint) into ``run_dir/plots/``.

    Returns:
        The PNG files written (empty without matplotlib).

    Raises:
        FileNotFoundError: no ``trainer_state.json`` (see :func:`read_log_history`).
        ValueError: the log holds neither a training loss nor an evaluation metric.
    """
    from bioelectra.pretraining.settings import HPARAMS_FILE

    run_dir = Path(run_dir)
    history, state_file = read_log_history(run_dir)
    wanted = ("loss", "mlm_loss", "disc_loss", "eval_masked_lm_accuracy", "eval_disc_auc")
    if not any(_finite(r.get(k)) for r in history for k in wanted):
        raise ValueError(f"{state_file}: no training loss or evaluation metric logged yet; nothing to plot")
    weights: dict[str, Any] = {}
    for hp_file in (run_dir / HPARAMS_FILE, state_file.parent.parent / HPARAMS_FILE):
        if hp_file.is_file():
            recorded = json.loads(hp_file.read_text(encoding="utf-8"))
            weights = {k: recorded.get(k) for k in ("gen_weight", "disc_weight") if _finite(recorded.get(k))}
            break
    step = max((int(r["step"]) for r in history if "step" in r), default=0)
    name = state_file.parent.parent.name if state_file.parent != run_dir else run_dir.name
    return plot_pretraining_log(history, run_dir / PLOTS_DIR, title=f"{name}, step {step}", **weights)


def plot_after_training(run_dir: str | os.PathLike) -> list[Path]:
    """:func:`plot_pretraining_run` for the end of ``run_pretraining``: it never raises (a plot is not worth a
    failed training run); a failure is logged as a warning, a missing matplotlib once at INFO."""
    try:
        written = plot_pretraining_run(run_dir)
    except Exception as exc:  # noqa: BLE001 - any plotting failure must leave the finished run alone
        logger.warning("pre-training plots not written (%s: %s)", type(exc).__name__, exc)
        return []
    if written:
        logger.info("plots: %s", ", ".join(str(p) for p in written))
    return written
