"""Normalised attention entropy: uniform attention gives 1.0, peaked attention less; padding is ignored."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import ElectraConfig, ElectraModel

from bioelectra.diagnostics import attention_entropy, summarize_attention_entropy


def tiny_encoder(seed: int = 0) -> ElectraModel:
    torch.manual_seed(seed)
    config = ElectraConfig(
        vocab_size=50, embedding_size=16, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, attn_implementation="sdpa",
    )
    return ElectraModel(config).eval()


def test_uniform_attention_is_one():
    """Zero query weights give exactly uniform attention over the real keys: entropy log(n) / log(n)."""
    model = tiny_encoder()
    for layer in model.encoder.layer:
        torch.nn.init.zeros_(layer.attention.self.query.weight)
        torch.nn.init.zeros_(layer.attention.self.query.bias)
    ids = torch.randint(5, 50, (2, 10))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0  # the second sequence has 6 real tokens: log(6), not log(10), is its maximum
    per_layer = attention_entropy(model, ids, mask)
    assert per_layer == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert model.config._attn_implementation == "sdpa"  # restored after the eager probe


def test_peaked_attention_is_lower_and_hand_computed():
    model = tiny_encoder()
    ids = torch.randint(5, 50, (1, 8))
    at_init = attention_entropy(model, ids)
    assert all(0.95 < v <= 1.0 for v in at_init)  # BERT initialisation: nearly uniform
    with torch.no_grad():
        for layer in model.encoder.layer:
            layer.attention.self.query.weight.mul_(200.0)
            layer.attention.self.key.weight.mul_(200.0)
    peaked = attention_entropy(model, ids)
    assert all(p < a - 0.2 for p, a in zip(peaked, at_init, strict=True))
    # the same number from the attention probabilities themselves
    model.config._attn_implementation = "eager"
    with torch.no_grad():
        probs = model(input_ids=ids, output_attentions=True).attentions[0][0]  # (heads, L, L)
    expected = float((-(probs * probs.log()).sum(-1) / math.log(8)).mean())
    assert peaked[0] == pytest.approx(expected, rel=1e-4)


def test_errors_and_summary():
    model = tiny_encoder()
    ids = torch.randint(5, 50, (2, 4))
    with pytest.raises(ValueError, match="2 or more real tokens"):
        attention_entropy(model, ids, torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0]]))
    summary = summarize_attention_entropy([0.5, 1.0])
    assert summary == {"attention_entropy": 0.75, "attention_entropy_per_layer": [0.5, 1.0]}
