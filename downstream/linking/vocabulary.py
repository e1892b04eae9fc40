"""Readers of the disease vocabularies: MEDIC (CTD's merged MeSH + OMIM disease vocabulary; Davis et al.,
Database 2012) in BioSyn's raw form, and CTD's own ``CTD_diseases.tsv``.

- **BioSyn's raw MEDIC** (``dmis-lab/BioSyn`` ``preprocess/resources/medic_06Jul2012.txt``, the input of its
  ``dictionary_preprocess.py``): one concept per line, ``<MeSH id>[|<OMIM number>...]||<name>[|<synonym>...]``,
  e.g. ``C567755|613097||Tooth Agenesis, Selective, 6|STHAG6``.
- **CTD's TSV** (``CTD_diseases.tsv[.gz]``, http://ctdbase.org/downloads/): ``#`` header lines, then 9 tab-
  separated columns ``DiseaseName, DiseaseID, AltDiseaseIDs, Definition, ParentIDs, TreeNumbers,
  ParentTreeNumbers, Synonyms, SlimMappings``; ids ``MESH:...`` / ``OMIM:...``, lists joined by ``|``. A
  concept's ids are its ``DiseaseID`` and its ``OMIM:`` / ``MESH:`` alternative ids (``DO:`` ids are left
  out: no corpus here uses them), prefixes removed as in :mod:`downstream.linking.corpus`.

CTD's data comes under CTD's terms (http://ctdbase.org/about/legal.jsp): cite CTD.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bioelectra.textio import read_text
from downstream.errors import DataFormatError
from downstream.linking.corpus import parse_concept_ids

#: The columns of CTD's ``CTD_diseases.tsv``, in order (its header's ``# Fields:`` line).
CTD_DISEASE_COLUMNS = (
    "DiseaseName", "DiseaseID", "AltDiseaseIDs", "Definition", "ParentIDs", "TreeNumbers",
    "ParentTreeNumbers", "Synonyms", "SlimMappings",
)  # fmt: skip


@dataclass(frozen=True)
class Concept:
    """One vocabulary concept: its ids (the first is the preferred one) and names (the first is preferred)."""

    concept_ids: tuple[str, ...]
    names: tuple[str, ...]


def read_medic(path: str | Path) -> list[Concept]:
    """The concepts of a MEDIC file in BioSyn's raw form (module docstring).

    Raises:
        DataFormatError: a line without ``||``, a bad id or no name (file, line and what was expected).
    """
    concepts = []
    for lineno, line in enumerate(read_text(path, error=DataFormatError).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        if "||" not in line:
            raise DataFormatError(f"{where}: expected '<MeSH id>[|<OMIM number>...]||<name>[|<synonym>...]', got {line[:80]!r}")
        id_text, name_text = line.split("||", 1)
        ids, _ = parse_concept_ids(id_text, where)
        names = tuple(name.strip() for name in name_text.split("|") if name.strip())
        if not ids or not names:
            raise DataFormatError(f"{where}: expected at least one concept id and one name, got {line[:80]!r}")
        concepts.append(Concept(concept_ids=ids, names=names))
    if not concepts:
        raise DataFormatError(f"{path}: no concepts")
    return concepts


def read_ctd_diseases(path: str | Path) -> list[Concept]:
    """The concepts of CTD's ``CTD_diseases.tsv`` (``.gz`` read too; module docstring).

    Raises:
        DataFormatError: a row without the 9 columns, a bad id or no name (file, line and what was expected).
    """
    concepts = []
    for lineno, line in enumerate(read_text(path, error=DataFormatError).split("\n"), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        where = f"{path}:{lineno}"
        columns = line.rstrip("\r").split("\t")
        if len(columns) != len(CTD_DISEASE_COLUMNS):
            raise DataFormatError(
                f"{where}: expected {len(CTD_DISEASE_COLUMNS)} tab-separated columns ({', '.join(CTD_DISEASE_COLUMNS)}), "
                f"got {len(columns)}"
            )
        row = dict(zip(CTD_DISEASE_COLUMNS, columns, strict=True))
        ids, _ = parse_concept_ids(row["DiseaseID"], where)
        for alt in row["AltDiseaseIDs"].split("|"):
            if alt.strip().upper().startswith(("OMIM:", "MESH:")):
                ids += parse_concept_ids(alt, where)[0]
        names = tuple(n.strip() for n in [row["DiseaseName"], *row["Synonyms"].split("|")] if n.strip())
        if not ids or not names:
            raise DataFormatError(f"{where}: expected a DiseaseID and a DiseaseName")
        concepts.append(Concept(concept_ids=tuple(dict.fromkeys(ids)), names=tuple(dict.fromkeys(names))))
    if not concepts:
        raise DataFormatError(f"{path}: no concepts")
    return concepts
