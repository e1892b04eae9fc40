"""End to end, NER then linking, scored at the document level: the set of concept ids found in each abstract
against the gold set, as the BioCreative V CDR disease named entity recognition and normalisation (DNER)
task scored it (Wei et al., BioCreative V workshop 2015, "Overview of the BioCreative V chemical disease
relation (CDR) task": micro-averaged precision, recall and F-score over the (document, concept id) pairs; the
mentions' offsets do not count).

Both files are PubTator (:func:`downstream.linking.corpus.read_corpus`): the gold corpus, and the output of
``bioelectra predict --linker DIR --format pubtator`` on its abstracts (entities not linked, ``-``, add no
concept).
"""

from __future__ import annotations

from pathlib import Path

from downstream.errors import DataFormatError
from downstream.linking.corpus import CUI_LESS, Document, read_corpus

#: Published document-level figures on the BC5CDR test set (precision, recall, F-score; fractions), from the
#: corpus release's ``CDR_Data_README.txt``: DNorm's diseases (Leaman et al., Bioinformatics 2013) and
#: tmChem's chemicals (Leaman et al., J Cheminform 2015), as the organisers ran them.
PUBLISHED_DNER = {
    "Disease": {"DNorm (CDR_Data_README.txt)": (0.81, 0.80, 0.81)},
    "Chemical": {"tmChem (CDR_Data_README.txt)": (0.92, 0.90, 0.91)},
}


def document_concepts(documents: list[Document]) -> dict[str, set[str]]:
    """Each document's set of concept ids (every id of every mention, CUI-less ones left out), by PMID."""
    return {d.pmid: {c for m in d.mentions for c in m.concept_ids if c != CUI_LESS} for d in documents}


def dner_scores(predicted: dict[str, set[str]], gold: dict[str, set[str]]) -> dict[str, float | int]:
    """Micro-averaged precision, recall and F1 over (document, concept id) pairs (module docstring).

    Args:
        predicted, gold: PMID -> concept ids; a gold document missing from ``predicted`` has found nothing.

    Returns:
        ``{"precision", "recall", "f1"}`` (fractions in [0, 1]; 0 where undefined), ``"tp", "fp", "fn"``,
        ``"documents"``.

    Raises:
        DataFormatError: ``predicted`` has documents the gold set lacks (the files do not match; some named).
    """
    extra = sorted(set(predicted) - set(gold))
    if extra:
        raise DataFormatError(f"{len(extra)} predicted documents are not in the gold file (e.g. {', '.join(extra[:3])})")
    tp = sum(len(predicted.get(pmid, set()) & ids) for pmid, ids in gold.items())
    fp = sum(len(ids - gold[pmid]) for pmid, ids in predicted.items())
    fn = sum(len(ids - predicted.get(pmid, set())) for pmid, ids in gold.items())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn, "documents": len(gold)}


def score_files(gold_path: str | Path, predicted_path: str | Path, *, entity_type: str | None = None) -> dict:
    """:func:`dner_scores` of a predicted PubTator file against the gold one, the mentions of ``entity_type``
    only (any case; ``None``: all), with the published figures for that type.

    Raises:
        DataFormatError: a bad line in either file, or predicted documents the gold file lacks.
    """
    gold = document_concepts(read_corpus(gold_path, entity_type=entity_type))
    predicted = document_concepts(read_corpus(predicted_path, entity_type=entity_type))
    published = PUBLISHED_DNER.get((entity_type or "").capitalize(), {})
    return {**dner_scores(predicted, gold), "entity_type": entity_type, "gold": str(gold_path), "predicted": str(predicted_path),
            "published": {name: dict(zip(("precision", "recall", "f1"), v, strict=True)) for name, v in published.items()}}  # fmt: skip
