"""The sparse linker: TF-IDF over character n-grams of the dictionary's names, nearest names by cosine.

BioSyn's sparse score (Sung et al., ACL 2020, section 3.1; ``dmis-lab/BioSyn``
``src/biosyn/sparse_encoder.py``): scikit-learn's ``TfidfVectorizer(analyzer="char", ngram_range=(1, 2))``
fitted on the dictionary's names, the score of a name the inner product of the L2-normalised vectors (the
cosine). scispaCy's linker uses character 3-grams the same way. The search is exact: :meth:`SparseLinker.search`
scores every name; :meth:`SparseLinker.hybrid_search` (the dense linker's, the sparse score added to a dense one)
scores exactly only the names that can be among the best, and finds the same names with the same score bits.

Only fitting needs scikit-learn: texts are turned into vectors by :class:`~downstream.linking.tfidf.CharTfidf`,
which gives the bits of the fitted vectorizer's ``transform`` from its vocabulary and idf. A fitted linker is saved
as three files
(:meth:`SparseLinker.save`) and loaded from them without fitting or importing scikit-learn
(:meth:`SparseLinker.load`): its scores are the same bits as the fitted one's.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from bioelectra.textio import atomic_open, atomic_write_text
from downstream.errors import DownstreamError
from downstream.linking.tfidf import CharTfidf

#: BioSyn's character n-gram range (``SparseEncoder``).
BIOSYN_NGRAM_RANGE = (1, 2)

#: Queries scored at a time (a block of ``(chunk, num_names)`` float32 scores: 256 x 80,000 is 80 MB).
CHUNK = 256

#: Below this many texts the scores are always gathered (:meth:`SparseLinker.scores`).
SMALL_BATCH = 64

#: From :data:`SMALL_BATCH` texts on, the dense product is used when the texts' n-grams have more names, summed
#: over the texts, than this fraction of the names' stored entries times the texts (:meth:`SparseLinker.scores`).
DENSE_POSTINGS_FRACTION = 0.15

#: The pruned search (:meth:`SparseLinker.hybrid_search`) computes a text's sparse score exactly only over its
#: n-grams found in at most this fraction of the names, and bounds the rest: the common n-grams (1-grams, "er",
#: "ia", ...) are where the work of scoring every name goes (a 1-gram's names are nearly all of them), and their
#: small idf makes their part of a cosine small. ``bench/hybrid_search.py`` (2-core machine; the gold test
#: mentions of NCBI-disease, 1-3-grams, weight 0.5, and of BC5CDR-disease, 2-4-grams, weight 1, against their
#: 73,000 names), ms a mention at k = 1 / k = 5: every name scored 1.64 / 2.04 and 1.05 / 1.44; pruned at 0.02,
#: 0.41 / 0.87 and 0.51 / 0.67 (but some texts left with thousands of names, up to 20,105); at 0.05, 0.40 / 0.64
#: and 0.53 / 0.76; at 0.1, 0.46 / 0.72 and 0.48 / 0.75; at 0.2, 0.99 / 0.94 and 0.71 / 0.81.
COMMON_POSTINGS_FRACTION = 0.05

#: The pruned search's bound of a text's part over the common n-grams (:meth:`SparseLinker.common_bounds`): its
#: projection on this many principal directions of the names' common parts, exact, plus Cauchy-Schwarz on what is
#: left. 0 is Cauchy-Schwarz on the whole common part. More directions give a bound never looser (Cauchy-Schwarz in
#: the plane of the next direction and the rest) for a larger product: ``(texts, rank) x (rank, num_names)`` per
#: chunk, an eighth of the dense linker's ``(texts, 256) x (256, num_names)`` at 32. ``bench/hybrid_search.py``
#: (2-core AMD EPYC, NCBI-disease's dense linker, 1-2-grams, weight 0.5, 73,024 names, k = 1, the default
#: fraction), on the 5,255 mentions ``predict`` searched in 2,000 OHSUMED abstracts, at 0 / 8 / 16 / 32 / 64
#: directions: 0.72 / 0.49 / 0.39 / 0.29 / 0.30 ms a mention, 622 / 282 / 124 / 24 / 0 fallbacks to every name;
#: on the test mentions, 0.32 / 0.29 / 0.27 / 0.24 / 0.22 ms.
COMMON_RANK = 32

#: Names a block when :meth:`SparseLinker._index` projects their common parts (a block is ``GRAM_BLOCK x num_common`` float64).
GRAM_BLOCK = 8192

#: Added to the pruned search's upper bounds, times ``1 + weight``: more than the float32 rounding of the bound
#: and of the exact score can differ by (sums of at most a few hundred terms, each at most 1: about 1e-5).
BOUND_MARGIN = 1e-4

#: A text is pruned (:meth:`SparseLinker.hybrid_search`) when its n-grams have more names, summed, than this plus
#: :data:`PRUNE_POSTINGS_PER_NAME` per dictionary name (a pruned text makes a few passes over the names).
#: ``bench/hybrid_search.py``'s ``by_postings``, ms a text alone, every name scored / pruned, NCBI-disease and
#: BC5CDR-disease: under 100,000 names, 0.48 / 0.49 and 0.37 / 0.56; 100,000 to 200,000, 0.61 / 0.46 and
#: 0.49 / 0.48; 400,000 to 800,000, 1.40 / 0.53 and 1.23 / 0.66; BC5CDR-chemical's annotation-only dictionary
#: (1,428 names), under 100,000, 0.14 / 0.31. With 73,000 names a text is pruned from 123,000, with 1,428
#: from 51,000 (BC5CDR-chemical's test mentions have 8,000 on average: none is).
PRUNE_POSTINGS = 50_000
PRUNE_POSTINGS_PER_NAME = 1

#: For ``k > 1``, how many times ``k`` names of highest bound are scored exactly to set the threshold (for
#: ``k == 1``, the name of highest bound alone).
SEEDS = 2

#: A pruned text with more names left than this has every name scored instead (bounds too loose to pay).
MAX_EXACT = 2_000

#: Up to this many names, :meth:`SparseLinker._pair_scores` pads each name's entries to the longest name's
#: (fewer numpy calls); past it, it keeps only the n-grams shared with the text (less work a name).
FEW_NAMES = 16

#: The version of the saved TF-IDF's files (:meth:`SparseLinker.save`).
TFIDF_FORMAT = 1

#: The files of a saved TF-IDF (:meth:`SparseLinker.save`), by what they hold.
TFIDF_FILES = {"vocabulary": "tfidf_vocabulary.json", "idf": "tfidf_idf.npy", "name_vectors": "tfidf_names.npz"}

#: Names whose saved rows are checked against their transform when a saved TF-IDF is loaded (spread evenly).
CHECKED_NAMES = 16


def _runs(firsts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``firsts[i], ..., firsts[i] + lengths[i] - 1`` of each run ``i``, one run after another:
    ``(lengths.sum(),)`` int64 (the entries of CSR rows gathered without a Python loop)."""
    return np.repeat(firsts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))


