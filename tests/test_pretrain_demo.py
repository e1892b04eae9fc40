"""The replaced-token demo (``pretrain demo``) and the pre-training plots (``pretrain plot``, and the PNGs at
the end of ``pretrain train``), on a tiny real pre-training run and on the shipped bioelectra-mini."""

import json

import pytest
import torch
from pretrain_fixture import make_data_dir, tiny_hparams
from typer.testing import CliRunner

from bioelectra.cli import app
from bioelectra.pretraining import export_checkpoint, run_pretraining
from bioelectra.pretraining.demo import (
    detect_replaced_tokens,
    replace_and_detect,
    replaced_token_demo,
)
from bioelectra.pretraining.demo_model import DemoModel, load_demo_model
from bioelectra.pretraining.plots import (
    PLOT_FILES,
    plot_after_training,
    plot_pretraining_run,
    read_log_history,
)

PNG = b"\x89PNG\r\n\x1a\n"
TEXT = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data_dir(tmp_path_factory.mktemp("demo-data") / "data")


@pytest.fixture(scope="module")
def run_dir(data_dir, tmp_path_factory):
    """A finished 4-step run: evaluated at step 3 during training and after the last step (eval_results.json)."""
    out = tmp_path_factory.mktemp("demo-run") / "run"
    hp = tiny_hparams(max_steps=4, save_steps=4, eval_steps=3, num_eval_steps=1, logging_steps=1)
    assert run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp)["global_step"] == 4
    return out


