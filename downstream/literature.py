"""Published figures to compare with: ``downstream/data/literature.json``, the one place they live.

The file holds ``sources`` (id -> citation, url, where in the source, how the figure was read, the source's
protocol), ``models`` (display order: ``name``, ``key``), ``results`` (``model`` key, registry
``dataset``, finetune ``metric``, ``value`` in percent as printed, ``source`` id, optional ``note``) and
``suite_scores`` (a published score over a whole suite: ``model``, ``suite`` such as ``blurb``, ``value``,
``source``).
:func:`load_literature` checks that schema, so a figure never appears without its source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from downstream.errors import DownstreamError

#: The metrics a literature figure may be given in (finetune's names).
LITERATURE_METRICS = ("f1", "accuracy", "exact_match", "strict_accuracy", "lenient_accuracy", "mrr", "pearson")

#: The fields every source must state.
SOURCE_FIELDS = ("citation", "url", "where", "evidence", "protocol")


@dataclass(frozen=True)
class LiteratureFigure:
    """One published test figure (percent)."""

    model: str
    model_name: str
    dataset: str
    metric: str
    value: float
    source: str
    note: str | None = None


@dataclass(frozen=True)
class SuiteScore:
    """One published score over a whole suite (the BLURB score over its 13 datasets), percent."""

    model: str
    suite: str
    value: float
    source: str


@dataclass(frozen=True)
class Literature:
    """The loaded file: its sources, models in display order, figures and suite scores."""

    sources: dict[str, dict[str, str]]
    models: list[dict[str, str]]
    figures: list[LiteratureFigure]
    suite_scores: list[SuiteScore] = field(default_factory=list)

    def lookup(self, dataset: str, metric: str) -> dict[str, LiteratureFigure]:
        """Model key -> the figure of ``dataset`` in ``metric`` (models without one are absent)."""
        return {f.model: f for f in self.figures if f.dataset == dataset and f.metric == metric}


def literature_file() -> Path:
    """The packaged ``literature.json``."""
    return Path(str(resources.files("downstream") / "data" / "literature.json"))


def load_literature(path: str | Path | None = None) -> Literature:
    """Read and check ``literature.json`` (default: the packaged one).

    Raises:
        DownstreamError: a malformed file: a figure without a known source or model, a value that is not a
            percentage, an unknown metric or dataset, a duplicate figure, or a source missing one of
            :data:`SOURCE_FIELDS` (the entry named).
    """
    from downstream.dataset_specs import DATASETS

    path = Path(path) if path is not None else literature_file()
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DownstreamError(f"{path}: cannot read the literature figures ({exc})") from exc
    sources, models, results = data.get("sources"), data.get("models"), data.get("results")
    if not isinstance(sources, dict) or not isinstance(models, list) or not isinstance(results, list):
        raise DownstreamError(f"{path}: expected 'sources' (object), 'models' and 'results' (lists)")
    for key, source in sources.items():
        missing = [f for f in SOURCE_FIELDS if not isinstance(source.get(f), str) or not source[f].strip()]
        if missing:
            raise DownstreamError(f"{path}: source {key!r} lacks {', '.join(missing)}")
    names = {m.get("key"): m.get("name") for m in models}
    figures, seen = [], set()
    for i, r in enumerate(results):
        where = f"{path}: results[{i}]"
        if r.get("model") not in names:
            raise DownstreamError(f"{where}: unknown model {r.get('model')!r} (expected one of {', '.join(names)})")
        if r.get("source") not in sources:
            raise DownstreamError(f"{where}: unknown source {r.get('source')!r}")
        if r.get("dataset") not in DATASETS:
            raise DownstreamError(f"{where}: dataset {r.get('dataset')!r} is not registered")
        if r.get("metric") not in LITERATURE_METRICS:
            raise DownstreamError(f"{where}: metric {r.get('metric')!r} is not one of {', '.join(LITERATURE_METRICS)}")
        value = r.get("value")
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 100:
            raise DownstreamError(f"{where}: value {value!r} is not a percentage")
        key = (r["model"], r["dataset"], r["metric"])
        if key in seen:
            raise DownstreamError(f"{where}: a second figure for {key}")
        seen.add(key)
        figures.append(LiteratureFigure(r["model"], names[r["model"]], r["dataset"], r["metric"], float(value), r["source"], r.get("note")))
    suite_scores = []
    for i, r in enumerate(data.get("suite_scores", [])):
        where = f"{path}: suite_scores[{i}]"
        if r.get("model") not in names or r.get("source") not in sources:
            raise DownstreamError(f"{where}: unknown model {r.get('model')!r} or source {r.get('source')!r}")
        value = r.get("value")
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 100 or not r.get("suite"):
            raise DownstreamError(f"{where}: expected a suite name and a percentage, got {r.get('suite')!r} and {value!r}")
        suite_scores.append(SuiteScore(r["model"], r["suite"], float(value), r["source"]))
    return Literature(sources=sources, models=list(models), figures=figures, suite_scores=suite_scores)
