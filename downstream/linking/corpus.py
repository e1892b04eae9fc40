"""Readers of the entity-linking corpora: the original NCBI-disease files and BC5CDR's PubTator files, with
their concept identifiers.

Format (both corpora; NCBI-disease: Doğan, Leaman & Lu, JBI 2014; BC5CDR: Li et al., Database 2016)::

    <PMID>|t|<title>
    <PMID>|a|<abstract>
    <PMID>\\t<start>\\t<end>\\t<mention>\\t<type>\\t<ids>[\\t<individual mentions>]
    <PMID>\\tCID\\t<chemical id>\\t<disease id>          (BC5CDR's relations: skipped)
    <blank line>

Offsets are 0-based, end exclusive, over ``title + " " + abstract``. ``<ids>``: MeSH ``D...`` / ``C...``,
OMIM as ``OMIM:n`` (NCBI-disease), a few ``MESH:`` prefixes, several concepts joined by ``|`` (alternatives,
or BC5CDR's composite mentions, which then carry a 7th column with the individual mentions joined by ``|``),
NCBI-disease's composite mentions joined by ``+``; ``-1`` is a mention without a concept (CUI-less), and
inside a list a part without one (BC5CDR dev: ``D002544|-1``).

Quirks handled, each checked on the files (``../shared/data/SOURCES.md``, section 13): an empty first line;
ids with stray spaces (``\\t D008661``, ``OMIM:106210 ``); a mention column with trailing spaces (its
stripped text must match the offsets); the ``MESH:`` / ``OMIM:`` prefixes (removed: the MEDIC vocabulary
writes bare MeSH ids and bare OMIM numbers, so an OMIM id is all digits); PMID 8528200 twice in NCBI-disease
train, whose second copy is skipped with a warning (BioSyn's ``preprocess/ncbi_disease_preprocess.py`` keeps
the first copy of a PMID too).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from bioelectra.textio import read_text
from downstream.errors import DataFormatError

logger = logging.getLogger(__name__)

#: A concept id once its prefix is removed: MeSH (``D`` or ``C`` and digits), an OMIM number, or MEDIC's root
#: concept ``C`` ("Diseases").
CONCEPT_ID = re.compile(r"[CD]\d+|\d+|C")

#: The id of a mention without a concept (CUI-less), in both corpora.
CUI_LESS = "-1"

#: The id column of a mention not linked, as ``bioelectra predict --format pubtator`` writes it.
NOT_LINKED = "-"

_TITLE_OR_ABSTRACT = re.compile(r"([^|\t]+)\|([ta])\|(.*)")


@dataclass(frozen=True)
class Mention:
    """One annotated mention.

    Attributes:
        pmid: the document's PubMed id.
        start, end: character offsets over ``title + " " + abstract`` (end exclusive).
        text: the mention as written (stripped).
        entity_type: the corpus' type (``SpecificDisease``, ``Modifier``..., ``Disease``, ``Chemical``).
        concept_ids: its concept ids, prefixes removed, in file order; ``()`` for a CUI-less mention (``-1``);
            a composite's part without a concept keeps ``-1`` in its place.
        id_separator: how the file joined several ids: ``"|"``, ``"+"`` (NCBI-disease's composites) or ``""``.
        parts: BC5CDR's individual mentions of a composite mention (7th column), else ``()``.
        line: the 1-based line of the file it came from.
    """

    pmid: str
    start: int
    end: int
    text: str
    entity_type: str
    concept_ids: tuple[str, ...]
    id_separator: str = ""
    parts: tuple[str, ...] = ()
    line: int = 0


@dataclass
class Document:
    """One abstract: title, abstract and its mentions (``text`` is what the offsets count in)."""

    pmid: str
    title: str
    abstract: str
    mentions: list[Mention] = field(default_factory=list)

    @property
    def text(self) -> str:
        return f"{self.title} {self.abstract}"


def parse_concept_ids(field_text: str, where: str) -> tuple[tuple[str, ...], str]:
    """The concept ids of an annotation's id column and their separator.

    Args:
        field_text: the column (``D001|OMIM:1234``, ``D004829+D003294``, `` D008661``, ``-1``...).
        where: ``file:line`` for the error.

    Returns:
        ``(ids, separator)``: ids without ``MESH:`` / ``OMIM:`` prefixes and spaces; ``((), "")`` for ``-1``
        alone (and for ``-``, an entity ``predict`` did not link); ``-1`` kept in a list
        (``D002544|-1`` -> ``("D002544", "-1")``).

    Raises:
        DataFormatError: an empty id, or one that is neither MeSH, OMIM nor ``-1`` (the value named).
    """
    value = field_text.strip()
    if value in (CUI_LESS, NOT_LINKED):
        return (), ""
    separator = "+" if "+" in value else "|" if "|" in value else ""
    ids = []
    for raw in re.split(r"[|+]", value):
        concept_id = raw.strip()
        for prefix in ("MESH:", "OMIM:"):
            if concept_id.upper().startswith(prefix):
                concept_id = concept_id[len(prefix):].strip()
        if not CONCEPT_ID.fullmatch(concept_id) and not (concept_id == CUI_LESS and separator):
            raise DataFormatError(
                f"{where}: concept id {raw!r} in {field_text!r}: expected a MeSH id (D... / C..., optionally "
                f"MESH:), OMIM:<number>, several joined by '|' or '+', or {CUI_LESS} (no concept)"
            )
        ids.append(concept_id)
    return tuple(ids), separator


def read_corpus(path: str | Path, *, entity_type: str | None = None) -> list[Document]:
    """The documents of an NCBI-disease or BC5CDR file (module docstring), with their mentions.

    Args:
        path: the file (``NCBItrainset_corpus.txt``, ``CDR_TestSet.PubTator.txt``, ...; ``.gz`` read too).
        entity_type: keep only the mentions of this type (``Disease``, ``Chemical``; any case); ``None``: all.

    Returns:
        The documents in file order; a PMID's second copy is skipped (logged).

    Raises:
        DataFormatError: a line that is not a title, abstract, annotation or relation line, an annotation of
            another document, bad offsets, a mention that does not match its offsets, a bad concept id, or a
            file without documents; each names the file and line and what was expected.
    """
    path = Path(path)
    documents: list[Document] = []
    seen: set[str] = set()
    current: Document | None = None

    def finish() -> None:
        nonlocal current
        if current is not None:
            if current.pmid in seen:
                logger.warning("%s: PMID %s appears again; its second copy is skipped", path, current.pmid)
            else:
                seen.add(current.pmid)
                documents.append(current)
        current = None

    wanted = entity_type.lower() if entity_type else None
    for lineno, raw in enumerate(read_text(path, error=DataFormatError).split("\n"), start=1):
        line = raw.rstrip("\r")
        where = f"{path}:{lineno}"
        if not line.strip():
            finish()
            continue
        head = _TITLE_OR_ABSTRACT.fullmatch(line) if "\t" not in line else None
        if head:
            pmid, part, text = head.groups()
            if part == "t":
                finish()
                current = Document(pmid=pmid, title=text, abstract="")
            elif current is None or current.pmid != pmid:
                raise DataFormatError(f"{where}: abstract of PMID {pmid} without its title line ({pmid}|t|...) before it")
            else:
                current.abstract = text
            continue
        columns = line.split("\t")
        if current is None:
            raise DataFormatError(f"{where}: expected a title line '<PMID>|t|<title>', got {line[:80]!r}")
        if columns[0] != current.pmid:
            raise DataFormatError(f"{where}: annotation of PMID {columns[0]!r} inside document {current.pmid}")
        if len(columns) == 4 and columns[1] == "CID":
            continue  # BC5CDR's chemical-induced-disease relations: not mentions
        if len(columns) not in (6, 7):
            raise DataFormatError(
                f"{where}: expected '<PMID>|t|', '<PMID>|a|', an annotation of 6 or 7 tab-separated columns "
                "(PMID, start, end, mention, type, ids[, individual mentions]) or a CID relation; got "
                f"{len(columns)} columns"
            )
        mention = _mention(columns, current, where, lineno)
        if wanted is None or mention.entity_type.lower() == wanted:
            current.mentions.append(mention)
    finish()
    if not documents:
        raise DataFormatError(f"{path}: no documents (expected '<PMID>|t|<title>' lines)")
    return documents


def _mention(columns: list[str], document: Document, where: str, lineno: int) -> Mention:
    """The mention of one annotation line (``columns``: 6 or 7 fields) of ``document``."""
    try:
        start, end = int(columns[1]), int(columns[2])
    except ValueError:
        raise DataFormatError(f"{where}: offsets {columns[1]!r}, {columns[2]!r}: expected two whole numbers") from None
    text = document.text
    if not 0 <= start < end <= len(text):
        raise DataFormatError(f"{where}: offsets {start}-{end} outside the document's {len(text)} characters")
    mention_text = columns[3].strip()
    if text[start:end] != mention_text:
        raise DataFormatError(f"{where}: mention {mention_text!r} does not match the text at {start}-{end}: {text[start:end]!r}")
    ids, separator = parse_concept_ids(columns[5], where)
    parts = tuple(p.strip() for p in columns[6].split("|")) if len(columns) == 7 else ()
    return Mention(
        pmid=document.pmid, start=start, end=end, text=mention_text, entity_type=columns[4].strip(),
        concept_ids=ids, id_separator=separator, parts=parts, line=lineno,
    )  # fmt: skip
