"""ElectraPretrainingConfig / ElectraPretrainingModel: sizes, shapes, ties, losses, gradients (the samplers:
test_sampling.py)."""

import pytest
import torch
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForPreTraining,
    ElectraForMaskedLM,
    ElectraForPreTraining,
)

from bioelectra.configuration import ElectraPretrainingConfig, generator_config_from_discriminator
from bioelectra.modeling import (
    ElectraPretrainingModel,
    ElectraPretrainingOutput,
    masked_lm_positions,
)
from bioelectra.presets import ELECTRA_SIZES, preset_config

VOCAB = 100
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}


def tiny_config(**kw) -> ElectraPretrainingConfig:
    kw.setdefault("generator_hidden_size", 0.5)
    return ElectraPretrainingConfig.from_size(
        "small",
        vocab_size=VOCAB,
        embedding_size=24,
        model_overrides=dict(TINY, max_position_embeddings=32),
        **kw,
    )


def tiny_model(seed: int = 0, **kw) -> ElectraPretrainingModel:
    torch.manual_seed(seed)
    return ElectraPretrainingModel(tiny_config(**kw)).eval()


def masked_batch(batch_size: int = 3, length: int = 12, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    original = torch.randint(5, VOCAB, (batch_size, length), generator=g)
    attention_mask = torch.ones_like(original)
    attention_mask[0, -4:] = 0  # padding on the first row
    original[0, -4:] = 0
    labels = torch.full_like(original, -100)
    labels[:, 2] = original[:, 2]
    labels[:, 5] = original[:, 5]
    input_ids = original.clone()
    input_ids[:, 2] = 4  # [MASK]; position 5 is chosen but kept (the 15% case)
    return input_ids, attention_mask, labels, original


@pytest.mark.parametrize("size", ["small", "base", "large"])
def test_size_presets_follow_the_original_generator_rule(size):
    cfg = ElectraPretrainingConfig.from_size(size, vocab_size=31620)
    d, g = cfg.discriminator_config, cfg.generator_config
    for key, value in ELECTRA_SIZES[size].items():
        assert getattr(d, key) == value
    fraction = {"small": 0.25, "base": 1 / 3, "large": 0.25}[size]
    assert g.hidden_size == round(d.hidden_size * fraction)
    assert g.num_hidden_layers == d.num_hidden_layers
    assert g.intermediate_size == 4 * g.hidden_size
    assert g.num_attention_heads == max(1, g.hidden_size // 64)
    assert g.embedding_size == d.embedding_size
    assert (cfg.gen_weight, cfg.disc_weight, cfg.mask_prob) == (1.0, 50.0, 0.15)


def test_generator_rule_with_fractions():
    g = generator_config_from_discriminator(
        preset_config("base", vocab_size=50), generator_hidden_size=0.5, generator_layers=0.5
    )
    assert (g.hidden_size, g.num_hidden_layers, g.intermediate_size, g.num_attention_heads) == (
        384,
        6,
        1536,
        6,
    )
    with pytest.raises(ValueError, match="generator_layers"):
        generator_config_from_discriminator(preset_config("base", vocab_size=50), generator_layers=0.0)


def test_unknown_model_override_is_an_error():
    with pytest.raises(ValueError, match="hiden_size"):
        ElectraPretrainingConfig.from_size("small", vocab_size=50, model_overrides={"hiden_size": 3})


def test_forward_shapes_and_output_type():
    model = tiny_model()
    input_ids, attention_mask, labels, _ = masked_batch()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert isinstance(out, ElectraPretrainingOutput)
    # without max_predictions_per_seq: as many slots as the fullest row needs (2 here)
    assert out.gen_logits.shape == (3, 2, VOCAB)
    assert out.sampled_ids.shape == out.masked_lm_positions.shape == out.masked_lm_weights.shape == (3, 2)
    assert out.masked_lm_positions.tolist() == [[2, 5]] * 3 and out.masked_lm_weights.all()
    assert out.disc_logits.shape == input_ids.shape
    assert out.is_replaced.shape == input_ids.shape
    assert out.loss.shape == out.mlm_loss.shape == out.disc_loss.shape == ()
    # without labels: only the discriminator
    plain = model(input_ids=input_ids, attention_mask=attention_mask)
    assert plain.loss is None and plain.disc_logits.shape == input_ids.shape


def test_is_replaced_marks_exactly_the_changed_real_tokens():
    model = tiny_model()
    input_ids, attention_mask, labels, original = masked_batch()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    masked = labels != -100
    assert torch.equal(out.disc_input_ids[masked], out.sampled_ids[out.masked_lm_weights])
    assert torch.equal(out.disc_input_ids[~masked], input_ids[~masked])
    expected = ((out.disc_input_ids != original) & attention_mask.bool()).long()
    assert torch.equal(out.is_replaced, expected)
    assert (out.is_replaced[attention_mask == 0] == 0).all()


def test_sample_equal_to_the_original_is_not_replaced():
    # a generator that puts all its mass on token 9: every sample is 9
    model = tiny_model()
    input_ids, attention_mask, labels, original = masked_batch()
    original[:, 2] = labels[:, 2] = 9  # [MASK] over an original 9
    original[:, 5] = labels[:, 5] = input_ids[:, 5] = 7  # kept 7, will be sampled as 9
    with torch.no_grad():
        model.generator.generator_lm_head.bias.zero_()
        model.generator.generator_lm_head.bias[9] = 1e4
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert (out.sampled_ids == 9).all()
    assert (out.is_replaced[:, 2] == 0).all()  # [MASK] -> the original token: not replaced
    assert (out.is_replaced[:, 5] == 1).all()  # a kept token -> a different one: replaced
    assert out.disc_input_ids[0, 2] == 9


def test_disallow_correct_always_replaces_masked_positions():
    model = tiny_model(disallow_correct=True)
    input_ids, attention_mask, labels, original = masked_batch()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert (out.sampled_ids[out.masked_lm_weights] != labels[labels != -100]).all()
    assert (out.is_replaced[labels != -100] == 1).all()


def test_loss_is_the_weighted_sum_and_disc_loss_uses_real_tokens_only():
    input_ids, attention_mask, labels, _ = masked_batch()
    for gw, dw in [(1.0, 50.0), (0.5, 3.0), (0.0, 1.0)]:
        model = tiny_model(gen_weight=gw, disc_weight=dw)
        torch.manual_seed(1)
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        assert torch.allclose(out.loss, gw * out.mlm_loss + dw * out.disc_loss)
        real = attention_mask.bool()
        expected_disc = torch.nn.functional.binary_cross_entropy_with_logits(
            out.disc_logits[real], out.is_replaced[real].float()
        )
        assert torch.allclose(out.disc_loss, expected_disc)
        expected_mlm = torch.nn.functional.cross_entropy(
            out.gen_logits[out.masked_lm_weights], labels[labels != -100]
        )
        assert torch.allclose(out.mlm_loss, expected_mlm)


def uneven_batch():
    """Rows with 1, 3 and 0 masked positions (row 0 padded): slots then hold filler."""
    input_ids, attention_mask, labels, original = masked_batch()
    labels[0, 5] = -100  # row 0: only position 2
    labels[1, 8] = original[1, 8]  # row 1: positions 2, 5, 8
    input_ids[1, 8] = 4
    labels[2] = -100  # row 2: none
    input_ids[2] = original[2]
    return input_ids, attention_mask, labels, original


def test_masked_lm_positions_puts_each_rows_masked_positions_first_in_order():
    masked = torch.tensor([[0, 1, 0, 1, 1, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], dtype=torch.bool)
    positions, weights = masked_lm_positions(masked, 4)
    assert positions[0, :3].tolist() == [1, 3, 4] and positions[1, 0] == 0
    assert weights.tolist() == [[True] * 3 + [False], [True] + [False] * 3, [False] * 4]
    for row, slots in zip(masked, positions, strict=True):  # filler: distinct, unmasked positions
        assert len(set(slots.tolist())) == 4
        assert not row[slots[row[slots].sum() :]].any()


def test_fixed_slots_give_the_same_objective_as_the_fullest_row():
    """max_predictions_per_seq (the collator's cap; here 5 and 3) and None (3 slots, the fullest row's count)
    differ only in filler slots: the same losses, scores at the masked positions and corrupted sequence.
    A near-zero temperature makes the samples the generator's argmax, so both draw the same tokens."""
    input_ids, attention_mask, labels, original = uneven_batch()
    masked = labels != -100
    outs = {}
    for cap in (None, 5, 3):
        model = tiny_model(max_predictions_per_seq=cap, sampling_temperature=1e-6)
        outs[cap] = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert outs[None].gen_logits.shape == (3, 3, VOCAB) and outs[5].gen_logits.shape == (3, 5, VOCAB)
    assert outs[5].masked_lm_weights.sum(dim=1).tolist() == [1, 3, 0]
    for cap in (5, 3):
        a, b = outs[None], outs[cap]
        assert torch.allclose(a.gen_logits[a.masked_lm_weights], b.gen_logits[b.masked_lm_weights], atol=1e-6)
        for key in ("mlm_loss", "disc_loss", "loss"):
            assert torch.allclose(getattr(a, key), getattr(b, key), atol=1e-6), key
        assert torch.equal(a.disc_input_ids, b.disc_input_ids)
        assert torch.equal(b.disc_input_ids[~masked], input_ids[~masked])  # filler slots wrote nothing
        assert torch.equal(b.is_replaced, ((b.disc_input_ids != original) & attention_mask.bool()).long())
    # the losses are the boolean-indexed definitions: mean CE over the masked positions, mean BCE over real tokens
    out, model = outs[5], tiny_model(max_predictions_per_seq=5)
    with torch.no_grad():
        hidden = model.generator.electra(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        logits = model.generator.generator_lm_head(model.generator.generator_predictions(hidden[masked]))
    assert torch.allclose(out.mlm_loss, torch.nn.functional.cross_entropy(logits, labels[masked]), atol=1e-6)
    real = attention_mask.bool()
    expected_disc = torch.nn.functional.binary_cross_entropy_with_logits(
        out.disc_logits[real], out.is_replaced[real].float()
    )
    assert torch.allclose(out.disc_loss, expected_disc, atol=1e-6)


def test_no_masked_position_gives_a_zero_mlm_loss():
    input_ids, attention_mask, _, _ = masked_batch()
    labels = torch.full_like(input_ids, -100)
    for cap in (None, 4):
        out = tiny_model(max_predictions_per_seq=cap)(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        assert out.mlm_loss.item() == 0.0 and torch.isfinite(out.loss)
        assert not out.masked_lm_weights.any() and not out.is_replaced.any()


def test_more_masked_positions_than_max_predictions_per_seq_raise():
    input_ids, attention_mask, labels, _ = uneven_batch()  # row 1 has 3
    model = tiny_model(max_predictions_per_seq=2)
    with pytest.raises(RuntimeError, match="max_predictions_per_seq=2"):
        model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    with pytest.raises(ValueError, match="max_predictions_per_seq"):
        tiny_config(max_predictions_per_seq=0)


def test_fixed_slots_make_the_training_step_one_graph():
    """With max_predictions_per_seq nothing in the forward pass depends on the data's values for a shape:
    torch.compile traces it whole (no graph break). Without it, counting the slots breaks the graph."""
    input_ids, attention_mask, labels, _ = uneven_batch()
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    torch._dynamo.reset()
    fixed = torch._dynamo.explain(tiny_model(max_predictions_per_seq=4).train())(**inputs)
    assert (fixed.graph_count, fixed.graph_break_count) == (1, 0), fixed.break_reasons
    torch._dynamo.reset()
    counted = torch._dynamo.explain(tiny_model().train())(**inputs)
    assert counted.graph_break_count >= 1
    torch._dynamo.reset()


def test_generator_gets_no_gradient_from_the_discriminator_loss():
    model = tiny_model(gen_weight=0.0, disc_weight=1.0).train()
    input_ids, attention_mask, labels, _ = masked_batch()
    model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
    own = [(n, p) for n, p in model.generator.named_parameters() if not n.startswith("electra.embeddings.")]
    assert any(n == "generator_lm_head.bias" for n, _ in own)
    assert all(p.grad is None or p.grad.abs().sum() == 0 for _, p in own)
    # the shared embeddings do get the discriminator's gradient (as in the original)
    assert model.discriminator.electra.embeddings.word_embeddings.weight.grad.abs().sum() > 0
    assert any(
        p.grad is not None and p.grad.abs().sum() > 0
        for p in model.discriminator.electra.encoder.parameters()
    )


def test_embeddings_are_shared_and_output_layer_tied():
    model = tiny_model()
    gen, disc = model.generator, model.discriminator
    assert model.embeddings_are_shared()
    assert gen.electra.embeddings is disc.electra.embeddings
    assert gen.generator_lm_head.weight is disc.electra.embeddings.word_embeddings.weight
    # embedding_size 24 != hidden sizes 32 / 16: both project their embeddings
    assert hasattr(gen.electra, "embeddings_project") and hasattr(disc.electra, "embeddings_project")
    untied = tiny_model(untied_generator_embeddings=True)
    assert untied.generator.electra.embeddings is not untied.discriminator.electra.embeddings
    assert (
        untied.generator.generator_lm_head.weight
        is untied.generator.electra.embeddings.word_embeddings.weight
    )
    assert untied.embeddings_are_shared()


@pytest.mark.parametrize("untied", [False, True])
def test_ties_survive_save_and_load(tmp_path, untied):
    model = tiny_model(untied_generator_embeddings=untied)
    model.save_pretrained(tmp_path)
    loaded = ElectraPretrainingModel.from_pretrained(tmp_path)
    assert loaded.embeddings_are_shared()
    state, loaded_state = model.state_dict(), loaded.state_dict()
    assert state.keys() == loaded_state.keys()
    for key in state:
        assert torch.equal(state[key], loaded_state[key]), key
    # the shared tensor is stored once
    from safetensors import safe_open

    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert "generator.generator_lm_head.weight" not in keys
    if not untied:
        assert not any(k.startswith("generator.electra.embeddings.") for k in keys)
    # training after loading keeps the ties: one step moves both "copies" together
    loaded.train()
    opt = torch.optim.SGD(loaded.parameters(), lr=1.0)
    input_ids, attention_mask, labels, _ = masked_batch()
    loaded(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
    opt.step()
    assert loaded.embeddings_are_shared()


def test_auto_classes_are_registered(tmp_path):
    model = tiny_model()
    model.save_pretrained(tmp_path)
    assert isinstance(AutoConfig.from_pretrained(tmp_path), ElectraPretrainingConfig)
    assert isinstance(AutoModel.from_pretrained(tmp_path), ElectraPretrainingModel)
    assert isinstance(AutoModelForPreTraining.from_pretrained(tmp_path), ElectraPretrainingModel)
    assert model.accepts_loss_kwargs is False


def test_split_and_from_pair_round_trip(tmp_path):
    model = tiny_model()
    disc, gen = model.split()
    assert isinstance(disc, ElectraForPreTraining) and isinstance(gen, ElectraForMaskedLM)
    assert gen.generator_lm_head.weight is gen.electra.embeddings.word_embeddings.weight
    disc.save_pretrained(tmp_path / "d")
    gen.save_pretrained(tmp_path / "g")
    disc2 = ElectraForPreTraining.from_pretrained(tmp_path / "d")
    gen2 = ElectraForMaskedLM.from_pretrained(tmp_path / "g")
    assert gen2.generator_lm_head.weight is gen2.electra.embeddings.word_embeddings.weight
    joint = ElectraPretrainingModel.from_pair(disc2, gen2, disc_weight=7.0)
    assert joint.config.disc_weight == 7.0 and joint.embeddings_are_shared()
    for key, value in model.state_dict().items():
        assert torch.equal(value, joint.state_dict()[key]), key
    # same outputs given the same sampling noise
    input_ids, attention_mask, labels, _ = masked_batch()
    torch.manual_seed(3)
    a = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    torch.manual_seed(3)
    b = joint.eval()(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert torch.allclose(a.gen_logits, b.gen_logits, atol=1e-6)
    assert torch.allclose(a.disc_logits, b.disc_logits, atol=1e-6)


def test_mismatched_shared_embeddings_raise():
    d = preset_config("small", vocab_size=50, **TINY)
    g = preset_config("small", vocab_size=60, **TINY)
    with pytest.raises(ValueError, match="vocab_size"):
        ElectraPretrainingConfig(discriminator_config=d, generator_config=g)


def test_untied_generator_false_shares_the_whole_encoder(tmp_path):
    """Original ``untied_generator=False`` (paper Section 3.2, "tie all weights"): the generator is the
    discriminator's encoder with its own masked-LM head; both losses train that one encoder."""
    model = tiny_model(untied_generator=False)
    gen, disc = model.generator, model.discriminator
    assert gen.electra is disc.electra and model.embeddings_are_shared()
    assert gen.config.hidden_size == disc.config.hidden_size == 32  # generator_hidden_size 0.5 is ignored
    shared = sum(p.numel() for p in disc.parameters())
    # the head's own parameters (its output matrix is the word embedding matrix, counted once)
    head = sum(p.numel() for n, p in gen.named_parameters() if not n.startswith("electra."))
    assert head == sum(p.numel() for p in gen.generator_predictions.parameters()) + VOCAB
    assert sum(p.numel() for p in model.parameters()) == shared + head
    # the masked-LM loss alone reaches the discriminator's encoder layers
    mlm_only = tiny_model(untied_generator=False, gen_weight=1.0, disc_weight=0.0).train()
    input_ids, attention_mask, labels, _ = masked_batch()
    mlm_only(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
    assert mlm_only.discriminator.electra.encoder.layer[0].attention.self.query.weight.grad.abs().sum() > 0
    assert all(
        p.grad is None or p.grad.abs().sum() == 0
        for p in mlm_only.discriminator.discriminator_predictions.parameters()
    )
    # saved once, loaded tied, same weights; split() gives a full stand-alone generator
    model.save_pretrained(tmp_path)
    from safetensors import safe_open

    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        assert not any(k.startswith("generator.electra.") for k in f.keys())
    loaded = ElectraPretrainingModel.from_pretrained(tmp_path)
    assert loaded.config.untied_generator is False
    assert loaded.generator.electra is loaded.discriminator.electra
    for key, value in model.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[key]), key
    d2, g2 = loaded.split()
    for key, value in d2.electra.state_dict().items():
        assert torch.equal(value, g2.electra.state_dict()[key]), key
    joint = ElectraPretrainingModel.from_pair(d2, g2, untied_generator=False)
    assert joint.generator.electra is joint.discriminator.electra
    assert torch.equal(joint.generator.generator_lm_head.bias, model.generator.generator_lm_head.bias)


def test_untied_generator_false_refuses_contradictions():
    d = preset_config("small", vocab_size=50, **TINY)
    with pytest.raises(ValueError, match="untied_generator_embeddings"):
        ElectraPretrainingConfig(discriminator_config=d, untied_generator=False, untied_generator_embeddings=True)
    g = generator_config_from_discriminator(d, generator_hidden_size=0.5)
    with pytest.raises(ValueError, match="hidden_size"):
        ElectraPretrainingConfig(discriminator_config=d, generator_config=g, untied_generator=False)
