"""What a person reads after a trial: ``classification_report.txt`` and ``errors.txt``, and the per-epoch
histories a trial keeps in ``trial.json``.

NER (the layout of the analysis tools the project started from):

- the entity-level report per type with micro, macro and weighted averages (seqeval's
  ``classification_report`` in its default mode, the one the metrics use:
  :data:`downstream.metrics.NER_METRIC_MODE`);
- the word-level report: precision, recall, F1 and support of each IOB2 tag over words, and their micro
  average over the entity tags (every tag but ``O``) (:func:`word_report`, :func:`word_micro_average`);
- the best epoch, its training loss and its validation loss (:func:`epoch_losses`);
- the sentences with at least one wrong tag as ``TOKEN / GOLD / PRED`` columns, and the entity errors by
  kind (:func:`sentence_errors`).

RE: the per-class report, the micro scores over the positive labels (:func:`downstream.metrics.re_metrics`),
the confusion matrix, and the misclassified examples with counts per (gold, predicted) pair.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.metrics import NER_METRIC_MODE
from downstream.report_text import epoch_lines, split_title, table

#: The error kinds of :func:`sentence_errors`, in report order.
ERROR_KINDS = ("missed", "spurious", "wrong boundary", "wrong type")

#: The metrics of an evaluation kept per epoch in ``trial.json``'s ``dev_history`` (those logged).
HISTORY_METRICS = ("f1", "precision", "recall", "accuracy", "loss", "exact_match")

Entity = tuple[str, int, int]  # (type, first word, last word), last inclusive


def entities(tags: Sequence[str]) -> list[Entity]:
    """seqeval's chunks of one sentence (default mode, as the metrics chunk): ``(type, first, last)``."""
    from seqeval.metrics.sequence_labeling import get_entities

    return [(t, s, e) for t, s, e in get_entities(list(tags))]


def _overlaps(a: Entity, b: Entity) -> bool:
    return a[1] <= b[2] and b[1] <= a[2]


@dataclass(frozen=True)
class EntityError:
    """One entity-level error of a sentence.

    Attributes:
        kind: one of :data:`ERROR_KINDS`.
        predicted: the wrong predicted entity (``None`` for ``missed``).
        gold: the gold entities it concerns: the missed one, or those the predicted entity overlaps.
    """

    kind: str
    predicted: Entity | None
    gold: tuple[Entity, ...]


def sentence_errors(gold_tags: Sequence[str], predicted_tags: Sequence[str]) -> list[EntityError]:
    """The entity-level errors of one sentence, each of exactly one kind.

    Entities are seqeval's chunks in its default mode (:func:`entities`, the chunking of the metrics). A
    predicted entity with the type and span of a gold entity is correct. Every other predicted entity is
    exactly one error, decided in this order:

    - ``spurious``: it overlaps (shares a word with) no gold entity;
    - ``wrong boundary``: it overlaps a gold entity of its own type (the span differs, or it would be
      correct);
    - ``wrong type``: it overlaps only gold entities of other types (same span or not).

    A gold entity that is not predicted exactly is ``missed`` when no predicted entity overlaps it. When a
    predicted entity overlaps it, that prediction's error already accounts for it, so it is not counted
    again. Hence ``spurious + wrong boundary + wrong type`` is the number of false-positive entities of the
    entity-level metrics, and ``missed`` at most the number of false negatives.

    Returns:
        The errors: those of the predicted entities in sentence order, then the missed gold entities.
    """
    gold, predicted = entities(gold_tags), entities(predicted_tags)
    gold_set = set(gold)
    errors = []
    for p in predicted:
        if p in gold_set:
            continue
        touching = tuple(g for g in gold if _overlaps(p, g))
        if not touching:
            kind = "spurious"
        elif any(g[0] == p[0] for g in touching):
            kind = "wrong boundary"
        else:
            kind = "wrong type"
        errors.append(EntityError(kind, p, touching))
    predicted_set = set(predicted)
    for g in gold:
        if g not in predicted_set and not any(_overlaps(g, p) for p in predicted):
            errors.append(EntityError("missed", None, (g,)))
    return errors


