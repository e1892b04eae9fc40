"""Fine-tuning as the original did it, on request: the ELECTRA optimizer, dropout, named protocols, scoring a
saved model without training, and the precision check before any data is read."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from bioelectra.optimization import electra_lr_lambda
from downstream.errors import DownstreamError
from downstream.kinds import build_task, task_class
from downstream.settings import PROTOCOLS, FinetuneSettings

runner = CliRunner()
NER = FIXTURES / "ner-tiny"


def _task_and_tokenizer(settings):
    from downstream.checkpoints import load_tokenizer

    kind = task_class(settings.task)
    task = build_task(settings.task, kind.locate_files(settings), **kind.options(settings))
    tokenizer = load_tokenizer(settings.checkpoint)
    task.encode(tokenizer, max_seq_length=settings.max_seq_length)
    return task, tokenizer


@pytest.mark.filterwarnings(r"ignore:Detected call of `lr_scheduler.step\(\)`")
def test_the_electra_optimizer_matches_the_original_update_rule_by_hand(tmp_path, tiny_checkpoint):
    """google-research/electra model/optimization.py: no bias correction, epsilon 1e-6, weight decay not on
    LayerNorm and biases, warmup multiplied into a linear decay computed from step 0."""
    from downstream.trial.trainer import build_trainer

    settings = FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path, data_dir=NER,
                                optimizer="electra", learning_rate=1e-3, warmup_ratio=0.5, weight_decay=0.01,
                                max_seq_length=16)  # fmt: skip
    task, tokenizer = _task_and_tokenizer(settings)
    trainer, _ = build_trainer(settings, task, tokenizer, seed=0, output_dir=tmp_path / "ckpt")
    trainer.create_optimizer_and_scheduler(num_training_steps=4)  # warmup ceil(0.5 * 4) = 2 steps
    # the schedule by hand: min(step / 2, 1) * (1 - step / 4)
    factors = [0.0, 0.5 * 0.75, 1.0 * 0.5, 1.0 * 0.25]
    assert [electra_lr_lambda(s, warmup_steps=2, num_train_steps=4) for s in range(4)] == pytest.approx(factors)
    trainer.lr_scheduler.step()  # step 1
    assert trainer.lr_scheduler.get_last_lr()[0] == pytest.approx(1e-3 * 0.375)

    model = trainer.model
    params = dict(model.named_parameters())
    decayed = "electra.encoder.layer.0.attention.self.query.weight"
    plain = "electra.encoder.layer.0.attention.output.LayerNorm.weight"
    before = {n: params[n].detach().clone() for n in (decayed, plain)}
    torch.manual_seed(1)
    grads = {}
    for name, p in model.named_parameters():
        p.grad = torch.randn_like(p)
        grads[name] = p.grad.clone()
    trainer.optimizer.step()
    lr = 1e-3 * 0.375
    for name, weight_decay in ((decayed, 0.01), (plain, 0.0)):
        g = grads[name]
        m, v = 0.1 * g, 0.001 * g * g  # first moments, no bias correction
        update = m / (v.sqrt() + 1e-6) + weight_decay * before[name]
        assert torch.allclose(params[name].detach(), before[name] - lr * update, atol=1e-7), name
    assert type(trainer.optimizer).__name__ == "ElectraAdamW"


def test_dropout_reaches_every_dropout_module(tmp_path, tiny_checkpoint):
    from downstream.trial.trainer import build_trainer

    settings = FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path, data_dir=NER,
                                dropout=0.3, max_seq_length=16)  # fmt: skip
    task, tokenizer = _task_and_tokenizer(settings)
    trainer, _ = build_trainer(settings, task, tokenizer, seed=0, output_dir=tmp_path / "ckpt")
    model = trainer.model
    modules = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert modules and all(m.p == 0.3 for m in modules)
    config = model.config
    assert (config.hidden_dropout_prob, config.attention_probs_dropout_prob, config.classifier_dropout) == (0.3, 0.3, 0.3)


@pytest.mark.slow
def test_a_protocol_sets_its_values_explicit_options_win_and_evaluate_reproduces_the_trial(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    args = ["finetune", "--data-dir", NER, "--ckpt", tiny_checkpoint, "--output-dir", out, "--protocol", "bio-electra",
            "--epochs", "2", "--trials", "1", "--max-seq-length", "16"]  # fmt: skip
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "results.json").read_text())
    settings = report["settings"]
    expected = PROTOCOLS["bio-electra"]["settings"]
    assert settings["protocol"] == "bio-electra"
    for key in ("learning_rate", "layerwise_lr_decay", "optimizer", "dropout", "per_device_train_batch_size"):
        assert settings[key] == expected[key], key
    assert (settings["num_train_epochs"], settings["num_trials"], settings["max_seq_length"]) == (2.0, 1, 16)  # given
    assert report["dropout"] == dict.fromkeys(("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"), 0.1)
    md = (out / "results.md").read_text()
    assert "Protocol `bio-electra`" in md and "Optimizer `electra`" in md and "Dropout: hidden_dropout_prob 0.1" in md

    # the trial's saved model, scored again without training: the same test (and dev) scores exactly
    ev = tmp_path / "eval"
    result = runner.invoke(app, ["evaluate", "--model", str(out / "trial-0" / "model"), "--data-dir", str(NER),
                                 "--output-dir", str(ev), "--max-seq-length", "16"])  # fmt: skip
    assert result.exit_code == 0, result.output
    scored = json.loads((ev / "results.json").read_text())
    trial = report["trials"][0]
    assert scored["test"]["f1"] == trial["test"]["f1"] and scored["dev"]["f1"] == trial["dev"]["f1"]
    assert set(scored["test"]) >= set(trial["test"]) - {"loss"}
    assert (ev / "test_predictions.txt").read_text() == (out / "trial-0" / "test_predictions.txt").read_text()


def test_evaluate_refuses_a_model_whose_labels_are_not_the_datas(tmp_path, tiny_checkpoint):
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    model_dir = tmp_path / "typed-model"
    labels = ["O", "B-Gene", "I-Gene", "B-Chemical", "I-Chemical"]  # two types: not the bare tags' one type
    model = AutoModelForTokenClassification.from_pretrained(
        tiny_checkpoint, num_labels=5, id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)}
    )
    model.save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(tiny_checkpoint).save_pretrained(model_dir)
    result = runner.invoke(app, ["evaluate", "--model", str(model_dir), "--data-dir", str(NER), "--output-dir", str(tmp_path / "e")])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "['B-Chemical', 'B-Gene', 'I-Chemical', 'I-Gene', 'O']" in text and "['B', 'I', 'O']" in text


def test_fp16_without_a_gpu_is_refused_before_any_data_is_read(tmp_path, tiny_checkpoint):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: fp16 is allowed")
    with pytest.raises(DownstreamError, match="--precision fp16"):
        FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path, precision="fp16")
    result = runner.invoke(app, ["finetune", "--data-dir", str(tmp_path / "no-such-data"), "--ckpt", str(tiny_checkpoint),
                                 "--output-dir", str(tmp_path / "o"), "--precision", "fp16"])  # fmt: skip
    assert result.exit_code == 2 and "--precision fp16" in result.output and "no-such-data" not in result.output


def test_unknown_protocol_and_optimizer_are_named(tmp_path, tiny_checkpoint):
    result = runner.invoke(app, ["finetune", "--data-dir", str(NER), "--ckpt", str(tiny_checkpoint), "--protocol", "blurbs"])
    assert result.exit_code == 2 and "--protocol 'blurbs'" in result.output
    with pytest.raises(ValueError, match="--optimizer 'sgd'"):
        FinetuneSettings(task="ner", checkpoint="x", output_dir=tmp_path, optimizer="sgd")
