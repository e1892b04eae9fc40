"""``bioelectra benchmark``: a checkpoint through a suite of registered benchmarks, each with the trial runner,
and one table beside the published figures (:mod:`downstream.literature`).

For each dataset of the suite that is present (shipped, in the cache, or under ``--data-root`` laid out like
``../shared/data``: ``ner/<name>/``, ``re/<name>/``, ``qa/covid-qa/``, ``corpus/pubmedqa-pqal/``), the
usual seeded trials run into ``<output-dir>/<dataset>/`` (GAD: its ten folds, as BioBERT and BLURB report
it), with the protocol's settings for that dataset. A re-run skips the datasets whose ``results.json``
already holds the wanted trials with the same settings (written into the report before any other runs, so
that a benchmark stopped again still reports every dataset finished, by this command or an earlier one with
another ``--suite``), and ``run_trials`` reuses finished trials of the others. The missing datasets are listed with the reason, not fatal.

``--suite blurb`` is BLURB's 13 datasets (:mod:`downstream.blurb`); a name this version does not register, or
whose data is absent (EBM PICO without its training file), is listed as missing, not an error.

The report: ``benchmark.json``, ``benchmark.md`` (one row per dataset: our dev and test mean ± std, then the
published figures, each with a footnote naming its source) and ``plots/benchmark.png``, with the BLURB
score over the BLURB datasets present (:func:`downstream.blurb.blurb_report`: per task type, then the mean of
the types), marked "over N of 13 datasets" when any is missing, beside the published models' figures over
the same datasets.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.blurb import BLURB_DATASETS, blurb_markdown, blurb_report, score_label
from downstream.dataset_specs import DATASETS
from downstream.errors import DatasetUnavailableError, DownstreamError
from downstream.kinds import TASKS, task_class
from downstream.literature import Literature, load_literature
from downstream.registry import get_spec
from downstream.report_text import limited_run_note
from downstream.settings import FinetuneSettings, protocol_settings, run_limits

logger = logging.getLogger(__name__)

#: Suites by name: the registered datasets of each kind's suite (``Task.suite``; "qa": extractive and yes/no).
SUITES: dict[str, list[str]] = {kind_class.suite: [] for kind_class in TASKS.values()}
for _name, _spec in DATASETS.items():
    if _spec.in_suites:
        SUITES[task_class(_spec.task).suite].append(_name)
SUITES = {suite: names for suite, names in SUITES.items() if names}  # GLUE: no registered dataset, no suite yet
SUITES["all"] = [name for suite in list(SUITES) for name in SUITES[suite]]
SUITES["blurb"] = list(BLURB_DATASETS)  # names this version may not register: missing, not an error

#: Where each dataset lies under a ``--data-root`` laid out like ``../shared/data`` (its SOURCES.md).
DATA_ROOT_LAYOUT = {
    **{n: f"ner/{n}" for n in SUITES["ner"]},
    **{n: f"re/{n}" for n in SUITES["re"]},
    "covid-qa": "qa/covid-qa",
    "pubmedqa": "corpus/pubmedqa-pqal",
    "bioasq-factoid": "qa/bioasq",
    "bioasq-yesno": "qa/bioasq",
    "chunk": "chunk/conll2000",
    # BLURB's own files (../shared/data/SOURCES.md, section 12)
    "jnlpba-blurb": "ner/jnlpba-blurb",
    "gad-blurb": "re/gad-blurb",
    "bioasq-blurb": "qa/bioasq-blurb",
    "ebm-pico": "pico/ebm-pico",
    "biosses": "sts/biosses",
    "hoc": "doc-classification/hoc",
}

def suite_datasets(suite: str) -> list[str]:
    """The datasets of ``suite``: ``ner``, ``re``, ``qa``, ``pico``, ``all``, ``blurb`` (its 13, registered or not),
    or registered names separated by commas.

    Raises:
        DownstreamError: an unknown suite or dataset name (the known ones listed).
    """
    if suite in SUITES:
        return list(SUITES[suite])
    names = [n.strip().lower() for n in suite.split(",") if n.strip()]
    unknown = [n for n in names if n not in DATASETS]
    if unknown or not names:
        raise DownstreamError(f"--suite {suite!r}: expected {', '.join(SUITES)} or dataset names among {', '.join(DATASETS)}")
    return names


def locate(name: str, data_root: Path | None) -> tuple[dict[str, Any] | None, str]:
    """Where dataset ``name`` is: ``({"dataset": name}, how)`` when shipped or cached, ``({"data_dir":
    folder}, how)`` under ``data_root``, else ``(None, why not)``: also a folder with dev and test files but no
    training file (EBM PICO as BLURB distributes it). Nothing is downloaded."""
    from downstream.registry import cache_root, locate_dataset_dir

    if name not in DATASETS:
        return None, "not registered in this version (its task kind is not part of it)"
    try:
        locate_dataset_dir(name, download=False)
        where = "shipped" if get_spec(name).shipped else f"cached in {cache_root() / 'datasets' / name}"
        return _trainable({"dataset": name}, name, where)
    except DatasetUnavailableError:
        pass
    if data_root is not None and name not in DATA_ROOT_LAYOUT:
        return None, "not shipped, not cached, and no folder of --data-root is known for it (pass it with finetune --data-dir)"
    if data_root is not None:
        folder = Path(data_root) / DATA_ROOT_LAYOUT[name]
        if folder.is_dir() and any(folder.iterdir()):
            return _trainable({"data_dir": folder}, name, f"--data-root: {folder}")
        return None, f"not shipped, not cached, not in {folder}"
    if get_spec(name).get_from:
        return None, f"not cached, never downloaded (give --data-root; get it from {get_spec(name).get_from})"
    return None, "not shipped, not cached (give --data-root, or run finetune once online to cache it)"


def _trainable(where: dict[str, Any], name: str, how: str) -> tuple[dict[str, Any] | None, str]:
    """``(where, how)``, or ``(None, why)`` when the kind finds dev and test files there but no training file."""
    spec = get_spec(name)
    settings = FinetuneSettings(task=spec.task, checkpoint="-", output_dir=Path("-"), **where)
    try:
        files = task_class(spec.task).locate_files(settings)
    except DownstreamError:
        return where, how  # the run says what is wrong
    if "train" not in files and {"dev", "test"} <= set(files):
        return None, f"{how}: dev and test only, no training file" + (f" (get it from {spec.get_from})" if spec.get_from else "")
    return where, how


def dataset_settings(name: str, base: FinetuneSettings, given: dict[str, Any], protocol: str | None, where: dict[str, Any],
                     output_dir: Path) -> FinetuneSettings:  # fmt: skip
    """The settings of one dataset's run: its task kind's defaults, the protocol's values for it, the options
    the user gave, and the data location (a NER folder under ``--data-root`` is named like its dataset, which
    gives its bare tags their entity type: ``downstream.ner.types``)."""
    spec = get_spec(name)
    chosen = {**task_class(spec.task).default_settings, **protocol_settings(protocol, given, name)}
    fields = {f.name for f in dataclasses.fields(FinetuneSettings)}
    values = {k: v for k, v in chosen.items() if k in fields}
    return dataclasses.replace(base, task=spec.task, dataset=where.get("dataset"), data_dir=where.get("data_dir"),
                               output_dir=output_dir / name, **values)  # fmt: skip


def _finished(settings: FinetuneSettings) -> dict[str, Any] | None:
    """The dataset's ``results.json`` when it already holds ``num_trials`` trials of these settings."""
    path = Path(settings.output_dir) / "results.json"
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    reports = report.get("fold_reports") or [report]
    fingerprint_ok = all(
        len(r.get("trials", [])) >= settings.num_trials
        and all(t.get("fingerprint") == dataclasses.replace(settings, fold=r["settings"].get("fold")).fingerprint() for t in r["trials"])
        for r in reports
    )  # fmt: skip
    return report if fingerprint_ok else None


