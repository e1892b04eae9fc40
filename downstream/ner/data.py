"""Named-entity recognition: readers for the benchmark files, label alignment, windowed model inputs.

Formats read (one token per line, a blank line between sentences):

- BioBERT TSV: ``token<TAB>tag`` with tags ``B`` / ``I`` / ``O`` (no entity type);
- typed IOB2: ``B-Disease``, ``I-Chemical``, several entity types in one file;
- CoNLL-style with several tab-separated columns: the token is the first column, the tag the last;
- ``-DOCSTART-`` lines (document boundaries, neither tokens nor sentences), CRLF line endings, a missing
  final blank line, ``.gz`` files.

Bare ``B`` / ``I`` tags get an entity type when one is given (``entity_type="Disease"``: ``B`` ->
``B-Disease``): the registry knows each dataset's type, ``--entity-type`` names it for other files. The
entities (spans) and so the metrics are the same; the saved model's labels then say what they find.

IOB1 input (an ``I-x`` that does not continue an entity of type ``x``: after ``O``, after another type,
or at the start of a sentence) is repaired to IOB2 (``I-x`` -> ``B-x``) with a warning that counts the
repairs (``iob1_policy="repair"``, the default), or rejected with an error naming the line
(``iob1_policy="reject"``).

Model inputs (windows at word boundaries, the first sub-token of a word labelled, every word predicted) are
:mod:`downstream.token_classification`'s, shared with the PICO kind; its names are importable from here too.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bioelectra.textio import atomic_open, read_text
from downstream.errors import DataFormatError
from downstream.settings import check_entity_type
from downstream.token_classification import (  # noqa: F401  (the token machinery, shared with PICO, named here too)
    IGNORE_INDEX,
    EncodedSplit,
    align_labels,
    encode_split,
    window_spans,
    word_pieces,
    word_predictions,
)

#: The token-classification pipeline's aggregation that matches training (model cards, ``bioelectra predict``).
# "first": a word takes the label of its first sub-token, the only one trained — continuation sub-tokens
# carry label -100 in training; "simple" would label the sub-token pieces on their own.
PIPELINE_AGGREGATION = "first"

logger = logging.getLogger(__name__)


_TAG_RE = re.compile(r"^(O|[BI])(?:-(.+))?$")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a NER file.

    Attributes:
        words: the tokens of the file's first column.
        tags: one IOB2 tag per word (after any IOB1 repair).
        line: 1-based line number of the sentence's first token in its file.
    """

    words: tuple[str, ...]
    tags: tuple[str, ...]
    line: int


@dataclass
class NerSplit:
    """The sentences of one file.

    Attributes:
        path: the file read.
        sentences: sentences in file order.
        num_repairs: IOB1 tags repaired to IOB2.
        num_documents: ``-DOCSTART-`` lines seen.
    """

    path: Path
    sentences: list[Sentence]
    num_repairs: int = 0
    num_documents: int = 0

    @property
    def num_words(self) -> int:
        return sum(len(s.words) for s in self.sentences)

    @property
    def num_entities(self) -> int:
        """Gold entity mentions (tags starting with ``B``), the way SOURCES.md and BioBERT count them."""
        return sum(1 for s in self.sentences for t in s.tags if t.startswith("B"))

    def counts(self) -> dict[str, int]:
        return {
            "sentences": len(self.sentences),
            "words": self.num_words,
            "entities": self.num_entities,
            "iob1_repairs": self.num_repairs,
        }


def _open_text(path: Path) -> str:
    """The file's text: ``.gz`` decompressed, a byte-order mark dropped, damage named (bioelectra.textio)."""
    return read_text(path, error=DataFormatError)


def parse_tag(tag: str) -> tuple[str, str | None]:
    """Split an IOB tag into its prefix and entity type: ``"B-Disease"`` -> ``("B", "Disease")``, ``"O"`` -> ``("O", None)``.

    Raises:
        ValueError: not ``O``, ``B``, ``I``, ``B-<type>`` or ``I-<type>``.
    """
    match = _TAG_RE.match(tag)
    if match is None or (match.group(1) == "O" and match.group(2) is not None):
        raise ValueError(f"tag {tag!r} is not O, B, I, B-<type> or I-<type>")
    return match.group(1), match.group(2)


def iob2_chunks(tags: Sequence[str]) -> list[tuple[str | None, int, int]]:
    """The entity chunks of one sentence's IOB2 tags by conlleval's rules, which are seqeval's default mode
    (the chunking of the NER metrics): a chunk starts at ``B-x``, or at an ``I-x`` that does not continue a
    chunk of type ``x`` (after ``O``, or after a chunk of another type), and goes on while ``I-x`` follows.
    ``tests/test_ner_reader.py`` checks it against seqeval's ``get_entities`` on every sequence of up to five
    tags over two types and the bare tags; it is ours so that ``predict`` does not import seqeval, whose
    metrics import scikit-learn (1.8 s of its start).

    Returns:
        ``[(type, first_word, end_word), ...]`` in order, ``end_word`` exclusive; ``type`` is ``None`` for
        bare ``B`` / ``I`` tags.

    Raises:
        ValueError: a tag that is not ``O``, ``B``, ``I``, ``B-<type>`` or ``I-<type>`` (:func:`parse_tag`).
    """
    chunks: list[tuple[str | None, int, int]] = []
    first, kind = -1, None  # the open chunk's first word (-1: none open) and type
    for i, tag in enumerate(tags):
        prefix, tag_type = ("O", None) if tag == "O" else parse_tag(tag)
        if first >= 0 and (prefix != "I" or tag_type != kind):
            chunks.append((kind, first, i))
            first = -1
        if prefix != "O" and first < 0:
            first, kind = i, tag_type
    if first >= 0:
        chunks.append((kind, first, len(tags)))
    return chunks


