"""Hyper-parameter search for fine-tuning (``finetune --hp-search N``), with Optuna.

N search trials, each a fine-tuning of the checkpoint at the run's first seed with settings drawn from
:data:`SEARCH_SPACE`, scored by the best development value of ``--metric`` over its epochs. Only the
training and development splits are read: the test split is never encoded into a batch, scored or
looked at (the search builds its trainers from ``train`` and ``dev`` alone). The best settings then go
through the usual seeded ``--trials`` runs, whose test scores are the reported ones.

- Sampler: TPE (Bergstra et al. 2011) seeded with ``settings.seed``, its first ``max(3, N // 2)`` (at most
  10) trials drawn at random.
- Pruner: median (Optuna's ``MedianPruner``): a trial past the first third of its schedule whose development
  value is worse than the median of the earlier trials at the same tenth of their schedules
  (:data:`PRUNING_STEPS`) is stopped, from the fourth trial on.
- Storage: an append-only journal file (``<output-dir>/hp_search/study.journal``), so an interrupted search
  resumes where it stopped (a trial that was running is marked failed and replaced). Trials drawn after a
  resume come from a fresh sampler over the same history: the same seed, not the same draws as an
  uninterrupted search.

Options given on the command line are held fixed and left out of the space.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.errors import DownstreamError
from downstream.settings import FinetuneSettings, metric_key

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchParam:
    """One searched setting: ``kind`` ``log`` (log-uniform float), ``float`` (uniform), ``int`` or
    ``choice``; ``low`` / ``high`` (for ``log``: factors of the run's learning rate) or ``choices``; and
    the source of the range."""

    kind: str
    low: float = 0.0
    high: float = 0.0
    choices: tuple = ()
    source: str = ""


#: The search space (FinetuneSettings field -> range), with where each range comes from. Bio-ELECTRA's own
#: search (SciCrunch/bio_electra ``electra/run_finetuning_opt.py``, hyperopt TPE, 25 evaluations on dev F1):
#: epochs 3 / 5 / 10 / 15 / 20, learning rate 1e-5 / 5e-5 / 1e-4 / 5e-4, batch 12 / 24 / 32 / 64; warmup 0.1,
#: layer-wise decay 0.8 and weight decay 0.01 fixed. ELECTRA's fine-tuning defaults (google-research/electra
#: ``configure_finetuning.py``, ``model/modeling.py``): learning rate 1e-4 (Large 5e-5), layer-wise decay 0.8
#: (Large 0.9), warmup 0.1, batch 32, 3 epochs, dropout 0.1.
SEARCH_SPACE: dict[str, SearchParam] = {
    "learning_rate": SearchParam(
        "log", 0.1, 5.0,
        source="a decade below to 5x the checkpoint's default rate: 1e-5 .. 5e-4 for the 1e-4 default, which holds "
        "Bio-ELECTRA's grid (1e-5 .. 5e-4; its best for every NER set: 5e-4) and ELECTRA's 1e-4 / 5e-5; "
        "bioelectra-small (default 3e-4): 3e-5 .. 1.5e-3; bioelectra-mini (default 1e-3): 1e-4 .. 5e-3",
    ),
    "num_train_epochs": SearchParam("int", 2, 10, source="Bio-ELECTRA's grid 3 .. 20 (its best for NCBI-disease: 15), ELECTRA's default 3; capped at 10 for CPU budgets"),
    "per_device_train_batch_size": SearchParam("choice", choices=(12, 16, 32, 64), source="Bio-ELECTRA's grid 12 / 24 / 32 / 64 (best for NCBI-disease: 12), BioBERT's 10 / 16 / 32 / 64, ELECTRA's 32"),
    "warmup_ratio": SearchParam("float", 0.0, 0.2, source="ELECTRA and Bio-ELECTRA: 0.1 of the steps"),
    "layerwise_lr_decay": SearchParam("float", 0.7, 1.0, source="ELECTRA and Bio-ELECTRA: 0.8 (ELECTRA-Large 0.9); 1.0 = none"),
    "dropout": SearchParam("float", 0.0, 0.2, source="ELECTRA: 0.1"),
}  # fmt: skip

#: Where the search writes, under the run's output folder.
SEARCH_DIRNAME = "hp_search"


def _require_optuna():
    try:
        import optuna
    except ImportError:
        raise DownstreamError("--hp-search needs Optuna: pip install 'bioelectra[search]' (or optuna)") from None
    return optuna


def suggest(trial, space: dict[str, SearchParam], learning_rate: float) -> dict[str, Any]:
    """Draw one setting per searched field (the learning rate's range relative to ``learning_rate``)."""
    params: dict[str, Any] = {}
    for name, p in space.items():
        if p.kind == "log":
            params[name] = trial.suggest_float(name, learning_rate * p.low, learning_rate * p.high, log=True)
        elif p.kind == "float":
            params[name] = trial.suggest_float(name, p.low, p.high)
        elif p.kind == "int":
            params[name] = trial.suggest_int(name, int(p.low), int(p.high))
        else:
            params[name] = trial.suggest_categorical(name, list(p.choices))
    return params


#: The pruner compares trials at the same fraction of their own schedules, in tenths: the learning rate decays
#: over each trial's length, so at the same epoch a 10-epoch trial is still at a high rate while a 2-epoch
#: one has finished, and comparing them there would prune long schedules for being long.
PRUNING_STEPS = 10


def _pruning_callback(trial, metric: str):
    """Reports each development evaluation to Optuna at its tenth of the trial's schedule and stops a trial
    the pruner rejects."""
    from transformers import TrainerCallback

    class Pruning(TrainerCallback):
        def __init__(self):
            self.pruned = False
            self.history: list[dict[str, float]] = []

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            value = (metrics or {}).get(metric_key(metric))
            if value is None:
                return
            epoch = round(state.epoch or 0.0, 2)
            self.history = [*self.history, {"epoch": epoch, "value": float(value)}]
            progress = state.global_step / max(1, state.max_steps)
            trial.report(float(value), step=max(1, math.ceil(PRUNING_STEPS * progress - 1e-9)))
            if trial.should_prune():
                self.pruned = True
                control.should_training_stop = True

    return Pruning()


def search_signature(settings: FinetuneSettings, space: dict[str, SearchParam]) -> str:
    """What a stored study must match to be resumed: the run's fingerprint with the searched fields at their
    defaults, except the learning rate, which sets the learning-rate range."""
    defaults = FinetuneSettings(task=settings.task, checkpoint=settings.checkpoint, output_dir=settings.output_dir)
    reset = {k: getattr(defaults, k) for k in space if k != "learning_rate"}
    return dataclasses.replace(settings, **reset).fingerprint()


def run_hp_search(settings: FinetuneSettings, num_trials: int, *, fixed: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """Search ``num_trials`` settings on the development split and return the summary (also written to
    ``<output_dir>/hp_search/search.json`` / ``search.md`` / ``plots/hp_search.png``).

    Args:
        settings: the run's settings (their learning rate centres the learning-rate range).
        num_trials: search trials wanted in all (a resumed search runs only the missing ones).
        fixed: fields the user set: left out of the space.

    Returns:
        ``{"metric", "direction", "budget", "space", "best": {"number", "value", "params"}, "trials": [...]}``.

    Raises:
        DownstreamError: no Optuna, no trial completed, or a stored study of other settings.
    """
    optuna = _require_optuna()
    from downstream.kinds import prepare_task
    from downstream.trial.progress import use_trial_progress
    from downstream.trial.trainer import build_trainer

    if num_trials < 1:
        raise DownstreamError(f"--hp-search {num_trials}: expected at least 1 search trial")
    space = {k: v for k, v in SEARCH_SPACE.items() if k not in fixed}
    if not space:
        raise DownstreamError("--hp-search: every searched setting is fixed on the command line; nothing to search")
    task, tokenizer = prepare_task(settings)
    folder = Path(settings.output_dir) / SEARCH_DIRNAME
    folder.mkdir(parents=True, exist_ok=True)

    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = JournalStorage(JournalFileBackend(str(folder / "study.journal")))
    direction = "maximize" if settings.greater_is_better else "minimize"
    sampler = optuna.samplers.TPESampler(seed=settings.seed, n_startup_trials=min(10, max(3, num_trials // 2)))
    pruner = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=PRUNING_STEPS // 3)
    study = optuna.create_study(study_name="hp-search", storage=storage, sampler=sampler, pruner=pruner,
                                direction=direction, load_if_exists=True)  # fmt: skip
    signature = search_signature(settings, space)
    stored = study.user_attrs.get("signature")
    if stored is None:
        study.set_user_attr("signature", signature)
    elif stored != signature:
        raise DownstreamError(f"{folder}: holds a search for other settings; use another --output-dir")
    for stale in [t for t in study.trials if t.state == TrialState.RUNNING]:
        logger.warning("search trial %d was interrupted: marked failed, another one replaces it", stale.number)
        study.tell(stale.number, state=TrialState.FAIL)

    def objective(trial) -> float:
        params = suggest(trial, space, settings.learning_rate)
        trial_settings = dataclasses.replace(settings, **params, num_trials=1)
        ckpt_dir = folder / f"trial-{trial.number}" / "checkpoints"  # (TensorBoard logs: trial-N/tensorboard)
        trainer, _ = build_trainer(trial_settings, task, tokenizer, seed=settings.seed, output_dir=ckpt_dir)
        pruning = _pruning_callback(trial, settings.metric)
        trainer.add_callback(pruning)
        shown = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items())
        logger.info("search trial %d: %s", trial.number, shown)
        use_trial_progress(trainer, f"search trial {trial.number} ({trial.number + 1} of {num_trials})", metrics=task.report_metrics)
        try:
            trainer.train()
        finally:
            shutil.rmtree(ckpt_dir, ignore_errors=True)
        trial.set_user_attr("dev_history", pruning.history)
        values = [h["value"] for h in pruning.history if math.isfinite(h["value"])]
        if not values:
            raise DownstreamError(f"search trial {trial.number}: no finite development {settings.metric}")
        if pruning.pruned:
            raise optuna.TrialPruned()
        return max(values) if settings.greater_is_better else min(values)

    done = [t for t in study.trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    remaining = num_trials - len(done)
    if remaining > 0:
        logger.info("hyper-parameter search: %d of %d trials to run (%d done), on the development split only", remaining, num_trials, len(done))
        study.optimize(objective, n_trials=remaining, catch=())
    else:
        logger.info("hyper-parameter search: %d trials already done in %s", len(done), folder)
    summary = summarize_study(study, settings, space, num_trials)
    atomic_write_text(folder / "search.json", json.dumps(summary, indent=2) + "\n")
    atomic_write_text(folder / "search.md", format_search_markdown(summary))
    try:
        plot_search(summary, folder)
    except Exception as exc:  # a figure never costs the results
        logger.warning("search plot not drawn: %s", exc)
    return summary


def summarize_study(study, settings: FinetuneSettings, space: dict[str, SearchParam], num_trials: int) -> dict[str, Any]:
    """The search's record: budget, space with sources, every trial (state, params, development values),
    the best one.

    Raises:
        DownstreamError: no trial completed.
    """
    from optuna.trial import TrialState

    trials = [
        {"number": t.number, "state": t.state.name.lower(), "value": t.value, "params": t.params,
         "dev_history": t.user_attrs.get("dev_history", [])}
        for t in study.trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
    ]  # fmt: skip
    complete = [t for t in trials if t["state"] == "complete"]
    if not complete:
        raise DownstreamError("--hp-search: no search trial completed (all were pruned or failed)")
    best = study.best_trial
    return {
        "metric": settings.metric,
        "direction": "maximize" if settings.greater_is_better else "minimize",
        "budget": {"trials": num_trials, "completed": len(complete), "pruned": len(trials) - len(complete),
                   "seed": settings.seed, "sampler": "TPE", "pruner": "median"},  # fmt: skip
        "space": {k: {**dataclasses.asdict(v), "choices": list(v.choices)} for k, v in space.items()},
        "base_learning_rate": settings.learning_rate,
        "best": {"number": best.number, "value": best.value, "params": best.params},
        "trials": trials,
    }


def _fmt(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def format_search_markdown(summary: dict[str, Any]) -> str:
    """``search.md`` (and the section of ``results.md``): budget, space, best settings, every trial."""
    best = summary["best"]
    names = list(summary["space"])
    lines = [
        "## Hyper-parameter search",
        "",
        f"{summary['budget']['trials']} search trials on the development split (TPE sampler, seed {summary['budget']['seed']}; "
        f"median pruner): {summary['budget']['completed']} completed, {summary['budget']['pruned']} pruned. Each trial "
        f"fine-tunes at the run's first seed and scores its best development {summary['metric']} over its epochs; the "
        "test split is not read. The reported runs above use the best settings.",
        "",
        f"Best: trial {best['number']}, development {summary['metric']} {_pct(best['value'], summary['metric'])}: "
        + ", ".join(f"{k} {_fmt(v)}" for k, v in best["params"].items()) + ".",
        "",
        "| trial | state | dev " + summary["metric"] + " | " + " | ".join(names) + " |",
        "|---:|---|---:|" + "---:|" * len(names),
    ]
    for t in summary["trials"]:
        value = t["value"] if t["value"] is not None else (t["dev_history"][-1]["value"] if t["dev_history"] else None)
        lines.append(f"| {t['number']} | {t['state']} | {_pct(value, summary['metric'])} | "
                     + " | ".join(_fmt(t["params"].get(n, "-")) for n in names) + " |")  # fmt: skip
    lines += ["", "Search space (ranges and sources):", ""]
    for name, p in summary["space"].items():
        what = (f"log-uniform, {p['low']:g}x to {p['high']:g}x the base rate {summary['base_learning_rate']:g}" if p["kind"] == "log"
                else f"one of {', '.join(map(str, p['choices']))}" if p["kind"] == "choice" else f"{p['kind']} in [{p['low']:g}, {p['high']:g}]")  # fmt: skip
        lines.append(f"- `{name}`: {what}; {p['source']}.")
    return "\n".join(lines) + "\n"


def _pct(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if metric == "loss" else f"{100 * value:.2f}"


def plot_search(summary: dict[str, Any], folder: Path) -> Path | None:
    """``plots/hp_search.png``: each trial's development value (pruned trials hollow: their last value) and
    the best so far."""
    from bioelectra.plotting import pyplot, save_figure

    plt = pyplot()
    if plt is None:
        return None
    metric = summary["metric"]
    scale = 1 if metric == "loss" else 100
    fig, ax = plt.subplots(figsize=(6, 4))
    best, best_line = None, []
    for t in summary["trials"]:
        value = t["value"] if t["value"] is not None else (t["dev_history"][-1]["value"] if t["dev_history"] else None)
        if value is None:
            best_line.append(best)
            continue
        pruned = t["state"] == "pruned"
        ax.scatter([t["number"]], [scale * value], facecolors="none" if pruned else "C0", edgecolors="C0", zorder=3)
        if not pruned:
            better = best is None or (value > best if summary["direction"] == "maximize" else value < best)
            best = value if better else best
        best_line.append(best)
    numbers = [t["number"] for t in summary["trials"]]
    ax.step(numbers, [scale * b if b is not None else float("nan") for b in best_line], where="post", color="C1", label="best so far")
    ax.set_xlabel("search trial")
    ax.set_ylabel(f"development {metric}" + ("" if metric == "loss" else " (%)"))
    ax.set_title("Hyper-parameter search (hollow: pruned, at its last evaluation)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path = folder / "plots" / "hp_search.png"
    save_figure(fig, path)
    return path


def attach_search(report: dict[str, Any], summary: dict[str, Any], output_dir: str | Path) -> dict[str, Any]:
    """Add the search's record to a run's report: ``results.json`` gets ``hp_search``, ``results.md`` the
    search section (:func:`format_search_markdown`). Returns the report."""
    output_dir = Path(output_dir)
    report = {**report, "hp_search": summary}
    atomic_write_text(output_dir / "results.json", json.dumps(report, indent=2))
    markdown = (output_dir / "results.md").read_text(encoding="utf-8")
    atomic_write_text(output_dir / "results.md", markdown.rstrip("\n") + "\n\n" + format_search_markdown(summary))
    return report


def run_search_then_trials(settings: FinetuneSettings, num_search_trials: int, *, fixed: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """:func:`run_hp_search`, then ``settings.num_trials`` seeded runs (:func:`downstream.trial.runner.run_trials`)
    with the best settings, their report carrying the search's record (:func:`attach_search`).

    Raises:
        DownstreamError: see :func:`run_hp_search` and ``run_trials``.
    """
    from downstream.trial.runner import run_trials

    summary = run_hp_search(settings, num_search_trials, fixed=fixed)
    best = dataclasses.replace(settings, **summary["best"]["params"])
    logger.info("best search setting: %s; now %d seeded trial(s) with it", summary["best"]["params"], best.num_trials)
    return attach_search(run_trials(best), summary, settings.output_dir)
