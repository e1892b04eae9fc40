"""Linking what ``predict`` finds (``bioelectra predict --model NER_DIR --linker LINKER_DIR``): each entity of the
linker's type gets the concept of its nearest dictionary name (:class:`EntityLinker`).

A mention is prepared as the gold mentions were for training and scoring (:mod:`downstream.linking.preprocess`):
abbreviations defined in its document resolved, then lower case and punctuation removed; composite mentions
are not split (a predicted mention has no ids to say how many parts it has). The concept written is the best
name's MeSH id when it has one, else its first id (:func:`preferred_concept`), its name the dictionary's
readable name for it, and the score the best name's (cosine, or ``dense + w * sparse`` for a dense linker).
OMIM ids are written ``OMIM:<n>``, MeSH ids bare (as BC5CDR's PubTator files). A mention left empty by the
preparation (``"-"``, ``"("``) or whose best score is 0 or below (no character n-gram in common with any name)
is not linked: nothing supports any concept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from downstream.linking.preprocess import find_abbreviations, normalize, resolve_abbreviations

#: Distinct prepared mentions whose best name is remembered (a corpus names the same diseases again and
#: again); the memory is emptied when full.
CACHE_SIZE = 100_000


def written_id(concept_id: str) -> str:
    """A concept id as output files write it: OMIM numbers ``OMIM:<n>``, MeSH ids bare."""
    return f"OMIM:{concept_id}" if concept_id.isdigit() else concept_id


def preferred_concept(concept_ids: Sequence[str]) -> str:
    """The concept a name's ids give a predicted mention: its first MeSH id (``D...`` / ``C...``), else its first
    id. MEDIC gives one name to a MeSH concept and an OMIM entry alike ("colorectal cancer": OMIM 114500 and
    MeSH D015179, the OMIM entry first in the vocabulary's order), and the corpora annotate such mentions with the
    MeSH id: NCBI-disease's test file gives "colorectal cancer" D015179 all 18 times and "breast cancer" D001943
    all 16 times (95 of its 960 mentions have an OMIM id); BC5CDR's test file has no OMIM id at all."""
    return next((c for c in concept_ids if not c.isdigit()), concept_ids[0])


class EntityLinker:
    """A saved linker (:func:`downstream.linking.saved.load_linker`) applied to predicted entities.

    Args:
        directory: a linking trial's ``linker/`` folder.

    Raises:
        DownstreamError: not a saved linker (see :func:`~downstream.linking.saved.load_linker`).
    """

    def __init__(self, directory: str | Path) -> None:
        from downstream.linking.saved import load_linker

        self.directory = Path(directory)
        self.linker, self.dictionary, self.card = load_linker(directory)
        self.entity_type = str(self.card["entity_type"])
        self.cache: dict[str, tuple[int, float]] = {}  # prepared mention -> (best name's index, its score)

    @property
    def threads(self) -> int:
        """Python threads a dense linker's encoder runs its batches of mentions on (1 for a sparse linker,
        whose search runs in this thread: setting it changes nothing)."""
        encoder = getattr(self.linker, "encoder", None)
        return encoder.threads if encoder is not None else 1

    @threads.setter
    def threads(self, value: int) -> None:
        encoder = getattr(self.linker, "encoder", None)
        if encoder is not None:
            encoder.threads = value

    def best_names(self, texts: list[str]) -> list[tuple[int, float]]:
        """The best name's index and score of each prepared mention; those not seen before searched at once.

        A mention that is one of the dictionary's names gets that name, unsearched, when the linker's score of an
        exact match is the most any name can have (``exact_match_score``: the sparse linker's and a dense one's
        with normalised embeddings, not the biosyn linker's), with that score: the name the search finds (all
        1,315 such mentions of 2,000 OHSUMED abstracts, searched, found their own name), for no encoder and no
        search. They are a fifth of those abstracts' 6,570 distinct mentions."""
        new = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if new:
            if len(self.cache) + len(new) > CACHE_SIZE:
                self.cache.clear()
            exact_score = getattr(self.linker, "exact_match_score", None)
            if exact_score is not None:
                named = {t: self.dictionary.position(t) for t in new}
                self.cache.update({t: (i, exact_score) for t, i in named.items() if i is not None})
                new = [t for t in new if named[t] is None]
        if new:
            indices, scores = self.linker.search(new, 1)  # (len(new), 1) each
            self.cache.update({t: (int(i), float(s)) for t, i, s in zip(new, indices[:, 0], scores[:, 0], strict=True)})
        return [self.cache[t] for t in texts]

    def link_many(self, predictions: Sequence) -> list:
        """:meth:`link` of each of ``predictions`` (:class:`~downstream.predict.results.DocumentEntities`), in
        order, with one search for the mentions of all of them not seen before (``predict`` links a chunk of
        documents at once: one vectorisation and one call of the linker instead of one per document). The
        entities are those :meth:`link` gives each prediction alone: a mention's best name does not depend on
        the other mentions searched with it."""
        wanted_type = self.entity_type.lower()
        wanted = [[i for i, e in enumerate(p.entities) if e.type.lower() == wanted_type] for p in predictions]
        texts = []
        for prediction, rows in zip(predictions, wanted, strict=True):
            if rows:
                abbreviations = find_abbreviations(prediction.document.text)
                texts += [normalize(resolve_abbreviations(prediction.entities[i].text, abbreviations)) for i in rows]
        best = iter(self.best_names([t for t in texts if t]))
        prepared = iter(texts)
        linked = []
        for prediction, rows in zip(predictions, wanted, strict=True):
            if not rows:
                linked.append(prediction)
                continue
            entities = list(prediction.entities)
            for i in rows:
                if not next(prepared):
                    continue
                index, score = next(best)
                if score <= 0:
                    continue
                concept = preferred_concept(self.dictionary.concept_ids[index])
                entities[i] = dataclasses.replace(
                    entities[i], concept_id=written_id(concept), concept_name=self.dictionary.preferred.get(concept, ""),
                    concept_score=score,
                )  # fmt: skip
            linked.append(dataclasses.replace(prediction, entities=tuple(entities)))
        return linked

    def link(self, prediction):
        """``prediction`` (a :class:`~downstream.predict.results.DocumentEntities`) with each entity of the linker's
        type (any case) given ``concept_id``, ``concept_name`` and ``concept_score``; other entities unchanged."""
        return self.link_many([prediction])[0]
