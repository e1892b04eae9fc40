"""Reports of fine-tuning runs: ``results.json`` / ``results.md`` of a run and of a cross-validation,
and the terminal tables."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.errors import DownstreamError
from downstream.registry import get_spec
from downstream.report_text import limited_run_note
from downstream.settings import STD_DDOF, FinetuneSettings, run_limits
from downstream.trial.baselines import baseline_cell, baseline_classes, split_baselines, warning_lines


def dataset_title(settings: FinetuneSettings) -> str | None:
    """The registry's title of ``settings.dataset`` (``None`` for unregistered data)."""
    if not settings.dataset:
        return None
    try:
        return get_spec(settings.dataset).title
    except DownstreamError:
        return None


def write_reports(settings: FinetuneSettings, task, counts, records) -> dict[str, Any]:
    headline = task.headline_metrics
    summary = {
        split: {name: summarize([r[split].get(name) for r in records], ddof=STD_DDOF) for name in headline}
        for split in ("dev", "test")
    }
    report = {
        "task": settings.task,
        "dataset": settings.dataset or str(settings.data_dir),
        "dataset_title": dataset_title(settings),
        "checkpoint": settings.checkpoint_name or settings.checkpoint,
        "metric_mode": task.metric_mode,
        "f1_name": task.f1_name,
        "labels": task.labels,
        "settings": settings.to_json(),
        "limits": run_limits(settings),
        "count_columns": [list(c) for c in task.count_columns],
        "counts": counts,
        "num_trials": len(records),
        "trials": records,
        "summary": summary,
        "report_metrics": list(task.report_metrics),
        "trial_metrics": list(getattr(task, "trial_metrics", DEFAULT_TRIAL_METRICS)),
        "table_metrics": list(getattr(task, "table_metrics", DEFAULT_TABLE_METRICS)),
        "dropout": checkpoint_dropout(settings),
        "std_ddof": STD_DDOF,
    }
    report["baseline"] = split_baselines(task)
    report.update(task.report_extras(settings))
    output_dir = Path(settings.output_dir)
    atomic_write_text(output_dir / "results.json", json.dumps(report, indent=2))
    atomic_write_text(output_dir / "results.md", format_markdown(report))
    return report


#: ``results.md`` count columns of reports written before tasks named theirs (NER).
DEFAULT_COUNT_COLUMNS = (("sentences", "sentences"), ("words", "words"), ("entities", "entities"), ("windows", "windows"))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


#: ``results.md`` summary rows of reports that do not name theirs (written before ``report_metrics``).
DEFAULT_REPORT_METRICS = ("f1", "precision", "recall")

#: ``results.md`` per-trial columns (dev, then test) of reports and task kinds that do not name theirs.
DEFAULT_TRIAL_METRICS = ("precision", "recall", "f1")

#: Terminal table columns (dev, then test) of reports and task kinds that do not name theirs.
DEFAULT_TABLE_METRICS = ("f1",)

#: Short column titles of the metrics in tables.
METRIC_TITLES = {
    "precision": "P", "recall": "R", "f1": "F1", "accuracy": "acc", "exact_match": "EM",
    "strict_accuracy": "SAcc", "lenient_accuracy": "LAcc", "mrr": "MRR", "mcc": "MCC", "pearson": "Pearson",
    "spearman": "Spearman",
}  # fmt: skip


def _summary_rows(report: dict[str, Any], summary: dict[str, Any], *, mean_header: str, names=DEFAULT_REPORT_METRICS) -> list[str]:
    """Markdown rows: mean, std, min and max (percent) of dev and test ``names`` (the task's report metrics),
    and the split's single-class baseline (``downstream.trial.baselines``)."""
    rows = ["", f"| split | metric | {mean_header} | std | min | max | baseline |", "|---|---|---:|---:|---:|---:|---:|"]
    for split in ("dev", "test"):
        for name in names:
            s = summary[split][name]
            rows.append(f"| {split} | {name} | {_pct(s['mean'])} | {_pct(s['std'])} | {_pct(s['min'])} | {_pct(s['max'])} | "
                        f"{baseline_cell(report, split, name)} |")  # fmt: skip
    return rows


def _settings_lines(report: dict[str, Any]) -> list[str]:
    """The protocol (and every value it set), the optimizer and the dropout, when the report records them."""
    settings = report.get("settings") or {}
    lines = []
    protocol = settings.get("protocol")
    if protocol:
        from downstream.settings import PROTOCOLS, protocol_values

        chosen = protocol_values(protocol, settings.get("dataset"))
        values = ", ".join(f"{k} {v}" for k, v in chosen.items()) or "no values (the defaults)"
        lines.append(
            f"Protocol `{protocol}` ({PROTOCOLS[protocol]['source']}): {values}; options given on the "
            f"command line override it, and the run used: {_used(settings, chosen) or 'the defaults'}."
        )
    if "optimizer" in settings:
        lines.append(f"Optimizer `{settings['optimizer']}`, peak learning rate {settings['learning_rate']:g}, "
                     f"layer-wise decay {settings.get('layerwise_lr_decay', 1.0):g}.")  # fmt: skip
    dropout = report.get("dropout")
    if dropout:
        lines.append("Dropout: " + ", ".join(f"{k} {v}" for k, v in dropout.items()) + ".")
    return [*lines, ""] if lines else []


