"""The generator's replacement samplers (bioelectra/sampling.py): the softmax's distribution, temperature,
disallowed tokens, and the random numbers the two-stage draw saves; bench/sampling.py's report."""

import functools
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from bioelectra.sampling import SAMPLING_BLOCK, gumbel_sample, sample_replacements, two_stage_gumbel_sample

REPO_ROOT = Path(__file__).resolve().parent.parent

SAMPLERS = [
    gumbel_sample,
    sample_replacements,
    # blocks that divide the 4 entries, do not (a short last block), hold one entry, or hold them all
    *(functools.partial(two_stage_gumbel_sample, block=b) for b in (2, 3, 1, 64)),
]


@pytest.mark.parametrize("sample", SAMPLERS, ids=["gumbel", "replacements", "block2", "block3", "block1", "block64"])
def test_sampling_matches_softmax_and_disallow(sample):
    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, 2.0, -1.0]]).repeat(20000, 1)
    counts = torch.bincount(sample(logits), minlength=4).float() / 20000
    assert torch.allclose(counts, torch.softmax(logits[0], -1), atol=0.015)
    # temperature: low temperature concentrates on the argmax, high flattens
    assert (sample(logits[:1000], temperature=0.01) == 2).all()
    hot = torch.bincount(sample(logits, temperature=100.0), minlength=4).float() / 20000
    assert torch.allclose(hot, torch.full((4,), 0.25), atol=0.02)
    # disallow: the given token is never drawn, even when it dominates
    peaked = torch.tensor([[0.0, 50.0, 0.0, 0.0]]).repeat(500, 1)
    assert not (sample(peaked, disallow=torch.ones(500, dtype=torch.long)) == 1).any()
    # a row's own disallowed token: each row a different one
    row_ids = torch.arange(4).repeat(250)
    assert not (sample(peaked.repeat(2, 1), disallow=row_ids) == row_ids).any()
    # the first and last entries can be drawn (no off-by-one at the ends)
    ends = torch.tensor([[9.0, -50.0, -50.0, 9.0]]).repeat(2000, 1)
    assert set(sample(ends).tolist()) == {0, 3}
    # fp32 arithmetic whatever the input dtype, int64 ids
    assert sample(logits[:10].bfloat16()).dtype == torch.long


def test_two_stage_on_a_large_vocabulary_matches_softmax_token_and_block():
    """A realistic shape, 31,620 entries (the last block short): the peaked tokens' probabilities and the mass of
    each block both match the softmax, the second a check of the first stage alone."""
    torch.manual_seed(1)
    vocab = 31620
    logits = torch.randn(1, vocab) * 3
    logits[0, :4] = torch.tensor([16.0, 15.0, 14.5, 13.0])  # p = 0.52, 0.19, 0.12, 0.03; the rest 0.15
    logits[0, -5:] = 13.5  # the short last block (31,620 = 247 x 128 + 4) holds 0.01 each
    rows = logits.expand(2000, -1)  # a view: 8,000 draws in four calls, without an 8,000 x 31,620 copy
    draws = torch.cat([two_stage_gumbel_sample(rows) for _ in range(4)])
    probs = torch.softmax(logits[0], -1)
    counts = torch.bincount(draws, minlength=vocab).float() / len(draws)
    assert torch.allclose(counts[:4], probs[:4], atol=0.02)
    assert abs(counts[-5:].sum() - probs[-5:].sum()) < 0.02
    blocks = math.ceil(vocab / SAMPLING_BLOCK)
    block_counts = torch.bincount(draws // SAMPLING_BLOCK, minlength=blocks).float() / len(draws)
    block_probs = torch.zeros(blocks).index_add_(0, torch.arange(vocab) // SAMPLING_BLOCK, probs)
    assert (block_counts - block_probs).abs().max() < 0.02


def test_two_stage_draws_a_random_number_per_block_and_per_entry_of_one_block(monkeypatch):
    drawn = []
    real = torch.rand_like

    def counting(t, *args, **kwargs):
        drawn.append(t.numel())
        return real(t, *args, **kwargs)

    monkeypatch.setattr(torch, "rand_like", counting)
    logits = torch.randn(3, 1000)
    two_stage_gumbel_sample(logits, block=64)
    assert drawn == [3 * 16, 3 * 64]  # 1,000 entries: 15 blocks of 64 and one of 40, then one block's entries
    drawn.clear()
    gumbel_sample(logits)
    assert drawn == [3 * 1000]


def test_two_stage_refuses_an_empty_block():
    with pytest.raises(ValueError, match="block must be >= 1"):
        two_stage_gumbel_sample(torch.zeros(2, 5), block=0)


def test_sampling_bench_reports_each_sampler(capsys, tmp_path):
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    try:
        import sampling as bench
    finally:
        sys.path.remove(str(REPO_ROOT / "bench"))
    report = bench.main(["--cases", "16:50", "--blocks", "8", "--repeats", "1", "--no-compile", "--embedding", "4",
                          "--out", str(tmp_path / "sampling.json")])
    assert [(c["sampler"], c["block"], c["random_per_row"]) for c in report["cases"]] == [
        ("gumbel", None, 50), ("two_stage", 8, 7 + 8)]  # fmt: skip
    assert all(c["median_ms"] > 0 and c["rows"] == 16 and not c["compiled"] for c in report["cases"])
    assert report["device"].rsplit(", ", 1)[-1].split()[1] in ("core", "cores")  # the CPU named, with its cores
    assert '"sampler": "two_stage"' in capsys.readouterr().out
    assert json.loads((tmp_path / "sampling.json").read_text()) == report
    assert not list(tmp_path.glob("*.tmp"))


def test_two_stage_compiles_as_one_graph_and_keeps_the_distribution():
    """The training step compiles the sampler with ``fullgraph=True`` (bioelectra/pretraining/step.py): no graph
    break, and inductor's kernels (the block log-sum-exp, the gather of one block) draw the same softmax, with
    a disallowed token and a short last block."""
    draw = torch.compile(
        lambda x, d: two_stage_gumbel_sample(x, block=3, disallow=d), fullgraph=True, dynamic=False, backend="inductor"
    )
    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, 2.0, -1.0, 0.5]]).repeat(20000, 1)
    samples = draw(logits, torch.full((20000,), 4))
    counts = torch.bincount(samples, minlength=5).float() / 20000
    expected = torch.softmax(logits[0].masked_fill(torch.arange(5) == 4, float("-inf")), -1)
    assert counts[4] == 0
    assert torch.allclose(counts, expected, atol=0.015)


@pytest.mark.parametrize("argv", [["--cases", "16"], ["--cases", "16:x"], ["--blocks", "0"], ["--blocks", "64,"]])
def test_sampling_bench_refuses_malformed_cases_and_blocks(argv, capsys):
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    try:
        import sampling as bench
    finally:
        sys.path.remove(str(REPO_ROOT / "bench"))
    with pytest.raises(SystemExit) as stop:
        bench.main([*argv, "--no-compile"])
    assert stop.value.code == 2
    assert f"{argv[0]} {argv[1]!r}: expected" in capsys.readouterr().err
