"""What ``bioelectra predict`` returns: tagged words and sentences, entities with character offsets, relation
labels with class probabilities, and the decoding of IOB2 tags into entities."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from downstream.predict.formats import Document

#: Entity type of bare ``B`` / ``I`` labels (BioBERT's untyped files) when the model's config has no
#: ``entity_type``.
UNTYPED_ENTITY = "entity"


class TaggedWord(NamedTuple):
    """One word of a document with its prediction (a named tuple: ``predict`` makes one per word, and a
    frozen dataclass took twice as long to build, 0.8 s per 230,000 words on the 2-core machine).

    Attributes:
        start: offset of its first character in the document text.
        end: offset after its last character (exclusive).
        tag: the IOB2 label predicted at its first sub-token.
        score: softmax probability of ``tag`` there, in [0, 1].
    """

    start: int
    end: int
    tag: str
    score: float


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its span in the document and its words (possibly none, e.g. only control characters)."""

    start: int
    end: int
    words: tuple[TaggedWord, ...]


@dataclass(frozen=True)
class Entity:
    """One entity mention.

    Attributes:
        document: the document's id.
        start: offset of its first character in the document text.
        end: offset after its last character (exclusive): ``text == document_text[start:end]``.
        text: the mention as written.
        type: the label's type (``Disease`` for ``B-Disease``; for bare ``B`` / ``I``: the config's
            ``entity_type`` when it has one, else :data:`UNTYPED_ENTITY`).
        score: mean over its words of the softmax probability of each word's predicted tag, in [0, 1].
        concept_id: the concept a linker gave it (``predict --linker``: MeSH ``D...``, ``OMIM:<n>``), else None.
        concept_name: that concept's name, else None.
        concept_score: the linker's score of the name it matched (:mod:`downstream.linking.predict`), else None.
    """

    document: str
    start: int
    end: int
    text: str
    type: str
    score: float
    concept_id: str | None = None
    concept_name: str | None = None
    concept_score: float | None = None


@dataclass(frozen=True)
class DocumentEntities:
    """The predictions for one document: its sentences with tagged words, and the entities decoded from them."""

    document: Document
    sentences: tuple[TaggedSentence, ...]
    entities: tuple[Entity, ...]


@dataclass(frozen=True)
class RelationPrediction:
    """The relation predicted for one sentence.

    Attributes:
        document: the input's id.
        sentence: the input text (with its placeholders).
        label: the arg-max label.
        probabilities: softmax probability of every label, in the model's label order (they sum to 1).
    """

    document: str
    sentence: str
    label: str
    probabilities: dict[str, float]


def decode_entities(tags: Sequence[str], *, untyped: str = UNTYPED_ENTITY) -> list[tuple[str, int, int]]:
    """Entity chunks of one sentence's IOB2 tags by the metrics' chunking (seqeval's default mode, conlleval's
    rules; :func:`downstream.ner.data.iob2_chunks`): a chunk starts at ``B-x``, or at an ``I-x`` that does not
    continue a chunk of type ``x``, and goes on while ``I-x`` follows. Bare ``B`` / ``I`` get the type ``untyped``.

    Returns:
        ``[(type, first_word, end_word), ...]`` with ``end_word`` exclusive.
    """
    from downstream.ner.data import iob2_chunks

    return [(untyped if kind is None else kind, start, end) for kind, start, end in iob2_chunks(tags)]
