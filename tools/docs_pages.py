"""Every generated page and table of the documentation, from the code and the result files: nothing typed twice.

    python tools/docs_pages.py --write    # regenerate every page and block below
    python tools/docs_pages.py --check    # exit 1 and name what is stale (tests/test_docs_pages.py does the same)

Two kinds of targets (:data:`PAGES`, :data:`BLOCKS`):

- whole pages (the CLI and dataset references, the model cards), written from scratch;
- blocks inside hand-written pages, between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``: the
  results tables (``docs/results/data/*.json``, ``docs/demo/results.md``) and the performance tables
  (``bench/results/*.json``). A block's prose around it stays hand-written; its figures never are.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import docs_reference  # noqa: E402

RESULTS = REPO / "docs" / "results" / "data"
BENCH = REPO / "bench" / "results"


class StaleError(ValueError):
    """A page or block that is not what its generator writes, or markers that are missing."""


def _load(path: Path):
    """A module of this repository that is not a package member (``bench/``, ``tools/``), by file path."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _date_of(path: Path) -> str:
    """The date a result file's name carries (``...-YYYY-MM-DD-....json``): the day it was measured."""
    match = re.search(r"\d{4}-\d{2}-\d{2}", path.name)
    if not match:
        raise ValueError(f"{path}: no date in the file name (expected NAME-DEVICE-YYYY-MM-DD.json)")
    return match.group(0)


def _latest_first_key(path: Path) -> tuple[str, str, str]:
    """Orders result files by the day they were measured, then the time their report says it finished (UTC; a
    report without one first), then name: the last of a day's reports of one kind is the latest."""
    report = json.loads(path.read_text(encoding="utf-8"))
    return _date_of(path), report.get("finished_at", ""), path.name


def _pm(figure: dict) -> str:
    return f"{figure['mean']:.2f} ± {figure['std']:.2f}"


def finetune_runs() -> list[dict]:
    """The fine-tuning result records of ``docs/results/data/finetune.json``."""
    return json.loads((RESULTS / "finetune.json").read_text(encoding="utf-8"))["runs"]


