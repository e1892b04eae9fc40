"""Sentence-similarity data: BLURB's BIOSSES files (and any folder in their layout), read into scored pairs.

Layout (the output of BLURB's data-generation pipeline, ``preprocessor.py`` ``prepare_biosses_data``): a
folder with ``train.tsv``, ``dev.tsv`` (or ``devel.tsv``) and ``test.tsv``; each a tab-separated UTF-8 file
whose first line is the header ``pair_id<TAB>sent1<TAB>sent2<TAB>score``, then one pair per line: an id,
the two sentences, and the gold similarity (BIOSSES: the mean of five annotators' scores on a 0-4 scale,
Soğancıoğlu et al. 2017). Quoting is off (``csv.QUOTE_NONE``): the sentences hold raw ``"`` characters.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path

from downstream.errors import DataFormatError, DatasetUnavailableError

#: The header of a sentence-similarity file, in order.
SIMILARITY_COLUMNS = ("pair_id", "sent1", "sent2", "score")


@dataclass
class SimilarityPair:
    """One pair: ``index`` the file's ``pair_id``, ``text_a`` / ``text_b`` the sentences, ``label`` the gold
    score (a float), ``line`` its line in the file (1-based)."""

    index: str
    text_a: str
    text_b: str
    label: float
    line: int


@dataclass
class SimilaritySplit:
    """The pairs of one file."""

    path: Path
    examples: list[SimilarityPair]

    def score_range(self) -> tuple[float, float] | None:
        """The lowest and highest gold score, or ``None`` for no pair."""
        scores = [e.label for e in self.examples]
        return (min(scores), max(scores)) if scores else None


def read_similarity_file(path: str | os.PathLike) -> SimilaritySplit:
    """The pairs of one sentence-similarity file (see the module docstring).

    Raises:
        DatasetUnavailableError: no such file.
        DataFormatError: another header, a line without four tab-separated fields, an empty sentence, a
            score that is not a finite number, a repeated ``pair_id``, or no pair (file and line named).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetUnavailableError(f"{path}: no such file (expected a header {'<TAB>'.join(SIMILARITY_COLUMNS)} and one pair per line)")
    examples: list[SimilarityPair] = []
    seen: dict[str, int] = {}
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE, strict=False)
        header = next(reader, None)
        if not header:
            raise DataFormatError(f"{path}: empty file (expected a header {'<TAB>'.join(SIMILARITY_COLUMNS)} and one pair per line)")
        if tuple(h.strip() for h in header) != SIMILARITY_COLUMNS:
            raise DataFormatError(f"{path}:1: header {header!r}, expected {'<TAB>'.join(SIMILARITY_COLUMNS)}")
        for row in reader:
            line = reader.line_num
            if not row or not any(f.strip() for f in row):
                continue
            if len(row) != len(SIMILARITY_COLUMNS):
                raise DataFormatError(f"{path}:{line}: {len(row)} fields, expected 4 (pair_id<TAB>sent1<TAB>sent2<TAB>score)")
            pair_id, text_a, text_b, value = (f.strip() for f in row)
            if not text_a or not text_b:
                raise DataFormatError(f"{path}:{line}: pair {pair_id!r} has an empty sentence")
            try:
                score = float(value)
            except ValueError:
                score = math.nan
            if not math.isfinite(score):
                raise DataFormatError(f"{path}:{line}: score {value!r} is not a finite number (expected a similarity such as 2.4)")
            if pair_id in seen:
                raise DataFormatError(f"{path}:{line}: pair_id {pair_id!r} repeated (first on line {seen[pair_id]})")
            seen[pair_id] = line
            examples.append(SimilarityPair(pair_id, text_a, text_b, score, line))
    if not examples:
        raise DataFormatError(f"{path}: no pairs (expected a header and one pair_id<TAB>sent1<TAB>sent2<TAB>score line per pair)")
    return SimilaritySplit(path, examples)


def find_similarity_files(folder: str | os.PathLike) -> dict[str, Path]:
    """``train.tsv``, ``dev.tsv`` (or ``devel.tsv``) and ``test.tsv`` of ``folder``.

    Raises:
        DatasetUnavailableError: no folder, or a split file missing (what was expected listed).
    """
    from downstream.registry import find_split_files

    return find_split_files(Path(folder))
