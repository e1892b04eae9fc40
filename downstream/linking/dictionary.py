"""The dictionary a linker searches: every distinct normalised name with the ids of the concepts that have it
(BioSyn's ``dictionary_preprocess.py``: ``name2cui``, a name shared by several concepts keeps all their ids),
and which queries it can answer."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from downstream.linking.corpus import CUI_LESS
from downstream.linking.preprocess import Query, normalize
from downstream.linking.vocabulary import Concept


@dataclass
class Dictionary:
    """Names and their concept ids.

    Attributes:
        names: the distinct normalised names, in the order first seen (vocabulary, then added mentions).
        concept_ids: ``concept_ids[i]``: the ids of ``names[i]`` (a tuple, first seen first).
        preferred: concept id -> a readable name (the vocabulary's preferred name, else the first mention
            that named it): what reports show beside an id.
    """

    names: list[str] = field(default_factory=list)
    concept_ids: list[tuple[str, ...]] = field(default_factory=list)
    preferred: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index = {name: i for i, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def position(self, name: str) -> int | None:
        """The index of ``name`` (normalised) in :attr:`names`, ``None`` when it is not one of them."""
        return self._index.get(name)

    def add(self, name: str, ids: Iterable[str], *, readable: str | None = None) -> None:
        """Add ``name`` (already normalised) with ``ids``; an existing name gains the ids it lacks."""
        ids = tuple(ids)
        if not name or not ids:
            return
        for concept_id in ids:
            self.preferred.setdefault(concept_id, readable or name)
        i = self._index.get(name)
        if i is None:
            self._index[name] = len(self.names)
            self.names.append(name)
            self.concept_ids.append(ids)
        else:
            self.concept_ids[i] += tuple(c for c in ids if c not in self.concept_ids[i])

    def id_set(self) -> set[str]:
        """Every concept id the dictionary holds."""
        return {c for ids in self.concept_ids for c in ids}

    def copy(self) -> Dictionary:
        return Dictionary(list(self.names), list(self.concept_ids), dict(self.preferred))


def build_dictionary(concepts: Iterable[Concept] = (), queries: Iterable[Query] = ()) -> Dictionary:
    """The dictionary of a vocabulary's concepts (names normalised with :func:`normalize`), plus the names of
    ``queries`` (training mentions, each with its gold ids; CUI-less ones add nothing), BioSyn's way."""
    dictionary = Dictionary()
    for concept in concepts:
        for name in concept.names:
            dictionary.add(normalize(name), concept.concept_ids, readable=concept.names[0])
    add_queries(dictionary, queries)
    return dictionary


def add_queries(dictionary: Dictionary, queries: Iterable[Query]) -> None:
    """Add each query's name with its gold ids (BioSyn's ``--additional_data_dir``)."""
    for query in queries:
        dictionary.add(query.name, query.concept_ids, readable=query.text)


def linkable(queries: Iterable[Query], dictionary: Dictionary | None) -> tuple[list[Query], int]:
    """The queries whose gold ids are all in ``dictionary`` (BioSyn's ``--remove_cuiless``: a CUI-less mention,
    or a composite with a CUI-less part, is dropped too), and how many were dropped. ``dictionary`` ``None``:
    only the CUI-less ones are dropped (no vocabulary to check against)."""
    known = dictionary.id_set() if dictionary is not None else None
    kept, dropped = [], 0
    for query in queries:
        ids = set(query.concept_ids)
        if ids and CUI_LESS not in ids and (known is None or ids <= known):
            kept.append(query)
        else:
            dropped += 1
    return kept, dropped