def render_model_comparison(model: str, table: str = "ner", metric: str = " F1") -> str:
    """One row per comparison of result table ``table``: ``model`` against its untrained twin (same command,
    only ``--ckpt`` differs), dev and test mean ± std over the trials, the gain, and the date, device and
    commit of each record."""
    runs = [r for r in finetune_runs() if r["table"] == table]
    by_key = {(r["comparison"], r["checkpoint"]): r for r in runs}
    lines = [
        f"| comparison | {model} dev{metric} | {model} test{metric} | untrained twin dev{metric} | "
        f"untrained twin test{metric} | gain dev / test | date, commit |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for run in runs:
        if run["checkpoint"] != model:
            continue
        twin = by_key[(run["comparison"], f"{model}-untrained")]
        gain_dev = run["dev"]["mean"] - twin["dev"]["mean"]
        gain_test = run["test"]["mean"] - twin["test"]["mean"]
        when = f"{run['date']}, `{run['commit']}`"
        lines.append(
            f"| {run['comparison']} | **{_pm(run['dev'])}** | **{_pm(run['test'])}** | {_pm(twin['dev'])} | "
            f"{_pm(twin['test'])} | {gain_dev:+.2f} / {gain_test:+.2f} | {when} |"
        )
    return "\n".join(lines)


def render_headline() -> str:
    """The front page's results table: bioelectra-small and its untrained twin, and Bio-ELECTRA-Small's
    published figure on the benchmark of the same name."""
    return render_model_comparison("bioelectra-small")


def render_demo_table() -> str:
    """``make demo``'s per-trial table, from ``docs/demo/results.md`` (the run's own ``results.md``)."""
    demo = _load(REPO / "tools" / "readme_demo_table.py")
    return demo.render(demo.parse_results_md((REPO / "docs" / "demo" / "results.md").read_text(encoding="utf-8")))


def render_predict_throughput() -> str:
    """``bench/predict_throughput.py``'s report: each run's documents/s, entities/s, seconds, peak RSS, cores busy."""
    path = BENCH / "predict-2core-cpu-2026-11-28.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    names = {"predict_workers_1": "`predict`, 1 worker", "predict_workers_2": "`predict`, 2 workers"}
    lines = [
        f"`{path.relative_to(REPO)}`: {report['cores']} cores, {report['torch_threads']} torch threads, batch "
        f"{report['batch_size']}, model `{report['model']}`.",
        "",
        "| run | documents | documents/s | entities/s | seconds | peak RSS | cores busy |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for size in report["sizes"].values():
        for key, run in size.items():
            if not isinstance(run, dict) or "documents_per_second" not in run:
                continue
            name = names.get(key) or f"pipeline, `batch_size={key.rsplit('_', 1)[-1]}`"
            lines.append(
                f"| {name} | {run['documents']:,} | {run['documents_per_second']:.2f} | {run['entities_per_second']:.1f} | "
                f"{run['seconds']:.1f} | {run['peak_rss_mb']:,.0f} MB | {run['cores_busy']:.2f} |"
            )
    speedups = ", ".join(
        f"{s['documents']:,} documents: {s['speedup_1_worker_vs_pipeline']:.2f}x" for s in report["sizes"].values()
    )
    lines += ["", f"One `predict` worker against the pipeline: {speedups}."]
    return "\n".join(lines)


def render_predict_linking() -> str:
    """``bench/predict_linking.py``'s latest report for each kind of linker (sparse, then dense) and corpus (by
    number of documents): predict without and with ``--linker``, the overhead, and where the linker's time goes.
    A report named ``...-before-<change>`` is the record of what a change improved on, not shown."""
    latest: dict[tuple[str, int], tuple[Path, dict]] = {}
    reports = [p for p in BENCH.glob("predict-linking-*.json") if "-before-" not in p.name]
    for path in sorted(reports, key=_latest_first_key):
        r = json.loads(path.read_text(encoding="utf-8"))
        latest[r["linker"]["linker"], r["documents"]] = (path, r)
    if not latest:
        return "No `bench/predict_linking.py` result is recorded yet."
    order = {"sparse": 0, "dense": 1}
    keys = sorted(latest, key=lambda key: (order.get(key[0], 2), key[0], key[1]))
    return "\n\n".join(_predict_linking_block(*latest[key]) for key in keys)


def _paired_overhead(r: dict) -> str:
    """The median and range of the overhead within each pair of runs made one after the other (the bench
    alternates them), as a clause; nothing for a single pair. Pairs share the machine's state of the moment, so
    drift over the report cancels within each."""
    pairs = list(zip(r["runs"]["without_linker"], r["runs"]["with_linker"], strict=False))
    if len(pairs) < 2:
        return ""
    each = sorted(100 * (w["seconds"] - o["seconds"]) / o["seconds"] for o, w in pairs)
    return (f"; run by run (each run with the linker against the run without it made just before), a median of "
            f"{statistics.median(each):.1f}%, from {each[0]:.1f}% to {each[-1]:.1f}%")


def _collector(r: dict) -> str:
    """The garbage collector's seconds in the runs each way (medians), as a sentence; nothing for a report made
    before the bench timed it."""
    runs = r["runs"]
    if not all("gc_seconds" in run for way in ("without_linker", "with_linker") for run in runs[way]):
        return ""
    without, with_linker = (statistics.median(run["gc_seconds"] for run in runs[way]) for way in ("without_linker", "with_linker"))
    return f" Python's garbage collector took {without:.2f} s of a run without the linker and {with_linker:.2f} s of one with it (medians)."


def _predict_linking_block(path: Path, r: dict) -> str:
    """One ``bench/predict_linking.py`` report as a paragraph, a table and where the linker's time went."""
    versions = ", ".join(f"{k} {v}" for k, v in r["versions"].items() if k in ("torch", "transformers", "scikit-learn", "scipy"))
    linker = r["linker"]
    lines = [
        f"`{path.relative_to(REPO)}` ({r['date']}, {r['device']}, {versions}): {r['corpus']}, {r['workers']} worker, "
        f"batch {r['batch_size']}, medians of {r['repeats']} runs each way; a {linker['linker']} {linker['entity_type']} "
        f"linker of {linker['num_names']:,} names ({linker['ngram_range'][0]}-{linker['ngram_range'][1]}-grams); "
        f"{r['entities']:,} entities, {r['entities_linked']:,} linked.",
        "",
        "| | seconds | seconds per document |",
        "|---|---:|---:|",
        f"| `predict` | {r['seconds_without_linker']:.2f} | {r['seconds_per_document_without_linker']:.4f} |",
        f"| `predict --linker` | {r['seconds_with_linker']:.2f} | {r['seconds_per_document_with_linker']:.4f} |",
        "",
        f"Linking adds {r['overhead_percent']:.1f}% to the whole command over {r['documents']:,} documents, "
        f"{r['overhead_percent_after_load']:.1f}% with the linker's load taken out{_paired_overhead(r)}.{_collector(r)}",
    ]
    parts = r.get("linking")
    if parts:
        embedding = parts.get("mention_embedding_seconds") or 0.0
        embedded = f"the mentions' embeddings {embedding:.2f} s, " if embedding else ""
        looked_up = parts.get("looked_up_mentions")
        looked_up = f", {looked_up:,} more looked up by name" if looked_up else ""
        lines += ["", f"Inside the run with the linker: load {parts['load_seconds']:.2f} s; linking {parts['link_seconds']:.2f} s "
                  f"({parts['searched_mentions']:,} distinct mentions searched{looked_up}, {parts['link_percent_of_without']:.1f}% of the "
                  f"command's time without the linker): abbreviations {parts['abbreviations_seconds']:.2f} s, "
                  f"TF-IDF vectors {parts['tfidf_transform_seconds']:.2f} s, {embedded}scores and best name "
                  f"{parts['product_and_top1_seconds']:.2f} s, the rest {parts['preparation_seconds']:.2f} s."]  # fmt: skip
    for before_path in sorted(path.parent.glob(f"{path.stem}-before-*.json")):  # the same corpus and linker, older code
        b = json.loads(before_path.read_text(encoding="utf-8"))
        change = before_path.stem.split("-before-", 1)[1].replace("-", " ")
        line = (f"Before the change named {change!r} (`{before_path.relative_to(REPO)}`, the same corpus, model, linker and "
                f"machine): linking adds {b['overhead_percent']:.1f}% to the whole command{_paired_overhead(b)}")  # fmt: skip
        if b.get("linking"):
            bp = b["linking"]
            embedding = bp.get("mention_embedding_seconds") or 0.0
            line += (f"; linking {bp['link_seconds']:.2f} s ({bp['link_percent_of_without']:.1f}% of the command's time without "
                     f"the linker)" + (f", the mentions' embeddings {embedding:.2f} s" if embedding else "")
                     + f", scores and best name {bp['product_and_top1_seconds']:.2f} s")  # fmt: skip
        lines += ["", line + "."]
    return "\n".join(lines)


def render_hybrid_search() -> str:
    """``bench/hybrid_search.py``'s latest report for each dataset and n-gram range: the dense linker's search
    with every name scored against the pruned search, at each common-n-gram fraction. A report named
    ``...-before-<change>`` is the record of what a change improved on, not shown."""
    latest: dict[tuple[str, tuple[int, ...]], tuple[Path, dict]] = {}
    reports = [p for p in BENCH.glob("hybrid-search-*.json") if "-before-" not in p.name]
    for path in sorted(reports, key=_latest_first_key):
        r = json.loads(path.read_text(encoding="utf-8"))
        latest[r["linker"]["dataset"], tuple(r["linker"]["ngram_range"]), r.get("texts", "test") != "test"] = (path, r)
    if not latest:
        return "No `bench/hybrid_search.py` result is recorded yet."
    blocks = []
    for key in sorted(latest):
        path, r = latest[key]
        dataset = key[0]
        linker = r["linker"]
        versions = ", ".join(f"{k} {v}" for k, v in r["versions"].items() if k in ("numpy", "scipy"))
        lines = [
            f"`{path.relative_to(REPO)}` ({r['date']}, {r['device']}, {versions}): "
            + (f"{dataset}'s {r['mentions']:,} distinct test mentions" if r.get("texts", "test") == "test" else
               f"{r['mentions']:,} distinct mentions `predict` searched (`--texts`), with {dataset}'s linker")
            + f" ({r['mean_postings_per_text']:,.0f} names of their n-grams on average) against "
            f"{linker['num_names']:,} names, {linker['ngram_range'][0]}-{linker['ngram_range'][1]}-grams, sparse weight "
            f"{linker['sparse_weight']:g}; medians of {r['repeats']} runs.",
            "",
            "| search | k | common n-grams (fraction of the names) | principal directions | ms per mention | mentions pruned | "
            "names scored exactly per pruned mention (mean / max) | fell back to every name |",
            "|---|---:|---|---:|---:|---:|---|---:|",
        ]
        for c in r["cases"]:
            if c["search"] == "full":
                lines.append(f"| every name | {c['k']} | | | {c['ms_per_text']:.2f} | | | |")
                continue
            default = " (default)" if c["common_postings_fraction"] == r["constants"]["COMMON_POSTINGS_FRACTION"] else ""
            rank = c.get("common_rank", 0)  # reports from before the principal directions: Cauchy-Schwarz alone
            rank = f"{rank}{' (default)' if rank == r['constants'].get('COMMON_RANK', 0) else ''}"
            scored = f"{c['scored_mean']:,.1f} / {c['scored_max']:,}" if c["scored_mean"] is not None else "-"
            lines.append(f"| pruned | {c['k']} | {c['common_ngrams']:,} (> {c['common_postings_fraction']:g}){default} | {rank} | "
                         f"{c['ms_per_text']:.2f} | {c['pruned']:,} | {scored} | {c['fell_back']:,} |")  # fmt: skip
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_dense_linker_step() -> str:
    """``bench/dense_linker_step.py``'s latest report: the dense linker's training step, one padded batch against
    length-grouped forwards, and the dictionary's embedding rate."""
    files = sorted(BENCH.glob("dense-linker-step-*.json"), key=_date_of)
    if not files:
        return "No `bench/dense_linker_step.py` result is recorded yet."
    path = files[-1]
    r = json.loads(path.read_text(encoding="utf-8"))
    versions = ", ".join(f"{k} {v}" for k, v in r["versions"].items() if k in ("torch", "transformers"))
    lines = [
        f"`{path.relative_to(REPO)}` ({r['date']}, {r['device']}, {r['torch_threads']} torch threads, {versions}): "
        f"`{r['checkpoint']}`, {r['dataset']}'s training pairs ({r['training_pairs']:,}), {r['batch_size_pairs']} pairs "
        f"({2 * r['batch_size_pairs']} names) a step, {r['steps']} steps timed each way.",
        "",
        "| names through the encoder | seconds per step | sub-tokens computed / real | speedup |",
        "|---|---:|---:|---:|",
    ]
    for way in r["ways"]:
        speedup = r["speedup"].get(way["way"], 1.0)
        lines.append(f"| {way['way']} | {way['seconds_per_step']:.3f} | {way['padding_ratio']:.2f} | {speedup:.2f}x |")
    e = r["embedding"]
    batch = e.get("batch_size", 256)  # reports before the batch was recorded embedded 256 names a batch
    lines += ["", f"Embedding {e['names']:,} dictionary names (sorted by length, {batch} a batch): {e['seconds']:.2f} s, "
              f"{e['names_per_second']:,.0f} names a second."]  # fmt: skip
    return "\n".join(lines)


def render_pretrain_step() -> str:
    """The pre-training step benchmark on the GPU, by ``bench/pretrain_report.py``'s own Markdown."""
    report_module = _load(REPO / "bench" / "pretrain_report.py")
    files = [BENCH / f"pretrain-step-h200-2026-11-27-{part}.json" for part in ("eager", "compiled", "train")]
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in files]
    names = ", ".join(f"`{p.relative_to(REPO)}`" for p in files)
    return f"From {names} ({_date_of(files[0])}):\n\n" + report_module.markdown(*reports).rstrip("\n")


def render_adamw_update() -> str:
    """``bench/adamw_update.py``: the optimizer update, torch's foreach AdamW passes against its fused kernel."""
    path = BENCH / "adamw-update-2core-cpu-2026-11-28.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    lines = [
        f"`{path.relative_to(REPO)}` ({_date_of(path)}, device `{report['device']}`, torch {report['torch']}, "
        f"{report['threads']} threads):",
        "",
        "| size | tensors | parameters | foreach ms / update | fused ms / update | speed-up | max parameter difference |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for case in report["cases"]:
        lines.append(
            f"| {case['size']} | {case['tensors']} | {case['parameters']:,} | {case['foreach']['ms_per_update']:.1f} | "
            f"{case['fused']['ms_per_update']:.1f} | {case['fused_speedup']:.2f}x | {case['max_parameter_difference']:.1e} |"
        )
    return "\n".join(lines)


def render_sampling() -> str:
    """``bench/sampling.py``: the generator's head with the original Gumbel-max draw and the two-stage draw."""
    path = BENCH / "sampling-2core-cpu-2026-11-28.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    lines = [
        f"`{path.relative_to(REPO)}` ({_date_of(path)}, device `{report['device']}`, torch {report['torch']}, "
        f"{report['threads']} threads):",
        "",
        "| sampler | block | compiled | rows | vocabulary | random numbers per row | median ms | min ms |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for case in report["cases"]:
        lines.append(
            f"| {case['sampler']} | {case['block'] or '-'} | {'yes' if case['compiled'] else 'no'} | {case['rows']:,} | "
            f"{case['vocab']:,} | {case['random_per_row']:,} | {case['median_ms']:.1f} | {case['min_ms']:.1f} |"
        )
    return "\n".join(lines)


def render_recorded_table(name: str) -> str:
    """A table of ``docs/results/data/tables.json`` (a bench run whose report predates JSON output):
    its command, date, device, versions and commit, then its rows."""
    table = json.loads((RESULTS / "tables.json").read_text(encoding="utf-8"))["tables"][name]
    versions = ", ".join(f"{k} {v}" for k, v in table["versions"].items())
    commit = f", first reported in `{table['commit']}`" if table.get("commit") else ""
    lines = [
        f"`{table['command']}` ({table['date']}, {table['device']}, {versions}{commit}):",
        "",
        "| " + " | ".join(table["columns"]) + " |",
        "|---|" + "---:|" * (len(table["columns"]) - 1),
        *("| " + " | ".join(row) + " |" for row in table["rows"]),
    ]
    return "\n".join(lines)


def benchmark_records(suite: str = "blurb") -> list[dict]:
    """The recorded benchmark runs of ``suite`` (``docs/results/data/benchmark/*.json``, written by
    ``tools/record_benchmark.py``), the shipped model first, then its untrained twin, then the others."""
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((RESULTS / "benchmark").glob("*.json"))]
    order = {"bioelectra-small": 0, "bioelectra-small-untrained": 1}
    return sorted((r for r in records if r["suite"] == suite), key=lambda r: (order.get(r["checkpoint"], 2), r["checkpoint"]))


