"""BLURB (Gu et al. 2021, "Domain-Specific Language Model Pretraining for Biomedical Natural Language
Processing", ACM Transactions on Computing for Healthcare 3(1); https://microsoft.github.io/BLURB/): its 13
datasets in six task types, defined once here, and the BLURB score.

The BLURB score: "to avoid placing undue emphasis on tasks with many available datasets, such as named
entity recognition (NER), BLURB reports the macro average across all tasks as the main score" (BLURB's site,
https://microsoft.github.io/BLURB/; the paper's BLURB score): the mean of each task type's score, a task type's score being the mean of its datasets' test scores. So the two NER
sets do not weigh five times the one PICO set. Each dataset is scored by its task kind's first
``benchmark_metrics`` entry (BLURB's metric: entity-level F1, macro token-level F1, micro-F1, Pearson r,
micro-F1 over the hallmarks, accuracy).

Over a subset (a dataset missing or not run), the same averaging over the types present gives a partial
score, always reported with "over N of 13 datasets": it is not comparable with published BLURB scores, only
with the published models' figures averaged over the same datasets.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

#: BLURB's task types and their datasets (registry names), in BLURB's order (Gu et al. 2021, Table 2). The
#: BLURB forms of JNLPBA, GAD and BioASQ are BLURB's own files; ChemProt and DDI are the registry's (BLURB's
#: forms of them were not found; ../shared/data/SOURCES.md, section 12).
BLURB_TASK_TYPES: dict[str, tuple[str, ...]] = {
    "named entity recognition": ("bc5cdr-chem", "bc5cdr-disease", "ncbi-disease", "bc2gm", "jnlpba-blurb"),
    "PICO extraction": ("ebm-pico",),
    "relation extraction": ("chemprot", "ddi", "gad-blurb"),
    "sentence similarity": ("biosses",),
    "document classification": ("hoc",),
    "question answering": ("pubmedqa", "bioasq-blurb"),
}

#: Every BLURB dataset, in order.
BLURB_DATASETS: tuple[str, ...] = tuple(name for names in BLURB_TASK_TYPES.values() for name in names)


def blurb_score(values: Mapping[str, float | None]) -> dict[str, Any]:
    """BLURB's score of the datasets in ``values`` (module docstring).

    Args:
        values: BLURB dataset -> its test score (any unit, e.g. percent); a dataset absent or ``None`` is
            missing. Names outside BLURB are ignored.

    Returns:
        ``{"score", "task_types": {type: {"score", "datasets"}}, "datasets": [...], "num_datasets",
        "num_total", "complete"}``: the mean of the task-type means over the types with a dataset present
        (``score`` ``None`` when none is), the datasets used, and whether all 13 were.
    """
    used = [name for name in BLURB_DATASETS if values.get(name) is not None]
    task_types = {}
    for task_type, names in BLURB_TASK_TYPES.items():
        present = [name for name in names if name in used]
        if present:
            task_types[task_type] = {"score": statistics.fmean(values[name] for name in present), "datasets": present}
    score = statistics.fmean(t["score"] for t in task_types.values()) if task_types else None
    return {"score": score, "task_types": task_types, "datasets": used, "num_datasets": len(used),
            "num_total": len(BLURB_DATASETS), "complete": len(used) == len(BLURB_DATASETS)}  # fmt: skip


def blurb_report(ours: Mapping[str, float | None], published: Mapping[str, Mapping[str, float | None]],
                 published_scores: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """The BLURB part of a benchmark report.

    Args:
        ours: dataset -> our test score (percent) for the datasets run.
        published: model key -> dataset -> its published test figure (percent).
        published_scores: model key -> ``{"value", "source"}``, a published BLURB score over all 13 datasets.

    Returns:
        ``{"ours": blurb_score(ours), "published": {model: blurb_score over the same datasets}, "published_scores",
        "missing": [BLURB datasets not scored]}``; a published model appears only with a figure for every
        dataset we scored (its average is then over the same datasets as ours).
    """
    result = blurb_score(ours)
    used = result["datasets"]
    same = {key: blurb_score({d: figures[d] for d in used}) for key, figures in published.items()
            if used and all(figures.get(d) is not None for d in used)}  # fmt: skip
    return {"ours": result, "published": same, "published_scores": dict(published_scores),
            "missing": [name for name in BLURB_DATASETS if name not in used]}  # fmt: skip


def score_label(result: Mapping[str, Any]) -> str:
    """``"BLURB score"``, or ``"BLURB score over N of 13 datasets"`` when any is missing."""
    if result["complete"]:
        return "BLURB score"
    return f"BLURB score over {result['num_datasets']} of {result['num_total']} datasets"


def blurb_markdown(section: Mapping[str, Any], model_names: Mapping[str, str], missing_why: Mapping[str, str],
                   marks: Mapping[str, int] | None = None) -> list[str]:  # fmt: skip
    """The report's BLURB lines: one row per task type (its datasets, ours, each published model over the same
    datasets), the score, the published BLURB scores over all 13, and what is missing with the reason.

    Args:
        section: :func:`blurb_report`'s result (with ``files``, dataset -> the files' title, when known; ``limited``
            for a limited run, whose score stands alone).
        model_names: model key -> display name.
        missing_why: dataset -> why it is not in the table (not registered, no data, no training file, failed).
        marks: source key -> its footnote number in the report (the published scores' sources).
    """
    ours = section["ours"]
    if ours["score"] is None:
        return []
    models = list(section["published"])
    lines = ["", f"## {score_label(ours)}", "",
             "Test scores (percent); each task type is the mean of its datasets, the score the mean of the task types "
             "(Gu et al. 2021)." + (" Published models: their figures averaged over the same datasets." if models else ""), "",
             "| " + " | ".join(["task type", "datasets", "ours", *(model_names.get(k, k) for k in models)]) + " |",
             "|---|---|---:|" + "---:|" * len(models)]  # fmt: skip
    for task_type, entry in ours["task_types"].items():
        cells = [f"{section['published'][k]['task_types'][task_type]['score']:.2f}" for k in models]
        lines.append("| " + " | ".join([task_type, ", ".join(entry["datasets"]), f"{entry['score']:.2f}", *cells]) + " |")
    cells = [f"**{section['published'][k]['score']:.2f}**" for k in models]
    lines.append("| " + " | ".join([f"**{score_label(ours)}**", "", f"**{ours['score']:.2f}**", *cells]) + " |")
    if section.get("limited"):
        lines += ["", "A limited run (steps or examples cut): its score is not set beside published figures."]
    elif not ours["complete"]:
        lines += ["", f"Over {ours['num_datasets']} of {ours['num_total']} datasets: not comparable with a published BLURB "
                  "score, only with the published columns above (the same datasets)."]  # fmt: skip
    if section.get("files"):
        lines += ["", "Files: " + "; ".join(f"{name}: {title}" for name, title in section["files"].items() if name in ours["datasets"]) + "."]
    if section["published_scores"]:
        lines += ["", "Published BLURB scores (all 13 datasets): " + "; ".join(
            f"{model_names.get(k, k)} {v['value']:.2f}" + (f"<sup>{marks[v['source']]}</sup>" if marks and v["source"] in marks else "")
            for k, v in section["published_scores"].items()) + "."]
    if section["missing"]:
        lines += ["", "BLURB datasets not in the score: " + "; ".join(
            f"{name} ({missing_why.get(name, 'not in this suite run')})" for name in section["missing"]) + "."]
    return lines
