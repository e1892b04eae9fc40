"""Scoring a saved fine-tuned model on a benchmark's development and test sets, without training
(``bioelectra evaluate``): the same reading, encoding, metrics, prediction files and report keys as a trial,
so a trial's own test F1 is reproduced exactly from its saved ``model/``."""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.errors import DownstreamError
from downstream.kinds import TASKS, prepare_task, task_class
from downstream.report_text import limited_run_note
from downstream.settings import FinetuneSettings, run_limits
from downstream.task import EvalResult

logger = logging.getLogger(__name__)

#: ``config.json`` architectures -> task kind, for ``--loader`` left out.
ARCHITECTURE_KINDS = {
    "ForTokenClassification": "ner", "ForSequenceClassification": "re", "ForRelationClassification": "re",
    "ForQuestionAnswering": "qa",
}  # fmt: skip


def model_labels(model_dir: Path) -> list[str]:
    """The label list of a saved classification model, in id order (``config.id2label``).

    Raises:
        DownstreamError: no ``config.json`` or no ``id2label`` in it.
    """
    config_file = Path(model_dir) / "config.json"
    if not config_file.is_file():
        raise DownstreamError(f"--model {model_dir}: no config.json (expected a fine-tuned save_pretrained folder)")
    id2label = json.loads(config_file.read_text(encoding="utf-8")).get("id2label")
    if not id2label:
        raise DownstreamError(f"{config_file}: no id2label (not a fine-tuned classification model)")
    return [id2label[k] for k in sorted(id2label, key=int)]


def model_kind(model_dir: Path) -> str:
    """The task kind of a saved model from its architecture (``ElectraForTokenClassification`` -> ``ner``).

    Raises:
        DownstreamError: an architecture that is neither (pass ``--loader``).
    """
    config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    for arch in config.get("architectures") or []:
        for suffix, kind in ARCHITECTURE_KINDS.items():
            if arch.endswith(suffix):
                return kind
    raise DownstreamError(f"--model {model_dir}: architectures {config.get('architectures')} are not a task kind's; pass --loader")


#: What a model of each ``ARCHITECTURE_KINDS`` family is, in words.
MODEL_FAMILY_WORDS = {"ner": "a token classification model", "re": "a sequence classification model", "qa": "a question answering model"}


def kind_family(kind: str) -> str:
    """The ``ARCHITECTURE_KINDS`` family of the models task kind ``kind`` trains: its class's
    ``model_class_name`` (``AutoModelForTokenClassification`` -> ``ner``), else sequence classification
    (``re``: the kinds that choose their head per run, RE, yes/no, GLUE)."""
    name = getattr(task_class(kind), "model_class_name", None)
    if isinstance(name, str):
        for suffix, family in ARCHITECTURE_KINDS.items():
            if name.endswith(suffix):
                return family
    return "re"