@pytest.fixture(scope="module")
def export_dir(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("demo-export") / "export"
    export_checkpoint(model_dir=run_dir, output_dir=out)
    return out


def _discriminator_probs(demo: DemoModel, ids: list[int]) -> list[float]:
    with torch.no_grad():
        logits = demo.discriminator(input_ids=torch.tensor([ids])).logits  # (1, L)
    return torch.sigmoid(logits)[0].tolist()


# --- the demo on a tiny model -----------------------------------------------------------------------------


def test_as_given_tokens_and_probabilities(run_dir):
    demo = load_demo_model(run_dir)
    result = detect_replaced_tokens(demo, "w1 w2 w3")
    assert result.tokens == ["[CLS]", "w1", "w2", "w3", "[SEP]"] == result.original_tokens
    assert len(result.probabilities) == len(result.tokens) == len(result.token_ids)
    assert all(0.0 <= p <= 1.0 for p in result.probabilities)
    assert result.probabilities == pytest.approx(_discriminator_probs(demo, result.token_ids), abs=1e-6)
    assert result.is_special == [True, False, False, False, True]
    assert not any(result.is_replaced) and not any(result.chosen) and result.replacement is None
    assert result.predicted_replaced == [p > 0.5 for p in result.probabilities]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generator_replacements_are_exactly_the_reported_ones(run_dir, seed):
    demo = load_demo_model(run_dir)
    assert demo.layout == "pretraining" and demo.generator is not None
    original = detect_replaced_tokens(demo, TEXT).token_ids
    rng_before = torch.get_rng_state()
    result = replace_and_detect(demo, TEXT, replace_prob=0.5, seed=seed)
    assert torch.equal(torch.get_rng_state(), rng_before)  # seeded in a fork: the global stream untouched
    assert result.replacement == "generator"
    assert sum(result.chosen) == 5  # round(10 non-special tokens x 0.5)
    assert not any(c and s for c, s in zip(result.chosen, result.is_special, strict=True))
    changed = [a != b for a, b in zip(result.token_ids, original, strict=True)]
    assert result.is_replaced == changed
    assert all(c for c, r in zip(result.chosen, result.is_replaced, strict=True) if r)  # replaced => chosen
    assert result.original_tokens == demo.tokenizer.convert_ids_to_tokens(original)
    assert result.tokens == demo.tokenizer.convert_ids_to_tokens(result.token_ids)
    # the probabilities are the discriminator's on the corrupted sequence
    assert result.probabilities == pytest.approx(_discriminator_probs(demo, result.token_ids), abs=1e-6)
    again = replace_and_detect(demo, TEXT, replace_prob=0.5, seed=seed)
    assert again.token_ids == result.token_ids  # the same seed, the same corruption
    summary = result.summary()
    assert summary.num_tokens == 10 and summary.num_replaced == sum(changed)
    flagged = [p > 0.5 for p, s in zip(result.probabilities, result.is_special, strict=True) if not s]
    labels = [r for r, s in zip(result.is_replaced, result.is_special, strict=True) if not s]
    assert summary.accuracy == pytest.approx(sum(f == r for f, r in zip(flagged, labels, strict=True)) / 10)


def _rig_generator(demo: DemoModel, token: str) -> None:
    """Make the generator's masked-LM softmax put (all but) all its mass on ``token``."""
    head = demo.generator.generator_lm_head
    with torch.no_grad():
        head.bias.fill_(-1e4)
        head.bias[demo.tokenizer.convert_tokens_to_ids(token)] = 1e4


def test_a_sample_equal_to_the_original_is_not_a_replacement(export_dir):
    demo = load_demo_model(export_dir)
    assert demo.layout == "export" and demo.generator is not None
    text = "w5 w5 w5 w5 w5 w5 w5 w5"
    _rig_generator(demo, "w5")  # every sample is the original token
    result = replace_and_detect(demo, text, replace_prob=0.5, seed=3)
    assert sum(result.chosen) == 4 and not any(result.is_replaced)
    assert result.tokens == result.original_tokens and result.summary().num_replaced == 0
    assert result.summary().auc is None  # one class only
    _rig_generator(demo, "w7")  # every sample differs
    result = replace_and_detect(demo, text, replace_prob=0.5, seed=3)
    assert result.is_replaced == result.chosen and sum(result.is_replaced) == 4
    assert [t for t, r in zip(result.tokens, result.is_replaced, strict=True) if r] == ["w7"] * 4


def test_random_replacements_without_a_generator(export_dir):
    demo = load_demo_model(export_dir / "discriminator")
    assert demo.layout == "discriminator" and demo.generator is None
    result = replace_and_detect(demo, TEXT, replace_prob=1.0, seed=0)
    assert result.replacement == "random" and sum(result.chosen) == 10
    special = set(demo.tokenizer.all_special_ids)
    assert not special & {i for i, c in zip(result.token_ids, result.chosen, strict=True) if c}
    original = detect_replaced_tokens(demo, TEXT).token_ids
    assert result.is_replaced == [a != b for a, b in zip(result.token_ids, original, strict=True)]
    with pytest.raises(ValueError, match="no generator"):
        replace_and_detect(demo, TEXT, replacement="generator")
    # a model with a generator can still be asked for random tokens
    assert replaced_token_demo(export_dir, [TEXT], replacement="random").replacement == "random"


def test_a_random_token_equal_to_the_original_is_not_a_replacement(tmp_path):
    """A vocabulary of one word: every random draw is the original token, so nothing is replaced."""
    from transformers import ElectraConfig, ElectraForPreTraining

    from bioelectra.presets import load_wordpiece_tokenizer

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nword\n")
    tokenizer = load_wordpiece_tokenizer(vocab, do_lower_case=False)
    config = ElectraConfig(vocab_size=6, embedding_size=8, hidden_size=8, num_hidden_layers=1,
                           num_attention_heads=1, intermediate_size=16, max_position_embeddings=16)  # fmt: skip
    demo = DemoModel(ElectraForPreTraining(config).eval(), None, tokenizer, "tiny", "discriminator")
    result = replace_and_detect(demo, "word word word word", replace_prob=1.0, seed=0)
    assert sum(result.chosen) == 4 and not any(result.is_replaced) and result.replacement == "random"


def test_every_layout_loads_the_same_discriminator(run_dir, export_dir):
    """Run folder, checkpoint, export and export/discriminator hold the same discriminator weights."""
    expected = detect_replaced_tokens(load_demo_model(run_dir), TEXT).probabilities
    for model, layout, has_generator in [
        (run_dir / "checkpoint-4", "pretraining", True),
        (export_dir, "export", True),
        (export_dir / "discriminator", "discriminator", False),
    ]:
        demo = load_demo_model(model)
        assert (demo.layout, demo.generator is not None) == (layout, has_generator), model
        assert detect_replaced_tokens(demo, TEXT).probabilities == pytest.approx(expected, abs=1e-5), model


def test_errors_name_the_problem(run_dir, export_dir, tmp_path):
    with pytest.raises(ValueError, match="no discriminator here"):
        load_demo_model(tmp_path)
    with pytest.raises(ValueError, match="ElectraForMaskedLM, not a discriminator"):
        load_demo_model(export_dir / "generator")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        load_demo_model(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        load_demo_model(tmp_path / "file.txt")
    demo = load_demo_model(export_dir)
    with pytest.raises(ValueError, match="empty text"):
        detect_replaced_tokens(demo, "   ")
    with pytest.raises(ValueError, match="text 2 of 2 is empty"):
        replaced_token_demo(demo, ["w1 w2", ""])
    with pytest.raises(ValueError, match="replace_prob=0"):
        replace_and_detect(demo, TEXT, replace_prob=0.0)


# --- the CLI ------------------------------------------------------------------------------------------------


def test_cli_demo_on_the_shipped_model_prints_each_token():
    from transformers import AutoTokenizer

    from bioelectra.checkpoints import DEFAULT_CKPT
    from bioelectra.presets import shipped_model_dir

    text = "Aspirin inhibits cyclooxygenase and reduces inflammation."
    result = CliRunner().invoke(app, ["pretrain", "demo", text, "--seed", "1"])  # the default shipped model
    assert result.exit_code == 0, result.output
    tokens = AutoTokenizer.from_pretrained(shipped_model_dir(DEFAULT_CKPT)).tokenize(text)
    out = result.stdout
    assert f"{DEFAULT_CKPT} (discriminator only)" in out and "random vocabulary tokens" in out
    as_given = out[out.index("as given:") : out.index("with ")]
    for token in ["[CLS]", *tokens, "[SEP]"]:
        assert token in as_given.split(), token
    assert "found " in out and "non-special tokens" in out

    result = CliRunner().invoke(app, ["pretrain", "demo", text, "--seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["replacement"] == "random" and data["has_generator"] is False
    (sentence,) = data["sentences"]
    given, corrupted = sentence["as_given"], sentence["corrupted"]
    assert given["tokens"] == ["[CLS]", *tokens, "[SEP]"]
    assert len(given["probabilities"]) == len(given["tokens"]) and all(0 <= p <= 1 for p in given["probabilities"])
    assert corrupted["is_replaced"] == [a != b for a, b in zip(corrupted["tokens"], corrupted["original_tokens"], strict=True)]
    assert corrupted["summary"]["num_replaced"] == sum(corrupted["is_replaced"]) >= 1


def _said(result) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(result.output.split())


def test_cli_demo_errors_exit_2(export_dir, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["pretrain", "demo", "--model", str(tmp_path), "w1 w2"])
    assert result.exit_code == 2 and "no discriminator here" in _said(result)
    result = runner.invoke(app, ["pretrain", "demo", "--model", str(export_dir), "  "])
    assert result.exit_code == 2 and "is empty" in _said(result)
    result = runner.invoke(app, ["pretrain", "demo", "--model", str(export_dir / "discriminator"), "w1 w2", "--replacement", "generator"])
    assert result.exit_code == 2 and "no generator" in _said(result)
    result = runner.invoke(app, ["pretrain", "demo", "--model", str(export_dir), TEXT, "--replace-prob", "0.3"])
    assert result.exit_code == 0, result.output
    assert "discriminator + generator" in result.stdout and "sampled by the generator" in result.stdout


# --- plots ---------------------------------------------------------------------------------------------------


def _assert_pngs(folder):
    from matplotlib.image import imread

    for name in PLOT_FILES:
        path = folder / name
        assert path.read_bytes().startswith(PNG), path
        assert imread(path).shape[2] in (3, 4)  # decodes as an image


def test_training_writes_the_plots_and_plot_redraws_them(run_dir):
    pytest.importorskip("matplotlib")
    _assert_pngs(run_dir / "plots")  # written by run_pretraining itself
    history, state_file = read_log_history(run_dir)
    assert state_file == run_dir / "checkpoint-4" / "trainer_state.json"
    assert [r["step"] for r in history if "eval_disc_auc" in r] == [3, 4]  # step 4 from eval_results.json
    assert [r["step"] for r in history if "eval_disc_attention_entropy" in r] == [3, 4]  # drawn beside disc_auc
    assert [r["step"] for r in history if "mlm_loss" in r] == [1, 2, 3, 4]
    for path in (run_dir / "plots").iterdir():
        path.unlink()
    result = CliRunner().invoke(app, ["pretrain", "plot", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert sorted(result.stdout.split()) == sorted(str(run_dir / "plots" / n) for n in PLOT_FILES)
    _assert_pngs(run_dir / "plots")
    result = CliRunner().invoke(app, ["pretrain", "plot", str(run_dir / "missing")])
    assert result.exit_code == 2 and "no trainer_state.json" in _said(result)


def test_plots_are_skipped_without_matplotlib(run_dir, tmp_path, monkeypatch):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("plots"))
    monkeypatch.setattr("bioelectra.pretraining.plots.pyplot", lambda: None)
    assert plot_pretraining_run(copy) == [] and not (copy / "plots").exists()
    assert plot_after_training(copy) == []
    monkeypatch.setattr("bioelectra.plotting.pyplot", lambda: None)
    result = CliRunner().invoke(app, ["pretrain", "plot", str(copy)])
    assert result.exit_code == 2 and "matplotlib is not installed" in _said(result)


def test_a_plotting_failure_never_fails_the_training_run(data_dir, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("plotting exploded")

    monkeypatch.setattr("bioelectra.pretraining.plots.plot_pretraining_log", broken)
    out = tmp_path / "run"
    summary = run_pretraining(data_dir=data_dir, output_dir=out, hparams=tiny_hparams(max_steps=2, save_steps=2))
    assert summary["global_step"] == 2 and (out / "checkpoint-2").is_dir()
    assert not (out / "plots").exists()
