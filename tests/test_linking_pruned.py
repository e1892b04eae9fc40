"""The hybrid score's pruned search (``SparseLinker.hybrid_search``, what ``HybridLinker.search`` and so ``predict
--linker`` run): the bound bounds, the pair scores are the products' bits, and the search finds the same names
and score bits as scoring every name, whichever texts are pruned, with ties and with the fallback."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import downstream.linking.sparse as sparse_module
from downstream.linking.dense import DenseEncoder, HybridLinker
from downstream.linking.metrics import top_k
from downstream.linking.sparse import SparseLinker

WORDS = ["breast", "renal", "colorectal", "ovarian", "cancer", "failure", "carcinoma", "neoplasms", "tremor", "gout"]
#: two-word names, some twice (equal scores: the lower index must come first), and one-word names
NAMES = [" ".join(pair) for pair in itertools.permutations(WORDS, 2)] + ["breast cancer", "gout", "tremor"] + WORDS
TEXTS = ["breast cancers", "kidney failure", "gouty", "tremors", "colorectal carcinoma", "neoplasm of the ovary",
         "§", "cancer", "breast cancer"]  # fmt: skip


def full_search(linker: SparseLinker, texts: list[str], k: int, dense: np.ndarray, weight: float):
    """The reference: every name scored, as ``HybridLinker.scores`` does it."""
    scores = dense.copy()
    scores += weight * linker.scores(texts)
    return top_k(scores, k)


@pytest.fixture
def pruned(monkeypatch):
    """Every text pruned, and a quarter of the names' n-grams common (bounded, not computed)."""
    monkeypatch.setattr(sparse_module, "PRUNE_POSTINGS", 0)
    monkeypatch.setattr(sparse_module, "PRUNE_POSTINGS_PER_NAME", 0)
    monkeypatch.setattr(sparse_module, "COMMON_POSTINGS_FRACTION", 0.02)


def dense_scores(texts: int, names: int, seed: int = 0) -> np.ndarray:
    """Random dense cosines, with columns copied so that some names tie."""
    rng = np.random.default_rng(seed)
    dense = rng.uniform(-0.2, 0.9, size=(texts, names)).astype(np.float32)
    dense[:, 1::7] = dense[:, 0:1]
    return dense


def test_the_bound_bounds_and_the_pair_scores_are_the_products_bits(pruned):
    linker = SparseLinker(NAMES, ngram_range=(1, 3))
    assert 0 < linker.common.sum() < len(linker.common)  # both kinds of n-gram
    vectors = linker.vectorizer.transform(TEXTS)
    every = linker.scores(TEXTS)  # (texts, names)
    names = np.arange(len(NAMES))
    for row in range(len(TEXTS)):
        bound = linker.upper_bounds(vectors, row)
        assert bound.shape == (len(NAMES),) and (bound >= every[row] - 1e-6).all()
        assert np.array_equal(linker.pair_scores(vectors, row, names), every[row])
    # the bound is not the score: some names' common n-grams are bounded above what they give
    assert (linker.upper_bounds(vectors, 0) > every[0] + 1e-3).any()


def test_principal_directions_tighten_the_common_bound_and_never_loosen_it(pruned, monkeypatch):
    """Rank 0 is Cauchy-Schwarz on the whole common part; each added direction gives a bound no looser, still
    above the score; with every direction the bound is the score (to float32 rounding)."""
    every, bounds = None, []
    for rank in (0, 1, 2, 4, 8, 10_000):
        monkeypatch.setattr(sparse_module, "COMMON_RANK", rank)
        linker = SparseLinker(NAMES, ngram_range=(1, 3))
        vectors = linker.vectorizer.transform(TEXTS)
        every = linker.scores(TEXTS) if every is None else every
        bound = np.stack([linker.upper_bounds(vectors, row) for row in range(len(TEXTS))])  # (texts, names)
        assert (bound >= every - 1e-6).all()
        if bounds:
            assert (bound <= bounds[-1] + 1e-5).all()
        bounds.append(bound)
    names, texts, common = linker.name_vectors.toarray(), vectors.toarray(), linker.common
    assert 8 < common.sum()  # rank 8 leaves directions to Cauchy-Schwarz
    cauchy_schwarz = texts[:, ~common] @ names[:, ~common].T + np.outer(np.linalg.norm(texts[:, common], axis=1),
                                                                        np.linalg.norm(names[:, common], axis=1))  # fmt: skip
    np.testing.assert_allclose(bounds[0], cauchy_schwarz, atol=1e-5)
    assert (bounds[4] < bounds[0] - 1e-3).any()  # tighter where it was loose
    np.testing.assert_allclose(bounds[-1], every, atol=1e-5)


