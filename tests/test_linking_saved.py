"""A saved linker's TF-IDF: written beside the dictionary, read back without fitting (nor scikit-learn) with the
same scores to the bit, a folder saved before it was still loaded (by fitting), and damaged files named; texts
turned into vectors with the bits of scikit-learn's transform."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from downstream.errors import DownstreamError
from downstream.linking import sparse
from downstream.linking.dictionary import Dictionary
from downstream.linking.saved import load_linker, save_linker
from downstream.linking.sparse import SMALL_BATCH, TFIDF_FILES, SparseLinker
from downstream.linking.spec import LINKING_DATASETS
from downstream.linking.tfidf import CharTfidf

NAMES = ["breast neoplasms", "breast cancer", "ovarian cancer", "ovarian neoplasms", "tremor", "essential tremor",
         "duchenne muscular dystrophy", "dmd", "ataxia telangiectasia", "sjögren's syndrome", 'crohn "disease"',
         "renal failure", "kidney failure", "acute kidney injury", "gout", "gouty arthritis", "asthma",
         "bronchial asthma", "colorectal neoplasms", "colon cancer", "a\\b type 2"]  # fmt: skip
MENTIONS = ["breast cancers", "tremors", "ovarian tumour", "DMD", "kidney injury", "sjogren syndrome", "crohn's",
            "§", "asthmatic bronchitis", "cancer of the colon"]  # fmt: skip

REPO = Path(__file__).resolve().parent.parent


def _save(folder, names=NAMES, *, ngram_range=(1, 2), sparse=None):
    dictionary = Dictionary()
    for i, name in enumerate(names):
        dictionary.add(name, [f"D{i:06d}"])
    spec = LINKING_DATASETS["ncbi-disease"]
    return save_linker(folder, dictionary, spec, {"method": "sparse"}, ngram_range=ngram_range, sparse=sparse)


def _no_fitting(monkeypatch):
    from sklearn.feature_extraction.text import TfidfVectorizer

    def refuse(*args, **kwargs):
        raise AssertionError("the TF-IDF was fitted")

    monkeypatch.setattr(TfidfVectorizer, "fit", refuse)
    monkeypatch.setattr(TfidfVectorizer, "fit_transform", refuse)


def _assert_same_bits(loaded: SparseLinker, fresh: SparseLinker) -> None:
    for a, b in [(loaded.name_vectors, fresh.name_vectors), (loaded.ngram_names, fresh.ngram_names)]:
        assert a.shape == b.shape and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("data", "indices", "indptr"))
    assert loaded.vectorizer.vocabulary_ == fresh.vectorizer.vocabulary_
    assert loaded.vectorizer.idf_.dtype == np.float32 and np.array_equal(loaded.vectorizer.idf_, fresh.vectorizer.idf_)
    many = MENTIONS * (SMALL_BATCH // len(MENTIONS) + 1)  # SMALL_BATCH or more: the dense product where it is cheaper
    with pytest.MonkeyPatch.context() as patch:
        for fraction in (sparse.DENSE_POSTINGS_FRACTION, 0.0):  # 0: the dense product for `many` (asserted)
            patch.setattr(sparse, "DENSE_POSTINGS_FRACTION", fraction)
            assert fraction or loaded._dense(loaded.vectorizer.transform(many))
            for texts in (MENTIONS, many):
                assert np.array_equal(loaded.scores(texts), fresh.scores(texts))
                (i1, s1), (i2, s2) = loaded.search(texts, 5), fresh.search(texts, 5)
                assert np.array_equal(i1, i2) and np.array_equal(s1, s2)


@pytest.mark.parametrize("ngram_range", [(1, 2), (2, 4)])
def test_a_saved_linker_loads_without_fitting_and_scores_the_same_bits(tmp_path, monkeypatch, ngram_range):
    fitted = SparseLinker(NAMES, ngram_range=ngram_range)
    folder = _save(tmp_path / "linker", ngram_range=ngram_range, sparse=fitted)
    card = json.loads((folder / "linker.json").read_text())
    assert card["tfidf"] == {"format": 1, **TFIDF_FILES} and all((folder / f).is_file() for f in TFIDF_FILES.values())
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]  # no temporary file left
    _no_fitting(monkeypatch)
    loaded, dictionary, _ = load_linker(folder)
    assert dictionary.names == NAMES and loaded.ngram_range == ngram_range
    monkeypatch.undo()
    _assert_same_bits(loaded, fitted)
    _assert_same_bits(loaded, SparseLinker(NAMES, ngram_range=ngram_range))


@pytest.mark.parametrize("ngram_range", [(1, 2), (2, 4), (1, 3)])
def test_char_tfidf_gives_the_bits_of_scikit_learns_transform(ngram_range):
    from sklearn.feature_extraction.text import TfidfVectorizer

    fitted = TfidfVectorizer(analyzer="char", ngram_range=ngram_range, dtype=np.float32).fit(NAMES)
    # upper case, runs of white space, n-grams never seen, empty texts, a long text (rows of many n-grams)
    texts = MENTIONS + NAMES + ["", " ", "Breast  Cancer\t\n", "ÄÖ İstanbul", "x" * 300, " ".join(NAMES)]
    ours = CharTfidf(fitted.vocabulary_, fitted.idf_, ngram_range).transform(texts)
    theirs = fitted.transform(texts)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == np.float32
    assert all(np.array_equal(getattr(ours, f), getattr(theirs, f)) for f in ("data", "indices", "indptr"))


def test_loading_a_saved_linker_does_not_import_scikit_learn(tmp_path):
    folder = _save(tmp_path / "linker")
    code = (f"import sys; from downstream.linking.saved import load_linker; linker = load_linker({str(folder)!r})[0]; "
            "linker.search(['breast cancer'], 1); print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))")  # fmt: skip
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_linker_saved_without_its_tfidf_is_loaded_by_fitting_it(tmp_path):
    folder = _save(tmp_path / "linker")
    card = json.loads((folder / "linker.json").read_text())
    del card["tfidf"]  # as written before the TF-IDF was saved
    (folder / "linker.json").write_text(json.dumps(card, indent=2))
    for name in TFIDF_FILES.values():
        (folder / name).unlink()
    loaded, dictionary, card = load_linker(folder)
    assert "tfidf" not in card and dictionary.names == NAMES
    _assert_same_bits(loaded, SparseLinker(NAMES))


def test_save_linker_refuses_a_sparse_linker_of_other_names_or_ngrams(tmp_path):
    with pytest.raises(ValueError, match="20 names"):
        _save(tmp_path / "a", sparse=SparseLinker(NAMES[:-1]))
    with pytest.raises(ValueError, match=r"\(2, 4\)-grams"):
        _save(tmp_path / "b", sparse=SparseLinker(NAMES, ngram_range=(2, 4)))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_a_data_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) * 4 // 5] ^= 0xFF  # in the last array's values (the archive's headers are not all checked)
    path.write_bytes(bytes(data))


def _repeat_an_ngram(path):
    ngrams = json.loads(path.read_text())
    path.write_text(json.dumps(ngrams[:-1] + ngrams[:1]))


def _rows_of_other_names(path):
    other = _save(path.parent.parent / "other", list(reversed(NAMES)))  # the same n-grams, the rows in another order
    shutil.copy(other / path.name, path)


def _card_names_a_path_outside(folder):
    card = json.loads((folder / "linker.json").read_text())
    card["tfidf"]["idf"] = "../tfidf_idf.npy"
    (folder / "linker.json").write_text(json.dumps(card))


@pytest.mark.parametrize(
    ("damage", "named", "said"),
    [
        (_truncate, "tfidf_names.npz", "unreadable"),
        (_flip_a_data_byte, "tfidf_names.npz", "unreadable"),
        (lambda p: p.unlink(), "tfidf_names.npz", "unreadable"),
        (_rows_of_other_names, "tfidf_names.npz", "is not the TF-IDF of name"),
        (_truncate, "tfidf_idf.npy", "unreadable"),
        (lambda p: np.save(p, np.ones(3, dtype=np.float32)), "tfidf_idf.npy", r"expected \(\d+,\) float32"),
        (_truncate, "tfidf_vocabulary.json", "unreadable"),
        (lambda p: p.write_text('{"a": 0}'), "tfidf_vocabulary.json", "a non-empty JSON list of strings"),
        (_repeat_an_ngram, "tfidf_vocabulary.json", "expected each n-gram once"),
        (lambda p: _card_names_a_path_outside(p.parent), "linker.json", "expected a file name in the folder"),
    ],
)
def test_damaged_tfidf_files_are_named(tmp_path, damage, named, said):
    folder = _save(tmp_path / "linker")
    damage(folder / named)
    with pytest.raises(DownstreamError, match=rf"linker/{named}\b.*{said}") as caught:
        load_linker(folder)
    if named != "linker.json":
        assert "remove 'tfidf' from linker.json" in str(caught.value)
