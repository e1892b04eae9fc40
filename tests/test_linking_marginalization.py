"""BioSyn's synonym marginalisation: the marginal likelihood by hand, the candidate lists, the training queries,
the training loop on a tiny model, and the ``biosyn`` linker from the command line, saved and read back."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.linking import marginalization
from downstream.linking.dense import DenseEncoder
from downstream.linking.marginalization import (
    candidates,
    marginal_nll,
    train_marginalization,
    training_queries,
)
from downstream.linking.preprocess import Query
from downstream.linking.saved import load_linker
from downstream.linking.sparse import SparseLinker

TINY = FIXTURES / "linking-tiny"


def test_marginal_nll_sums_the_positive_candidates_by_hand():
    scores = torch.tensor([[0.0, math.log(3.0), 0.0], [0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    labels = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    # row 0: softmax (1/5, 3/5, 1/5), one positive: -log 3/5; row 1: two positives of three equal: -log 2/3;
    # row 2 has no positive and is left out of the mean
    expected = (-math.log(3 / 5) - math.log(2 / 3)) / 2
    assert marginal_nll(scores, labels).item() == pytest.approx(expected, rel=1e-6)
    assert marginal_nll(scores[2:], labels[2:]).item() == 0.0
    # raising a positive's score lowers the loss
    higher = scores.clone()
    higher[0, 1] += 1.0
    assert marginal_nll(higher, labels).item() < marginal_nll(scores, labels).item()


def test_candidates_take_half_sparse_then_new_dense_names():
    sparse_top = np.array([[5, 6, 7, 8], [1, 2, 3, 4]])
    dense_top = np.array([[6, 9, 5, 10], [3, 1, 2, 4]])
    # topk 4, ratio 0.5: two sparse, then the dense ones in order not already taken
    assert candidates(sparse_top, dense_top, topk=4, dense_ratio=0.5).tolist() == [[5, 6, 9, 10], [1, 2, 3, 4]]
    assert candidates(sparse_top, dense_top, topk=4, dense_ratio=0.25).tolist() == [[5, 6, 7, 9], [1, 2, 3, 4]]
    with pytest.raises(ValueError, match="query 0 has 3 distinct names"):
        candidates(np.array([[1, 2, 3]]), np.array([[1, 2, 3]]), topk=4, dense_ratio=0.25)


def test_training_queries_split_composites_with_one_id_each():
    composite = Query("1", 0, 9, "breast and ovarian cancer", ("breast cancer", "ovarian cancer"), ("D1", "D2"), "Disease")
    alternatives = Query("1", 10, 15, "gout", ("gout",), ("D3", "D4"), "Disease")
    unmatched = Query("1", 20, 30, "x and y", ("x", "y"), ("D5",), "Disease")
    assert training_queries([composite, alternatives, unmatched]) == [
        ("breast cancer", ("D1",)), ("ovarian cancer", ("D2",)), ("gout", ("D3", "D4")), ("x", ("D5",)), ("y", ("D5",)),
    ]  # fmt: skip


def _dictionary():
    rows = [("renal failure", "D1"), ("kidney failure", "D1"), ("tremor", "D2"), ("tremors", "D2"), ("gout", "D3"),
            ("gouty arthritis", "D3"), ("asthma", "D4"), ("bronchial asthma", "D4"), ("breast cancer", "D5"),
            ("breast neoplasms", "D5")]  # fmt: skip
    return [n for n, _ in rows], [(c,) for _, c in rows]


def test_training_learns_the_sparse_weight_and_reports_each_epoch(tiny_checkpoint):
    names, ids = _dictionary()
    queries = [Query("1", 0, 1, t, (t,), (c,), "Disease") for t, c in
               [("kidney failures", "D1"), ("tremble", "D2"), ("gouty", "D3"), ("asthmatic", "D4"), ("breast tumor", "D5")]]  # fmt: skip
    sparse = SparseLinker(names, ngram_range=(1, 2))
    encoder = DenseEncoder(str(tiny_checkpoint))
    with pytest.raises(ValueError, match="normalize=False"):
        train_marginalization(encoder, names, ids, sparse, queries, seed=0, epochs=1)
    encoder.normalize = False
    seen = []
    result = train_marginalization(encoder, names, ids, sparse, queries, seed=0, epochs=3, topk=4, batch_queries=2,
                                   learning_rate=1e-3, on_epoch=lambda e, emb, w: seen.append((e, emb.shape, w)))  # fmt: skip
    assert [e for e, _, _ in seen] == [1, 2, 3] and all(shape == (10, 32) for _, shape, _ in seen)
    assert result["marginalization_steps"] == 9 and result["sparse_weight"] == seen[-1][2]
    # the sparse score ranks these mentions' concepts first, so the loss pushes its weight up from 0
    assert result["sparse_weight"] > 0
    # raw [CLS] vectors: not unit length
    assert not np.allclose(np.linalg.norm(result["name_embeddings"], axis=1), 1.0)
    with pytest.raises(ValueError, match="no training mention"):
        train_marginalization(encoder, names, ids, sparse, [], seed=0)


def test_biosyn_linker_from_the_command_line_saves_a_linker_that_loads(tmp_path, tiny_checkpoint, monkeypatch):
    monkeypatch.setattr(marginalization, "EPOCHS", 2)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["finetune", "--loader", "linking", "--dataset", "ncbi-disease", "--data-dir", str(TINY),
                                      "--linker", "biosyn", "--ckpt", str(tiny_checkpoint), "--trials", "1", "--max-steps", "2",
                                      "--batch-size", "4", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    trial = json.loads((out / "results.json").read_text())["trials"][0]
    assert trial["linker"] == "biosyn" and "synonym marginalisation" in trial["method"]
    assert [e["epoch"] for e in trial["marginalization_dev"]] == [1, 2] and trial["marginalization_steps"] > 0
    assert trial["dev"] == trial["marginalization_dev"][-1]["dev"]
    by_epoch = ", ".join(f"{100 * e['dev']['accuracy_at_1']:.2f}" for e in trial["marginalization_dev"])
    assert f"dev acc@1 by epoch {by_epoch}" in (out / "results.md").read_text()
    linker, dictionary, card = load_linker(out / "trial-0" / "linker")
    assert card["normalized"] is False and not linker.encoder.normalize
    assert card["sparse_weight"] == pytest.approx(trial["sparse_weight"])
    # the saved embeddings are the encoder's raw vectors: embedding a name again gives its row
    row = dictionary.names.index("breast cancer")
    assert np.allclose(linker.encoder.embed(["breast cancer"])[0], linker.name_embeddings[row], atol=1e-4)
    indices, _ = linker.search(["breast cancer"], 3)
    assert indices.shape == (1, 3)


def test_biosyn_on_train_dev_learns_its_weight_again_without_looking_at_dev(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["finetune", "--loader", "linking", "--dataset", "ncbi-disease", "--data-dir", str(TINY),
                                      "--linker", "biosyn", "--ckpt", str(tiny_checkpoint), "--trials", "1", "--max-steps", "2",
                                      "--batch-size", "4", "--train-on", "train+dev", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    trial = json.loads((out / "results.json").read_text())["trials"][0]
    refit = trial["refit"]
    # the first fit was scored on dev epoch by epoch; the second, trained on dev, is not
    assert all("dev" in e for e in trial["marginalization_dev"]) and trial["dev"] == trial["marginalization_dev"][-1]["dev"]
    assert refit["marginalization_dev"] and not any("dev" in e for e in refit["marginalization_dev"])
    assert refit["marginalization_steps"] >= trial["marginalization_steps"] > 0  # more mentions, as many epochs
    # the weight scored on test and saved is the one the second fit learned
    assert trial["sparse_weight"] == pytest.approx(refit["marginalization_dev"][-1]["sparse_weight"], abs=1e-4)
    _, _, card = load_linker(out / "trial-0" / "linker")
    assert card["sparse_weight"] == trial["sparse_weight"] and card["test"] == trial["test"]
