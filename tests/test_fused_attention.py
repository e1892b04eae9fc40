"""Query, key and value as one projection (``bioelectra.fused_attention``, hparam ``fuse_qkv``): the same losses,
gradients, attention weights and checkpoints as the three projections, with fewer matrix multiplications."""

import copy
from collections import Counter
from unittest import mock

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from bioelectra.configuration import ElectraPretrainingConfig
from bioelectra.fused_attention import (
    fuse_qkv_projections,
    fused_qkv_forward,
    is_fused,
    self_attention_modules,
)
from bioelectra.masking import ElectraMaskingCollator, max_predictions_per_seq
from bioelectra.modeling import ElectraPretrainingModel

SEQ = 32
LAYERS = 2


def _model(attn: str = "sdpa") -> ElectraPretrainingModel:
    config = ElectraPretrainingConfig.from_size(
        "small",
        vocab_size=100,
        model_overrides=dict(
            hidden_size=32, num_hidden_layers=LAYERS, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64,
        ),
    )  # fmt: skip
    config.max_predictions_per_seq = max_predictions_per_seq(config.mask_prob, SEQ)
    config._attn_implementation = attn
    torch.manual_seed(0)
    return ElectraPretrainingModel(config)


def _batch() -> dict:
    """8 masked rows of 10-29 tokens padded to 32: the padding exercises the attention mask."""
    gen = torch.Generator().manual_seed(0)
    collator = ElectraMaskingCollator(
        pad_token_id=0, cls_token_id=2, sep_token_id=3, mask_token_id=4, mask_prob=0.15, max_seq_length=SEQ,
        pad_to_multiple_of=SEQ, generator=gen,
    )  # fmt: skip
    lengths = torch.randint(10, 30, (8,), generator=gen)
    return collator([{"input_ids": [2, *torch.randint(5, 100, (int(k),), generator=gen).tolist(), 3]} for k in lengths])


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("training", [False, True])
def test_fused_projection_gives_the_losses_and_gradients_of_the_three(attn, training):
    """Same seed, same batch: the dropout draws come in the same order, so even in training mode the losses and
    every parameter's gradient equal the unfused model's up to float rounding."""
    plain = _model(attn).train(training)
    fused = copy.deepcopy(plain)
    assert fuse_qkv_projections(fused) == 2 * LAYERS  # the generator's and the discriminator's layers
    batch = _batch()
    grads = []
    for model in (plain, fused):
        torch.manual_seed(1)
        loss = model(**batch).loss
        grads.append((loss, torch.autograd.grad(loss, list(model.parameters()))))
    (loss_plain, grads_plain), (loss_fused, grads_fused) = grads
    torch.testing.assert_close(loss_fused, loss_plain, rtol=1e-6, atol=1e-6)
    for (name, _), a, b in zip(plain.named_parameters(), grads_plain, grads_fused, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6, msg=name)
    assert any(float(g.abs().sum()) > 0 for g, (n, _) in zip(grads_fused, fused.named_parameters(), strict=True) if ".key." in n)


def test_fused_attention_returns_the_attention_weights():
    """An evaluation's attention entropy reads the weights that ``output_attentions`` returns (eager attention)."""
    plain = _model("eager").eval()
    fused = copy.deepcopy(plain)
    fuse_qkv_projections(fused)
    batch = _batch()
    ids, mask = batch["input_ids"], batch["attention_mask"]
    with torch.no_grad():
        want = plain.discriminator(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
        got = fused.discriminator(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
    assert len(got) == LAYERS
    for a, b in zip(want, got, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)


def test_fusing_changes_no_parameter_state_dict_or_checkpoint(tmp_path):
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert fuse_qkv_projections(model) == 2 * LAYERS
    assert fuse_qkv_projections(model) == 2 * LAYERS  # again: still the one fused forward per module
    assert all(is_fused(m) for m in self_attention_modules(model))
    state = model.state_dict()
    assert list(state) == list(before)
    assert all(torch.equal(state[k], v) for k, v in before.items())
    model.save_pretrained(tmp_path / "fused")
    loaded = ElectraPretrainingModel.from_pretrained(tmp_path / "fused")
    assert not any(is_fused(m) for m in self_attention_modules(loaded))  # a runtime choice, not saved
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in before.items())
    module = self_attention_modules(model)[0]
    del module.forward  # undone: the class's forward again
    assert not is_fused(module)


def _matmul_counts(model: torch.nn.Module, batch: dict) -> list[Counter]:
    """The aten matrix products and concatenations of the compiled forward and backward graphs of the loss."""
    graphs: list[Counter] = []

    def count(gm, _inputs):
        graphs.append(Counter(str(n.target) for n in gm.graph.nodes if n.op == "call_function"))
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    step = torch.compile(lambda b: model(**b).loss, backend=aot_autograd(fw_compiler=count, bw_compiler=count), fullgraph=True)
    step(batch).backward()
    torch._dynamo.reset()
    return graphs


def test_the_fused_graph_has_fewer_matrix_products():
    """Per attention layer: 2 fewer in the forward graph (one (3A, H) product instead of three (A, H)) and 4 fewer
    in the backward graph (the input's gradient and the weights' gradient, once each instead of three times)."""
    plain = _model().train()
    fused = copy.deepcopy(plain)
    layers = fuse_qkv_projections(fused)
    batch = _batch()
    (fw_plain, bw_plain), (fw_fused, bw_fused) = _matmul_counts(plain, batch), _matmul_counts(fused, batch)
    assert fw_plain["aten.addmm.default"] - fw_fused["aten.addmm.default"] == 2 * layers
    assert bw_plain["aten.mm.default"] - bw_fused["aten.mm.default"] == 4 * layers
    assert fw_fused["aten.cat.default"] - fw_plain["aten.cat.default"] == 2 * layers  # the weights, the biases


def test_a_key_value_cache_runs_the_modules_own_forward():
    """Decoding with a cache (not pre-training) is left to transformers' own forward pass."""
    module = self_attention_modules(_model())[0]
    hidden = torch.randn(2, 5, module.query.in_features)
    cache = object()
    with mock.patch.object(type(module), "forward", return_value="own") as own:
        assert fused_qkv_forward(module, hidden, None, cache=cache) == "own"
        own.assert_called_once_with(module, hidden, attention_mask=None, cache=cache)
        out, _ = fused_qkv_forward(module, hidden, None, cache=None, encoder_hidden_states=None)
        assert own.call_count == 1 and out.shape == (2, 5, module.query.out_features)