def render_blurb() -> str:
    """The BLURB table: every recorded ``benchmark --suite blurb`` run side by side (test mean ± std per dataset
    in BLURB's metric, the minutes it took), the published figures, the task-type averages and the score. The
    published side is read from ``downstream/data/literature.json`` as it is now, not from the first record's copy
    of it (``downstream.benchmark.with_current_literature``)."""
    from downstream.benchmark import format_mean_std, with_current_literature
    from downstream.blurb import BLURB_DATASETS, BLURB_TASK_TYPES, score_label
    from downstream.dataset_specs import DATASETS
    from downstream.kinds import task_class
    from downstream.literature import load_literature

    records = benchmark_records("blurb")
    if not records:
        return "No `benchmark --suite blurb` run is recorded yet."
    literature = load_literature()
    first = with_current_literature(records[0], literature)
    shown = ("pubmedbert", "biobert-blurb", "biolinkbert-base")
    models = [m for m in literature.models if m["key"] in shown]
    published_over = first["blurb"].get("published") or {}  # each model's figures over the datasets the first run has

    def published_figures(name: str, row: dict | None = None) -> tuple[str, str, dict]:
        """A BLURB dataset's metric key and title (its task's, as run in ``row`` or as registered) and the
        published figures in it; none for a dataset neither run nor registered in this version."""
        task = row["task"] if row else DATASETS[name].task if name in DATASETS else None
        if task is None:
            return "", "", {}
        metric, title = task_class(task).benchmark_metrics[0]
        return metric, title, literature.lookup(name, metric)

    run = {row["dataset"]: row for r in records for row in r["rows"]}
    used = {f.source for name in BLURB_DATASETS for k, f in published_figures(name, run.get(name))[2].items() if k in shown}
    used |= {v["source"] for v in (first["blurb"].get("published_scores") or {}).values()}
    marks = {key: i for i, key in enumerate((k for k in literature.sources if k in used), start=1)}
    lines = [f"{i}. `{r['command']}` ({r['date']}, {r['device']}, {r['load']}; "
             + ", ".join(f"{k} {v}" for k, v in r["versions"].items()) + f"; first reported in `{r['commit']}`)"
             for i, r in enumerate(records, start=1)]  # fmt: skip
    names = [r["checkpoint"] for r in records]
    lines += ["", "| task type | dataset | metric (test) | " + " | ".join(names) + " | " + " | ".join(m["name"] for m in models)
              + " | minutes (" + " / ".join(names) + ") |",
              "|---|---|---|" + "---:|" * (len(names) + len(models) + 1)]  # fmt: skip
    rows = [{row["dataset"]: row for row in r["rows"]} for r in records]
    missing = {**{n: why for r in records for n, why in r["missing"].items()}}
    for task_type, datasets in BLURB_TASK_TYPES.items():
        for name in datasets:
            found = [by_name.get(name) for by_name in rows]
            metric, title, figures = published_figures(name, next((f for f in found if f), None))
            published = [f"{figures[m['key']].value:.2f}<sup>{marks[figures[m['key']].source]}</sup>" if m["key"] in figures else ""
                         for m in models]  # fmt: skip
            if not any(found):
                why = missing.get(name, "not in the run yet").split(" (")[0].split(": ")[-1]
                lines.append(f"| {task_type} | {name} | {title} | " + " | ".join(["-"] * len(names)) + " | " + " | ".join(published)
                             + f" | not run: {why} |")  # fmt: skip
                continue
            ours = [format_mean_std(f["summary"]["test"].get(metric, {})) if f else "-" for f in found]
            minutes = " / ".join("-" if not f or f.get("seconds") is None else f"{f['seconds'] / 60:.1f}" for f in found)
            lines.append(f"| {task_type} | {name} | {title} | " + " | ".join(ours) + " | " + " | ".join(published) + f" | {minutes} |")
    model_names = first["blurb"].get("model_names", {})
    over = [f"{model_names.get(k, k)}, over {names[0]}'s datasets" for k in published_over]
    lines += ["", "| | " + " | ".join([*names, *over]) + " |", "|---|" + "---:|" * (len(names) + len(over))]
    for task_type in BLURB_TASK_TYPES:
        cells = []
        for r in records:
            entry = r["blurb"]["ours"]["task_types"].get(task_type)
            cells.append(f"{entry['score']:.2f}" if entry else "-")
        for k in published_over:
            entry = published_over[k]["task_types"].get(task_type)
            cells.append(f"{entry['score']:.2f}" if entry else "-")
        lines.append(f"| {task_type} | " + " | ".join(cells) + " |")
    scores = [f"**{r['blurb']['ours']['score']:.2f}** ({score_label(r['blurb']['ours'])})" for r in records]
    scores += [f"**{published_over[k]['score']:.2f}**" for k in published_over]
    lines.append("| **BLURB score** | " + " | ".join(scores) + " |")
    published_scores = first["blurb"].get("published_scores") or {}
    if published_scores:
        lines += ["", "Published BLURB scores, all 13 datasets: " + "; ".join(
            f"{model_names.get(k, k)} {v['value']:.2f}" + (f"<sup>{marks[v['source']]}</sup>" if v["source"] in marks else "")
            for k, v in published_scores.items()) + "."]  # fmt: skip
    lines += ["", "Sources:", ""]
    lines += [f"{i}. {literature.sources[key]['citation']}. <{literature.sources[key]['url']}>" for key, i in marks.items()]
    return "\n".join(lines)


