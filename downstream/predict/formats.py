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

Text and JSONL files are read line by line and PubMed XML article by article (memory stays flat on a large
corpus). Output formats live in :mod:`downstream.predict.writers`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bioelectra.corpus import CorpusError, CorpusStats, read_pubmed_articles
from bioelectra.textio import BOM, GZIP_ERRORS, decode_utf8, gzip_problem, open_binary, read_bytes
from downstream.errors import DataFormatError, DownstreamError

#: The name standing for standard input among the input files.
STDIN = "-"
INPUT_FORMATS = ("auto", "text", "jsonl", "pubmed-xml", "tsv")


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


def iter_source_lines(source: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a text source read lazily (``.gz`` decompressed on the fly, standard input
    for ``"-"``), each line without its ``\n``, a UTF-8 byte-order mark at the start dropped.

    Raises:
        DownstreamError: a missing file.
        DataFormatError: bytes that are not UTF-8 (file, line and byte offset), a damaged gzip file.
    """
    name = _source_name(source)
    if str(source) == STDIN:
        handle = getattr(sys.stdin, "buffer", None)
        if handle is None:  # a text stream (tests)
            yield from ((n, line.rstrip("\n")) for n, line in enumerate(sys.stdin, start=1))
            return
        context = contextlib.nullcontext(handle)
    else:
        path = Path(source)
        if not path.is_file():
            raise DownstreamError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
        context = open_binary(path)
    consumed = 0
    with context as handle:
        try:
            for lineno, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataFormatError(f"{name}:{lineno}: expected UTF-8 text, got undecodable bytes at byte "
                                          f"{consumed + exc.start} ({exc.reason})") from None  # fmt: skip
                consumed += len(raw)
                if lineno == 1 and line.startswith(BOM):
                    line = line[1:]
                yield lineno, line[:-1] if line.endswith("\n") else line
        except GZIP_ERRORS as exc:
            raise DataFormatError(gzip_problem(Path(name), exc)) from None


def read_documents(
    sources: Sequence[str | os.PathLike],
    *,
    input_format: str = "auto",
    text_field: str = "text",
    id_field: str = "id",
    document_per_file: bool = False,
    stats: CorpusStats | None = None,
) -> Iterator[Document]:
    """The documents of ``sources`` in order (see the module docstring for the formats and ids).

    Args:
        sources: files, or ``"-"`` for standard input; an empty list reads standard input.
        input_format: ``auto``, ``text``, ``jsonl``, ``pubmed-xml`` or ``tsv``.
        text_field: JSONL field holding the text.
        id_field: JSONL field holding the document id (optional in each record).
        document_per_file: plain text only: each file is one document instead of one per line.
        stats: filled in place: ``empty_records``, the PubMed articles without title or abstract (no document).

    Raises:
        DownstreamError: a missing file, an unknown format.
        DataFormatError: a file with no document, bytes that are not UTF-8 (file and line), a JSONL line that
            is not an object or lacks ``text_field`` (file and line), XML that does not parse (file and line),
            a TSV line with another number of columns than the first or an empty sentence (file and line).
    """
    for source in sources or [STDIN]:
        kind = input_format_for(STDIN if str(source) == STDIN and input_format == "auto" else source, input_format)
        if kind == "pubmed-xml":
            documents = _pubmed_documents(source, stats)
        elif kind == "text" and document_per_file:
            name = _source_name(source)
            text = decode_utf8(_source_bytes(source), name, error=DataFormatError)
            documents = iter([Document(name, text)] if text.strip() else [])
        else:
            name = _source_name(source)
            lines = iter_source_lines(source)
            if kind == "jsonl":
                documents = _jsonl_documents(lines, name, text_field=text_field, id_field=id_field)
            elif kind == "tsv":
                documents = _tsv_documents(lines, name)
            else:
                documents = _line_documents(lines, name)
        count = 0
        for document in documents:
            count += 1
            yield document
        if count == 0:
            raise DataFormatError(f"{_source_name(source)}: empty input, no document to predict on (expected {kind})")


def _line_documents(lines: Iterable[tuple[int, str]], name: str) -> Iterator[Document]:
    for lineno, line in lines:
        line = line.rstrip("\r")
        if line.strip():
            yield Document(f"{name}:{lineno}", line)


def _jsonl_documents(lines: Iterable[tuple[int, str]], name: str, *, text_field: str, id_field: str) -> Iterator[Document]:
    for lineno, line in lines:
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


def _tsv_documents(lines: Iterable[tuple[int, str]], name: str) -> Iterator[Document]:
    columns: tuple[str, ...] | None = None
    for lineno, line in lines:
        line = line[:-1] if line.endswith("\r") else line
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


def _pubmed_documents(source: str | os.PathLike, stats: CorpusStats | None = None) -> Iterator[Document]:
    name = _source_name(source)
    handle = io.BytesIO(_source_bytes(source)) if str(source) == STDIN else None
    if handle is None and not Path(source).is_file():
        _source_bytes(source)  # raises the missing-file error
    try:
        for number, (pmid, lines) in enumerate(read_pubmed_articles(name, handle=handle, stats=stats), start=1):
            yield Document(pmid or f"{name}:{number}", "\n".join(lines))
    except CorpusError as exc:
        raise DataFormatError(str(exc)) from None