def _baseline_note(report: dict[str, Any]) -> list[str]:
    if not report.get("baseline"):
        return []
    return ["", "Baseline: the best score of one class predicted for every unit of the split (the majority class; "
            "all-positive for an F1 over positive classes; NER: no entity)."]  # fmt: skip


def _used(settings: dict[str, Any], protocol_values: dict[str, Any]) -> str:
    return ", ".join(f"{k} {settings.get(k)}" for k in protocol_values)


def checkpoint_dropout(settings: FinetuneSettings) -> dict[str, Any]:
    """The dropout the fine-tuned model ran with: ``settings.dropout``, else the checkpoint's config values."""
    keys = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")
    if settings.dropout is not None:
        return dict.fromkeys(keys, settings.dropout)
    config = Path(settings.checkpoint) / "config.json"
    if not config.is_file():
        return {}
    values = json.loads(config.read_text(encoding="utf-8"))
    return {k: values.get(k) for k in keys}


def task_title(report: dict[str, Any]) -> str:
    """The headline's name of the task: the kind's ``task_title`` extra (``Chunking`` for CoNLL-2000 chunk
    tags, which are read by the NER kind), else the kind's name in capitals (``NER``, ``GLUE``)."""
    return report.get("task_title") or report["task"].upper()


def format_markdown(report: dict[str, Any]) -> str:
    """``results.md``: per-trial dev/test entity-level P/R/F1 (percent) and the mean ± std over trials."""
    limited = limited_run_note(report.get("limits") or {})
    lines = [
        f"# {report['dataset']}: {task_title(report)} fine-tuning, {report['num_trials']} trial(s)",
        "",
        *([limited, ""] if limited else []),
        f"Checkpoint `{report['checkpoint']}`. Metrics in percent; {report.get('metric_mode') or ''}. "
        f"Std is the sample standard deviation (ddof={report['std_ddof']}).",
        "",
        *_settings_lines(report),
    ]
    columns = [(split, name) for split in ("dev", "test") for name in report.get("trial_metrics", DEFAULT_TRIAL_METRICS)]
    lines += [
        "| trial | seed | best epoch | " + " | ".join(f"{s} {METRIC_TITLES.get(n, n)}" for s, n in columns) + " | train s |",
        "|---:|---:|---:|" + "---:|" * len(columns) + "---:|",
    ]
    for r in report["trials"]:
        lines.append(
            f"| {r['trial_index']} | {r['seed']} | {r['best_epoch']} | "
            + " | ".join(_pct(r[s].get(n)) for s, n in columns)
            + f" | {r['train_seconds']:.0f} |"
        )
    lines += _summary_rows(
        report, report["summary"], mean_header="mean", names=report.get("report_metrics", DEFAULT_REPORT_METRICS)
    )
    lines += [*_baseline_note(report), *warning_lines(report["trials"])]
    counts = report["counts"]
    columns = report.get("count_columns") or DEFAULT_COUNT_COLUMNS
    lines += [
        "",
        "| split | file | " + " | ".join(title for _, title in columns) + " |",
        "|---|---|" + "---:|" * len(columns),
    ]
    for split in ("train", "dev", "test"):
        c = counts[split]
        lines.append(f"| {split} | `{c['file']}` | " + " | ".join(str(c.get(key, "-")) for key, _ in columns) + " |")
    from downstream.kinds import TASKS

    if report["task"] in TASKS:
        lines += TASKS[report["task"]].markdown_extras(report)
    return "\n".join(lines) + "\n"


def format_summary_table(report: dict[str, Any]) -> str:
    """A plain-text table for the terminal: the task's table metrics (NER / RE: F1) on dev and test per
    trial, then mean ± std."""
    names = report.get("table_metrics", DEFAULT_TABLE_METRICS)
    if list(names) == ["f1"]:
        what = report.get("f1_name") or "entity-level F1"
    else:
        what = ", ".join(METRIC_TITLES.get(n, n) if n != "f1" else (report.get("f1_name") or "F1") for n in names)
    columns = [(split, name) for split in ("dev", "test") for name in names]
    titles = [f"{split} {METRIC_TITLES.get(name, name)}" for split, name in columns]
    widths = [max(8, len(t)) for t in titles]
    rows = [f"{report['dataset']} ({report['task']}), checkpoint {report['checkpoint']}, {what} (%)"]
    rows.append(f"{'trial':>5} {'seed':>6} {'best ep':>8} " + " ".join(f"{t:>{w}}" for t, w in zip(titles, widths, strict=True)))
    for r in report["trials"]:
        cells = " ".join(f"{_pct(r[s].get(n)):>{w}}" for (s, n), w in zip(columns, widths, strict=True))
        rows.append(f"{r['trial_index']:>5} {r['seed']:>6} {str(r['best_epoch']):>8} {cells}")
    summary = report["summary"]
    for stat in ("mean", "std"):
        cells = " ".join(f"{_pct(summary[s][n][stat]):>{w}}" for (s, n), w in zip(columns, widths, strict=True))
        rows.append(f"{stat:>5} {'':>6} {'':>8} {cells}" + (f"   (ddof={report['std_ddof']})" if stat == "std" else ""))
    if report.get("baseline"):
        cells = " ".join(f"{baseline_cell(report, s, n):>{w}}" for (s, n), w in zip(columns, widths, strict=True))
        rows.append(f"{'base':>5} {'':>6} {'':>8} {cells}   (one class for all: {baseline_classes(report, columns)})")
    flagged = sum(bool(t.get("warnings")) for t in report["trials"])
    if flagged:
        rows.append(f"warning: {flagged} of {len(report['trials'])} trial(s) degenerate (one class, or less than a point above the baseline): see results.md")
    return "\n".join(rows)


