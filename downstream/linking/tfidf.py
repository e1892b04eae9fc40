"""Texts to the TF-IDF vectors of a fitted character n-gram vectorizer, without scikit-learn (:class:`CharTfidf`):
what a saved sparse linker (:mod:`downstream.linking.sparse`) turns mentions into."""

from __future__ import annotations

import math
import re

import numpy as np

#: Runs of white space, each made one space before the n-grams are taken (scikit-learn's ``_white_spaces``).
WHITE_SPACES = re.compile(r"\s\s+")


class CharTfidf:
    """The ``transform`` of a fitted ``TfidfVectorizer(analyzer="char", ngram_range=ngram_range,
    dtype=np.float32)`` (its other settings left at scikit-learn's defaults: lower case, raw counts, smoothed
    idf, L2 norm), from its vocabulary and idf alone, with the same bits (scikit-learn 1.9's
    ``feature_extraction/text.py`` and ``utils/sparsefuncs_fast.pyx``, ``_inplace_csr_row_normalize_l2``).

    Why not scikit-learn's own vectorizer at load time: importing scikit-learn (which imports ``scipy.stats``
    and pandas) took about 1.8 s of the 2.1-2.4 s a saved linker took to load with it, and ``predict --linker``
    pays the load once per process; fitting still uses scikit-learn, and ``tests/test_linking_saved.py`` checks
    this transform against scikit-learn's, bit for bit, so a change of scikit-learn's shows there.

    Args:
        vocabulary: n-gram -> column (the fitted vectorizer's ``vocabulary_``).
        idf: ``(num_ngrams,)`` float32, the idf of each column (its ``idf_``).
        ngram_range: the character n-gram lengths, ``(min, max)``.
    """

    def __init__(self, vocabulary: dict[str, int], idf: np.ndarray, ngram_range: tuple[int, int]) -> None:
        self.vocabulary_, self.idf_, self.ngram_range = vocabulary, idf, tuple(ngram_range)

    def transform(self, texts: list[str]):
        """The texts' TF-IDF vectors, ``(len(texts), num_ngrams)`` float32 CSR with each row's n-grams in column
        order, L2-normalised (a text without a known n-gram: an empty row)."""
        import scipy.sparse

        min_n, max_n = self.ngram_range
        vocabulary = self.vocabulary_
        indices: list[int] = []
        counts: list[int] = []
        indptr = [0]
        for text in texts:
            text = WHITE_SPACES.sub(" ", text.lower())
            found: dict[int, int] = {}  # column -> count
            for n in range(min_n, min(max_n, len(text)) + 1):
                for i in range(len(text) - n + 1):
                    column = vocabulary.get(text[i : i + n])
                    if column is not None:
                        found[column] = found.get(column, 0) + 1
            in_order = sorted(found)
            indices += in_order
            counts += [found[c] for c in in_order]
            indptr.append(len(indices))
        columns = np.asarray(indices, dtype=np.int32)  # (num_entries,)
        data = np.asarray(counts, dtype=np.float32) * self.idf_[columns]  # (num_entries,) float32
        # each row's norm as scikit-learn computes it: float32 squares added in float64 one after the other
        squares = (data * data).tolist()
        norms = np.ones(len(texts))  # (len(texts),) float64
        for row in range(len(texts)):
            total = 0.0
            for square in squares[indptr[row] : indptr[row + 1]]:
                total += square
            if total:
                norms[row] = math.sqrt(total)
        data = (data / np.repeat(norms, np.diff(indptr))).astype(np.float32)  # divided in float64, as there
        shape = (len(texts), len(self.idf_))
        return scipy.sparse.csr_matrix((data, columns, np.asarray(indptr, dtype=np.int32)), shape=shape)
