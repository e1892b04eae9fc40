"""EBM PICO files in BLURB's form built from a copy of EBM-NLP 2.00: the training file that BLURB's dev and test
files come without (``../shared/data`` has no ``train.tsv``), for the PMIDs of BLURB's split list.

The rules are those of EBM-NLP's own ``models/lstm-crf/build_data.py`` (``preprocess_data``, its ``p1_all`` group),
which BLURB's data-generation step for EBM PICO follows (``../shared/data/pico/ebm-pico/PROVENANCE.md``):

- a document's tokens are ``documents/<PMID>.tokens`` split on whitespace;
- for each element in the order participants, interventions, outcomes, the aggregated starting-span labels
  ``annotations/aggregated/starting_spans/<element>/train/<PMID>.AGGREGATED.ann`` (test: ``test/gold/``) give
  one label per token, ``0`` or not (separated by commas, as EBM-NLP's ``ebm_nlp_demo.py`` reads them, or by
  whitespace, as ``build_data.py`` does: both are read); a token takes the tag of the **last** element that labels it (where spans
  overlap, outcomes win over interventions, interventions over participants), ``O`` when none does;
- a sentence ends after each ``.`` token; a document starts with ``-DOCSTART- (<PMID>)`` and a blank line
  (a document whose last token is not ``.`` gets a closing blank line, where ``build_data.py`` writes the
  next ``-DOCSTART-`` right after it: the sentences read are the same).

The tags are written in BLURB's IO form: ``I-PAR``, ``I-INT``, ``I-OUT``, ``O``. Nye et al., ACL 2018;
https://github.com/bepnye/EBM-NLP (``ebm_nlp_2_00.tar.gz``). Use::

    from downstream.pico.ebm_nlp import build_ebm_pico_file, read_pmid_list
    build_ebm_pico_file("ebm_nlp_2_00", read_pmid_list("split_pmids/train_pmid.tsv"), "ebm-pico/train.tsv")
"""

from __future__ import annotations

import re
from pathlib import Path

from bioelectra.textio import atomic_open, read_text
from downstream.errors import DataFormatError, DatasetUnavailableError

#: EBM-NLP's element folders in ``build_data.py``'s order (a later one wins an overlap) and BLURB's tag of each.
EBM_NLP_ELEMENTS = (("participants", "I-PAR"), ("interventions", "I-INT"), ("outcomes", "I-OUT"))


def ebm_nlp_root(folder: str | Path) -> Path:
    """The EBM-NLP 2.00 folder (the one holding ``documents/`` and ``annotations/``): ``folder`` or its
    ``ebm_nlp_2_00/``.

    Raises:
        DatasetUnavailableError: neither holds both (where to get the corpus named).
    """
    folder = Path(folder)
    for candidate in (folder, folder / "ebm_nlp_2_00"):
        if (candidate / "documents").is_dir() and (candidate / "annotations").is_dir():
            return candidate
    raise DatasetUnavailableError(
        f"{folder}: no EBM-NLP 2.00 corpus (expected documents/ and annotations/ in it or in its ebm_nlp_2_00/; "
        "get ebm_nlp_2_00.tar.gz from https://github.com/bepnye/EBM-NLP and unpack it)"
    )


def read_pmid_list(path: str | Path) -> list[str]:
    """BLURB's split list (``split_pmids/train_pmid.tsv``: PMIDs separated by commas, on one line), in its order.

    Raises:
        DataFormatError: an entry that is not a number, or no entry (file named).
    """
    path = Path(path)
    pmids = [p for p in re.split(r"[,\s]+", read_text(path, error=DataFormatError)) if p]
    bad = [p for p in pmids if not p.isdigit()]
    if bad or not pmids:
        raise DataFormatError(f"{path}: expected PMIDs separated by commas, got {bad[0]!r}" if bad else f"{path}: no PMID")
    return pmids


def ebm_nlp_document(root: Path, pmid: str, *, part: str = "train") -> tuple[list[str], list[str]]:
    """One document's tokens and BLURB tags (module docstring).

    Args:
        root: the EBM-NLP 2.00 folder (:func:`ebm_nlp_root`).
        pmid: the document.
        part: the annotations' folder, ``train`` or ``test/gold``.

    Raises:
        DataFormatError: no tokens file, an element without its ``.ann`` file, or labels that do not number the
            tokens (files named).
    """
    tokens_file = root / "documents" / f"{pmid}.tokens"
    if not tokens_file.is_file():
        raise DataFormatError(f"{tokens_file}: missing (PMID {pmid} of the split list is not in this EBM-NLP copy)")
    tokens = read_text(tokens_file, error=DataFormatError).split()
    tags = ["O"] * len(tokens)
    for element, tag in EBM_NLP_ELEMENTS:
        folder = root / "annotations" / "aggregated" / "starting_spans" / element / part
        found = sorted(folder.glob(f"{pmid}.*ann"))
        if not found:
            raise DataFormatError(f"{folder}: no {pmid}.AGGREGATED.ann (the {element} of PMID {pmid})")
        labels = [x for x in re.split(r"[,\s]+", read_text(found[0], error=DataFormatError)) if x]
        if len(labels) != len(tokens):
            raise DataFormatError(f"{found[0]}: {len(labels)} labels for the {len(tokens)} tokens of {tokens_file.name}")
        for index, label in enumerate(labels):
            if label != "0":
                tags[index] = tag
    return tokens, tags


def build_ebm_pico_file(folder: str | Path, pmids: list[str], output: str | Path, *, part: str = "train") -> dict[str, int]:
    """Write the EBM PICO file of ``pmids`` (in their order) in BLURB's form to ``output`` (through a temporary
    name: a failure leaves no half-written file).

    Returns:
        ``{"documents", "sentences", "tokens"}`` written.

    Raises:
        DatasetUnavailableError: ``folder`` is not an EBM-NLP 2.00 copy.
        DataFormatError: a document's files are missing or disagree (:func:`ebm_nlp_document`).
    """
    root = ebm_nlp_root(folder)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    counts = {"documents": 0, "sentences": 0, "tokens": 0}
    with atomic_open(output) as out:
        for pmid in pmids:
            tokens, tags = ebm_nlp_document(root, pmid, part=part)
            out.write(f"-DOCSTART- ({pmid})\n\n")
            for token, tag in zip(tokens, tags, strict=True):
                out.write(f"{token}\t{tag}\n")
                if token == ".":  # build_data.py ends a sentence after each full stop
                    out.write("\n")
                    counts["sentences"] += 1
            if tokens and tokens[-1] != ".":
                out.write("\n")
                counts["sentences"] += 1
            counts["documents"] += 1
            counts["tokens"] += len(tokens)
    return counts