@pytest.mark.parametrize("ngram_range", [(1, 2), (1, 3), (2, 4)])
@pytest.mark.parametrize("weight", [0.25, 1.0, 8.0])
@pytest.mark.parametrize("k", [1, 5])
@pytest.mark.parametrize("rank", [0, 2, sparse_module.COMMON_RANK])
def test_the_pruned_search_finds_what_scoring_every_name_finds(pruned, ngram_range, weight, k, rank, monkeypatch):
    monkeypatch.setattr(sparse_module, "COMMON_RANK", rank)
    linker = SparseLinker(NAMES, ngram_range=ngram_range)
    dense = dense_scores(len(TEXTS), len(NAMES), seed=k)
    vectors = linker.vectorizer.transform(TEXTS)
    indices, scores = linker.hybrid_search(vectors, k, dense=dense, weight=weight)
    expected = full_search(linker, TEXTS, k, dense, weight)
    assert indices.shape == scores.shape == (len(TEXTS), k)
    assert np.array_equal(indices, expected[0]) and np.array_equal(scores, expected[1])  # the same bits
    # the caller's block for the bounds (kept from chunk to chunk), stale values in it: the same again
    block = np.full((len(TEXTS) + 3, len(NAMES)), np.nan, dtype=np.float32)
    for _ in range(2):
        again = linker.hybrid_search(vectors, k, dense=dense, weight=weight, bounds=block)
        assert np.array_equal(again[0], indices) and np.array_equal(again[1], scores)
    assert not np.isnan(block).all()  # written into


def test_ties_the_fallback_and_unpruned_texts_agree(pruned, monkeypatch):
    linker = SparseLinker(NAMES, ngram_range=(1, 3))
    dense = np.zeros((len(TEXTS), len(NAMES)), dtype=np.float32)  # only the sparse score: exact duplicates tie
    vectors = linker.vectorizer.transform(TEXTS)
    expected = full_search(linker, TEXTS, 3, dense, 1.0)
    first = NAMES.index("breast cancer")
    assert expected[0][-1, 0] == first  # "breast cancer" twice in the names: the first one wins
    assert np.array_equal(linker.hybrid_search(vectors, 3, dense=dense, weight=1.0)[0], expected[0])
    monkeypatch.setattr(sparse_module, "MAX_EXACT", 0)  # every pruned text falls back to every name
    assert all(np.array_equal(a, b) for a, b in zip(linker.hybrid_search(vectors, 3, dense=dense, weight=1.0), expected, strict=True))
    monkeypatch.setattr(sparse_module, "PRUNE_POSTINGS", 10**12)  # no text pruned
    assert all(np.array_equal(a, b) for a, b in zip(linker.hybrid_search(vectors, 3, dense=dense, weight=1.0), expected, strict=True))
    # k past the number of names: every name, ranked
    indices, _ = linker.hybrid_search(vectors[:1], len(NAMES) + 5, dense=dense[:1], weight=1.0)
    assert sorted(indices[0].tolist()) == list(range(len(NAMES)))


def test_a_negative_weight_is_refused():
    linker = SparseLinker(NAMES)
    with pytest.raises(ValueError, match="at least 0"):
        linker.hybrid_search(linker.vectorizer.transform(TEXTS), 1, dense=dense_scores(len(TEXTS), len(NAMES)), weight=-1.0)


def test_the_hybrid_linker_searches_as_it_scores(pruned, tiny_checkpoint):
    encoder = DenseEncoder(str(tiny_checkpoint))
    sparse = SparseLinker(NAMES, ngram_range=(1, 3))
    for weight in (0.0, 0.5, 4.0):
        linker = HybridLinker(encoder, NAMES, sparse, sparse_weight=weight)
        for k in (1, 4):
            indices, scores = linker.search(TEXTS, k)
            expected = top_k(linker.scores(TEXTS), k)
            assert np.array_equal(indices, expected[0]) and np.array_equal(scores, expected[1])