def error_kinds(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> Counter:
    """Count the errors of :func:`sentence_errors` over sentences (one tag list per sentence).

    Returns:
        ``Counter`` over :data:`ERROR_KINDS` (every kind present, zeros included).
    """
    counts: Counter = Counter({kind: 0 for kind in ERROR_KINDS})
    for g_tags, p_tags in zip(gold, predicted, strict=True):
        counts.update(e.kind for e in sentence_errors(g_tags, p_tags))
    return counts


def _tag_pairs(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    return [(g, p) for gs, ps in zip(gold, predicted, strict=True) for g, p in zip(gs, ps, strict=True)]


def _prf(hits: int, predicted: int, gold: int) -> dict[str, float]:
    precision = hits / predicted if predicted else 0.0
    recall = hits / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "support": gold}


def word_report(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]
) -> dict[str, dict[str, float]]:
    """Per IOB2 tag over words: ``{tag: {"precision", "recall", "f1", "support"}}``.

    A word counts for the tag it is predicted (precision) and the tag it has (recall); ``support`` is the
    number of gold words with the tag. Tags ordered by entity type, ``B-`` before ``I-``, ``O`` last; zero
    denominators give 0.

    Raises:
        ValueError: ``gold`` and ``predicted`` differ in shape.
    """
    pairs = _tag_pairs(gold, predicted)
    tags = sorted({t for pair in pairs for t in pair}, key=lambda t: (t == "O", t[2:], t))
    gold_count, pred_count = Counter(g for g, _ in pairs), Counter(p for _, p in pairs)
    hits = Counter(g for g, p in pairs if g == p)
    return {tag: _prf(hits[tag], pred_count[tag], gold_count[tag]) for tag in tags}