def read_ner_file(path: str | Path, *, iob1_policy: str = "repair", entity_type: str | None = None) -> NerSplit:
    """Read a NER file (BioBERT TSV, typed IOB2, or tab-separated CoNLL with the tag last).

    Args:
        path: the file (``.gz`` is decompressed).
        iob1_policy: ``"repair"`` (IOB1 ``I-x`` -> ``B-x``, counted and logged) or ``"reject"``.
        entity_type: the type given to bare ``B`` / ``I`` tags (``B`` -> ``B-Disease``); ``None`` keeps them
            bare. Typed tags are read as they are.

    Returns:
        The sentences and counts of the file.

    Raises:
        DataFormatError: a line without a tab, an empty token, an invalid tag, an IOB1 tag under
            ``iob1_policy="reject"``, or a file without sentences; the message names the file and line.
    """
    if iob1_policy not in ("repair", "reject"):
        raise ValueError(f"iob1_policy must be 'repair' or 'reject', got {iob1_policy!r}")
    if entity_type is not None:
        check_entity_type(entity_type)
    path = Path(path)
    text = _open_text(path)
    sentences: list[Sentence] = []
    words: list[str] = []
    tags: list[str] = []
    start_line = 0
    repairs = 0
    documents = 0

    def flush() -> None:
        nonlocal words, tags
        if words:
            sentences.append(Sentence(tuple(words), tuple(tags), start_line))
        words, tags = [], []

    # split("\n") rather than splitlines(): tokens may legitimately contain \x0b, \x1c, \u2028, ...
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            flush()
            continue
        if line.startswith("-DOCSTART-"):
            flush()
            documents += 1
            continue
        columns = line.split("\t")
        if len(columns) < 2:
            raise DataFormatError(f"{path}:{lineno}: expected 'token<TAB>tag' (tab-separated columns), got no tab in {line[:60]!r}")
        token, tag = columns[0], columns[-1].strip()
        if not token.strip():
            raise DataFormatError(f"{path}:{lineno}: empty token (expected 'token<TAB>tag')")
        try:
            prefix, etype = parse_tag(tag)
        except ValueError as exc:
            raise DataFormatError(f"{path}:{lineno}: {exc}") from None
        if etype is None and prefix != "O" and entity_type is not None:
            etype, tag = entity_type, f"{prefix}-{entity_type}"
        if prefix == "I":
            previous = tags[-1] if tags else "O"
            prev_prefix, prev_type = parse_tag(previous)
            if prev_prefix == "O" or prev_type != etype:
                if iob1_policy == "reject":
                    where = "at the start of a sentence" if not tags else f"after {previous!r}"
                    raise DataFormatError(
                        f"{path}:{lineno}: {tag!r} {where} is IOB1, not IOB2 (use --iob1 repair to convert it to B)"
                    )
                tag = "B" if etype is None else f"B-{etype}"
                repairs += 1
        if not words:
            start_line = lineno
        words.append(token)
        tags.append(tag)
    flush()
    if not sentences:
        raise DataFormatError(f"{path}: no sentences found (empty split); expected 'token<TAB>tag' lines")
    if repairs:
        logger.warning("%s: repaired %d IOB1 tags to IOB2 (I-x not continuing an entity -> B-x)", path, repairs)
    return NerSplit(path=path, sentences=sentences, num_repairs=repairs, num_documents=documents)


def build_label_list(splits: Iterable[NerSplit]) -> list[str]:
    """The label set: the union of tags over all splits, in a stable order.

    ``O`` first, then for each entity type in sorted order its ``B`` and ``I`` tags (untyped BioBERT tags
    ``B`` / ``I`` sort first). The order does not depend on which file a tag appears in first.
    """
    types: set[str | None] = set()
    for split in splits:
        for sentence in split.sentences:
            for tag in sentence.tags:
                prefix, etype = parse_tag(tag)
                if prefix != "O":
                    types.add(etype)
    labels = ["O"]
    for etype in sorted(types, key=lambda t: (t is not None, t or "")):
        labels += ["B", "I"] if etype is None else [f"B-{etype}", f"I-{etype}"]
    return labels


def write_conll_predictions(path: str | Path, split: NerSplit, predicted_tags: Sequence[Sequence[str]]) -> None:
    """Write ``token gold predicted`` lines (space-separated, CoNLL evaluation style), a blank line after
    each sentence. Written to a temporary name and renamed. Whitespace inside a token (a TSV token may hold
    spaces) is written as ``_``, so conlleval still sees three fields.
    """
    with atomic_open(path) as out:
        for sentence, predicted in zip(split.sentences, predicted_tags, strict=True):
            for word, gold, pred in zip(sentence.words, sentence.tags, predicted, strict=True):
                out.write(f"{'_'.join(word.split()) or '_'} {gold} {pred}\n")
            out.write("\n")
