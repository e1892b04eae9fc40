"""The shipped discriminators (bioelectra-mini, and any model added to ``SHIPPED_MODELS``): files, size,
registration, loading offline and predicting."""

from __future__ import annotations

import json
import random

import pytest
import torch
from transformers import AutoTokenizer

from bioelectra.presets import SHIPPED_MODELS, UNTRAINED_TWINS, build_preset_checkpoint, shipped_model_dir

SENTENCES = [
    "Mutations in the BRCA1 gene increase the risk of breast and ovarian cancer .",
    "Cisplatin-induced nephrotoxicity was reduced by hydration with saline .",
    "Patients with type 2 diabetes mellitus received metformin twice daily .",
    "The tumor suppressor p53 is frequently inactivated in human cancers .",
    "Hypertension and hyperlipidemia are major risk factors for coronary artery disease .",
    "Serum levels of interleukin-6 were elevated in patients with sepsis .",
    "Lithium treatment was associated with hypothyroidism in elderly patients .",
    "The randomized trial compared aspirin with placebo in 2,000 patients .",
]


def model_vocab_size(path) -> int:
    return json.loads((path / "config.json").read_text())["vocab_size"]


#: The cap on a shipped model's float16 weights (issue 14: at most 32 MB, so the package stays installable).
MAX_SHIPPED_BYTES = 32 * 1024 * 1024