def run_dataset(name: str, settings: FinetuneSettings, *, hp_search: int | None = None, fixed: set[str] = frozenset()) -> dict[str, Any]:
    """One dataset's run, the report of ``finetune``: GAD's ten folds (no search: one search per fold would
    cost ten), else the trials, after a search when ``hp_search``."""
    from downstream.trial.runner import parse_folds, run_folds, run_trials

    if get_spec(name).layout == "folds":
        if hp_search:
            logger.warning("%s: cross-validated, so no hyper-parameter search; the protocol's settings are used", name)
        return run_folds(settings, parse_folds("all", settings))
    if hp_search:
        from downstream.tuning.hpsearch import run_search_then_trials

        return run_search_then_trials(settings, hp_search, fixed=fixed)
    return run_trials(settings)


def run_seconds(report: dict[str, Any]) -> float | None:
    """Seconds a dataset's run took: the sum over its trials (every fold's) of ``train_seconds`` (training with
    its development evaluations) and ``test_seconds``; ``None`` when a trial recorded neither (an older file).
    Wall-clock time on the machine that ran it: the hyper-parameter search and data reading are not in it."""
    trials = [t for r in (report.get("fold_reports") or [report]) for t in r.get("trials", [])]
    parts = [(t.get("train_seconds"), t.get("test_seconds")) for t in trials]
    if not parts or any(train is None and test is None for train, test in parts):
        return None
    return round(sum((train or 0.0) + (test or 0.0) for train, test in parts), 1)