def render_blurb_summary() -> str:
    """The front page's BLURB line: each recorded ``benchmark --suite blurb`` run's score (over how many datasets)."""
    from downstream.blurb import score_label

    records = benchmark_records("blurb")
    if not records:
        return "No `benchmark --suite blurb` run is recorded yet."
    parts = [f"{r['checkpoint']} **{r['blurb']['ours']['score']:.2f}** ({score_label(r['blurb']['ours'])}, {r['date']})" for r in records]
    return "BLURB, test scores averaged by task type as Gu et al. do: " + "; ".join(parts) + "."


#: Whole generated pages: path (from the repository root) -> renderer.
PAGES: dict[str, Callable[[], str]] = {
    "docs/reference/cli.md": docs_reference.render_cli,
    "docs/reference/datasets.md": docs_reference.render_datasets,
    "docs/models/bioelectra-small.md": lambda: docs_reference.render_model_card("bioelectra-small"),
    "docs/models/bioelectra-mini.md": lambda: docs_reference.render_model_card("bioelectra-mini"),
}

#: Generated blocks inside hand-written pages: (path, block name) -> renderer.
BLOCKS: dict[tuple[str, str], Callable[[], str]] = {
    ("README.md", "headline-results"): render_headline,
    ("docs/index.md", "headline-results"): render_headline,
    ("docs/results/index.md", "bioelectra-small-results"): lambda: render_model_comparison("bioelectra-small"),
    ("docs/results/index.md", "bioelectra-mini-results"): lambda: render_model_comparison("bioelectra-mini"),
    ("docs/results/index.md", "demo-table"): render_demo_table,
    ("docs/results/index.md", "question-answering-results"): lambda: render_model_comparison("bioelectra-mini", "qa", ""),
    ("docs/results/performance.md", "finetune-cpu"): lambda: render_recorded_table("finetune-cpu"),
    ("docs/results/performance.md", "micro-batch"): lambda: render_recorded_table("micro-batch"),
    ("docs/results/performance.md", "examples-on-disk"): lambda: render_recorded_table("examples-on-disk"),
    ("docs/results/performance.md", "predict-throughput"): render_predict_throughput,
    ("docs/results/performance.md", "convert-time"): lambda: render_recorded_table("convert-time"),
    ("docs/results/performance.md", "pretrain-rss"): lambda: render_recorded_table("pretrain-rss"),
    ("docs/results/performance.md", "build-data"): lambda: render_recorded_table("build-data"),
    ("docs/guides/fine-tuning.md", "protocols"): docs_reference.render_protocols,
    ("docs/guides/benchmark.md", "ner-suite"): lambda: render_recorded_table("ner-suite"),
    ("docs/guides/glue-and-original-tasks.md", "glue"): lambda: render_recorded_table("glue"),
    ("docs/guides/glue-and-original-tasks.md", "chunking"): lambda: render_recorded_table("chunking"),
    ("docs/guides/hyperparameter-search.md", "hp-search"): lambda: render_recorded_table("hp-search"),
    ("docs/guides/entity-linking.md", "linking-sparse"): lambda: render_recorded_table("linking-sparse"),
    ("docs/guides/entity-linking.md", "linking-end-to-end"): lambda: render_recorded_table("linking-end-to-end"),
    ("docs/guides/entity-linking.md", "linking-dense-defaults"): lambda: render_recorded_table("linking-dense-defaults"),
    ("docs/guides/entity-linking.md", "linking-dense"): lambda: render_recorded_table("linking-dense"),
    ("docs/guides/entity-linking.md", "linking-dense-epochs"): lambda: render_recorded_table("linking-dense-epochs"),
    ("docs/guides/entity-linking.md", "linking-dense-settings"): lambda: render_recorded_table("linking-dense-settings"),
    ("docs/guides/entity-linking.md", "linking-end-to-end-dense"): lambda: render_recorded_table("linking-end-to-end-dense"),
    ("docs/guides/entity-linking.md", "linking-train-dev"): lambda: render_recorded_table("linking-train-dev"),
    ("docs/guides/entity-linking.md", "linking-end-to-end-train-dev"): lambda: render_recorded_table("linking-end-to-end-train-dev"),
    ("docs/guides/entity-linking.md", "linking-ngram-train-dev"): lambda: render_recorded_table("linking-ngram-train-dev"),
    ("docs/guides/entity-linking.md", "linking-end-to-end-ngram"): lambda: render_recorded_table("linking-end-to-end-ngram"),
    ("docs/guides/entity-linking.md", "linking-abbreviations"): lambda: render_recorded_table("linking-abbreviations"),
    ("docs/guides/entity-linking.md", "linking-end-to-end-abbreviations"): lambda: render_recorded_table("linking-end-to-end-abbreviations"),
    ("docs/guides/entity-linking.md", "linking-biosyn"): lambda: render_recorded_table("linking-biosyn"),
    ("docs/guides/entity-linking.md", "linking-biosyn-epochs"): lambda: render_recorded_table("linking-biosyn-epochs"),
    ("docs/results/performance.md", "pretrain-step"): render_pretrain_step,
    ("docs/results/performance.md", "adamw-update"): render_adamw_update,
    ("docs/results/performance.md", "sampling"): render_sampling,
    ("docs/results/performance.md", "predict-linking"): render_predict_linking,
    ("docs/results/performance.md", "dense-linker-step"): render_dense_linker_step,
    ("docs/results/performance.md", "hybrid-search"): render_hybrid_search,
    ("docs/results/index.md", "blurb"): render_blurb,
    ("README.md", "blurb-summary"): render_blurb_summary,
}


