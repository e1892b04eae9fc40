"""The sparse linker: TF-IDF over character n-grams of the dictionary's names, nearest names by cosine.

BioSyn's sparse score (Sung et al., ACL 2020, section 3.1; ``dmis-lab/BioSyn``
``src/biosyn/sparse_encoder.py``): scikit-learn's ``TfidfVectorizer(analyzer="char", ngram_range=(1, 2))``
fitted on the dictionary's names, the score of a name the inner product of the L2-normalised vectors (the
cosine). scispaCy's linker uses character 3-grams the same way. The search is exact: every name is scored.
"""

from __future__ import annotations

import numpy as np

#: BioSyn's character n-gram range (``SparseEncoder``).
BIOSYN_NGRAM_RANGE = (1, 2)

#: Queries scored at a time (a block of ``(chunk, num_names)`` float32 scores: 256 x 80,000 is 80 MB).
CHUNK = 256

#: Below this many texts the scores are always gathered (:meth:`SparseLinker.scores`).
SMALL_BATCH = 64

#: From :data:`SMALL_BATCH` texts on, the dense product is used when the texts' n-grams have more names, summed
#: over the texts, than this fraction of the names' stored entries times the texts (:meth:`SparseLinker.scores`).
DENSE_POSTINGS_FRACTION = 0.15


class SparseLinker:
    """TF-IDF character n-gram vectors of the dictionary's names (module docstring).

    Args:
        names: the dictionary's names (normalised).
        ngram_range: the character n-gram lengths, ``(min, max)``; default BioSyn's ``(1, 2)``.
    """

    def __init__(self, names: list[str], *, ngram_range: tuple[int, int] = BIOSYN_NGRAM_RANGE) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.ngram_range = tuple(ngram_range)
        self.vectorizer = TfidfVectorizer(analyzer="char", ngram_range=self.ngram_range, dtype=np.float32)
        self.name_vectors = self.vectorizer.fit_transform(names)  # (num_names, num_ngrams), L2-normalised rows
        # each name's n-grams in column order, as a text's: both products then add a score's terms in one order
        self.name_vectors.sort_indices()
        self.ngram_names = self.name_vectors.T.tocsr()  # (num_ngrams, num_names): each n-gram's names
        self.postings = np.diff(self.ngram_names.indptr)  # (num_ngrams,): how many names have each n-gram

    def scores(self, texts: list[str]) -> np.ndarray:
        """Cosine of each text's vector with each name's: ``(len(texts), num_names)`` float32 in [0, 1]."""
        return self.vector_scores(self.vectorizer.transform(texts))

    def vector_scores(self, vectors) -> np.ndarray:
        """Cosine of each row of ``vectors`` (``(num_texts, num_ngrams)`` sparse, from ``vectorizer.transform``)
        with each name's: ``(num_texts, num_names)`` float32.

        Two exact products, chosen by cost; both add the terms of a score in the n-grams' column order, so a
        text's scores are the same bits whichever is used and whatever else is in the batch. Gathered
        (:meth:`gathered_scores`): each text alone, over the names of its own n-grams only (the work is the
        number of names its n-grams have). Dense: the names' sparse matrix times the texts' dense vectors (the
        work is every name's every n-gram, times the texts, but vectorised over the texts), for
        :data:`SMALL_BATCH` texts or more whose n-grams have many names. On the 2-core machine (shared with other
        jobs), 256 mentions predicted in OHSUMED abstracts against NCBI-disease's 73,026 names, in ms a mention
        gathered / dense: 2-4-grams (193,000 names per mention's n-grams, 5.0 M stored entries) 1.2 / 3.9;
        BioSyn's 1-2-grams (687,000; 2.6 M) 3.8 / 2.7; 1-3-grams (717,000; 4.3 M) 3.2 / 3.0: gathering costs
        about 6 times what a dense entry does, hence :data:`DENSE_POSTINGS_FRACTION`."""
        if self._dense(vectors):
            return np.ascontiguousarray((self.name_vectors @ vectors.toarray().T).T)  # (num_texts, num_names)
        out = np.empty((vectors.shape[0], self.name_vectors.shape[0]), dtype=np.float32)
        for row in range(vectors.shape[0]):
            out[row] = self.gathered_scores(vectors, row)
        return out

    def gathered_scores(self, vectors, row: int) -> np.ndarray:
        """Cosine of row ``row`` of ``vectors`` with each name's, ``(num_names,)`` float32: the names of the
        text's n-grams (rows of :attr:`ngram_names`) weighted by the text's values and added, n-gram after
        n-gram in column order."""
        start, end = vectors.indptr[row], vectors.indptr[row + 1]
        postings = self.ngram_names[vectors.indices[start:end]]  # (text's n-grams, num_names)
        return postings.T @ vectors.data[start:end]  # (num_names,)

    def _dense(self, vectors) -> bool:
        """Whether the dense product is the cheaper for ``vectors`` (:meth:`vector_scores`)."""
        rows = vectors.shape[0]
        gathered = int(self.postings[vectors.indices].sum())
        return rows >= SMALL_BATCH and gathered > DENSE_POSTINGS_FRACTION * self.name_vectors.nnz * rows

    def search(self, texts: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest names of each text, best first: ``(indices, scores)``, each ``(len(texts), k)``
        (ties: the lower index first, :func:`~downstream.linking.metrics.top_k`). Texts whose scores are
        gathered are ranked one at a time (no ``(len(texts), num_names)`` block)."""
        from downstream.linking.metrics import top_k

        if not texts:
            return np.zeros((0, k), dtype=np.int64), np.zeros((0, k), dtype=np.float32)
        vectors = self.vectorizer.transform(texts)  # (len(texts), num_ngrams), sparse
        blocks = []
        for i in range(0, len(texts), CHUNK):
            block = vectors[i : i + CHUNK]
            if self._dense(block):
                blocks.append(top_k(self.vector_scores(block), k))
            else:
                blocks += [top_k(self.gathered_scores(block, row)[None, :], k) for row in range(block.shape[0])]
        return np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])
