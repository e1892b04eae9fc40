"""CoNLL-2000 chunking files (Tjong Kim Sang & Buchholz, 2000) read as tagging data of the NER kind.

Chunking is the same problem as NER to the model and to the scorer: one IOB2 tag per word, phrases are
maximal ``B-x I-x ...`` runs, and the score is conlleval's phrase-level F1 (seqeval's default mode,
:mod:`downstream.ner.metrics`), per chunk type (``NP``, ``VP``, ``PP`` ...). So chunking is a dataset of the
NER kind (``--loader ner --dataset chunk``), read by this module, not a kind of its own.

Format (the shared task's ``train.txt`` / ``test.txt``): one token per line, ``word POS chunk-tag``
separated by single spaces, a blank line between sentences. Tags are IOB2 already (``B-NP``, ``I-NP``,
``O``); every chunk type must be one of the shared task's eleven (:data:`CHUNK_TYPES`).

A file of another shape (two or four columns, tab-separated) is named at its first line that does not fit,
with what was expected, when the folder is read as CoNLL-2000 (``--dataset chunk``) and when it is laid out
as one (``train.txt`` and one of dev / test) but read as nothing else.

Splits: the shared task has a training and a test file only. The original ELECTRA code reads
``finetuning_data/chunk/(train|dev).txt`` with the test file in place of ``dev.txt`` and reports that set; a
folder with ``train.txt`` and only one of ``dev.txt`` / ``test.txt`` is read the same way here, the missing
split being the same file (:func:`find_chunk_files`, which says so).

The data is not shipped (Penn Treebank WSJ text): the shared task's page
(https://www.clips.uantwerpen.be/conll2000/chunking/) and NLTK's ``conll2000`` corpus
(``python -m nltk.downloader conll2000``) have the two files.
"""

from __future__ import annotations

import logging
from pathlib import Path

from bioelectra.textio import iter_lines, read_text
from downstream.errors import DataFormatError, DatasetUnavailableError
from downstream.ner.data import NerSplit, Sentence, parse_tag

logger = logging.getLogger(__name__)

#: The chunk types of CoNLL-2000 (the shared task's description, section 2).
CHUNK_TYPES = ("ADJP", "ADVP", "CONJP", "INTJ", "LST", "NP", "PP", "PRT", "SBAR", "UCP", "VP")

#: Where to get the files (they are not shipped: Penn Treebank WSJ text).
CHUNK_SOURCE = (
    "https://www.clips.uantwerpen.be/conll2000/chunking/ (train.txt.gz, test.txt.gz), or NLTK's conll2000 "
    "corpus (python -m nltk.downloader conll2000: nltk_data/corpora/conll2000/train.txt, test.txt)"
)

_EXPECTED = "'word POS chunk-tag' (3 space-separated columns, CoNLL-2000)"


def line_shape_problem(line: str) -> str | None:
    """What keeps a non-blank line from the CoNLL-2000 shape (three non-empty columns separated by single
    spaces, no tab): ``"got a tab in ..."``, ``"got 2 column(s) in ..."``; ``None`` when it fits."""
    if "\t" in line:
        return f"got a tab in {line[:60]!r}"
    columns = line.split(" ")
    if len(columns) != 3 or not all(columns):
        return f"got {len(line.split())} column(s) in {line[:60]!r}"
    return None


def is_conll2000_file(path: str | Path) -> bool:
    """Whether ``path`` looks like a CoNLL-2000 file: its first non-blank line has no tab and three
    space-separated columns, the last an IOB tag. (BioBERT's NER files are tab-separated.)"""
    lines = iter_lines(Path(path), error=DataFormatError)
    try:
        for line in lines:
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            columns = line.split(" ")
            if "\t" in line or len(columns) != 3:
                return False
            parse_tag(columns[2])
            return True
    except (DataFormatError, UnicodeDecodeError, ValueError):
        return False
    finally:
        lines.close()  # the file, left after its first line
    return False


def read_conll2000_file(path: str | Path, *, chunk_types: tuple[str, ...] = CHUNK_TYPES) -> NerSplit:
    """Read a CoNLL-2000 chunking file (``.gz`` is decompressed): words and IOB2 chunk tags (the POS column
    is read and checked, not used).

    Args:
        path: the file.
        chunk_types: the chunk types allowed in tags.

    Returns:
        The sentences (``NerSplit``; ``entities`` counts the chunks).

    Raises:
        DataFormatError: a line without exactly three space-separated columns, an empty column, a tag that is
            not ``O`` / ``B-<type>`` / ``I-<type>`` with a known type, an ``I-x`` that does not continue a
            chunk of type ``x`` (not IOB2), or a file without sentences; the message names the file and line
            and says what was expected.
    """
    path = Path(path)
    text = read_text(path, error=DataFormatError)
    sentences: list[Sentence] = []
    words: list[str] = []
    tags: list[str] = []
    start = 0
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            if words:
                sentences.append(Sentence(tuple(words), tuple(tags), start))
            words, tags = [], []
            continue
        problem = line_shape_problem(line)
        if problem:
            raise DataFormatError(f"{path}:{lineno}: expected {_EXPECTED}, {problem}")
        columns = line.split(" ")
        tag = columns[2]
        try:
            prefix, chunk_type = parse_tag(tag)
        except ValueError:
            prefix, chunk_type = "", None
        if prefix not in ("O", "B", "I") or (prefix != "O" and chunk_type not in chunk_types):
            raise DataFormatError(
                f"{path}:{lineno}: unknown chunk tag {tag!r}; expected O, B-<type> or I-<type> with <type> one of {', '.join(chunk_types)}"
            )
        if prefix == "I" and (not tags or tags[-1][2:] != chunk_type or tags[-1] == "O"):
            where = "at the start of a sentence" if not tags else f"after {tags[-1]!r}"
            raise DataFormatError(f"{path}:{lineno}: {tag!r} {where} does not continue a {chunk_type} chunk (expected IOB2 tags)")
        if not words:
            start = lineno
        words.append(columns[0])
        tags.append(tag)
    if words:
        sentences.append(Sentence(tuple(words), tuple(tags), start))
    if not sentences:
        raise DataFormatError(f"{path}: no sentences found (empty split); expected {_EXPECTED} lines")
    return NerSplit(path=path, sentences=sentences)