def word_micro_average(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict[str, float]:
    """Word-level micro average over the entity tags (every tag but ``O``): a hit is a word whose predicted
    tag equals its gold tag and is not ``O``; precision over the words predicted with an entity tag, recall
    over the words with one (the seed analysis' one-line "word level" score)."""
    pairs = _tag_pairs(gold, predicted)
    hits = sum(1 for g, p in pairs if g == p and g != "O")
    return _prf(hits, sum(1 for _, p in pairs if p != "O"), sum(1 for g, _ in pairs if g != "O"))


def entity_report(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> str:
    """seqeval's entity-level report (per type; micro, macro and weighted averages; support = gold
    entities) in the metrics' mode (default, no ``mode=`` argument: :data:`NER_METRIC_MODE`)."""
    from seqeval.metrics import classification_report

    return classification_report(
        [list(s) for s in gold], [list(s) for s in predicted], digits=4, zero_division=0
    )


def ner_classification_report(
    splits: dict[str, tuple[Sequence[Sequence[str]], Sequence[Sequence[str]]]], info: dict[str, Any]
) -> str:
    """``classification_report.txt`` for NER.

    Args:
        splits: ``{"dev": (gold, predicted), "test": ...}``, tags per sentence.
        info: ``best_epoch``, ``train_loss``, ``dev_loss`` (see :func:`epoch_losses`).
    """
    parts = [epoch_lines(info)]
    for name, (gold, predicted) in splits.items():
        words = word_report(gold, predicted)
        micro = {"micro avg (tags but O)": word_micro_average(gold, predicted)}
        entity = entity_report(gold, predicted).strip("\n")
        parts.append(f"=== {split_title(name)}: entity level, {NER_METRIC_MODE} ===\n{entity}")
        parts.append(
            f"=== {split_title(name)}: word level, per IOB2 tag (support: gold words) ===\n{table(words, 'tag', micro)}"
        )
    return "\n\n".join(parts) + "\n"


def _entity_text(words: Sequence[str], entity: Entity) -> str:
    return f"{entity[0]} '{' '.join(words[entity[1] : entity[2] + 1])}'"


def ner_errors(splits: dict[str, tuple[Any, Sequence[Sequence[str]]]]) -> str:
    """``errors.txt`` for NER.

    Args:
        splits: ``{"dev": (NerSplit, predicted tags per sentence), "test": ...}``.

    Returns:
        The text: per split the counts of :func:`sentence_errors` kinds, then each sentence with at least one
        wrong tag, headed by its split, index and file line, as ``TOKEN GOLD PRED`` columns with ``<<``
        after each wrong row, followed by its entity errors.
    """
    summary = ["error kinds (entities; see downstream/analysis.py sentence_errors for the definitions):"]
    blocks = []
    for name, (split, predicted) in splits.items():
        sentences = split.sentences
        if len(sentences) != len(predicted):
            raise ValueError(f"{split.path}: {len(sentences)} sentences but {len(predicted)} predicted")
        counts: Counter = Counter({kind: 0 for kind in ERROR_KINDS})
        wrong = 0
        for index, (sentence, tags) in enumerate(zip(sentences, predicted, strict=True)):
            errors = sentence_errors(sentence.tags, tags)
            counts.update(e.kind for e in errors)
            if list(sentence.tags) == list(tags):
                continue
            wrong += 1
            width = max(len("TOKEN"), *(len(w) for w in sentence.words)) + 2
            tag_width = max(len("GOLD"), *(len(t) for t in (*sentence.tags, *tags))) + 2
            rows = [
                f"# {name} sentence {index} ({Path(str(split.path)).name} line {sentence.line})",
                f"{'TOKEN':<{width}}{'GOLD':<{tag_width}}PRED",
            ]
            for word, g, p in zip(sentence.words, sentence.tags, tags, strict=True):
                rows.append(
                    f"{word:<{width}}{g:<{tag_width}}{p:<{tag_width}}{'<<' if g != p else ''}".rstrip()
                )
            for e in errors:
                what = (
                    _entity_text(sentence.words, e.predicted)
                    if e.predicted
                    else _entity_text(sentence.words, e.gold[0])
                )
                gold = (
                    f" (gold {', '.join(_entity_text(sentence.words, g) for g in e.gold)})"
                    if e.predicted and e.gold
                    else ""
                )
                rows.append(f"  {e.kind}: {what}{gold}")
            blocks.append("\n".join(rows))
        summary.append(
            f"  {name}: {wrong} of {len(sentences)} sentences with a wrong tag; "
            + ", ".join(f"{kind} {counts[kind]}" for kind in ERROR_KINDS)
        )
    return "\n".join(summary) + "\n\n" + "\n\n".join(blocks) + ("\n" if blocks else "")


def re_classification_report(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    """``classification_report.txt`` for RE.

    Args:
        results: ``{"dev": metrics, "test": metrics}``, each the dict of :func:`downstream.metrics.re_metrics`.
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.
    """
    parts = [epoch_lines(info)]
    for name, m in results.items():
        support = m.get("num_gold_positive", 0)
        micro = {"precision": m["precision"], "recall": m["recall"], "f1": m["f1"], "support": support}
        labels = list(m["confusion"])
        corner = "gold \\ predicted"
        width = max(len(x) for x in [*labels, corner]) + 2
        columns = [max(8, len(label) + 2) for label in labels]
        confusion = [
            f"{corner:<{width}}" + "".join(f"{label:>{w}}" for label, w in zip(labels, columns, strict=True))
        ]
        for g in labels:
            confusion.append(
                f"{g:<{width}}"
                + "".join(f"{m['confusion'][g][p]:>{w}}" for p, w in zip(labels, columns, strict=True))
            )
        parts.append(
            f"=== {split_title(name)}: per class (support: gold examples) ===\n"
            f"{table(m['per_class'], 'label', {'micro (positive labels)': micro})}\n"
            f"(micro over the positive labels {', '.join(m.get('positive_labels', []))}, the benchmark's score; "
            "support: gold positive examples)\n"
            f"accuracy (all examples) {m.get('accuracy', 0):.4f}\n\n"
            "confusion matrix (rows gold, columns predicted):\n" + "\n".join(confusion)
        )
    return "\n\n".join(parts) + "\n"


def re_errors(splits: dict[str, tuple[Any, Sequence[str]]]) -> str:
    """``errors.txt`` for RE.

    Args:
        splits: ``{"dev": (ReSplit, predicted labels), "test": ...}``.

    Returns:
        The counts of misclassified examples per (gold, predicted) pair for each split, then one
        tab-separated row per misclassified example: split, index, file line, gold, predicted, sentence.
    """
    summary, rows = (
        ["misclassified examples per (gold -> predicted):"],
        ["split\tindex\tline\tgold\tpredicted\tsentence"],
    )
    for name, (split, predicted) in splits.items():
        if len(split.examples) != len(predicted):
            raise ValueError(f"{split.path}: {len(split.examples)} examples but {len(predicted)} predicted")
        wrong = [(ex, p) for ex, p in zip(split.examples, predicted, strict=True) if ex.label != p]
        pairs = Counter((ex.label, p) for ex, p in wrong)
        summary.append(
            f"  {name}: {len(wrong)} of {len(predicted)}"
            + "".join(f"; {g} -> {p}: {n}" for (g, p), n in pairs.most_common())
        )
        rows += [f"{name}\t{ex.index}\t{ex.line}\t{ex.label}\t{p}\t{ex.sentence}" for ex, p in wrong]
    return "\n".join(summary) + "\n\n" + "\n".join(rows) + "\n"


def epoch_losses(log_history: list[dict[str, Any]], epoch: float | None) -> dict[str, float | None]:
    """The training and validation loss of the evaluation at ``epoch``, from the Trainer's ``log_history``.

    The evaluation is the last ``eval_loss`` entry whose ``epoch`` rounded to 2 decimals is ``epoch`` (the
    trial runner's best epoch is rounded so). Its training loss is the mean of the ``loss`` entries logged
    after the previous evaluation up to it (each the Trainer's mean over the steps since its previous log;
    the same definition as the epoch table ``finetune`` shows), ``None`` when none was logged (an epoch
    shorter than ``logging_steps``).

    Returns:
        ``{"train_loss", "dev_loss"}``, ``None`` where unknown.
    """
    none = {"train_loss": None, "dev_loss": None}
    if epoch is None:
        return none
    evals = [i for i, e in enumerate(log_history) if "eval_loss" in e]
    at = [
        i
        for i in evals
        if isinstance(log_history[i].get("epoch"), int | float)
        and abs(round(log_history[i]["epoch"], 2) - epoch) < 1e-6
    ]
    if not at:
        return none
    end = at[-1]
    start = max((i for i in evals if i < end), default=-1)
    losses = [e["loss"] for e in log_history[start + 1 : end] if isinstance(e.get("loss"), int | float)]
    return {
        "train_loss": sum(losses) / len(losses) if losses else None,
        "dev_loss": log_history[end]["eval_loss"],
    }


def dev_history(log_history: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """``trial.json``'s ``dev_history``: one entry per development evaluation, in order.

    Args:
        log_history: ``trainer.state.log_history``.
        metric: the selection metric (``settings.metric``, with or without ``eval_``).

    Returns:
        ``[{"epoch", "step", "f1", "precision", "recall", "accuracy", "loss", "selection_metric",
        "selection_value"}]`` (a metric the task does not log is ``None``; fractions in [0, 1]).
    """
    name = metric.removeprefix("eval_")
    return [
        {
            "epoch": e.get("epoch"),
            "step": e.get("step"),
            **{k: e.get(f"eval_{k}") for k in HISTORY_METRICS},
            "selection_metric": name,
            "selection_value": e.get(f"eval_{name}"),
        }
        for e in log_history
        if "eval_loss" in e
    ]


def train_loss_history(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``trial.json``'s ``train_loss_history``: each logged training loss (the Trainer's mean over the
    steps since its previous log, every ``logging_steps`` optimizer steps) as ``{"step", "epoch", "loss",
    "learning_rate"}``."""
    return [
        {
            "step": e["step"],
            "epoch": e.get("epoch"),
            "loss": e["loss"],
            "learning_rate": e.get("learning_rate"),
        }
        for e in log_history
        if isinstance(e.get("loss"), int | float) and "step" in e
    ]


def write_trial_analysis(trial_dir: Path, task, results: dict[str, Any], info: dict[str, Any]) -> list[Path]:
    """Write ``classification_report.txt`` and ``errors.txt`` of one trial into ``trial_dir`` (atomically).

    Args:
        trial_dir: the trial's folder.
        task: the task adapter: its ``kind`` and its gold splits ``task.splits[name]``.
        results: ``{"dev": EvalResult, "test": EvalResult}`` (metrics and predicted tags / labels).
        info: ``best_epoch``, ``train_loss``, ``dev_loss``.

    Returns:
        The files written (none for a task kind without an analysis).
    """
    if task.kind == "ner":
        gold = {name: [s.tags for s in task.splits[name].sentences] for name in results}
        report = ner_classification_report(
            {name: (gold[name], r.predictions) for name, r in results.items()}, info
        )
        errors = ner_errors({name: (task.splits[name], r.predictions) for name, r in results.items()})
    elif task.kind == "re":
        report = re_classification_report({name: r.metrics for name, r in results.items()}, info)
        errors = re_errors({name: (task.splits[name], r.predictions) for name, r in results.items()})
    elif task.kind in ("qa", "yesno"):
        from downstream import qa_analysis

        write_report, write_errors = (
            (qa_analysis.qa_classification_report, qa_analysis.qa_errors) if task.kind == "qa"
            else (qa_analysis.yesno_classification_report, qa_analysis.yesno_errors)
        )  # fmt: skip
        report = write_report({name: r.metrics for name, r in results.items()}, info)
        errors = write_errors({name: (task.splits[name], r.predictions) for name, r in results.items()})
    else:
        return []
    paths = [Path(trial_dir) / "classification_report.txt", Path(trial_dir) / "errors.txt"]
    atomic_write_text(paths[0], report)
    atomic_write_text(paths[1], errors)
    return paths
