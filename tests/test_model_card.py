"""The model card of a trial model, the command line it records, and the per-epoch console rows."""

import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.settings import FinetuneSettings
from downstream.trial.model_card import finetune_command, model_card
from downstream.trial.progress import epoch_header, epoch_row


def _settings(**kw):
    base = {"task": "ner", "checkpoint": "/models/x", "checkpoint_name": "bioelectra-mini", "output_dir": Path("runs/demo"),
            "dataset": "ncbi-disease", "num_trials": 3, "learning_rate": 1e-3}
    return FinetuneSettings(**{**base, **kw})


def test_the_recorded_command_makes_the_same_settings(monkeypatch):
    """The card's command, run through the real CLI, builds settings equal to the run's own."""
    seen = []
    monkeypatch.setattr("downstream.trial.runner.run_trials", lambda settings: seen.append(settings) or (_ for _ in ()).throw(ValueError("stop")))
    monkeypatch.setattr("bioelectra.cli.finetune.resolve_checkpoint", lambda ckpt, out: "/models/x")
    for settings in (
        _settings(),
        _settings(data_dir=Path("data/x"), dataset=None, entity_type="Gene", dropout=0.2, optimizer="electra",
                  layerwise_lr_decay=0.8, warmup_ratio=0.2, max_train_examples=7, seed=7, num_train_epochs=2.5),
        _settings(task="re", dataset="chemprot", re_head="hf", dev_fraction=0.2, metric="loss", greater_is_better=False),
    ):
        command = finetune_command(settings)
        args = shlex.split(command)
        assert args[:2] == ["bioelectra", "finetune"]
        result = CliRunner().invoke(app, args[1:])
        assert result.exit_code == 2 and "stop" in result.output
        assert seen[-1].to_json() == settings.to_json()


def test_card_front_matter_and_content():
    settings = _settings()
    dev = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "accuracy": 0.9}
    test = {"precision": 0.6, "recall": 0.4, "f1": 0.48, "accuracy": 0.95}
    text = model_card(settings, kind="ner", labels=["O", "B-Disease", "I-Disease"], trial_index=1, seed=43,
                      best_epoch=2.0, dev=dev, test=test, dataset_title="NCBI disease corpus", f1_name="entity-level F1")
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["pipeline_tag"] == "token-classification" and front["library_name"] == "transformers"
    assert "base_model" not in front  # bioelectra-mini is not a hub id
    metrics = {m["type"]: m["value"] for m in front["model-index"][0]["results"][0]["metrics"]}
    assert metrics == {"f1": 0.48, "precision": 0.6, "recall": 0.4}
    assert front["model-index"][0]["results"][0]["dataset"]["type"] == "ncbi-disease"
    body = text.split("---\n", 2)[2]
    assert "`B-Disease`" in body and "typed as `Disease`" in body
    assert "| dev | 50.00 | 25.00 | 33.33 | 90.00 |" in body and "| test | 60.00 | 40.00 | 48.00 | 95.00 |" in body
    assert 'aggregation_strategy="first"' in body and "Trial 1 (seed 43)" in body
    assert finetune_command(settings) in body
    hub = model_card(_settings(checkpoint_name="someone/bio-model"), kind="re", labels=["false", "CPR:3"], trial_index=0,
                     seed=42, best_epoch=None, dev=dev, test=test)
    front = yaml.safe_load(hub.split("---\n")[1])
    assert front["base_model"] == "someone/bio-model" and front["pipeline_tag"] == "text-classification"


def test_epoch_rows_are_aligned_and_read_as_percentages():
    header = epoch_header()
    row = epoch_row({"epoch": 2.0, "train_loss": 0.31234, "eval_loss": 0.2, "eval_f1": 0.4567, "eval_precision": 0.5})
    assert len(row) == len(header)
    cells = row.split()
    assert cells == ["2", "0.3123", "0.2000", "45.67", "50.00", "-"]
    assert epoch_row({"epoch": 1.5, "eval_f1": float("nan")}).split() == ["1.5", "-", "-", "-", "-", "-"]


@pytest.mark.parametrize("value", [0.1, 3.0])
def test_float_options_survive_the_command(value):
    assert f"--epochs {value:g}" in finetune_command(_settings(num_train_epochs=value))