def begin(name: str) -> str:
    return f"<!-- generated: {name} (tools/docs_pages.py from the result files; do not edit by hand) -->"


def end(name: str) -> str:
    return f"<!-- end: {name} -->"


def replace_block(text: str, name: str, body: str, *, where: str = "") -> str:
    """``text`` with block ``name``'s content replaced by ``body``.

    Raises:
        StaleError: the block's begin or end line missing, or present more than once.
    """
    first, last = begin(name), end(name)
    if text.count(first) != 1 or text.count(last) != 1:
        raise StaleError(f"{where}: expected one line {first!r} and one line {last!r}")
    head, rest = text.split(first)
    _, tail = rest.split(last)
    return f"{head}{first}\n{body}\n{last}{tail}"


def expected() -> dict[str, str]:
    """Every target file's text as the generators write it (blocks spliced into the current pages)."""
    out = {path: render() for path, render in PAGES.items()}
    for (path, name), render in BLOCKS.items():
        if path not in out:
            file = REPO / path
            out[path] = file.read_text(encoding="utf-8") if file.exists() else ""
        out[path] = replace_block(out[path], name, render(), where=path)
    return out


def stale() -> list[str]:
    """The target files whose text on disk differs from :func:`expected`."""
    problems = []
    for path, text in expected().items():
        file = REPO / path
        if not file.exists() or file.read_text(encoding="utf-8") != text:
            problems.append(path)
    return problems


def write() -> list[str]:
    """Write every target whose text changed (through a temporary file, then a rename); the paths written."""
    written = []
    for path, text in expected().items():
        file = REPO / path
        if file.exists() and file.read_text(encoding="utf-8") == text:
            continue
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(file)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="regenerate every page and block")
    group.add_argument("--check", action="store_true", help="exit 1 when a page or block is stale")
    args = parser.parse_args(argv)
    try:
        if args.write:
            for path in write():
                print(f"wrote {path}")
            return 0
        problems = stale()
    except (OSError, StaleError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in problems:
        print(f"stale: {path} (run: python tools/docs_pages.py --write)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
