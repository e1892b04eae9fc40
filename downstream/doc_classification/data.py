"""Document-classification data: BLURB's HoC files (and any folder in their layout), read into sentences and
the abstracts they make up.

Layout (the output of BLURB's data-generation pipeline, ``preprocess_hoc_data``): a folder with
``train.tsv``, ``dev.tsv`` (or ``devel.tsv``) and ``test.tsv``; each a tab-separated UTF-8 file whose first
line is the header ``labels<TAB>sentence<TAB>index``, then one sentence per line:

- ``labels``: one ``k_v`` flag per label, comma-separated, ``k`` = 0, 1, ... in order and ``v`` 0 or 1
  (HoC: ten, the hallmarks of :data:`HOC_LABELS`);
- ``sentence``: the sentence's text (tokenised, with raw ``"`` characters: quoting is off, ``csv.QUOTE_NONE``);
- ``index``: ``<PMID>_s<n>``, the abstract and the sentence's number in it.

An abstract is its sentences grouped by PMID, in sentence-number order; its labels are the union of its
sentences' labels (BLURB's grouping: the evaluation keys each prediction by the text before the first ``_``
of ``index`` and unions the labels, ``eval_hoc`` in LinkBERT's BLURB code, michiyasunaga/LinkBERT
``src/seqcls/utils_hoc.py``). An abstract may carry no label at all (HoC: 272 of 1,852).
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from downstream.errors import DataFormatError, DatasetUnavailableError

#: The header of a document-classification file, in order.
DOC_COLUMNS = ("labels", "sentence", "index")

#: HoC's ten hallmarks of cancer in the files' flag order ``0_v`` .. ``9_v`` (Baker et al. 2016,
#: Bioinformatics 32(3):432; the order of ``LABELS`` in BLURB's and BLUE's HoC code).
HOC_LABELS = (
    "activating invasion and metastasis", "avoiding immune destruction", "cellular energetics",
    "enabling replicative immortality", "evading growth suppressors", "genomic instability and mutation",
    "inducing angiogenesis", "resisting cell death", "sustaining proliferative signaling",
    "tumor promoting inflammation",
)  # fmt: skip

_INDEX = re.compile(r"^(?P<doc>[^_\s]+)_s(?P<number>\d+)$")
_FLAG = re.compile(r"^(?P<k>\d+)_(?P<v>[01])$")


@dataclass
class DocSentence:
    """One sentence: ``index`` as the file gives it, ``doc_id`` (the PMID) and ``number`` parsed from it,
    ``text_a`` the sentence (``text_b`` always ``None``: single sentences), ``label`` its flags (a tuple of 0 /
    1, one per label), ``line`` its line in the file (1-based)."""

    index: str
    doc_id: str
    number: int
    text_a: str
    label: tuple[int, ...]
    line: int
    text_b: None = None


@dataclass
class DocSplit:
    """The sentences of one file and its abstracts: ``documents`` maps each PMID (in order of first
    appearance) to the positions in ``sentences`` of its sentences, in sentence-number order."""

    path: Path
    sentences: list[DocSentence]
    documents: dict[str, list[int]] = field(default_factory=dict)

    def document_labels(self) -> dict[str, frozenset[int]]:
        """Each abstract's gold labels (label positions): the union of its sentences'."""
        return {doc: frozenset(k for i in positions for k, v in enumerate(self.sentences[i].label) if v)
                for doc, positions in self.documents.items()}  # fmt: skip

    def keep_documents(self, n: int | None) -> None:
        """Keep the first ``n`` abstracts (all for ``None``) and their sentences."""
        if n is None or n >= len(self.documents):
            return
        kept = list(self.documents)[:n]
        positions = sorted(i for doc in kept for i in self.documents[doc])
        self.sentences = [self.sentences[i] for i in positions]
        self.documents = group_documents(self.sentences)

    def keep_sentences(self, n: int | None) -> None:
        """Keep the first ``n`` sentences in file order (all for ``None``) and the abstracts they belong to."""
        if n is None or n >= len(self.sentences):
            return
        self.sentences = self.sentences[:n]
        self.documents = group_documents(self.sentences)


def group_documents(sentences: list[DocSentence]) -> dict[str, list[int]]:
    """PMID -> positions of its sentences in ``sentences``, sorted by sentence number (abstracts in order of
    first appearance)."""
    documents: dict[str, list[int]] = {}
    for position, sentence in enumerate(sentences):
        documents.setdefault(sentence.doc_id, []).append(position)
    return {doc: sorted(positions, key=lambda i: sentences[i].number) for doc, positions in documents.items()}


def _flags(value: str, path: Path, line: int, expected: int | None) -> tuple[int, ...]:
    """The ``k_v`` flags of a ``labels`` field.

    Raises:
        DataFormatError: a flag not ``k_v``, ``k`` out of order, or another number of flags than ``expected``.
    """
    items = [item.strip() for item in value.split(",")]
    flags = []
    for k, item in enumerate(items):
        match = _FLAG.match(item)
        if match is None or int(match["k"]) != k:
            raise DataFormatError(f"{path}:{line}: label flag {item!r} at position {k}, expected {k}_0 or {k}_1")
        flags.append(int(match["v"]))
    if expected is not None and len(flags) != expected:
        raise DataFormatError(f"{path}:{line}: {len(flags)} label flags, expected {expected} as on the first line")
    return tuple(flags)


def read_doc_file(path: str | os.PathLike, *, num_labels: int | None = None) -> DocSplit:
    """The sentences and abstracts of one document-classification file (see the module docstring).

    Args:
        path: the file.
        num_labels: the number of label flags every line must have (default: as many as the first line's).

    Raises:
        DatasetUnavailableError: no such file.
        DataFormatError: another header, a line without three tab-separated fields, bad label flags, an
            ``index`` not ``<PMID>_s<n>``, a repeated ``index``, an empty sentence, or no sentence (file and
            line named).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetUnavailableError(f"{path}: no such file (expected a header {'<TAB>'.join(DOC_COLUMNS)} and one sentence per line)")
    sentences: list[DocSentence] = []
    seen: dict[str, int] = {}
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE, strict=False)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != DOC_COLUMNS:
            raise DataFormatError(f"{path}:1: header {header!r}, expected {'<TAB>'.join(DOC_COLUMNS)}")
        for row in reader:
            line = reader.line_num
            if not row or not any(f.strip() for f in row):
                continue
            if len(row) != len(DOC_COLUMNS):
                raise DataFormatError(f"{path}:{line}: {len(row)} fields, expected 3 (labels<TAB>sentence<TAB>index)")
            flags_field, text, index = (f.strip() for f in row)
            flags = _flags(flags_field, path, line, num_labels)
            num_labels = len(flags)
            match = _INDEX.match(index)
            if match is None:
                raise DataFormatError(f"{path}:{line}: index {index!r}, expected <PMID>_s<sentence number> such as 22239943_s0")
            if index in seen:
                raise DataFormatError(f"{path}:{line}: index {index!r} repeated (first on line {seen[index]})")
            if not text:
                raise DataFormatError(f"{path}:{line}: sentence {index!r} is empty")
            seen[index] = line
            sentences.append(DocSentence(index, match["doc"], int(match["number"]), text, flags, line))
    if not sentences:
        raise DataFormatError(f"{path}: no sentences (expected a header and one labels<TAB>sentence<TAB>index line per sentence)")
    return DocSplit(path, sentences, group_documents(sentences))


def label_names(num_labels: int) -> list[str]:
    """The names of ``num_labels`` label flags: HoC's hallmarks for ten, else ``label_0``, ``label_1`` ..."""
    if num_labels == len(HOC_LABELS):
        return list(HOC_LABELS)
    return [f"label_{k}" for k in range(num_labels)]


def find_doc_files(folder: str | os.PathLike) -> dict[str, Path]:
    """``train.tsv``, ``dev.tsv`` (or ``devel.tsv``) and ``test.tsv`` of ``folder``.

    Raises:
        DatasetUnavailableError: no folder, or a split file missing (what was expected listed).
    """
    from downstream.registry import find_split_files

    return find_split_files(Path(folder))
