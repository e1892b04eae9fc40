"""What a person reads after a NER trial (the layout of the analysis tools the project started from):

- the entity-level report per type with micro, macro and weighted averages (seqeval's
  ``classification_report`` in its default mode, the one the metrics use:
  :data:`downstream.ner.metrics.NER_METRIC_MODE`);
- the word-level report: precision, recall, F1 and support of each IOB2 tag over words, and their micro
  average over the entity tags (every tag but ``O``) (:func:`word_report`, :func:`word_micro_average`);
- the best epoch, its training loss and its validation loss;
- the sentences with at least one wrong tag as ``TOKEN / GOLD / PRED`` columns, and the entity errors by
  kind (:func:`sentence_errors`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from downstream.ner.metrics import NER_METRIC_MODE
from downstream.report_text import epoch_lines, split_title, table

#: The error kinds of :func:`sentence_errors`, in report order.
ERROR_KINDS = ("missed", "spurious", "wrong boundary", "wrong type")


Entity = tuple[str, int, int]  # (type, first word, last word), last inclusive


def entities(tags: Sequence[str]) -> list[Entity]:
    """The chunks of one sentence as the metrics chunk (seqeval's default mode; :func:`downstream.ner.data.iob2_chunks`):
    ``(type, first, last)``, bare tags typed ``"_"`` as seqeval names them."""
    from downstream.ner.data import iob2_chunks

    return [("_" if t is None else t, s, e - 1) for t, s, e in iob2_chunks(tags)]


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
    summary = ["error kinds (entities; see downstream/ner/analysis.py sentence_errors for the definitions):"]
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