def check_model_fits_kind(model_dir: Path, kind: str) -> None:
    """Refuse a saved model of another family than the models task kind ``kind`` trains (a NER model on a QA
    set), before any data is read or folder made. A folder without ``config.json`` or architectures is left to
    the loaders' own messages.

    Raises:
        DownstreamError: the model's architecture and family, the kind asked for, and the kinds that fit.
    """
    config_file = Path(model_dir) / "config.json"
    try:
        architectures = json.loads(config_file.read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return
    for arch in architectures:
        family = next((f for suffix, f in ARCHITECTURE_KINDS.items() if str(arch).endswith(suffix)), None)
        if family is None or family == kind_family(kind):
            continue
        fitting = " / ".join(f"--loader {k}" for k in TASKS if kind_family(k) == family)
        raise DownstreamError(
            f"--model {model_dir} is {MODEL_FAMILY_WORDS[family]} ({arch}), and --loader {kind} scores "
            f"{MODEL_FAMILY_WORDS[kind_family(kind)]} on its data: pass {fitting} with data of that kind, or a model "
            f"fine-tuned with --loader {kind}"
        )


def evaluate_model(settings: FinetuneSettings) -> dict[str, Any]:
    """Score the saved model ``settings.checkpoint`` on the dev and test splits of ``settings``' data and
    write ``results.json`` (``dev`` and ``test`` blocks with a trial's keys), ``results.md`` and the test
    predictions under ``settings.output_dir``.

    Raises:
        DownstreamError: a folder that is not a fine-tuned model, a model of another family than the task
            kind's (:func:`check_model_fits_kind`), labels that do not match the data's (both sets listed),
            missing data.
    """
    from downstream.trial.trainer import build_trainer

    model_dir = Path(settings.checkpoint)
    check_model_fits_kind(model_dir, settings.task)
    kind_class = task_class(settings.task)
    labels = model_labels(model_dir) if getattr(kind_class, "has_labels", True) else []
    task, tokenizer = prepare_task(settings, labels=labels, training=False)
    output_dir = Path(settings.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    scratch = output_dir / ".evaluate-scratch"
    trainer, _ = build_trainer(settings, task, tokenizer, seed=settings.seed, output_dir=scratch)
    from transformers.trainer_callback import ProgressCallback

    trainer.remove_callback(ProgressCallback)  # its evaluation bar: tqdm lines between the log lines
    results: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    try:
        for split in ("dev", "test"):
            if not len(task.dataset(split)):  # GLUE in the original layout: no test file
                results[split] = EvalResult(metrics={"num_examples": 0, "note": "no test data"}, predictions=[])
                continue
            evaluator = task.evaluator(split)
            trainer.compute_metrics = evaluator
            started = time.perf_counter()
            output = trainer.predict(task.dataset(split))
            seconds[split] = round(time.perf_counter() - started, 2)
            results[split] = evaluator.last
            if split == "dev":
                task.adopt_dev_result(results[split])  # e.g. the decision threshold the test set is scored with
            if "test_loss" in output.metrics and results[split].metrics.get("scored", True):  # GLUE's test: no labels
                results[split].metrics["loss"] = float(output.metrics["test_loss"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if len(task.dataset("test")):
        task.write_predictions(output_dir / task.predictions_filename, "test", results["test"])
    if task.dev_predictions_filename and len(task.dataset("dev")):
        task.write_predictions(output_dir / task.dev_predictions_filename, "dev", results["dev"])
    from downstream.trial.baselines import split_baselines, trial_warnings

    baselines = split_baselines(task)
    report = {
        "task": settings.task,
        "dataset": settings.dataset or str(settings.data_dir),
        "model": str(model_dir),
        "labels": task.labels,
        "metric_mode": task.metric_mode,
        "f1_name": task.f1_name,
        "trial_metrics": list(task.trial_metrics),
        "counts": task.counts(),
        "limits": run_limits(settings),
        "dev": results["dev"].metrics,
        "test": results["test"].metrics,
        "seconds": seconds,
        "predictions_file": str(output_dir / task.predictions_filename),
        "baseline": baselines,
        "warnings": trial_warnings(task, results, baselines),
    }
    atomic_write_text(output_dir / "results.json", json.dumps(report, indent=2))
    atomic_write_text(output_dir / "results.md", format_evaluation(report))
    return report


#: The metrics of an evaluation report that does not name its task's (NER, RE).
EVALUATION_METRICS = ("precision", "recall", "f1")


def _title(name: str) -> str:
    """A metric's title in evaluation reports: precision and recall in full, the others as tables show them."""
    from downstream.trial.reports import METRIC_TITLES

    return name if name in ("precision", "recall") else METRIC_TITLES.get(name, name)


def evaluation_line(report: dict[str, Any], split: str) -> str:
    """``precision 81.20  recall 79.90  F1 80.55`` (the task's metrics, percent) for one split."""
    from downstream.trial.baselines import baseline_cell

    names = report.get("trial_metrics") or EVALUATION_METRICS
    line = "  ".join(f"{_title(n)} {100 * report[split][n]:.2f}" for n in names if isinstance(report[split].get(n), int | float))
    shown = [n for n in names if baseline_cell(report, split, n) != "-"]
    if shown:
        line += "  (baseline " + "  ".join(f"{_title(n)} {baseline_cell(report, split, n)}" for n in shown) + ")"
    return line


def format_evaluation(report: dict[str, Any]) -> str:
    """``results.md`` of an evaluation: the task's metrics (NER, RE: precision, recall, F1; percent) on dev
    and test."""
    def pct(v):
        return "-" if v is None else f"{100 * v:.2f}"

    names = report.get("trial_metrics") or EVALUATION_METRICS
    limited = limited_run_note(report.get("limits") or {})
    lines = [
        f"# {report['dataset']}: {report['task'].upper()} evaluation of `{report['model']}` (no training)",
        "",
        *([limited, ""] if limited else []),
        f"Metrics in percent; {report.get('metric_mode') or ''}.",
        "",
        "| split | " + " | ".join(_title(n) for n in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for split in ("dev", "test"):
        m = report[split]
        lines.append(f"| {split} | " + " | ".join(pct(m.get(n)) for n in names) + " |")
    if report.get("baseline"):
        from downstream.trial.baselines import baseline_cell

        for split in ("dev", "test"):
            lines.append(f"| {split} baseline | " + " | ".join(baseline_cell(report, split, n) for n in names) + " |")
        lines += ["", "Baseline: the best score of one class predicted for every unit of the split (majority class, "
                  "all-positive for an F1 over positive classes, NER: no entity)."]  # fmt: skip
    if report.get("warnings"):
        lines += ["", "**Warning: degenerate predictions.**", "", *(f"- {w}" for w in report["warnings"])]
    return "\n".join(lines) + "\n"