@pytest.mark.parametrize("name", SHIPPED_MODELS)
def test_shipped_model_files_and_model_card(name):
    path = shipped_model_dir(name)
    weights = path / "model.safetensors"
    assert weights.stat().st_size <= MAX_SHIPPED_BYTES
    from safetensors import safe_open

    with safe_open(str(weights), framework="pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"F16"}
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == ["ElectraForPreTraining"]
    vocab = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert config["vocab_size"] == len(vocab) and vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert json.loads((path / "tokenizer_config.json").read_text())["model_max_length"] == config["max_position_embeddings"]
    card = (path / "README.md").read_text()
    for needed in ("disc_auc", "masked_lm_accuracy", "Intended use", "Limitations", "licen", f"--ckpt {name}"):
        assert needed in card, needed


def test_bioelectra_mini_model_card_names_its_recipe_and_corpus():
    assert "bioelectra-mini" in SHIPPED_MODELS
    card = (shipped_model_dir("bioelectra-mini") / "README.md").read_text()
    for needed in ("recipe.sh", "OHSUMED"):
        assert needed in card, needed
    assert (shipped_model_dir("bioelectra-mini") / "model.safetensors").stat().st_size <= 20 * 1024 * 1024
    with pytest.raises(ValueError, match="unknown shipped model"):
        shipped_model_dir("bioelectra-huge")


def test_every_shipped_model_has_its_twin_and_its_learning_rate():
    """Shipping a model means registering it three times in bioelectra/presets.py; a missing entry would make
    the default command compare it unfairly (the twin at another rate) or not at all."""
    from bioelectra.checkpoints import DEFAULT_CKPT
    from bioelectra.presets import SHIPPED_MODEL_LEARNING_RATES

    assert sorted(UNTRAINED_TWINS.values()) == sorted(SHIPPED_MODELS)
    assert all(twin == f"{name}-untrained" for twin, name in UNTRAINED_TWINS.items())
    assert sorted(SHIPPED_MODEL_LEARNING_RATES) == sorted(SHIPPED_MODELS)
    assert DEFAULT_CKPT in SHIPPED_MODELS


def replaced_token_auc(path, *, draws: int = 20, seed: int = 0) -> float:
    """AUC of the discriminator's scores, randomly replaced tokens against original ones (0.5 = chance).

    Each draw replaces 15% of every sentence's tokens (at least one) with random vocabulary entries (ids >= 1000,
    no special tokens); the scores are the per-token logits of ``ElectraForPreTraining``.
    """
    from transformers import AutoTokenizer, ElectraForPreTraining

    tokenizer = AutoTokenizer.from_pretrained(path)
    assert len(tokenizer) == model_vocab_size(path) and tokenizer.is_fast
    model = ElectraForPreTraining.from_pretrained(path, dtype=torch.float32).eval()
    rng = random.Random(seed)
    replaced_scores, original_scores = [], []
    for _ in range(draws):
        for sentence in SENTENCES:
            ids = tokenizer(sentence)["input_ids"]
            assert tokenizer.unk_token_id not in ids
            corrupted = list(ids)
            positions = rng.sample(range(1, len(ids) - 1), k=max(1, (len(ids) - 2) * 15 // 100))
            for i in positions:
                corrupted[i] = rng.randrange(1000, len(tokenizer))
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([corrupted])).logits[0]
            for i in range(1, len(ids) - 1):
                (replaced_scores if i in positions else original_scores).append(logits[i].item())
    pairs = [(r > o) + 0.5 * (r == o) for r in replaced_scores for o in original_scores]
    return sum(pairs) / len(pairs)


@pytest.mark.parametrize("name", SHIPPED_MODELS)
def test_shipped_model_detects_replaced_tokens_with_its_tokenizer(name, tmp_path):
    """Replaced token detection with the shipped tokenizer: the shipped discriminator ranks replaced tokens
    above original ones (bioelectra-mini: AUC 0.74 when written), its untrained twin does not (about 0.5)."""
    path = shipped_model_dir(name)
    tokenizer = AutoTokenizer.from_pretrained(path)
    # the shipped vocabularies are uncased (trained by `pretrain build-vocab` on the corpus)
    assert tokenizer.tokenize("BRCA1 Gene") == tokenizer.tokenize("brca1 gene")
    trained = replaced_token_auc(path)
    untrained = replaced_token_auc(build_preset_checkpoint(f"{name}-untrained", tmp_path / "twin"))
    assert trained > 0.65, trained
    assert abs(untrained - 0.5) < 0.1, untrained
    assert trained - untrained > 0.15, (trained, untrained)


def test_finetune_resolves_bioelectra_mini_and_its_untrained_twin(tmp_path):
    from transformers import ElectraConfig, pipeline

    from bioelectra.cli import _resolve_checkpoint
    from downstream.checkpoints import load_tokenizer
    from downstream.ner.task import NerTask

    shipped = _resolve_checkpoint("bioelectra-mini", tmp_path)
    assert shipped == str(shipped_model_dir("bioelectra-mini"))
    from conftest import FIXTURES

    task = NerTask({s: FIXTURES / "ner-tiny" / f"{s if s != 'dev' else 'devel'}.tsv" for s in ("train", "dev", "test")})
    model = task.build_model(shipped)
    assert next(model.parameters()).dtype == torch.float32
    tokenizer = load_tokenizer(shipped)
    tagger = pipeline("token-classification", model=model, tokenizer=tokenizer, device=-1, ignore_labels=[])
    sentence = "Familial adenomatous polyposis is inherited ."
    predicted = tagger(sentence)
    assert [t["word"] for t in predicted] == tokenizer.tokenize(sentence)
    assert {t["entity"] for t in predicted} <= set(model.config.id2label.values())

    assert UNTRAINED_TWINS["bioelectra-mini-untrained"] == "bioelectra-mini"
    twin = build_preset_checkpoint("bioelectra-mini-untrained", tmp_path / "twin")
    a, b = ElectraConfig.from_pretrained(shipped).to_dict(), ElectraConfig.from_pretrained(twin).to_dict()
    shape = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "embedding_size", "vocab_size")
    assert {k: a[k] for k in shape} == {k: b[k] for k in shape}
    assert (twin / "tokenizer.json").read_text() == (shipped_model_dir("bioelectra-mini") / "tokenizer.json").read_text()
    from safetensors.torch import load_file

    trained, fresh = load_file(shipped_model_dir("bioelectra-mini") / "model.safetensors"), load_file(twin / "model.safetensors")
    key = "electra.encoder.layer.0.attention.self.query.weight"
    assert fresh[key].dtype == torch.float32
    assert not torch.allclose(trained[key].float(), fresh[key])


def test_shipped_model_is_the_recipe_shape():
    """The recipe's hyper-parameters describe the shipped weights (shape, tie layout, vocabulary size)."""
    from conftest import REPO_ROOT

    hparams = json.loads((REPO_ROOT / "recipes" / "bioelectra-mini" / "hparams.json").read_text())
    config = json.loads((shipped_model_dir("bioelectra-mini") / "config.json").read_text())
    for key, value in hparams["model_hparam_overrides"].items():
        assert config[key] == value, key
    assert hparams["untied_generator"] is False
    recipe = (REPO_ROOT / "recipes" / "bioelectra-mini" / "recipe.sh").read_text()
    assert f"--vocab-size {config['vocab_size']}" in recipe and "--do-lower-case" in recipe


def test_bioelectra_small_is_its_recipes_shape_and_card_names_the_recipe():
    """bioelectra-small's weights are what recipes/bioelectra-small/hparams.json describes (4 of
    ELECTRA-Small's layers, a 30,522-entry vocabulary), and its card says how to make it again."""
    from conftest import REPO_ROOT

    hparams = json.loads((REPO_ROOT / "recipes" / "bioelectra-small" / "hparams.json").read_text())
    config = json.loads((shipped_model_dir("bioelectra-small") / "config.json").read_text())
    for key, value in hparams["model_hparam_overrides"].items():
        assert config[key] == value, key
    assert config["vocab_size"] == hparams["vocab_size"]
    from bioelectra.presets import ELECTRA_SIZES

    small = ELECTRA_SIZES["small"]  # ELECTRA-Small's widths, not its depth
    assert (config["hidden_size"], config["embedding_size"]) == (small["hidden_size"], small["embedding_size"])
    card = (shipped_model_dir("bioelectra-small") / "README.md").read_text()
    for needed in ("docs/guides/pretraining-recipe.md", "hparams.json", "H200", "bioelectra-small-untrained"):
        assert needed in card, needed


@pytest.mark.slow
def test_finetune_defaults_to_the_default_shipped_model(tmp_path):
    """`finetune` without --ckpt fine-tunes the default shipped model (``DEFAULT_CKPT``: the best shipped one)
    at its registered rate, with no network and nothing built under the output folder."""
    from conftest import FIXTURES
    from typer.testing import CliRunner

    from bioelectra.cli import DEFAULT_CKPT, app
    from bioelectra.presets import SHIPPED_MODEL_LEARNING_RATES

    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "finetune", "--loader", "ner", "--data-dir", str(FIXTURES / "ner-tiny"), "--epochs", "1", "--batch-size", "4",
        "--max-seq-length", "32", "--trials", "1", "--output-dir", str(out)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads((out / "results.json").read_text())
    rate = SHIPPED_MODEL_LEARNING_RATES[DEFAULT_CKPT]
    assert report["checkpoint"] == DEFAULT_CKPT
    assert report["settings"]["checkpoint"] == str(shipped_model_dir(DEFAULT_CKPT))
    assert report["settings"]["learning_rate"] == rate  # the shipped model's default rate
    assert f"learning rate {rate:g} (the default for --ckpt {DEFAULT_CKPT}" in " ".join(result.output.split())
    assert not list(out.glob("init-*"))
    assert 0.0 <= report["trials"][0]["test"]["f1"] <= 1.0


def test_untrained_twin_follows_the_shipped_configuration(tmp_path, monkeypatch):
    """A twin built for one shipped configuration is rebuilt, not reused, when the shipped model changes."""
    import shutil

    import bioelectra.presets as presets

    target = tmp_path / "twin"
    first = presets.build_preset_checkpoint("bioelectra-mini-untrained", target)
    assert json.loads((first / "config.json").read_text())["num_hidden_layers"] == 4
    changed = tmp_path / "shipped"
    shutil.copytree(shipped_model_dir("bioelectra-mini"), changed)
    config = json.loads((changed / "config.json").read_text())
    config["num_hidden_layers"] = 2
    (changed / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(presets, "shipped_model_dir", lambda name: changed)
    second = presets.build_preset_checkpoint("bioelectra-mini-untrained", target)
    assert json.loads((second / "config.json").read_text())["num_hidden_layers"] == 2


def test_default_learning_rate_is_shared_by_the_shipped_model_and_its_twin():
    from bioelectra.presets import DEFAULT_FINETUNE_LEARNING_RATE, default_learning_rate

    assert default_learning_rate("bioelectra-mini") == default_learning_rate("bioelectra-mini-untrained") == 1e-3
    assert DEFAULT_FINETUNE_LEARNING_RATE == 1e-4
    for other in ("electra-small", "path/to/checkpoint", "/abs/dir", "owner/model"):
        assert default_learning_rate(other) == DEFAULT_FINETUNE_LEARNING_RATE


def test_untrained_twin_of_any_checkpoint_directory(tmp_path, tiny_checkpoint):
    """build_untrained_twin (the recipe's control) keeps the configuration and tokenizer, not the weights."""
    from safetensors.torch import load_file

    from bioelectra.presets import build_untrained_twin

    # the fixture is itself a seed-0 initialisation: seed 0 gives it back, seed 1 other weights
    same = build_untrained_twin(tiny_checkpoint, tmp_path / "seed0")
    key = "electra.encoder.layer.0.attention.self.query.weight"
    assert torch.equal(load_file(same / "model.safetensors")[key], load_file(tiny_checkpoint / "model.safetensors")[key])
    twin = build_untrained_twin(tiny_checkpoint, tmp_path / "twin", seed=1)
    source_config = json.loads((tiny_checkpoint / "config.json").read_text())
    twin_config = json.loads((twin / "config.json").read_text())
    assert {k: twin_config[k] for k in ("hidden_size", "num_hidden_layers", "vocab_size")} == {
        k: source_config[k] for k in ("hidden_size", "num_hidden_layers", "vocab_size")}
    assert (twin / "tokenizer.json").read_text() == (tiny_checkpoint / "tokenizer.json").read_text()
    assert not torch.equal(load_file(twin / "model.safetensors")[key], load_file(tiny_checkpoint / "model.safetensors")[key])
    with pytest.raises(FileNotFoundError, match="no config.json"):
        build_untrained_twin(tmp_path / "missing", tmp_path / "t2")
