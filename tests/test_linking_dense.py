"""The dense linker: SapBERT's multi-similarity loss on a hand-computed case, the training pairs, the training
loop on a tiny model, seeded trials from the command line, and the saved linker read back."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DownstreamError
from downstream.linking.dense import (
    MAX_NAME_TOKENS,
    MENTION_REPEATS,
    SPARSE_WEIGHTS,
    DenseEncoder,
    HybridLinker,
    multi_similarity_loss,
    train_encoder,
    training_pairs,
)
from downstream.linking.dictionary import Dictionary
from downstream.linking.preprocess import Query
from downstream.linking.run import SPARSE_NGRAM_RANGES, _search_grid, link_queries, load_linking_data
from downstream.linking.saved import load_linker
from downstream.linking.sparse import SparseLinker

TINY = FIXTURES / "linking-tiny"


def test_multi_similarity_loss_by_hand():
    # unit vectors at angles: 0 and 60 degrees share a label; 90 degrees is the other
    emb = torch.tensor([[1.0, 0.0], [0.5, math.sqrt(3) / 2], [0.0, 1.0]])
    labels = torch.tensor([0, 0, 1])
    # similarities: S01 = 0.5, S02 = 0, S12 = sqrt(3)/2 ~ 0.866; margin 0.2 keeps:
    # anchor 0: pos (0,1) since 0.5 - 0.2 <= max_neg 0? no -> not kept; neg (0,2): 0 + 0.2 >= min_pos 0.5? no
    # anchor 1: pos (1,0): 0.5 - 0.2 <= 0.866 yes; neg (1,2): 0.866 + 0.2 >= 0.5 yes
    # anchor 2: no positive: its negatives need a positive (none) -> nothing kept
    alpha, beta, base = 1.0, 60.0, 0.5
    s12 = math.sqrt(3) / 2
    anchor1 = math.log(1 + math.exp(-alpha * (0.5 - base))) / alpha + math.log(1 + math.exp(beta * (s12 - base))) / beta
    expected = anchor1 / 3  # mean over the three anchors (0 for those without a kept pair)
    assert multi_similarity_loss(emb, labels).item() == pytest.approx(expected, rel=1e-5)
    # pulling the positive closer lowers the loss
    closer = torch.tensor([[1.0, 0.0], [0.9, math.sqrt(1 - 0.81)], [0.0, 1.0]])
    assert multi_similarity_loss(closer, labels).item() < multi_similarity_loss(emb, labels).item()


def test_training_pairs_pair_synonyms_and_mentions():
    d = Dictionary()
    for name, cid in [("tremor", "D1"), ("tremors", "D1"), ("shaking", "D1"), ("gout", "D2")]:
        d.add(name, [cid])
    queries = [Query("1", 0, 1, "Trembling", ("trembling",), ("D1",), "Disease")]
    pairs = training_pairs(d, queries, seed=0, mention_repeats=1)
    assert len(pairs) == 4  # three synonyms of D1 each with another; gout alone; the mention with a D1 name
    assert all(c == "D1" and a != b for a, b, c in pairs)
    assert ("trembling" in {a for a, _, _ in pairs}) and pairs == training_pairs(d, queries, seed=0, mention_repeats=1)
    # repeated, the mention is paired with names drawn anew (here all three of D1's, among 20 draws)
    repeated = training_pairs(d, queries, seed=0, mention_repeats=20)
    assert len(repeated) == 3 + 20 and {b for a, b, _ in repeated if a == "trembling"} == {"tremor", "tremors", "shaking"}


def test_encoder_weights_are_float32_even_from_a_float16_file(tiny_checkpoint, tmp_path):
    from transformers import AutoModel

    half = tmp_path / "half"
    AutoModel.from_pretrained(tiny_checkpoint).half().save_pretrained(half)
    DenseEncoder(str(tiny_checkpoint)).tokenizer.save_pretrained(half)
    encoder = DenseEncoder(str(half))
    assert encoder.model.dtype == torch.float32
    pairs = [("renal failure", "kidney failure", "D1"), ("tremor", "tremors", "D2")]
    train_encoder(encoder, pairs, seed=0, learning_rate=1e-3, batch_size=2, num_epochs=1, max_steps=3)
    assert all(torch.isfinite(p).all() for p in encoder.model.parameters())


def test_training_loop_lowers_the_loss_on_a_tiny_model(tiny_checkpoint):
    encoder = DenseEncoder(str(tiny_checkpoint))
    pairs = [("renal failure", "kidney failure", "D1"), ("tremor", "tremors", "D2"), ("gout", "gouty arthritis", "D3"),
             ("asthma", "bronchial asthma", "D4")]  # fmt: skip
    texts = [a for a, _, _ in pairs] + [b for _, b, _ in pairs]
    labels = torch.tensor([0, 1, 2, 3] * 2)
    with torch.no_grad():
        before = multi_similarity_loss(encoder.forward(texts), labels).item()
    result = train_encoder(encoder, pairs, seed=0, learning_rate=1e-3, batch_size=4, num_epochs=1, max_steps=30)
    with torch.no_grad():
        encoder.model.eval()
        after = multi_similarity_loss(encoder.forward(texts), labels).item()
    assert result["steps"] == 30 and after < before
    embeddings = encoder.embed(texts)
    assert embeddings.shape == (8, 32) and embeddings[0] @ embeddings[0] == pytest.approx(1.0, abs=1e-5)


def test_embedding_batches_on_threads_give_what_one_thread_gives(tiny_checkpoint):
    import threading

    encoder = DenseEncoder(str(tiny_checkpoint))
    texts = [f"{word} {i}" for i, word in enumerate(["gout", "renal failure", "tremor", "asthma", "breast cancer"] * 4)]
    alone = encoder.embed(texts, batch_size=3)
    used = set()
    forward = encoder.model.forward
    both = threading.Barrier(2, timeout=30)  # each thread's first batch waits for the other's: both take a batch

    def counted(**batch):
        if threading.get_ident() not in used:
            used.add(threading.get_ident())
            both.wait()
        return forward(**batch)

    encoder.model.forward = counted
    encoder.threads = 2
    assert np.array_equal(encoder.embed(texts, batch_size=3), alone)  # the same bits, in the given order
    assert len(used) == 2 and threading.get_ident() not in used
    encoder.model.forward = forward
    encoder.threads = 3  # the pool follows a new count
    assert np.array_equal(encoder.embed(texts, batch_size=3), alone) and encoder._pool[0] == 3


def test_embedding_runs_unpadded_batches_of_one_length_and_gives_the_padded_vectors(tiny_checkpoint):
    encoder = DenseEncoder(str(tiny_checkpoint))
    texts = ["autosomal dominant polycystic kidney disease type 2", "gout", "renal failure", "tremor", "asthma",
             "hereditary nonpolyposis colorectal cancer", "breast cancer", "gout", "renal failure", ""]  # fmt: skip
    seen = []
    forward = encoder.model.forward
    encoder.model.forward = lambda **batch: seen.append(batch) or forward(**batch)
    embeddings = encoder.embed(texts, batch_size=2)
    lengths = [len(row) for row in encoder.tokenizer(texts, truncation=True, max_length=MAX_NAME_TOKENS)["input_ids"]]
    assert all(len(b["input_ids"]) <= 2 for b in seen)
    assert sum(len(b["input_ids"]) for b in seen) == len(texts) and all(set(b) == {"input_ids"} for b in seen)
    # every batch is as wide as its texts' sub-tokens: nothing padded
    assert sorted(b["input_ids"].shape[1] for b in seen for _ in b["input_ids"]) == sorted(lengths)
    encoder.model.eval()
    with torch.no_grad():
        padded = torch.nn.functional.normalize(encoder.forward(texts), dim=-1).numpy()  # one batch, padded
    assert padded.shape == embeddings.shape == (len(texts), 32)
    assert np.allclose(embeddings, padded, atol=1e-5)  # the given order; the mask only hid the padding
    assert np.allclose(embeddings[1], embeddings[7], atol=1e-6) and np.allclose(np.linalg.norm(embeddings, axis=1), 1, atol=1e-5)
    assert encoder.embed([]).shape == (0, 32)


def test_length_grouped_forward_gives_the_one_batch_vectors_in_order(tiny_checkpoint):
    encoder = DenseEncoder(str(tiny_checkpoint))
    encoder.model.eval()
    texts = ["autosomal dominant polycystic kidney disease type 2", "gout", "renal failure", "tremor",
             "hereditary nonpolyposis colorectal cancer", "asthma", "breast cancer"]  # fmt: skip
    with torch.no_grad():
        whole = encoder.forward(texts)
        grouped = encoder.forward(texts, group_size=2)
    assert grouped.shape == whole.shape == (7, 32)
    assert torch.allclose(grouped, whole, atol=1e-5)
    # each row is its own text's vector: a single text gives the same row
    with torch.no_grad():
        assert torch.allclose(encoder.forward([texts[4]])[0], grouped[4], atol=1e-5)
    # and gradients reach the weights through the regrouped rows
    encoder.model.train()
    loss = multi_similarity_loss(encoder.forward(texts, group_size=3), torch.tensor([0, 1, 2, 3, 0, 4, 5]))
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in encoder.model.parameters())


def test_dense_trials_from_the_command_line_save_a_linker_that_loads(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["finetune", "--loader", "linking", "--dataset", "ncbi-disease", "--data-dir", str(TINY),
                                      "--linker", "dense", "--ckpt", str(tiny_checkpoint), "--trials", "2", "--max-steps", "2",
                                      "--batch-size", "4", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "results.json").read_text())
    assert [t["seed"] for t in report["trials"]] == [42, 43] and all(t["steps"] == 2 for t in report["trials"])
    assert report["summary"]["test"]["accuracy_at_1"]["n"] == 2
    linker, dictionary, card = load_linker(out / "trial-1" / "linker")
    assert card["dataset"] == "ncbi-disease" and card["sparse_weight"] == report["trials"][1]["sparse_weight"]
    indices, scores = linker.search(["breast cancer"], 3)
    assert indices.shape == (1, 3) and dictionary.names[indices[0, 0]] in dictionary.names
    # its sparse half read from the saved TF-IDF, the same scores as one fitted on its names
    fitted = SparseLinker(dictionary.names, ngram_range=tuple(card["ngram_range"]))
    assert card["tfidf"]["format"] == 1 and np.array_equal(linker.sparse.scores(["breast cancer"]), fitted.scores(["breast cancer"]))
    # dev chose the sparse score's n-gram range and weight together: every pair tried, the first best kept and saved
    trial = report["trials"][1]
    assert [(tuple(e["ngram_range"]), e["sparse_weight"]) for e in trial["selection"]] == [
        (r, w) for r in SPARSE_NGRAM_RANGES for w in SPARSE_WEIGHTS]  # fmt: skip
    best = max(trial["selection"], key=lambda e: e["dev"]["accuracy_at_1"])  # the first of equal maxima
    assert (best["ngram_range"], best["sparse_weight"], best["dev"]) == (trial["ngram_range"], trial["sparse_weight"], trial["dev"])
    assert card["ngram_range"] == trial["ngram_range"] and linker.sparse.ngram_range == tuple(trial["ngram_range"])
    low, high = trial["ngram_range"]
    assert f"x sparse (character {low}-{high}-grams)" in (out / "trial-1" / "linker" / "README.md").read_text()
    with pytest.raises(DownstreamError, match="not a saved linker"):
        load_linker(tmp_path)
    # the same command with one more trial trains only the new one
    result = CliRunner().invoke(app, ["finetune", "--loader", "linking", "--dataset", "ncbi-disease", "--data-dir", str(TINY),
                                      "--linker", "dense", "--ckpt", str(tiny_checkpoint), "--trials", "3", "--max-steps", "2",
                                      "--batch-size", "4", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    again = json.loads((out / "results.json").read_text())
    assert again["trials"][:2] == report["trials"] and again["trials"][2]["seed"] == 44


def test_the_development_grid_search_finds_what_each_hybrid_linker_finds(tiny_checkpoint):
    encoder = DenseEncoder(str(tiny_checkpoint))
    names = ["breast cancer", "breast carcinoma", "colorectal cancer", "gout", "renal failure", "kidney failure", "tremor"]
    texts = ["breast cancers", "kidney failures", "gouty", "tremors"]
    sparses = {r: SparseLinker(names, ngram_range=r) for r in ((1, 2), (2, 4))}
    plain = HybridLinker(encoder, names)
    found = _search_grid(encoder, plain.name_embeddings, sparses, texts, (0.0, 1.0, 8.0), 3)
    assert set(found) == {(r, w) for r in sparses for w in (0.0, 1.0, 8.0)}
    for (r, w), (indices, scores) in found.items():
        expected = HybridLinker(encoder, names, sparses[r], sparse_weight=w, name_embeddings=plain.name_embeddings).search(texts, 3)
        assert np.array_equal(indices, expected[0]) and np.allclose(scores, expected[1], atol=1e-6)
    # the sparse score decides more as its weight grows: the n-gram ranges give different scores
    assert not np.allclose(found[(1, 2), 8.0][1], found[(2, 4), 8.0][1])


def test_train_dev_fits_again_on_both_and_scores_that_fit(tmp_path, tiny_checkpoint):
    def run(out, *extra):
        result = CliRunner().invoke(app, ["finetune", "--loader", "linking", "--dataset", "ncbi-disease", "--data-dir", str(TINY),
                                          "--linker", "dense", "--ckpt", str(tiny_checkpoint), "--trials", "1", "--max-steps", "3",
                                          "--batch-size", "4", "--learning-rate", "1e-3", "--output-dir", str(out), *extra])  # fmt: skip
        assert result.exit_code == 0, result.output
        return json.loads((out / "results.json").read_text())

    plain, both = run(tmp_path / "train"), run(tmp_path / "both", "--train-on", "train+dev")
    trial, refitted = plain["trials"][0], both["trials"][0]
    assert "refit" not in trial and trial["train_on"] == "train" and refitted["train_on"] == "train+dev"
    assert both["settings"]["train_on"] == "train+dev" and "train+dev" in (tmp_path / "both" / "results.md").read_text()
    # the first fit is the same (same seed): same development figures and chosen weight
    assert refitted["dev"] == trial["dev"] and refitted["sparse_weight"] == trial["sparse_weight"]
    # the second fit saw the development mentions too: one more pair for each with a name of its concept
    data = load_linking_data("ncbi-disease", TINY)
    names_of = {ids[0] for ids in data.dictionaries["train+dev"].concept_ids}
    added = sum(q.concept_ids[0] in names_of for q in data.queries["dev"])
    assert added > 0
    assert refitted["refit"]["training_pairs"] == refitted["training_pairs"] + MENTION_REPEATS * added
    assert refitted["refit"]["steps"] == 3
    # the saved linker is the second fit, the one scored on the test set
    linker, dictionary, card = load_linker(tmp_path / "both" / "trial-0" / "linker")
    assert card["test"] == refitted["test"] and card["sparse_weight"] == refitted["sparse_weight"]
    assert card["train_on"] == "train+dev" and "training and development mentions" in (tmp_path / "both" / "trial-0" / "linker" / "README.md").read_text()
    assert link_queries(linker.search, data.queries["test"], dictionary).metrics == pytest.approx(refitted["test"])
    first, _, _ = load_linker(tmp_path / "train" / "trial-0" / "linker")
    assert not np.allclose(first.name_embeddings, linker.name_embeddings)


def test_trials_made_with_other_mention_repeats_are_not_reused(tmp_path, tiny_checkpoint, monkeypatch):
    import downstream.kinds  # noqa: F401  (the table of kinds the fingerprint reads)
    from downstream.linking import dense
    from downstream.settings import FinetuneSettings

    def fingerprint(linker):
        return FinetuneSettings(task="linking", checkpoint=str(tiny_checkpoint), output_dir=tmp_path, dataset="ncbi-disease",
                                linker=linker).fingerprint()  # fmt: skip

    sparse, before = fingerprint("sparse"), fingerprint("dense")
    monkeypatch.setattr(dense, "MENTION_REPEATS", dense.MENTION_REPEATS + 1)
    assert fingerprint("dense") != before and fingerprint("sparse") == sparse
    # the dense linker's development grid is in its fingerprint too
    from downstream.linking import run

    repeats = fingerprint("dense")
    monkeypatch.setattr(run, "SPARSE_NGRAM_RANGES", run.SPARSE_NGRAM_RANGES[:1])
    assert fingerprint("dense") != repeats and fingerprint("sparse") == sparse
    # and so is the preprocessing's version
    from downstream.linking import preprocess

    grid = fingerprint("dense")
    monkeypatch.setattr(preprocess, "PREPROCESSING_VERSION", preprocess.PREPROCESSING_VERSION + 1)
    assert fingerprint("dense") != grid and fingerprint("sparse") == sparse