class SparseLinker:
    """TF-IDF character n-gram vectors of the dictionary's names (module docstring).

    Args:
        names: the dictionary's names (normalised).
        ngram_range: the character n-gram lengths, ``(min, max)``; default BioSyn's ``(1, 2)``.
    """

    def __init__(self, names: list[str], *, ngram_range: tuple[int, int] = BIOSYN_NGRAM_RANGE) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.ngram_range = tuple(ngram_range)
        fitted = TfidfVectorizer(analyzer="char", ngram_range=self.ngram_range, dtype=np.float32)
        name_vectors = fitted.fit_transform(names)  # (num_names, num_ngrams), L2-normalised rows
        self.vectorizer = CharTfidf(fitted.vocabulary_, fitted.idf_, self.ngram_range)  # texts -> vectors
        self._index(name_vectors)

    def _index(self, name_vectors) -> None:
        """Keep the names' TF-IDF rows ``(num_names, num_ngrams)`` (CSR, float32) and index their n-grams."""
        self.name_vectors = name_vectors
        # each name's n-grams in column order, as a text's: both products then add a score's terms in one order
        self.name_vectors.sort_indices()
        self.ngram_names = self.name_vectors.T.tocsr()  # (num_ngrams, num_names): each n-gram's names
        self.postings = np.diff(self.ngram_names.indptr)  # (num_ngrams,): how many names have each n-gram
        # the pruned search's split: common n-grams (bounded, :meth:`common_bounds`) and rare ones (exact)
        self.common = self.postings > COMMON_POSTINGS_FRACTION * self.name_vectors.shape[0]  # (num_ngrams,)
        # each name's common part: its projection on the principal directions of all names' common parts (the
        # eigenvectors of their Gram matrix, largest first), and the norm of what is left
        self.common_columns = np.flatnonzero(self.common)  # (num_common,)
        self.common_position = np.full(len(self.common), -1)  # (num_ngrams,): a common n-gram's place among them
        self.common_position[self.common_columns] = np.arange(len(self.common_columns))
        num_names, num_common = self.name_vectors.shape[0], len(self.common_columns)
        blocks = [self._common_part(self.name_vectors, range(i, min(i + GRAM_BLOCK, num_names)))
                  for i in range(0, num_names, GRAM_BLOCK)]  # fmt: skip
        gram = sum((block.T @ block for block in blocks), np.zeros((num_common, num_common)))
        rank = min(COMMON_RANK, num_common)
        _, eigenvectors = np.linalg.eigh(gram)  # ascending eigenvalues
        self.common_basis = np.ascontiguousarray(eigenvectors[:, ::-1][:, :rank])  # (num_common, rank), orthonormal
        self.common_factors = np.empty((rank + 1, num_names), dtype=np.float32)  # projections, then what is left
        at = 0
        for block in blocks:
            projected = block @ self.common_basis  # (block, rank) float64
            left = np.sqrt(np.maximum(np.sum(block**2, axis=1) - np.sum(projected**2, axis=1), 0.0))
            self.common_factors[:rank, at : at + len(block)] = projected.T
            self.common_factors[rank, at : at + len(block)] = left * (1 + 1e-6)  # rounded up
            at += len(block)

    def _common_part(self, vectors, rows) -> np.ndarray:
        """Rows ``rows`` of ``vectors`` (CSR, ``(num_texts, num_ngrams)``) over the common n-grams only (in the
        order of :attr:`common_columns`), ``(len(rows), num_common)`` float64."""
        rows = np.asarray(rows, dtype=np.int64)
        firsts, lengths = vectors.indptr[rows], vectors.indptr[rows + 1] - vectors.indptr[rows]
        positions = _runs(firsts, lengths)  # the rows' entries
        places = self.common_position[vectors.indices[positions]]
        kept = places >= 0
        part = np.zeros((len(rows), len(self.common_columns)))
        part[np.repeat(np.arange(len(rows)), lengths)[kept], places[kept]] = vectors.data[positions[kept]]
        return part

    def save(self, directory: str | Path) -> dict[str, str]:
        """Write the fitted TF-IDF to ``directory`` (an existing folder), each file under a temporary name renamed
        when whole; return the files' names by what they hold (:data:`TFIDF_FILES`):

        - ``tfidf_vocabulary.json``: the n-grams, a JSON list in column order (n-gram ``j`` is column ``j``);
        - ``tfidf_idf.npy``: the idf vector, ``(num_ngrams,)`` float32;
        - ``tfidf_names.npz``: the names' TF-IDF rows, ``(num_names, num_ngrams)`` float32 CSR
          (``scipy.sparse.save_npz``, uncompressed: read without inflating it).
        """
        import scipy.sparse

        directory = Path(directory)
        vocabulary = [""] * len(self.vectorizer.vocabulary_)
        for ngram, column in self.vectorizer.vocabulary_.items():
            vocabulary[column] = ngram
        atomic_write_text(directory / TFIDF_FILES["vocabulary"], json.dumps(vocabulary))
        with atomic_open(directory / TFIDF_FILES["idf"], "wb") as handle:
            np.save(handle, self.vectorizer.idf_, allow_pickle=False)
        with atomic_open(directory / TFIDF_FILES["name_vectors"], "wb") as handle:
            scipy.sparse.save_npz(handle, self.name_vectors, compressed=False)
        return dict(TFIDF_FILES)

    @classmethod
    def load(cls, directory: str | Path, names: list[str], *, ngram_range: tuple[int, int],
             files: dict[str, str] | None = None) -> SparseLinker:  # fmt: skip
        """The linker over ``names`` saved in ``directory`` by :meth:`save`, without fitting (nor scikit-learn):
        its :class:`CharTfidf` is given the saved vocabulary and idf, its name vectors are the saved rows, so its
        scores are the same bits as those of ``SparseLinker(names, ngram_range=ngram_range)``.

        Args:
            names: the names it was fitted on, in order (the saved rows are checked against
                :data:`CHECKED_NAMES` of them).
            ngram_range: the character n-gram range it was fitted with.
            files: the files' names by what they hold (:meth:`save`'s return); default :data:`TFIDF_FILES`.

        Raises:
            DownstreamError: naming the file: one missing, truncated or corrupt, of the wrong type or shape,
                or rows that are not the TF-IDF of ``names``.
        """
        import scipy.sparse

        directory = Path(directory)
        paths = {key: directory / name for key, name in (files or TFIDF_FILES).items()}
        missing = [key for key in TFIDF_FILES if key not in paths]
        if missing:
            raise DownstreamError(f"{directory}: no saved TF-IDF {', '.join(missing)} file named")

        path = paths["vocabulary"]
        try:
            vocabulary = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DownstreamError(f"{path}: unreadable ({exc}); expected the TF-IDF's n-grams, a JSON list") from None
        if not isinstance(vocabulary, list) or not vocabulary or not all(isinstance(g, str) for g in vocabulary):
            raise DownstreamError(f"{path}: expected the TF-IDF's n-grams, a non-empty JSON list of strings")
        num_ngrams = len(vocabulary)
        columns = {ngram: column for column, ngram in enumerate(vocabulary)}
        if len(columns) != num_ngrams:
            again = next(g for column, g in enumerate(vocabulary) if columns[g] != column)
            raise DownstreamError(f"{path}: n-gram {again!r} listed twice; expected each n-gram once")

        path = paths["idf"]
        try:
            idf = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise DownstreamError(f"{path}: unreadable ({exc}); expected the idf vector (.npy)") from None
        if not isinstance(idf, np.ndarray) or idf.dtype != np.float32 or idf.shape != (num_ngrams,):
            got = f"{idf.shape} {idf.dtype}" if isinstance(idf, np.ndarray) else "an .npz archive"
            raise DownstreamError(f"{path}: expected ({num_ngrams},) float32 idf values (one per n-gram of "
                                  f"{paths['vocabulary'].name}), got {got}")  # fmt: skip

        path = paths["name_vectors"]
        expected = f"the names' ({len(names)}, {num_ngrams}) float32 TF-IDF rows (scipy.sparse .npz, CSR)"
        try:
            name_vectors = scipy.sparse.load_npz(path)
            if name_vectors.format != "csr" or name_vectors.dtype != np.float32 or name_vectors.shape != (len(names), num_ngrams):
                raise DownstreamError(f"{path}: expected {expected}, got {name_vectors.shape} {name_vectors.dtype} {name_vectors.format}")
            name_vectors.check_format(full_check=True)  # indices in range, indptr ordered: what the products trust
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            raise DownstreamError(f"{path}: unreadable ({exc}); expected {expected}") from None

        vectorizer = CharTfidf(columns, idf, ngram_range)
        checked = np.unique(np.linspace(0, len(names) - 1, min(len(names), CHECKED_NAMES)).astype(np.int64))
        fresh = vectorizer.transform([names[i] for i in checked])  # (len(checked), num_ngrams)
        for row, i in enumerate(checked):
            saved, again = name_vectors[i], fresh[row]
            if not (np.array_equal(saved.indices, again.indices) and np.allclose(saved.data, again.data, rtol=1e-5, atol=1e-7)):
                raise DownstreamError(f"{path}: row {i} is not the TF-IDF of name {i + 1} ({names[i]!r}) under "
                                      f"{paths['vocabulary'].name} and {paths['idf'].name}: the files are damaged or of another dictionary")  # fmt: skip
        linker = cls.__new__(cls)
        linker.ngram_range = tuple(ngram_range)
        linker.vectorizer = vectorizer
        linker._index(name_vectors)
        return linker

    @property
    def exact_match_score(self) -> float:
        """The score of a text that is one of the names with that name: cosine 1, the most any name can have, so
        that name is the text's best (``predict`` links such a mention without searching,
        :meth:`downstream.linking.predict.EntityLinker.best_names`)."""
        return 1.0

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

    def common_bounds(self, vectors, rows, *, weight: float = 1.0, out: np.ndarray | None = None) -> np.ndarray:
        """An upper bound of ``weight`` times the part of the cosine of each of rows ``rows`` of ``vectors`` with
        each name over the common n-grams (:data:`COMMON_POSTINGS_FRACTION`), ``(len(rows), num_names)`` float32.
        With ``P`` the projection on the top :data:`COMMON_RANK` principal directions of the names' common parts
        (:attr:`common_basis`, orthonormal), text ``t`` and name ``n``: ``t . n = Pt . Pn + (t - Pt) . (n - Pn) <=
        Pt . Pn + |t - Pt| |n - Pn|`` (Cauchy-Schwarz on the second term). Both terms come from one product,
        ``(len(rows), rank + 1) x (rank + 1, num_names)`` (:attr:`common_factors`). The names' common parts lie
        mostly along a few directions (the letters and letter pairs every name has), so what is left to
        Cauchy-Schwarz is small where, on the whole part, it was loose. Exact but for float32 rounding
        (:data:`BOUND_MARGIN` covers it). ``out``: a ``(len(rows), num_names)`` float32 block written into and
        returned (default a new one)."""
        common = self._common_part(vectors, rows)  # (len(rows), num_common)
        projected = common @ self.common_basis  # (len(rows), rank)
        left = np.sqrt(np.maximum(np.sum(common**2, axis=1) - np.sum(projected**2, axis=1), 0.0)) * (1 + 1e-6)
        factors = (np.hstack([projected, left[:, None]]) * weight).astype(np.float32)  # (len(rows), rank + 1)
        return np.matmul(factors, self.common_factors, out=out)

    def upper_bounds(self, vectors, row: int, *, weight: float = 1.0, dense: np.ndarray | None = None,
                     common: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
        """An upper bound of ``dense + weight * cosine`` of row ``row`` of ``vectors`` with each name,
        ``(num_names,)`` float32 (``dense``: ``(num_names,)`` scores, default none): the cosine's part over the
        text's rare n-grams, exact, plus a bound of its part over the common ones (:meth:`common_bounds`; given
        as ``common``, that text's row of :meth:`common_bounds` with ``weight``, it is used and overwritten).
        Exact but for float32 rounding (:data:`BOUND_MARGIN` covers it). The work: a few passes over the names,
        and the names of the text's rare n-grams (about a fifteenth of those of all its n-grams), gathered with
        numpy alone (scipy's row indexing and product cost several times the arithmetic for one text)."""
        bound = self.common_bounds(vectors, [row], weight=weight)[0] if common is None else common  # (num_names,)
        if dense is not None:
            bound += dense
        start, end = vectors.indptr[row], vectors.indptr[row + 1]
        columns, values = vectors.indices[start:end], vectors.data[start:end]
        rare = ~self.common[columns]
        if rare.any():
            firsts, lasts = self.ngram_names.indptr[columns[rare]], self.ngram_names.indptr[columns[rare] + 1]
            lengths = lasts - firsts
            positions = _runs(firsts, lengths)  # the rare n-grams' postings in ngram_names
            weights = np.repeat(values[rare] * np.float32(weight), lengths)
            np.add.at(bound, self.ngram_names.indices[positions], self.ngram_names.data[positions] * weights)
        return bound

    def pair_scores(self, vectors, row: int, names: np.ndarray) -> np.ndarray:
        """Cosine of row ``row`` of ``vectors`` with each of ``names`` (``(n,)`` indices), ``(n,)`` float32: the
        same bits as :meth:`vector_scores` gives them (the products summed one after the other in float32, in the
        n-grams' column order: a cumulative sum; a name's n-gram the text lacks adds a zero, which changes no sum).
        """
        return self._pair_scores(self._text_vector(vectors, row), names)

    @staticmethod
    def _text_vector(vectors, row: int) -> np.ndarray:
        """Row ``row`` of ``vectors`` as a dense ``(num_ngrams,)`` float32 vector."""
        start, end = vectors.indptr[row], vectors.indptr[row + 1]
        text = np.zeros(vectors.shape[1], dtype=np.float32)
        text[vectors.indices[start:end]] = vectors.data[start:end]
        return text

    def _pair_scores(self, text: np.ndarray, names: np.ndarray) -> np.ndarray:
        """:meth:`pair_scores` of a text given as its dense vector (:meth:`_text_vector`). The names' entries are
        gathered one run after another, those of n-grams the text lacks dropped (each would add a zero), and each
        name's products laid out in a row, in column order, for one cumulative sum: the rows are as wide as the
        most n-grams a name shares with the text, not as its longest name."""
        indptr = self.name_vectors.indptr
        firsts, lengths = indptr[names], indptr[names + 1] - indptr[names]
        if len(names) <= FEW_NAMES:  # one row a name, as wide as the longest: fewer steps
            width = int(lengths.max(initial=0))
            positions = firsts[:, None] + np.arange(width)[None, :]  # (n, width) entries, past a row's end masked
            inside = np.arange(width)[None, :] < lengths[:, None]
            positions = np.where(inside, positions, 0)
            products = np.where(inside, self.name_vectors.data[positions] * text[self.name_vectors.indices[positions]],
                                np.float32(0))  # fmt: skip
            return np.cumsum(products, axis=1, dtype=np.float32)[:, -1] if width else np.zeros(len(names), np.float32)
        positions = _runs(firsts, lengths)  # the names' entries in name_vectors
        values = text[self.name_vectors.indices[positions]]  # the text's value of each entry's n-gram
        shared = np.flatnonzero(values)
        if not len(shared):
            return np.zeros(len(names), dtype=np.float32)
        owners = np.repeat(np.arange(len(names)), lengths)[shared]  # ascending: each name's entries together
        products = self.name_vectors.data[positions[shared]] * values[shared]
        counts = np.bincount(owners, minlength=len(names))
        slots = np.arange(len(shared)) - np.repeat(np.cumsum(counts) - counts, counts)
        rows = np.zeros((len(names), int(counts.max())), dtype=np.float32)
        rows[owners, slots] = products
        return np.cumsum(rows, axis=1, dtype=np.float32)[:, -1]

    def hybrid_search(self, vectors, k: int, *, dense: np.ndarray, weight: float, stats: dict | None = None,
                      bounds: np.ndarray | None = None):  # fmt: skip
        """The ``k`` best names of each row of ``vectors`` under ``dense + weight * sparse`` (the hybrid score of
        :class:`~downstream.linking.dense.HybridLinker`): the same names and score bits as
        :func:`~downstream.linking.metrics.top_k` over every name's score (``dense += weight * sparse`` with
        :meth:`vector_scores`), for a fraction of the work where scoring every name costs most.

        A text whose n-grams have more names than :data:`PRUNE_POSTINGS` plus :data:`PRUNE_POSTINGS_PER_NAME`
        per name (a dictionary of tens of thousands of names and 1-grams) is pruned: every name gets an upper
        bound of its score (:meth:`upper_bounds`, the common parts' bounds of all the pruned texts in one product,
        :meth:`common_bounds`, plus :data:`BOUND_MARGIN`); the
        :data:`SEEDS` ``* k`` names of highest bound (the one of highest, for ``k == 1``) are scored exactly and
        the ``k``-th best of their scores is a threshold none of the ``k`` best can be below; only the names whose
        bound reaches it are scored exactly (:meth:`pair_scores`) and ranked (ties: the lower index first). A
        pruned text left with more than :data:`MAX_EXACT` names, and the other texts, have every name scored.

        Args:
            vectors: ``(num_texts, num_ngrams)`` CSR from ``vectorizer.transform``.
            k: how many names.
            dense: ``(num_texts, num_names)`` float32 scores the sparse one is added to.
            weight: the sparse score's weight, at least 0.
            stats: when given, gets how the search went: ``pruned`` (texts pruned), ``fell_back`` (of those, texts
                left with more than :data:`MAX_EXACT` names) and ``scored`` (the names left of each pruned text),
                added to what it holds (``bench/hybrid_search.py``).
            bounds: a float32 block of at least ``num_texts`` rows and ``num_names`` columns the common parts'
                bounds are written into (default a new one). A caller searching chunk after chunk keeps one: a new
                ``(256, 73,024)`` block a chunk cost its 75 MB of page faults each time; under a profiler,
                :meth:`common_bounds` took 0.44 s with a new block a chunk and 0.21 s with one kept, over the 5,255
                mentions ``predict`` searched in 2,000 OHSUMED abstracts (2-core AMD EPYC).

        Returns:
            ``(indices, scores)``, each ``(num_texts, min(k, num_names))``.

        Raises:
            ValueError: a negative ``weight`` (the bound would not bound).
        """
        from downstream.linking.metrics import top_k

        if weight < 0:
            raise ValueError(f"the pruned search needs a sparse weight of at least 0, got {weight}")
        num_texts, num_names = vectors.shape[0], self.name_vectors.shape[0]
        k = min(k, num_names)
        indices = np.zeros((num_texts, k), dtype=np.int64)
        scores = np.zeros((num_texts, k), dtype=np.float32)
        margin = np.float32(BOUND_MARGIN * (1 + weight))
        entry_rows = np.repeat(np.arange(num_texts), np.diff(vectors.indptr))
        postings = np.bincount(entry_rows, weights=self.postings[vectors.indices], minlength=num_texts)  # (num_texts,)
        prunable = postings > PRUNE_POSTINGS + PRUNE_POSTINGS_PER_NAME * num_names  # (num_texts,)
        pruned, everything = np.flatnonzero(prunable), np.flatnonzero(~prunable).tolist()  # the latter: every name scored
        out = None if bounds is None else bounds[: len(pruned)]
        common = self.common_bounds(vectors, pruned, weight=weight, out=out) if len(pruned) else None  # (len(pruned), num_names)
        for at, row in enumerate(pruned):
            bound = self.upper_bounds(vectors, row, weight=weight, dense=dense[row], common=common[at])  # (num_names,)
            bound += margin
            text = self._text_vector(vectors, row)
            if k == 1:
                seeds = np.array([bound.argmax()])
                threshold = self._hybrid(text, dense[row], seeds, weight)[0]
            else:
                many = min(SEEDS * k, num_names)
                seeds = np.argpartition(-bound, many - 1)[:many]
                threshold = np.sort(self._hybrid(text, dense[row], seeds, weight))[-k]
            kept = bound >= threshold
            kept[seeds] = True  # at least k, whatever the rounding
            names = np.flatnonzero(kept)  # (numpy's union1d, hashing, took a fifth of the search)
            if stats is not None:
                stats["pruned"] = stats.get("pruned", 0) + 1
                stats["fell_back"] = stats.get("fell_back", 0) + (len(names) > MAX_EXACT)
                stats.setdefault("scored", []).append(len(names))
            if len(names) > MAX_EXACT:
                everything.append(row)
                continue
            found = self._hybrid(text, dense[row], names, weight)
            best = np.lexsort((names, -found))[:k]  # best first, then the lower index
            indices[row], scores[row] = names[best], found[best]
        if everything:
            rows = np.asarray(sorted(everything))
            found = dense[rows]  # a copy
            found += weight * self.vector_scores(vectors[rows])  # a text's scores do not depend on the others'
            indices[rows], scores[rows] = top_k(found, k)
        return indices, scores

    def _hybrid(self, text: np.ndarray, dense: np.ndarray, names: np.ndarray, weight: float) -> np.ndarray:
        """``dense + weight * sparse`` of a text (its dense vector, :meth:`_text_vector`, and its ``(num_names,)``
        dense scores) with ``names``, ``(len(names),)`` float32, with the bits of ``dense += weight * sparse``
        over every name."""
        found = dense[names]  # a copy
        found += weight * self._pair_scores(text, names)
        return found

    def search(self, texts: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest names of each text, best first: ``(indices, scores)``, each ``(len(texts), k)``
        (ties: the lower index first, :func:`~downstream.linking.metrics.top_k`). Texts whose scores are
        gathered are ranked one at a time (no ``(len(texts), num_names)`` block). Every name is scored: the
        pruning of :meth:`hybrid_search` is for the hybrid score (an early trial of it on the sparse score alone,
        NCBI-disease's test mentions, took longer than scoring every name)."""
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
