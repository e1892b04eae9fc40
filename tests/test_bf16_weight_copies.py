"""hparam bf16_weight_copies: the whole training step's forward pass reads bf16 copies of the linear layers'
weights and biases that the update writes, in place of bf16 autocast's cast of each at every step. The same
arithmetic as autocast (the same bf16 values in every matrix product, the same gradients): the losses and weights
are bit for bit the autocast step's here; the compiled graphs hold no cast of a copied weight or gradient."""

from __future__ import annotations

import json

import pytest
import torch
from pretrain_fixture import tiny_hparams
from test_pretrain_step import _batches, _config, data_dir  # noqa: F401  (data_dir: a fixture)

from bioelectra.modeling import ElectraPretrainingModel
from bioelectra.optimization import UpdatedInStepAdamW, decay_parameter_groups
from bioelectra.pretraining.jobs import prepare_pretraining
from bioelectra.pretraining.step import WholeTrainingStep, autocast_weights


def _bf16_steps(copies: bool, scope: str | None, steps: int = 4, backend="aot_eager"):
    """``steps`` bf16 whole steps of a tiny model (uncompiled, or ``scope`` compiled with ``backend``)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = ElectraPretrainingModel(_config()).train()
    optimizer = UpdatedInStepAdamW(decay_parameter_groups(model, weight_decay=0.01), lr=1e-3, weight_decay=0.01)
    whole = WholeTrainingStep(model, optimizer, max_grad_norm=1.0, bf16=True, compile=scope is not None,
                              compile_backend=backend, compile_scope=scope or "step", bf16_weight_copies=copies)  # fmt: skip
    batches = _batches()
    losses = [float(whole(batches[i % len(batches)]).detach()) for i in range(steps)]
    torch._dynamo.reset()
    return losses, model, whole


def test_the_copied_parameters_are_the_linear_layers_own():
    """Every nn.Linear's weight and bias, and nothing else: not the LayerNorms' or embeddings' (autocast runs
    them in fp32), not the generator's output weight, tied to the word embeddings that the lookup reads."""
    model = ElectraPretrainingModel(_config())
    copied = autocast_weights(model)
    ids = {id(param) for _, _, param in copied}
    linear = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert all(isinstance(module, torch.nn.Linear) and getattr(module, name) is param for module, name, param in copied)
    assert len(copied) == len(ids) == 2 * len(linear) - 1  # each weight and bias once, less the tied output weight
    head = model.generator.generator_lm_head
    assert id(head.weight) not in ids and id(head.bias) in ids
    others = [m for m in model.modules() if not isinstance(m, torch.nn.Linear)]
    assert not any(id(p) in ids for m in others for p in m.parameters(recurse=False))


@pytest.mark.parametrize("scope", [None, "step", "layers"])
def test_the_copies_train_as_autocast_does(scope):
    """Uncompiled and compiled (the step and layer scopes, aot_eager: eager kernels), 4 steps: the losses and
    the fp32 parameters equal autocast's bit for bit, the copies are the parameters in bf16 after each update,
    and the modules hold their fp32 parameters again outside the step."""
    ref_losses, ref_model, _ = _bf16_steps(False, scope)
    losses, model, whole = _bf16_steps(True, scope)
    assert losses == ref_losses
    for (name, p), q in zip(model.named_parameters(), ref_model.parameters(), strict=True):
        assert isinstance(p, torch.nn.Parameter) and p.dtype == torch.float32, name
        assert torch.equal(p, q), name
    assert len(whole._copies) == len(autocast_weights(model)) > 0
    for (_, _, param), copy in zip(whole._copied, whole._copies, strict=True):
        assert copy.dtype == torch.bfloat16 and torch.equal(copy, param.detach().to(torch.bfloat16))


def test_the_copies_take_the_casts_out_of_the_graphs():
    """bench/step_casts.py on the tiny model: the compiled forward pass (compile_scope forward, traced by AOT
    autograd) casts each weight and bias to bf16 from its graph input under autocast, and the backward pass casts
    each of their gradients back to fp32 as it returns them; with the copies neither is left but for the tied
    output weight, which is not copied, and the eager step has one cast op fewer per copy each way."""
    from conftest import REPO_ROOT, load_script

    bench = load_script(REPO_ROOT / "bench" / "step_casts.py")
    batch = _batches(1)[0]
    plain, copied = (bench.measure(_config(), batch, copies=c, device=torch.device("cpu")) for c in (False, True))
    linear_tensors = len(autocast_weights(ElectraPretrainingModel(_config())))
    assert copied["copied_tensors"] == linear_tensors and plain["copied_tensors"] == 0
    assert plain["forward_input_casts"] >= linear_tensors and plain["backward_output_casts"] >= linear_tensors, plain
    assert copied["forward_input_casts"] == plain["forward_input_casts"] - linear_tensors <= 1, (plain, copied)
    assert copied["backward_output_casts"] == plain["backward_output_casts"] - linear_tensors <= 1, (plain, copied)
    assert plain["eager_cast_ops_per_step"] - copied["eager_cast_ops_per_step"] == 2 * linear_tensors


def test_the_copies_need_bf16_and_a_run_without_autocast_says_it_does_not_use_them(data_dir, tmp_path, caplog):  # noqa: F811
    model = ElectraPretrainingModel(_config()).train()
    optimizer = UpdatedInStepAdamW(decay_parameter_groups(model, weight_decay=0.01), lr=1e-3, weight_decay=0.01)
    with pytest.raises(ValueError, match="bf16_weight_copies .* need bf16=True"):
        WholeTrainingStep(model, optimizer, max_grad_norm=1.0, bf16=False, bf16_weight_copies=True)
    trainer, _ = prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "run",
                                     hparams=tiny_hparams(train_step="whole", bf16_weight_copies=True))  # fmt: skip
    assert json.loads((tmp_path / "run" / "hparams.json").read_text())["bf16_weight_copies"] is True
    trainer.create_optimizer()
    with caplog.at_level("WARNING", logger="bioelectra.pretraining.trainer"):
        whole = trainer._make_whole_step(trainer.model)  # this CPU run has no bf16 autocast
    assert "bf16_weight_copies: no bf16 autocast in this run" in caplog.text and not whole.bf16_weight_copies
    caplog.clear()
    with caplog.at_level("WARNING", logger="bioelectra.pretraining.jobs"):
        prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "trainer",
                            hparams=tiny_hparams(train_step="trainer", bf16_weight_copies=True))  # fmt: skip
    assert "bf16_weight_copies: the whole step's (train_step whole or captured), not the Trainer's" in caplog.text
