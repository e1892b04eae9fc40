"""End to end, NER then linking, scored at the document level: the set of concept ids found in each abstract
against the gold set, as the BioCreative V CDR disease named entity recognition and normalisation (DNER)
task scored it (Wei et al., BioCreative V workshop 2015, "Overview of the BioCreative V chemical disease
relation (CDR) task": micro-averaged precision, recall and F-score over the (document, concept id) pairs; the
mentions' offsets do not count).

Both files are PubTator (:func:`downstream.linking.corpus.read_corpus`): the gold corpus, and the output of
``bioelectra predict --linker DIR --format pubtator`` on its abstracts (entities not linked, ``-``, add no
concept); ``bioelectra evaluate --loader linking --linker DIR`` runs both steps on a benchmark's test set
(:mod:`downstream.linking.end_to_end`). The published figures a run is reported beside: :data:`PUBLISHED_DNER`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from downstream.errors import DataFormatError
from downstream.linking.corpus import CUI_LESS, Document, read_corpus


@dataclass(frozen=True)
class PublishedDNER:
    """One published end-to-end (recognition + normalisation) figure on a linking benchmark's test set.

    Attributes:
        system: the system and where its figure is printed, as reports name it.
        precision, recall: fractions, ``None`` where the source gives the F-score alone.
        f1: the F-score, a fraction.
        document_level: ``True`` where the source says the figure counts (abstract, concept) pairs, as
            :func:`dner_scores` does; ``None`` where the source read does not say at which level.
        source: the paper or file, and the table or section the figure is read from.
        url: the source's address.
    """

    system: str
    precision: float | None
    recall: float | None
    f1: float
    document_level: bool | None
    source: str
    url: str


_DNORM_2013 = "Leaman, Islamaj Doğan & Lu, Bioinformatics 2013 (DNorm)"
_TAGGERONE_ABSTRACT = ("Leaman & Lu, Bioinformatics 2016 (TaggerOne), abstract: 'normalization f-score'; the "
                       "abstract does not say at which level")  # fmt: skip
_TAGGERONE_URL = "https://pubmed.ncbi.nlm.nih.gov/27283952/ (PMC5018376)"
_CDR_README = ("CDR_Data_README.txt of the corpus release (CDR_Data.zip): the organisers' runs on the test set, "
               "'normalization performance'; the README does not say at which level")  # fmt: skip
_CDR_URL = "https://biocreative.bioinformatics.udel.edu/tasks/biocreative-v/track-3-cdr/"

#: Published figures beside which an end-to-end run is reported, keyed by ``(--dataset, entity type)`` of the
#: linking benchmarks (:data:`downstream.linking.spec.LINKING_DATASETS`). Only figures read in their source;
#: not found there, so left out: TaggerOne's precision and recall, and any TaggerOne figure on BC5CDR's
#: diseases (its abstract gives NCBI-disease's diseases and BC5CDR's chemicals only).
PUBLISHED_DNER: dict[tuple[str, str], tuple[PublishedDNER, ...]] = {
    ("ncbi-disease", "Disease"): (
        PublishedDNER(
            "DNorm (Leaman et al. 2013)", 0.803, 0.763, 0.782, True,
            f"{_DNORM_2013}: the abstract's 0.782 micro-averaged F-measure; precision and recall from the results "
            "table of NCBI's DNorm page, which says the NCBI-disease test set was scored by (disease concept, "
            "abstract) associations, not by mentions",
            "https://pubmed.ncbi.nlm.nih.gov/23969135/; https://www.ncbi.nlm.nih.gov/bionlp/Tools/dnorm",
        ),
        PublishedDNER("TaggerOne (Leaman & Lu 2016)", None, None, 0.807, None, _TAGGERONE_ABSTRACT, _TAGGERONE_URL),
    ),
    ("bc5cdr-disease", "Disease"): (
        PublishedDNER("DNorm (CDR_Data_README.txt)", 0.81, 0.80, 0.81, None, _CDR_README, _CDR_URL),
    ),
    ("bc5cdr-chemical", "Chemical"): (
        PublishedDNER("tmChem (CDR_Data_README.txt)", 0.92, 0.90, 0.91, None, _CDR_README, _CDR_URL),
        PublishedDNER("TaggerOne (Leaman & Lu 2016)", None, None, 0.895, None, _TAGGERONE_ABSTRACT, _TAGGERONE_URL),
    ),
}  # fmt: skip


def published_figures(dataset: str | None, entity_type: str | None = None) -> dict[str, dict]:
    """The :data:`PUBLISHED_DNER` figures of ``dataset`` and ``entity_type`` (any case; ``None``: the type the
    dataset links, NCBI-disease's four disease types being ``Disease``) as JSON objects by system:
    ``{"precision", "recall", "f1", "document_level", "source", "url"}``; ``{}`` where none."""
    found = [figure for (name, kind), figures in PUBLISHED_DNER.items() for figure in figures
             if name == (dataset or "").lower() and (entity_type is None or kind.lower() == entity_type.lower())]  # fmt: skip
    return {f.system: {k: v for k, v in dataclasses.asdict(f).items() if k != "system"} for f in found}


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


def score_files(gold_path: str | Path, predicted_path: str | Path, *, entity_type: str | None = None,
                dataset: str | None = None, max_documents: int | None = None) -> dict:
    """:func:`dner_scores` of a predicted PubTator file against the gold one, the mentions of ``entity_type``
    only (any case; ``None``: all), with the published figures of ``dataset`` and that type
    (:func:`published_figures`; ``{}`` without ``dataset``).

    Args:
        max_documents: score the first ``max_documents`` gold documents only (a smoke run over the first
            abstracts); ``None``: all.

    Raises:
        DataFormatError: a bad line in either file, or predicted documents the (first ``max_documents``) gold
            documents lack.
    """
    gold_documents = read_corpus(gold_path, entity_type=entity_type)
    gold = document_concepts(gold_documents if max_documents is None else gold_documents[:max_documents])
    predicted = document_concepts(read_corpus(predicted_path, entity_type=entity_type))
    published = published_figures(dataset, entity_type)
    return {**dner_scores(predicted, gold), "entity_type": entity_type, "gold": str(gold_path), "predicted": str(predicted_path),
            "published": published}  # fmt: skip