def find_chunk_files(folder: str | Path, *, chunking: bool = False) -> tuple[dict[str, Path], dict[str, str]] | None:
    """The split files of a CoNLL-2000 folder, or ``None`` when ``folder``'s training file is not in the
    CoNLL-2000 format (another reader's folder) and ``chunking`` is false.

    ``train`` is required; ``dev`` and ``test`` (``dev.txt`` / ``devel.txt``, ``test.txt``; ``.gz`` accepted):
    when only one is there, the other split is the same file, as the original ELECTRA code evaluates
    chunking on the test set given as ``dev.txt``.

    Args:
        folder: the data folder.
        chunking: the folder must be CoNLL-2000 (``--dataset chunk``): a training file of another shape is an
            error at its first line that does not fit.

    Returns:
        ``({"train", "dev", "test"}: path, notes)`` where ``notes`` says, per split, which file stands in.

    Raises:
        DatasetUnavailableError: a CoNLL-2000 training file but neither a dev nor a test file.
        DataFormatError: ``chunking`` and a training file that is not CoNLL-2000 (file, line, what was expected).
    """
    from downstream.registry import SPLIT_SUFFIXES, find_named_splits

    folder = Path(folder)
    if not folder.is_dir():
        return None
    found = find_named_splits(folder, SPLIT_SUFFIXES)
    if "train" not in found:
        return None
    if not is_conll2000_file(found["train"]):
        if chunking:
            read_conll2000_file(found["train"])  # raises at the first line that does not fit
        return None
    notes: dict[str, str] = {}
    if "dev" not in found and "test" not in found:
        raise DatasetUnavailableError(
            f"{folder}: {found['train'].name} but no test.txt nor dev.txt (expected train.txt and test.txt; the "
            f"CoNLL-2000 files are at {CHUNK_SOURCE})"
        )
    for missing, present in (("dev", "test"), ("test", "dev")):
        if missing not in found:
            found[missing] = found[present]
            notes[missing] = f"{missing} is the {present} file {found[present].name} (no {missing} file; the original ELECTRA code evaluates chunking on the test set)"
    return {name: found[name] for name in ("train", "dev", "test")}, notes


def read_tagging_file(path: str | Path, *, iob1_policy: str = "repair", entity_type: str | None = None) -> NerSplit:
    """A NER-kind file by its format: CoNLL-2000 (:func:`is_conll2000_file`) with :func:`read_conll2000_file`,
    anything else with :func:`downstream.ner.data.read_ner_file` (its options apply there only).

    Raises:
        DataFormatError: as the reader of the file's format.
    """
    from downstream.ner.data import read_ner_file

    if is_conll2000_file(path):
        return read_conll2000_file(path)
    return read_ner_file(path, iob1_policy=iob1_policy, entity_type=entity_type)


def find_tagging_files(folder: str | Path, *, chunking: bool = False) -> dict[str, Path]:
    """The split files of a NER-kind folder: a CoNLL-2000 folder's (:func:`find_chunk_files`: a missing dev
    or test split is the other one's file), else ``train`` / ``dev`` / ``test`` as
    :func:`downstream.registry.find_split_files` finds them.

    Args:
        folder: the data folder.
        chunking: the folder must be CoNLL-2000 (``--dataset chunk``, :func:`find_chunk_files`).

    Raises:
        DatasetUnavailableError: a missing folder or split file (what was expected listed; for a folder laid out
            as CoNLL-2000, ``train.txt`` and one of dev / test, also the first line of the training file that is
            not CoNLL-2000).
        DataFormatError: ``chunking`` and a training file that is not CoNLL-2000.
    """
    from downstream.registry import SPLIT_SUFFIXES, find_named_splits, find_split_files

    chunk = find_chunk_files(folder, chunking=chunking)
    if chunk is not None:
        return chunk[0]
    try:
        return find_split_files(Path(folder))
    except DatasetUnavailableError as exc:
        found = find_named_splits(Path(folder), SPLIT_SUFFIXES) if Path(folder).is_dir() else {}
        named = "train" in found and found["train"].name.endswith((".txt", ".txt.gz"))
        if not named or ("dev" in found) == ("test" in found):
            raise
        try:  # laid out as CoNLL-2000: say why it is not read as such
            read_conll2000_file(found["train"])
        except DataFormatError as problem:
            raise DatasetUnavailableError(f"{exc}; nor is it a CoNLL-2000 chunking folder: {problem}") from None
        raise
