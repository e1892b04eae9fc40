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
stated) comes from the task adapter (``downstream.kinds``). ``run_folds`` runs ``run_trials`` once per
cross-validation fold (GAD) into ``output_dir/fold-<k>/`` and writes the mean over folds.

Running the same command again reuses finished trials (``trial-<i>/trial.json`` with the same settings)
and runs only the missing ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.errors import DownstreamError
from downstream.kinds import prepare_task, task_class
from downstream.options import check_kind_metric
from downstream.settings import (
    STD_DDOF,
    FinetuneSettings,
    check_layerwise_lr_decay,
)
from downstream.trial.analysis import dev_history, epoch_losses, train_loss_history, write_trial_analysis
from downstream.trial.baselines import fold_baselines, split_baselines, trial_warnings
from downstream.trial.model_card import write_model_card
from downstream.trial.plots import plot_report
from downstream.trial.reports import (
    dataset_title,
    format_folds_markdown,
    summarize,
    write_reports,
)
from downstream.trial.trainer import build_trainer

logger = logging.getLogger(__name__)


def run_trial(settings: FinetuneSettings, task, tokenizer, trial_index: int) -> dict[str, Any]:
    """Fine-tune one trial and return its record (also written to ``trial-<i>/trial.json``)."""
    seed = settings.seed + trial_index
    trial_dir = Path(settings.output_dir) / f"trial-{trial_index}"
    trial_dir.mkdir(parents=True, exist_ok=True)
    ckpt_dir = trial_dir / "checkpoints"
    trainer, dev_evaluator = build_trainer(settings, task, tokenizer, seed=seed, output_dir=ckpt_dir)
    trainer.add_callback(_non_finite_loss_callback(trial_index))
    from downstream.trial.progress import use_trial_progress

    use_trial_progress(trainer, f"trial {trial_index} (seed {seed}; {trial_index + 1} of {settings.num_trials})", metrics=task.report_metrics)
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
    if dev is not None:
        task.adopt_dev_result(dev)  # what the kept epoch's development result chose (a threshold) scores the test set
    started_test = time.perf_counter()
    test = _predict_test(trainer, task)
    test_seconds = time.perf_counter() - started_test
    if dev is None or test is None:
        raise DownstreamError("evaluation produced no metrics")
    dev.metrics["loss"] = float(dev_loss)
    warnings = trial_warnings(task, {"dev": dev, "test": test}, split_baselines(task))

    predictions_file: Path | None = trial_dir / task.predictions_filename
    if len(task.dataset("test")):
        task.write_predictions(predictions_file, "test", test)
    else:
        predictions_file = None
    if task.dev_predictions_filename:
        task.write_predictions(trial_dir / task.dev_predictions_filename, "dev", dev)
    history = trainer.state.log_history
    losses = epoch_losses(history, best_epoch)
    write_trial_analysis(
        trial_dir, task, {"dev": dev, "test": test}, {"best_epoch": best_epoch, "train_loss": losses["train_loss"], "dev_loss": dev_loss}
    )
    model_dir = trial_dir / "model"
    tmp_model_dir = trial_dir / ".model.tmp"
    shutil.rmtree(tmp_model_dir, ignore_errors=True)
    trainer.save_model(str(tmp_model_dir))
    tokenizer.save_pretrained(str(tmp_model_dir))
    (tmp_model_dir / "training_args.bin").unlink(missing_ok=True)  # a pickle; the settings are in results.json
    write_model_card(
        tmp_model_dir,
        settings,
        kind=task.kind,
        labels=list(task.labels),
        trial_index=trial_index,
        seed=seed,
        best_epoch=best_epoch,
        dev=dev.metrics,
        test=test.metrics,
        dataset_title=dataset_title(settings),
        f1_name=task.f1_name,
    )
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
        "predictions_file": str(predictions_file) if predictions_file else None,
        # per epoch and per logged step, so the plots can be redrawn from the records alone
        "dev_history": dev_history(history, settings.metric),
        "train_loss_history": train_loss_history(history),
        "fingerprint": settings.fingerprint(),
        "warnings": warnings,
    }
    atomic_write_text(trial_dir / "trial.json", json.dumps(record, indent=2))
    return record


def _predict_test(trainer, task):
    """The test split's :class:`EvalResult` from the best model; an empty result (no metrics, no predictions)
    when the data has no test split (GLUE in the original ELECTRA layout: train and dev only)."""
    from downstream.task import EvalResult

    if not len(task.dataset("test")):
        logger.info("no test data: the test set is not run")
        return EvalResult(metrics={"num_examples": 0, "note": "no test data"}, predictions=[])
    test_evaluator = task.evaluator("test")
    trainer.compute_metrics = test_evaluator
    trainer.predict(task.dataset("test"))
    return test_evaluator.last


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


def _best_dev_result(trainer, recorder):
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
    check_kind_metric(settings.task, settings.metric)
    own_trials = getattr(task_class(settings.task), "run_trials", None)
    if own_trials is not None:  # a kind without a Trainer model (entity linking) runs its own trials
        return own_trials(settings, summarize=summarize)
    check_layerwise_lr_decay(settings.layerwise_lr_decay)
    output_dir = Path(settings.output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise DownstreamError(f"--output-dir {output_dir}: exists and is a file, not a folder")
    task, tokenizer = prepare_task(settings)
    output_dir.mkdir(parents=True, exist_ok=True)  # only once the inputs are known good: no empty folders
    counts = task.counts()
    logger.info(
        "%s: train %d / dev %d / test %d %s, labels %s",
        settings.dataset or settings.data_dir,
        # what training uses: after a development cut and --max-train-examples (``training_<size>``, when a
        # kind's file count differs from it), not the file's count
        counts["train"].get(f"training_{task.size_key}", counts["train"][task.size_key]),
        counts["dev"][task.size_key],
        counts["test"][task.size_key],
        task.size_key,
        task.labels,
    )
    if settings.max_eval_examples is not None:
        logger.warning("dev and test: only their first %d %s scored (--max-eval-examples): a smoke run, its scores "
                       "are not comparable with published figures", settings.max_eval_examples, task.size_key)
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
        logger.info("trial %d (seed %d; %d of %d)", trial_index, settings.seed + trial_index, trial_index + 1, settings.num_trials)
        records.append(run_trial(settings, task, tokenizer, trial_index))
        write_reports(settings, task, counts, records)
    report = write_reports(settings, task, counts, records)
    try:
        plot_report(report, output_dir)
    except Exception as exc:  # a figure never costs the results
        logger.warning("plots not drawn: %s", exc)
    return report


def parse_folds(folds: str, settings: FinetuneSettings) -> list[int]:
    """``--folds``: ``all`` -> every fold folder of the data (``1/``, ``2/``, ...); ``1,3,5`` -> those folds.

    Raises:
        ValueError: ``all`` on data without fold folders, or a list that is not numbers.
    """
    from downstream.relation.data import list_folds
    from downstream.relation.task import ReTask

    if folds.strip().lower() == "all":
        folder = ReTask.data_folder(settings)
        found = list_folds(folder)
        if not found:
            raise ValueError(f"--folds all: {folder} has no fold folders (1/ 2/ ...)")
        return found
    try:
        return [int(x) for x in folds.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--folds {folds!r}: expected 'all' or a comma-separated list of fold numbers") from None


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
    check_kind_metric(settings.task, settings.metric)
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
        "baseline": fold_baselines(fold_reports),
    }
    atomic_write_text(output_dir / "results.json", json.dumps(report, indent=2))
    atomic_write_text(output_dir / "results.md", format_folds_markdown(report))
    return report