def format_folds_markdown(report: dict[str, Any]) -> str:
    """``results.md`` of a cross-validation run: one row per fold (mean over its trials), then mean ± std."""
    lines = [
        f"# {report['dataset']}: {task_title(report)} fine-tuning, {len(report['folds'])} folds x "
        f"{report['num_trials_per_fold']} trial(s)",
        "",
        f"Checkpoint `{report['checkpoint']}`. Metrics in percent; {report.get('metric_mode') or ''}. "
        f"{report['protocol']}; std is the sample standard deviation (ddof={report['std_ddof']}).",
        "",
        "| fold | train | dev | test | dev F1 | test P | test R | test F1 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fold, r in zip(report["folds"], report["fold_reports"], strict=True):
        c, s = r["counts"], r["summary"]
        lines.append(
            f"| {fold} | {c['train'].get('training_examples', c['train'].get('examples', '-'))} | "
            f"{c['dev'].get('examples', '-')} | {c['test'].get('examples', '-')} | {_pct(s['dev']['f1']['mean'])} | "
            f"{_pct(s['test']['precision']['mean'])} | {_pct(s['test']['recall']['mean'])} | {_pct(s['test']['f1']['mean'])} |"
        )
    lines += _summary_rows(report, report["summary_over_folds"], mean_header="mean over folds")
    lines += _baseline_note(report)
    for fold, r in zip(report["folds"], report["fold_reports"], strict=True):
        lines += warning_lines(r["trials"], label=f"fold {fold}, trial")
    return "\n".join(lines) + "\n"


def format_folds_table(report: dict[str, Any]) -> str:
    """A plain-text table for the terminal: test F1 per fold, then mean ± std over folds."""
    rows = [f"{report['dataset']} ({report['task']}), checkpoint {report['checkpoint']}, {report.get('f1_name')} (%), "
            f"{len(report['folds'])} folds"]
    rows.append(f"{'fold':>5} {'dev F1':>8} {'test F1':>8}")
    for fold, r in zip(report["folds"], report["fold_reports"], strict=True):
        rows.append(f"{fold:>5} {_pct(r['summary']['dev']['f1']['mean']):>8} {_pct(r['summary']['test']['f1']['mean']):>8}")
    dev, test = report["summary_over_folds"]["dev"]["f1"], report["summary_over_folds"]["test"]["f1"]
    rows.append(f"{'mean':>5} {_pct(dev['mean']):>8} {_pct(test['mean']):>8}")
    rows.append(f"{'std':>5} {_pct(dev['std']):>8} {_pct(test['std']):>8}   (ddof={report['std_ddof']})")
    if report.get("baseline"):
        rows.append(f"{'base':>5} {baseline_cell(report, 'dev', 'f1'):>8} {baseline_cell(report, 'test', 'f1'):>8}   (one class for all, mean over folds)")
    trials = [t for r in report["fold_reports"] for t in r["trials"]]
    flagged = sum(bool(t.get("warnings")) for t in trials)
    if flagged:
        rows.append(f"warning: {flagged} of {len(trials)} trial(s) degenerate (one class, or less than a point above the baseline): see results.md")
    return "\n".join(rows)


def summarize(values: Sequence[float], *, ddof: int = 1) -> dict[str, float | int | None]:
    """Mean, standard deviation, min and max of per-trial values.

    Args:
        values: one value per trial; ``None`` (not scored: GLUE's hidden test labels) is left out.
        ddof: delta degrees of freedom of the standard deviation (1: sample std, the usual report for
            repeated fine-tuning runs). With a single value the std is None.

    Returns:
        ``{"mean", "std", "ddof", "min", "max", "n"}``.
    """
    import statistics

    values = [float(v) for v in values if v is not None]
    if not values:
        return {"mean": None, "std": None, "ddof": ddof, "min": None, "max": None, "n": 0}
    mean = statistics.fmean(values)
    std: float | None
    if len(values) > ddof:
        std = (sum((v - mean) ** 2 for v in values) / (len(values) - ddof)) ** 0.5
    else:
        std = None
    return {"mean": mean, "std": std, "ddof": ddof, "min": min(values), "max": max(values), "n": len(values)}