def summary_of(report: dict[str, Any]) -> dict[str, Any]:
    """``{"dev": {metric: {"mean", "std", "n"}}, "test": ...}`` of a run (cross-validation: over folds)."""
    summary = report.get("summary_over_folds") or report["summary"]
    return {split: {m: {k: v.get(k) for k in ("mean", "std", "n")} for m, v in summary[split].items()} for split in ("dev", "test")}


def check_benchmark_options(suite: str, protocol: str | None, data_root: Path | None) -> list[str]:
    """The suite's dataset names, once the options are known good: before any checkpoint is built or data read.

    Raises:
        DownstreamError: an unknown suite, dataset or protocol; a ``data_root`` that is not a folder.
    """
    from downstream.settings import PROTOCOLS

    if protocol is not None and protocol not in PROTOCOLS:
        raise DownstreamError(f"--protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
    if data_root is not None and not Path(data_root).is_dir():
        what = "is a file, not a folder" if Path(data_root).exists() else "does not exist"
        raise DownstreamError(f"--data-root {data_root}: {what} (expected a folder laid out like ../shared/data)")
    return suite_datasets(suite)


def run_benchmark(
    base: FinetuneSettings,
    *,
    suite: str,
    data_root: Path | None,
    protocol: str | None,
    given: dict[str, Any],
    output_dir: Path,
    hp_search: int | None = None,
) -> dict[str, Any]:
    """Run the suite's present datasets and write the report (see the module docstring).

    Args:
        base: the settings every dataset shares (checkpoint, trials, seed, precision, report_to ...).
        suite: see :func:`suite_datasets`.
        data_root: a folder laid out like ``../shared/data`` (optional).
        protocol: a ``--protocol`` name or None (this project's defaults).
        given: the options the user set (they override the protocol).
        output_dir: the benchmark's folder.
        hp_search: search this many settings per dataset first (``finetune --hp-search``).

    Returns:
        The content of ``benchmark.json`` (``failed``: the datasets whose run raised, with the message;
        the others still ran).

    Raises:
        DownstreamError: an unknown suite or protocol, a missing ``data_root``, or no dataset of the suite
            present.
    """
    names = check_benchmark_options(suite, protocol, data_root)
    literature = load_literature()
    present, missing = [], {}
    for name in names:
        where, how = locate(name, data_root)
        if where is None:
            missing[name] = how
        else:
            present.append((name, where, how))
    if missing:
        logger.warning("not present, left out: %s", "; ".join(f"{n} ({why})" for n, why in missing.items()))
    if not present:
        raise DownstreamError(f"--suite {suite}: none of {', '.join(names)} is present ({'; '.join(f'{n}: {w}' for n, w in missing.items())})")
    output_dir.mkdir(parents=True, exist_ok=True)
    failed: dict[str, str] = {}
    order = {name: i for i, (name, _, _) in enumerate(present)}
    runs = [(name, how, dataset_settings(name, base, given, protocol, where, output_dir)) for name, where, how in present]
    # the datasets already done first, so that an interrupted benchmark's table has every finished one
    rows = [benchmark_row(name, how, settings, report) for name, how, settings in runs if (report := _finished(settings)) is not None]
    for row in rows:
        logger.info("%s: already done (%s), reused", row["dataset"], Path(row["output_dir"]) / "results.json")
    result = build_report(base, rows, missing, literature, protocol=protocol, suite=suite)
    if rows:
        write_report(result, output_dir)
    done = {row["dataset"] for row in rows}
    for index, (name, how, settings) in enumerate(runs, start=1):
        if name in done:
            continue
        logger.info("[%d/%d] %s (%s) -> %s", index, len(present), name, how, settings.output_dir)
        try:
            report = run_dataset(name, settings, hp_search=hp_search, fixed=set(given))
        except (DownstreamError, ValueError, OSError) as exc:  # the other datasets still run
            logger.error("%s failed: %s", name, exc)
            failed[name] = str(exc)
            continue
        rows = sorted([*rows, benchmark_row(name, how, settings, report)], key=lambda r: order[r["dataset"]])
        result = build_report(base, rows, missing, literature, protocol=protocol, suite=suite)
        write_report(result, output_dir)  # after each dataset: an interrupted benchmark still has its table
    result = {**build_report(base, rows, missing, literature, protocol=protocol, suite=suite), "failed": failed}
    write_report(result, output_dir)
    return result


def benchmark_row(name: str, how: str, settings: FinetuneSettings, report: dict[str, Any]) -> dict[str, Any]:
    """One dataset's row of ``benchmark.json``: where its data came from, its settings, the summary of its run
    (``report``, its ``results.json``) and the seconds it took (:func:`run_seconds`)."""
    return {
        "dataset": name, "task": settings.task, "title": get_spec(name).title, "source": how,
        "output_dir": str(settings.output_dir), "num_trials": settings.num_trials,
        "folds": report.get("folds"), "settings": {k: getattr(settings, k) for k in
            ("learning_rate", "num_train_epochs", "per_device_train_batch_size", "max_seq_length", "warmup_ratio", "optimizer")},
        "summary": summary_of(report), "seconds": run_seconds(report),
    }  # fmt: skip


def build_report(base: FinetuneSettings, rows: list[dict[str, Any]], missing: dict[str, str], literature: Literature,
                 *, protocol: str | None, suite: str) -> dict[str, Any]:  # fmt: skip
    """``benchmark.json``'s content: rows with the published figures beside ours, the sources, the BLURB score
    (:func:`blurb_section`)."""
    from downstream.settings import PROTOCOLS

    limits = run_limits(base)
    side = published_side(rows, literature, limited=bool(limits))
    return {
        "checkpoint": base.checkpoint_name or base.checkpoint,
        "suite": suite,
        "protocol": protocol or "default",
        "protocol_source": PROTOCOLS[protocol or "default"]["source"],
        "num_trials": base.num_trials,
        "limits": limits,
        "rows": side["rows"],
        "missing": missing,
        "models": side["models"],
        "sources": side["sources"],
        "blurb": side["blurb"],
    }


def published_side(rows: list[dict[str, Any]], literature: Literature, *, limited: bool = False) -> dict[str, Any]:
    """The published part of a benchmark report over ``rows`` (each with its ``dataset``, ``task`` and test
    ``summary``): ``{"rows", "models", "sources", "blurb"}``, where each row gets its ``literature`` (metric ->
    model key -> figure, in every benchmark metric of its task; set in place), ``models`` and ``sources`` are
    those the figures and published BLURB scores use, and ``blurb`` is :func:`blurb_section`."""
    for row in rows:
        row["literature"] = {}
        for metric, _ in task_class(row["task"]).benchmark_metrics:
            row["literature"][metric] = {k: dataclasses.asdict(f) for k, f in literature.lookup(row["dataset"], metric).items()}
    used_models = [m for m in literature.models if any(m["key"] in r["literature"][metric] for r in rows for metric in r["literature"])]
    blurb = blurb_section(rows, literature, limited=limited)
    used_sources = sorted({f["source"] for r in rows for figures in r["literature"].values() for f in figures.values()}
                          | ({v["source"] for v in blurb["published_scores"].values()} if blurb["ours"]["score"] is not None else set()))
    return {"rows": rows, "models": used_models, "sources": {k: literature.sources[k] for k in used_sources}, "blurb": blurb}


def with_current_literature(report: dict[str, Any], literature: Literature | None = None) -> dict[str, Any]:
    """A copy of a ``benchmark.json`` report (or of its record under ``docs/results/data/benchmark``) whose
    published figures, models, sources and BLURB section are taken from ``literature`` (default: the packaged
    ``literature.json`` as it is now) instead of the file as it was when the run was made; our figures are
    unchanged. A figure added or corrected in the file thus reaches the pages of runs recorded before."""
    rows = json.loads(json.dumps(report["rows"]))  # a deep copy: the report's own rows keep their figures
    return {**report, **published_side(rows, literature or load_literature(), limited=bool(report.get("limits")))}


def blurb_section(rows: list[dict[str, Any]], literature: Literature, *, limited: bool = False) -> dict[str, Any]:
    """:func:`downstream.blurb.blurb_report` of the rows run: each dataset's test mean in its kind's first
    benchmark metric (percent), the published figures in the same metric, the published BLURB scores; for a
    ``limited`` run (steps or examples cut), ours alone: a limited run's scores are not averaged beside the
    published ones."""
    ours, published = {}, {}
    for row in rows:
        metric = task_class(row["task"]).benchmark_metrics[0][0]
        mean = row["summary"]["test"].get(metric, {}).get("mean")
        ours[row["dataset"]] = None if mean is None else 100 * mean
        for key, figure in row["literature"].get(metric, {}).items():
            published.setdefault(key, {})[row["dataset"]] = figure["value"]
    scores = {s.model: {"value": s.value, "source": s.source} for s in literature.suite_scores if s.suite == "blurb"}
    section = blurb_report(ours, {} if limited else published, {} if limited else scores)
    section["limited"] = limited
    section["model_names"] = {m["key"]: m["name"] for m in literature.models}
    section["files"] = {row["dataset"]: row["title"] for row in rows}  # which files: ChemProt and DDI are not BLURB's own
    return section


def format_mean_std(stats: dict[str, Any]) -> str:
    """A summary statistic (fractions, as :func:`downstream.trial.reports.summarize` gives it) in percent
    as ``"47.60 ± 0.58"``; the mean alone when there is no std (one trial), ``"-"`` when there is no mean."""
    if stats.get("mean") is None:
        return "-"
    std = stats.get("std")
    return f"{100 * stats['mean']:.2f} ± {100 * std:.2f}" if std is not None else f"{100 * stats['mean']:.2f}"


def format_minutes(seconds: float | None) -> str:
    """``run_seconds``'s figure in minutes (``"12.3"``), ``"-"`` when unknown."""
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def format_benchmark_markdown(report: dict[str, Any]) -> str:
    """``benchmark.md``: the table (ours, then the published figures with footnote marks), the BLURB score
    (:func:`downstream.blurb.blurb_markdown`), the missing datasets and the sources."""
    models = report["models"]
    marks = {key: i for i, key in enumerate(report["sources"], start=1)}
    limits = report.get("limits") or {}
    protocol = (f"Protocol `{report['protocol']}` cut to {limits['max_steps']} optimizer steps per trial"
                if "max_steps" in limits else f"Protocol: {report['protocol_source']}")  # fmt: skip
    lines = [
        f"# Benchmark of `{report['checkpoint']}`: suite {report['suite']}, protocol `{report['protocol']}`"
        + (", a limited run" if limits else ""),
        "",
        *([limited_run_note(limits), ""] if limits else []),
        f"{protocol}. {report['num_trials']} seeded trial(s) per dataset (GAD: per fold); "
        "ours: mean ± sample std (ddof=1) over the trials, percent; minutes: all the dataset's trials, training "
        "(with its development evaluations) and test, on the machine that ran them; published: test figures as printed, the "
        "source in the footnote. Splits, pre-processing and protocols differ between sources (see the notes).",
        "",
        "| dataset | metric | ours dev | ours test | minutes | " + " | ".join(m["name"] for m in models) + " |",
        "|---|---|---:|---:|---:|" + "---:|" * len(models),
    ]
    for row in report["rows"]:
        for metric, title in task_class(row["task"]).benchmark_metrics:
            figures = row["literature"].get(metric, {})
            cells = []
            for m in models:
                f = figures.get(m["key"])
                cells.append(f"{f['value']:.2f}<sup>{marks[f['source']]}</sup>" if f else "")
            lines.append(f"| {row['dataset']} | {title} | {format_mean_std(row['summary']['dev'].get(metric, {}))} | "
                         f"{format_mean_std(row['summary']['test'].get(metric, {}))} | {format_minutes(row.get('seconds'))} | "
                         + " | ".join(cells) + " |")  # fmt: skip
    blurb = report.get("blurb") or {}
    if blurb:
        why = {**dict.fromkeys(report["missing"], "not present, see below"), **dict.fromkeys(report.get("failed") or {}, "failed, see below")}
        lines += blurb_markdown(blurb, blurb.get("model_names", {}), why, marks)
    if report["missing"]:
        lines += ["", "Not present, left out: " + "; ".join(f"{n} ({why})" for n, why in report["missing"].items()) + "."]
    if report.get("failed"):
        lines += ["", "Failed (see the log): " + "; ".join(f"{n} ({why})" for n, why in report["failed"].items()) + "."]
    notes = sorted({f"{row['dataset']} / {f['model_name']}: {f['note']}" for row in report["rows"]
                    for figures in row["literature"].values() for f in figures.values() if f.get("note")})  # fmt: skip
    if notes:
        lines += ["", "Notes: " + "; ".join(notes) + "."]
    lines += ["", "Sources:", ""]
    for key, i in marks.items():
        s = report["sources"][key]
        lines.append(f"{i}. {s['citation']}. {s['where']}. Evidence: {s['evidence']}. Protocol: {s['protocol']}. <{s['url']}>")
    return "\n".join(lines) + "\n"


def write_report(report: dict[str, Any], output_dir: Path) -> None:
    """``benchmark.json``, ``benchmark.md`` and ``plots/benchmark.png`` (the plot only with matplotlib)."""
    atomic_write_text(output_dir / "benchmark.json", json.dumps(report, indent=2, default=str) + "\n")
    atomic_write_text(output_dir / "benchmark.md", format_benchmark_markdown(report))
    try:
        plot_benchmark(report, output_dir)
    except Exception as exc:  # a figure never costs the results
        logger.warning("benchmark plot not drawn: %s", exc)


def plot_benchmark(report: dict[str, Any], output_dir: Path) -> Path | None:
    """``plots/benchmark.png``: per dataset, our test mean (± std) beside each published figure."""
    from bioelectra.plotting import pyplot, save_figure

    plt = pyplot()
    if plt is None:
        return None
    rows = [(r, task_class(r["task"]).benchmark_metrics[-1][0]) for r in report["rows"]]
    models = [m for m in report["models"] if any(m["key"] in r["literature"].get(metric, {}) for r, metric in rows)]
    width = 0.8 / (1 + len(models))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows) + 2), 5))
    xs = range(len(rows))
    ours = [r["summary"]["test"][metric] for r, metric in rows]
    ax.bar([x - 0.4 + width / 2 for x in xs], [100 * (s["mean"] or 0) for s in ours], width,
           yerr=[100 * (s["std"] or 0) for s in ours], label=f"ours ({report['checkpoint']})", capsize=2)  # fmt: skip
    for i, m in enumerate(models, start=1):
        values = [(r["literature"].get(metric, {}).get(m["key"]) or {}).get("value") for r, metric in rows]
        ax.bar([x - 0.4 + width / 2 + i * width for x in xs], [v if v is not None else 0 for v in values], width, label=m["name"])
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['dataset']}\n({metric})" for r, metric in rows], fontsize=8)
    ax.set_ylabel("test score (%)")
    ax.set_ylim(0, 100)
    limited = "LIMITED RUN, not comparable: " if report.get("limits") else ""
    blurb = (report.get("blurb") or {}).get("ours") or {}
    score = f"; {score_label(blurb)} {blurb['score']:.2f}" if blurb.get("score") is not None else ""
    ax.set_title(f"{limited}{report['checkpoint']} against published figures (protocol {report['protocol']}{score})", fontsize=10)
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.16))  # below: never over a bar
    fig.tight_layout()
    ax.grid(axis="y", alpha=0.3)
    path = output_dir / "plots" / "benchmark.png"
    save_figure(fig, path)
    return path
