"""Continuing pre-training from a discriminator alone (a shipped model, or an export whose generator was not
kept): its weights in the joint model, the generator's shared embeddings tied to them, its own layers new."""

import pytest
import torch
from pretrain_fixture import make_data_dir, tiny_hparams

from bioelectra.pretraining.checkpoints import build_model, discriminator_alone
from bioelectra.pretraining.jobs import prepare_pretraining, run_pretraining
from bioelectra.pretraining.settings import resolve_hparams


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data_dir(tmp_path_factory.mktemp("init-from-data") / "data")


def _shipped_like(tmp_path, data_dir, **overrides):
    """A trained-looking discriminator saved alone in float16 with its vocabulary, as the package ships one."""
    hp = resolve_hparams("small", tiny_hparams(**overrides))
    torch.manual_seed(7)
    source = build_model("small", hp, vocab_size=100, pad_token_id=0)
    folder = tmp_path / "shipped"
    source.discriminator.to(torch.float16).save_pretrained(folder)
    (folder / "vocab.txt").write_text((data_dir / "vocab.txt").read_text())
    return folder, source.discriminator


def test_discriminator_alone_is_loaded_and_the_generator_starts_anew(data_dir, tmp_path):
    folder, saved = _shipped_like(tmp_path, data_dir)
    assert discriminator_alone(folder) == folder
    trainer, _ = prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "out", hparams=tiny_hparams(), init_from=folder)
    model = trainer.model
    for key, value in saved.state_dict().items():
        assert torch.equal(model.discriminator.state_dict()[key], value.float()), key
    assert model.discriminator.electra.embeddings.word_embeddings.weight.dtype == torch.float32
    assert model.embeddings_are_shared()  # the generator reads and predicts through the loaded embeddings
    fresh = build_model("small", resolve_hparams("small", tiny_hparams()), vocab_size=100, pad_token_id=0)
    assert not torch.equal(
        model.generator.electra.encoder.layer[0].attention.self.query.weight,
        saved.electra.encoder.layer[0].attention.self.query.weight.float()[: fresh.config.generator_config.hidden_size],
    )
    # it trains: the same command as a continuation from an export
    summary = run_pretraining(data_dir=data_dir, output_dir=tmp_path / "run", hparams=tiny_hparams(max_steps=2), init_from=folder)
    assert summary["global_step"] == 2


def test_an_export_without_its_generator_is_a_discriminator_alone(data_dir, tmp_path):
    folder, _ = _shipped_like(tmp_path, data_dir)
    export = tmp_path / "export"
    export.mkdir()
    folder.rename(export / "discriminator")
    assert discriminator_alone(export) == export / "discriminator"
    (export / "generator").mkdir()
    assert discriminator_alone(export) is None  # both networks: the joint model is loaded as it was saved
    assert discriminator_alone(tmp_path / "nothing") is None


def test_a_discriminator_of_another_shape_is_refused_naming_the_tensors(data_dir, tmp_path):
    folder, _ = _shipped_like(tmp_path, data_dir, model_hparam_overrides={
        "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 2, "intermediate_size": 64,
        "max_position_embeddings": 64})  # fmt: skip
    with pytest.raises(ValueError, match=r"does not fit the model of these hparams.*unexpected: \['electra\.encoder\.layer\.2\."):
        prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "out", hparams=tiny_hparams(), init_from=folder)
