"""``results.json`` and ``results.md`` of a linking run (the same keys as every kind's report where they apply:
``task``, ``dataset``, ``settings``, ``counts``, ``trials``, ``summary``, ``std_ddof``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.linking.metrics import REPORTED_K
from downstream.settings import STD_DDOF

#: Published accuracy@1 / @5 (BioSyn's README, ``dmis-lab/BioSyn`` master ``c984e904``; trained on train + dev,
#: BioSyn's preprocessing), fractions.
PUBLISHED = {
    "ncbi-disease": {"BioSyn (BioBERT)": (0.911, 0.939), "BioSyn (SapBERT)": (0.924, 0.958)},
    "bc5cdr-disease": {"BioSyn (BioBERT)": (0.932, 0.960), "BioSyn (SapBERT)": (0.935, 0.964)},
    "bc5cdr-chemical": {"BioSyn (BioBERT)": (0.966, 0.972), "BioSyn (SapBERT)": (0.966, 0.983)},
}

METRICS = tuple(f"accuracy_at_{k}" for k in REPORTED_K)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def write_linking_reports(settings, spec, counts: dict[str, Any], records: list[dict[str, Any]], *, summarize) -> dict[str, Any]:
    """Write ``results.json`` and ``results.md`` into ``settings.output_dir``; return the report (``summarize``:
    the summary over trials, ``downstream.trial.reports.summarize``)."""
    summary = {split: {m: summarize([r[split].get(m) for r in records], ddof=STD_DDOF) for m in METRICS} for split in ("dev", "test")}
    report = {
        "task": "linking",
        "dataset": spec.name,
        "dataset_title": spec.title,
        "checkpoint": settings.checkpoint_name or settings.checkpoint if settings.linker != "sparse" else "none (sparse)",
        "linker": settings.linker,
        "train_on": settings.train_on if settings.linker != "sparse" else None,
        "metric_mode": "accuracy@k on gold mentions (BioSyn's evaluate_topk_acc)",
        "f1_name": "accuracy@1",
        "settings": settings.to_json(),
        "counts": counts,
        "num_trials": len(records),
        "trials": records,
        "summary": summary,
        "report_metrics": list(METRICS),
        "table_metrics": list(METRICS),
        "std_ddof": STD_DDOF,
        "baseline": None,
        "published": {name: dict(zip(METRICS, values, strict=True)) for name, values in PUBLISHED.get(spec.name, {}).items()},
        "dictionary": "MEDIC (medic_06Jul2012, BioSyn's copy) plus the training mentions (test: training and development)"
        if spec.vocabulary else "the annotated training mentions' names and ids only (test: training and development), no vocabulary",
        "citation": spec.citation,
    }  # fmt: skip
    output_dir = Path(settings.output_dir)
    atomic_write_text(output_dir / "results.json", json.dumps(report, indent=2))
    atomic_write_text(output_dir / "results.md", format_linking_markdown(report))
    return report


def _trained_on(train_on: str | None) -> list[str]:
    """The sentence saying what the linker scored on the test set was trained on (none for the sparse one)."""
    if train_on == "train+dev":
        return ["Trained on train + dev (`--train-on train+dev`, BioSyn's protocol for its published figures): each trial "
                "was fitted on train and scored on dev, where the sparse score's weight (and for the dense linker its character "
                "n-grams) was chosen (the dev columns), then fitted "
                "again with the same seed on the training and development mentions; that fit is the one scored on test "
                "(the test columns) and saved.", ""]  # fmt: skip
    if train_on == "train":
        return ["Trained on the training mentions only (dev chooses, `--train-on train`); BioSyn's published figures "
                "come from a fit on train + dev (`--train-on train+dev`).", ""]  # fmt: skip
    return []


def format_linking_markdown(report: dict[str, Any]) -> str:
    """``results.md``: per-trial dev / test accuracy@1 and @5 (percent), the summary, the published figures,
    the counts."""
    lines = [
        f"# {report['dataset']}: entity linking ({report['linker']} linker), {report['num_trials']} trial(s)",
        "",
        f"{report['dataset_title']}. Accuracy@k on gold mentions in percent, BioSyn's way: a mention is right at k "
        "when one of its first k names has one of its gold ids; a composite mention when each of its parts is. "
        f"Std is the sample standard deviation (ddof={report['std_ddof']}). Dictionary: {report['dictionary']}.",
        "",
        *_trained_on(report.get("train_on")),
        "| trial | seed | dev acc@1 | dev acc@5 | test acc@1 | test acc@5 | details |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["trials"]:
        details = f"character {r['ngram_range'][0]}-{r['ngram_range'][1]}-grams" if "ngram_range" in r else ""
        if r.get("sparse_weight") is not None:
            details += f"; sparse weight {r['sparse_weight']:.4g}"
        if r.get("marginalization_dev"):  # the biosyn linker: dev accuracy@1 after each epoch of its second stage
            details += "; dev acc@1 by epoch " + ", ".join(_pct(e["dev"]["accuracy_at_1"]) for e in r["marginalization_dev"])
        if "train_seconds" in r:
            details += f"; trained {r['train_seconds']:.0f} s"
        if r.get("refit"):
            details += f"; fitted again on train + dev in {r['refit']['train_seconds']:.0f} s"
        lines.append(
            f"| {r['trial_index']} | {r['seed']} | " + " | ".join(_pct(r[s].get(m)) for s in ("dev", "test") for m in METRICS)
            + f" | {details}; test linked in {r['test_seconds']:.1f} s |"
        )
    lines += ["", "| split | metric | mean | std | min | max |", "|---|---|---:|---:|---:|---:|"]
    for split in ("dev", "test"):
        for m in METRICS:
            s = report["summary"][split][m]
            lines.append(f"| {split} | {m} | {_pct(s['mean'])} | {_pct(s['std'])} | {_pct(s['min'])} | {_pct(s['max'])} |")
    if report["published"]:
        lines += ["", "Published on this test set (BioSyn's README, trained on train + dev):", "",
                  "| model | acc@1 | acc@5 |", "|---|---:|---:|"]  # fmt: skip
        lines += [f"| {name} | {_pct(v['accuracy_at_1'])} | {_pct(v['accuracy_at_5'])} |" for name, v in report["published"].items()]
    lines += ["", "| split | mentions | queries | dropped (no id in the dictionary) | composite | dictionary names | concepts |",
              "|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for split in ("train", "dev", "test"):
        c = report["counts"][split]
        lines.append(f"| {split} | {c['mentions']} | {c['queries']} | {c['dropped']} | {c['composite']} | "
                     f"{c['dictionary_names']} | {c['dictionary_concepts']} |")  # fmt: skip
    lines += ["", f"Cite: {report['citation']}."]
    return "\n".join(lines) + "\n"
