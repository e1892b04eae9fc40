"""Input and output formats of ``bioelectra predict`` (:mod:`downstream.predict.predictor`).

Inputs (``input_format``, ``"auto"`` chooses by the file name, ``.gz`` accepted):

==============  =========================================================================================
``text``        one document per line (id ``<file>:<line>``; blank lines are no document), or with
                ``document_per_file`` the whole file as one document (id: the file name as given).
``jsonl``       one JSON object per line; the text in ``text_field`` (a string), the id in ``id_field``
                (default ``id``), ``<file>:<line>`` where the record has none.
``pubmed-xml``  PubMed / MEDLINE XML: one document per ``PubmedArticle``, id = PMID, text = the title and
                each ``AbstractText`` joined by line breaks (read by :mod:`bioelectra.corpus`).
``tsv``         relation extraction TSV (``.tsv``): the files :func:`downstream.relation.data.read_re_file` reads
                (``index<TAB>sentence<TAB>label``, ``sentence<TAB>label``, with or without a header) and
                label-less ``index<TAB>sentence``; one document per sentence, id = the ``index`` column,
                else ``<file>:<line>``; a gold label column is not read.
==============  =========================================================================================

``-`` reads standard input (``text`` unless ``input_format`` says otherwise; its ids say ``stdin``).

Outputs of entities (:func:`write_entities_jsonl`, :func:`write_conll`, :func:`write_brat`) and of relation
labels (:func:`write_relations_jsonl`). Offsets are Python string indices (Unicode code points) into the
document's text exactly as read, end exclusive: ``text == document.text[start:end]``.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bioelectra.corpus import CorpusError, read_pubmed_articles
from bioelectra.textio import atomic_write_text, decode_utf8, read_bytes
from downstream.errors import DataFormatError, DownstreamError

#: The name standing for standard input among the input files.
STDIN = "-"
INPUT_FORMATS = ("auto", "text", "jsonl", "pubmed-xml", "tsv")
OUTPUT_FORMATS = ("jsonl", "conll", "brat")


@dataclass(frozen=True)
class Document:
    """One input text.

    Attributes:
        id: where it came from (``<file>:<line>``, a JSONL record's id, a PMID, a file name).
        text: the text; every offset of a prediction points into it.
    """

    id: str
    text: str


def input_format_for(source: str | os.PathLike, input_format: str = "auto") -> str:
    """The format of ``source``: ``input_format`` unless ``"auto"``, then by the name (``.jsonl`` -> jsonl,
    ``.xml`` -> pubmed-xml, ``.tsv`` -> tsv, anything else and standard input -> text; a ``.gz`` ending is
    looked through).

    Raises:
        DownstreamError: an unknown ``input_format``.
    """
    if input_format not in INPUT_FORMATS:
        raise DownstreamError(f"--input-format {input_format!r}: expected one of {', '.join(INPUT_FORMATS)}")
    if input_format != "auto":
        return input_format
    name = str(source).lower()
    name = name[:-3] if name.endswith(".gz") else name
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".xml"):
        return "pubmed-xml"
    if name.endswith(".tsv"):
        return "tsv"
    return "text"


def _source_name(source: str | os.PathLike) -> str:
    return "stdin" if str(source) == STDIN else str(source)


def _source_bytes(source: str | os.PathLike) -> bytes:
    if str(source) == STDIN:
        stream = getattr(sys.stdin, "buffer", None)
        return stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    path = Path(source)
    if not path.is_file():
        raise DownstreamError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    return read_bytes(path, error=DataFormatError)


def read_documents(
    sources: Sequence[str | os.PathLike],
    *,
    input_format: str = "auto",
    text_field: str = "text",
    id_field: str = "id",
    document_per_file: bool = False,
) -> Iterator[Document]:
    """The documents of ``sources`` in order (see the module docstring for the formats and ids).

    Args:
        sources: files, or ``"-"`` for standard input; an empty list reads standard input.
        input_format: ``auto``, ``text``, ``jsonl``, ``pubmed-xml`` or ``tsv``.
        text_field: JSONL field holding the text.
        id_field: JSONL field holding the document id (optional in each record).
        document_per_file: plain text only: each file is one document instead of one per line.

    Raises:
        DownstreamError: a missing file, an unknown format.
        DataFormatError: a file with no document, bytes that are not UTF-8 (file and line), a JSONL line that
            is not an object or lacks ``text_field`` (file and line), XML that does not parse (file and line),
            a TSV line with another number of columns than the first or an empty sentence (file and line).
    """
    for source in sources or [STDIN]:
        kind = input_format_for(STDIN if str(source) == STDIN and input_format == "auto" else source, input_format)
        if kind == "pubmed-xml":
            documents = _pubmed_documents(source)
        else:
            name = _source_name(source)
            text = decode_utf8(_source_bytes(source), name, error=DataFormatError)
            if kind == "jsonl":
                documents = _jsonl_documents(text, name, text_field=text_field, id_field=id_field)
            elif kind == "tsv":
                documents = _tsv_documents(text, name)
            elif document_per_file:
                documents = iter([Document(name, text)] if text.strip() else [])
            else:
                documents = _line_documents(text, name)
        count = 0
        for document in documents:
            count += 1
            yield document
        if count == 0:
            raise DataFormatError(f"{_source_name(source)}: empty input, no document to predict on (expected {kind})")


def _line_documents(text: str, name: str) -> Iterator[Document]:
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if line.strip():
            yield Document(f"{name}:{lineno}", line)


def _jsonl_documents(text: str, name: str, *, text_field: str, id_field: str) -> Iterator[Document]:
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{name}:{lineno}: expected one JSON object per line: {exc.msg}") from None
        if not isinstance(record, dict):
            raise DataFormatError(f"{name}:{lineno}: expected a JSON object with field {text_field!r}, got {type(record).__name__}")
        if text_field not in record:
            raise DataFormatError(f"{name}:{lineno}: no field {text_field!r} (--text-field); the record has {sorted(record)}")
        value = record[text_field]
        if not isinstance(value, str):
            raise DataFormatError(f"{name}:{lineno}: field {text_field!r} must be a string, got {type(value).__name__}")
        doc_id = record.get(id_field)
        yield Document(f"{name}:{lineno}" if doc_id is None else str(doc_id), value)


#: Header lines of relation extraction TSV files (columns lower-cased): those downstream.relation.data reads, and the
#: label-less forms of unlabelled data.
TSV_HEADERS = (("index", "sentence", "label"), ("sentence", "label"), ("index", "sentence"), ("sentence",))


def _looks_like_sentence(cell: str) -> bool:
    """A sentence has a space or an entity placeholder; an index (``0``, ``10064839.T1.T2``) and a label
    (``CPR:3``, ``false``) have neither."""
    from downstream.relation.data import PLACEHOLDERS

    return any(c.isspace() for c in cell.strip()) or any(t in cell for t in PLACEHOLDERS)


def tsv_columns(first_line: str) -> tuple[tuple[str, ...], bool]:
    """The column names of a relation extraction TSV file from its first line, and whether that line is a
    header. Without a header: 3 columns are ``index, sentence, label`` and 2 are ``sentence, label`` (the
    forms :func:`downstream.relation.data.read_re_file` reads) unless only the second column looks like a sentence
    (has a space or a placeholder): then ``index, sentence``; 1 column is the sentence.

    Raises:
        DataFormatError: more than 3 columns (the message has no file name; the caller adds it).
    """
    cells = first_line.split("\t")
    header = tuple(c.strip().lower() for c in cells)
    if header in TSV_HEADERS:
        return header, True
    if len(cells) == 3:
        return ("index", "sentence", "label"), False
    if len(cells) == 2:
        if _looks_like_sentence(cells[1]) and not _looks_like_sentence(cells[0]):
            return ("index", "sentence"), False
        return ("sentence", "label"), False
    if len(cells) == 1:
        return ("sentence",), False
    raise DataFormatError(f"expected 'index<TAB>sentence[<TAB>label]' or 'sentence<TAB>label', got {len(cells)} columns")


def _tsv_documents(text: str, name: str) -> Iterator[Document]:
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    columns: tuple[str, ...] | None = None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if columns is None:
            try:
                columns, header = tsv_columns(line)
            except DataFormatError as exc:
                raise DataFormatError(f"{name}:{lineno}: {exc}") from None
            if header:
                continue
        cells = line.split("\t")
        if len(cells) != len(columns):
            raise DataFormatError(f"{name}:{lineno}: expected {len(columns)} tab-separated columns "
                                  f"({'<TAB>'.join(columns)}, as the first line), got {len(cells)}")  # fmt: skip
        row = dict(zip(columns, (c.strip() for c in cells), strict=True))
        if not row["sentence"]:
            raise DataFormatError(f"{name}:{lineno}: empty sentence")
        yield Document(row["index"] if row.get("index") else f"{name}:{lineno}", row["sentence"])


def _pubmed_documents(source: str | os.PathLike) -> Iterator[Document]:
    name = _source_name(source)
    handle = io.BytesIO(_source_bytes(source)) if str(source) == STDIN else None
    if handle is None and not Path(source).is_file():
        _source_bytes(source)  # raises the missing-file error
    try:
        for number, (pmid, lines) in enumerate(read_pubmed_articles(name, handle=handle), start=1):
            yield Document(pmid or f"{name}:{number}", "\n".join(lines))
    except CorpusError as exc:
        raise DataFormatError(str(exc)) from None


# --- outputs -------------------------------------------------------------------------------------------------


def entity_record(entity) -> dict:
    """The JSON object of one entity: ``{"document", "start", "end", "text", "type", "score"}``."""
    return {"document": entity.document, "start": entity.start, "end": entity.end, "text": entity.text,
            "type": entity.type, "score": round(float(entity.score), 6)}  # fmt: skip


def write_entities_jsonl(handle: TextIO, predictions: Iterable) -> None:
    """One JSON line per entity of each :class:`~downstream.predict.predictor.DocumentEntities`, in document order."""
    for prediction in predictions:
        for entity in prediction.entities:
            handle.write(json.dumps(entity_record(entity), ensure_ascii=False) + "\n")


def write_conll(handle: TextIO, predictions: Iterable) -> None:
    """``word<TAB>tag`` per word, a blank line after each sentence, ``-DOCSTART- <id>`` and a blank line before
    each document (the layout :func:`downstream.ner.data.read_ner_file` reads)."""
    for prediction in predictions:
        text = prediction.document.text
        handle.write(f"-DOCSTART- {prediction.document.id}\n\n")
        for sentence in prediction.sentences:
            if not sentence.words:
                continue
            handle.write("".join(f"{text[w.start:w.end]}\t{w.tag}\n" for w in sentence.words) + "\n")


def write_relations_jsonl(handle: TextIO, predictions: Iterable) -> None:
    """One JSON line per sentence: ``{"document", "sentence", "label", "probabilities": {label: p}}``."""
    for p in predictions:
        record = {"document": p.document, "sentence": p.sentence, "label": p.label,
                  "probabilities": {k: round(float(v), 6) for k, v in p.probabilities.items()}}  # fmt: skip
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_stem(document_id: str) -> str:
    """A file name stem for a document id: runs of characters other than letters, digits, ``.``, ``_`` and
    ``-`` become ``_`` (``data/a.txt:3`` -> ``data_a.txt_3``); never empty, never starting with a dot."""
    stem = _UNSAFE.sub("_", document_id).strip("_") or "document"
    return "_" + stem if stem.startswith(".") else stem


def write_brat(folder: str | os.PathLike, predictions: Iterable) -> int:
    """BRAT standoff: ``<safe id>.txt`` (the document's text) and ``<safe id>.ann`` (``T1<TAB>Disease 10
    37<TAB>Duchenne muscular dystrophy``) per document in ``folder`` (created), each written atomically. Two
    ids with the same safe stem get ``-2``, ``-3`` ... appended.

    Returns:
        The number of documents written.

    Raises:
        DownstreamError: ``folder`` exists and is not a folder.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise DownstreamError(f"--output {folder}: BRAT output needs a folder, and this is a file")
    folder.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    count = 0
    for prediction in predictions:
        stem = base = safe_file_stem(prediction.document.id)
        n = 1
        while stem.lower() in used:
            n += 1
            stem = f"{base}-{n}"
        used.add(stem.lower())
        lines = [f"T{i}\t{e.type} {e.start} {e.end}\t{e.text}" for i, e in enumerate(prediction.entities, start=1)]
        atomic_write_text(folder / f"{stem}.txt", prediction.document.text)
        atomic_write_text(folder / f"{stem}.ann", "".join(line + "\n" for line in lines))
        count += 1
    return count

