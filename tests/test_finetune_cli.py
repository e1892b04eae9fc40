"""The finetune command end to end on a tiny fixture and a tiny model, and the Trainer loss-scaling trap."""

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO_ROOT
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.ner.data import read_ner_file

runner = CliRunner()


def _finetune(args):
    result = runner.invoke(app, ["finetune", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.mark.slow
def test_finetune_cli_end_to_end(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    data = FIXTURES / "ner-tiny"
    common = ["--loader", "ner", "--data-dir", str(data), "--ckpt", str(tiny_checkpoint), "--epochs", "2",
              "--batch-size", "2", "--learning-rate", "1e-3", "--max-seq-length", "16", "--entity-type", "Disease"]
    result = _finetune([*common, "--output-dir", str(out), "--trials", "2", "--metric", "f1", "--greater_is_better"])
    assert "dev F1" in result.output and "mean" in result.output
    # the console: one bar per trial and an epoch table, not the Trainer's dictionaries of strings
    assert "trial 0 (seed 42; 1 of 2)" in result.output and "trial 1 (seed 43; 2 of 2)" in result.output
    assert "train loss" in result.output and "{'loss'" not in result.output and "'eval_f1'" not in result.output

    report = json.loads((out / "results.json").read_text())
    assert report["num_trials"] == 2
    assert [t["seed"] for t in report["trials"]] == [42, 43]
    # the fixture's bare B / I tags are typed by --entity-type: labels, predictions files and the saved model
    assert report["labels"] == ["O", "B-Disease", "I-Disease"]
    assert report["entity_type"] == "Disease"
    for split, filename in (("train", "train.tsv"), ("dev", "devel.tsv"), ("test", "test.tsv")):
        parsed = read_ner_file(data / filename)
        assert report["counts"][split]["sentences"] == len(parsed.sentences)
        assert report["counts"][split]["words"] == parsed.num_words
    for trial in report["trials"]:
        assert trial["test"]["num_words"] == read_ner_file(data / "test.tsv").num_words
        assert 0.0 <= trial["dev"]["f1"] <= 1.0 and trial["best_epoch"] in (1.0, 2.0)
    summary = report["summary"]["test"]["f1"]
    assert summary["n"] == 2 and summary["ddof"] == 1
    assert summary["min"] <= summary["mean"] <= summary["max"]
    assert "| trial | seed |" in (out / "results.md").read_text()

    # predictions: one "token gold predicted" line per test word, a blank line after each sentence
    lines = (out / "trial-0" / "test_predictions.txt").read_text().split("\n")
    test = read_ner_file(data / "test.tsv", entity_type="Disease")
    rows = [line.split(" ") for line in lines if line]
    assert len(rows) == test.num_words
    assert [r[0] for r in rows] == [w for s in test.sentences for w in s.words]
    assert [r[1] for r in rows] == [t for s in test.sentences for t in s.tags]
    assert {r[1] for r in rows} == {"O", "B-Disease", "I-Disease"}
    assert all(r[2] in ("O", "B-Disease", "I-Disease") for r in rows)

    # the kept model is a standard checkpoint: Auto class + pipeline
    from transformers import AutoModelForTokenClassification, pipeline

    model_dir = out / "trial-0" / "model"
    model = AutoModelForTokenClassification.from_pretrained(model_dir)
    card = (model_dir / "README.md").read_text()
    assert card.startswith("---\n") and "pipeline_tag: \"token-classification\"" in card
    assert f"{100 * report['trials'][0]['test']['f1']:.2f}" in card
    assert model.config.id2label == {0: "O", 1: "B-Disease", 2: "I-Disease"}
    tagger = pipeline("token-classification", model=str(model_dir), device="cpu")
    assert isinstance(tagger("Familial adenomatous polyposis is rare ."), list)

    # running again with more trials reuses the finished ones (same settings), runs only the new one
    before = [(out / f"trial-{i}" / "trial.json").stat().st_mtime_ns for i in range(2)]
    _finetune([*common, "--output_dir", str(out), "--trials", "3"])
    after = [(out / f"trial-{i}" / "trial.json").stat().st_mtime_ns for i in range(2)]
    assert before == after
    report = json.loads((out / "results.json").read_text())
    assert [t["seed"] for t in report["trials"]] == [42, 43, 44]


def test_finetune_cli_errors_are_clear(tmp_path, tiny_checkpoint):
    result = runner.invoke(app, ["finetune", "--loader", "ner", "--ckpt", str(tiny_checkpoint)])
    assert result.exit_code == 2 and "--dataset NAME" in result.output
    result = runner.invoke(app, ["finetune", "--data-dir", str(FIXTURES / "ner-tiny"), "--ckpt", str(tiny_checkpoint),
                                 "--metric", "f2", "--output-dir", str(tmp_path / "m")])
    assert result.exit_code == 2 and "--metric 'f2': expected one of f1, precision" in result.output
    assert not (tmp_path / "m").exists()
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("train.tsv", "devel.tsv", "test.tsv"):
        (bad / name).write_text("Gout\tB\n\n")
    (bad / "test.tsv").write_text("Gout B\n")
    result = runner.invoke(
        app, ["finetune", "--data-dir", str(bad), "--ckpt", str(tiny_checkpoint), "--output-dir", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "test.tsv:1: expected 'token<TAB>tag'" in result.output.replace("\n", "")
    # a layer-wise decay of 0 is refused before any preset checkpoint is built in the output folder
    result = runner.invoke(app, ["finetune", "--data-dir", str(FIXTURES / "ner-tiny"), "--layerwise-lr-decay", "0",
                                 "--output-dir", str(tmp_path / "d")])
    assert result.exit_code == 2 and "layerwise_lr_decay=0.0: expected a factor in (0, 1]" in result.output
    assert not (tmp_path / "d").exists()


def test_finetune_script_runs_from_a_checkout():
    result = subprocess.run(
        [sys.executable, "finetune.py", "--help"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "240", "TERMINAL_WIDTH": "240"},
    )
    assert result.returncode == 0, result.stderr
    for option in ("--ckpt", "--loader", "--dataset", "--output-dir", "--trials", "--epochs", "--metric", "--max-seq-length"):
        assert option in result.stdout


def test_logged_loss_is_not_scaled_by_gradient_accumulation(tmp_path, tiny_checkpoint):
    """The Trainer's loss-scaling trap (a forward with **kwargs): with accumulation 2, the logged loss must be the plain mean."""
    import torch
    from transformers import Trainer, TrainingArguments

    from downstream.ner.task import NerTask

    task = NerTask({"train": FIXTURES / "ner-tiny" / "train.tsv", "dev": FIXTURES / "ner-tiny" / "devel.tsv",
                    "test": FIXTURES / "ner-tiny" / "test.tsv"})
    from downstream.checkpoints import load_tokenizer

    tokenizer = load_tokenizer(str(tiny_checkpoint))
    task.encode(tokenizer, max_seq_length=32)
    collator = task.data_collator(tokenizer)
    features = task.dataset("train").features

    def logged_loss(accepts_loss_kwargs: bool) -> tuple[float, float]:
        torch.manual_seed(0)
        model = task.build_model(str(tiny_checkpoint), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        assert model.accepts_loss_kwargs is False
        model.accepts_loss_kwargs = accepts_loss_kwargs
        with torch.no_grad():
            expected = sum(model(**collator(features[i : i + 2])).loss.item() for i in (0, 2)) / 2
        args = TrainingArguments(
            output_dir=str(tmp_path / f"t{accepts_loss_kwargs}"), per_device_train_batch_size=2,
            gradient_accumulation_steps=2, learning_rate=0.0, max_steps=1, logging_steps=1, use_cpu=True,
            report_to="none", save_strategy="no", train_sampling_strategy="sequential",
        )
        trainer = Trainer(model=model, args=args, train_dataset=task.dataset("train"), data_collator=collator)
        trainer.train()
        logged = next(e["loss"] for e in trainer.state.log_history if "loss" in e)
        return logged, expected

    logged, expected = logged_loss(False)
    assert logged == pytest.approx(expected, rel=1e-4)
    # the trap is real: a model that claims to accept loss kwargs is logged at twice the loss
    trapped, _ = logged_loss(True)
    assert trapped == pytest.approx(2 * expected, rel=1e-4)


@pytest.mark.slow
def test_finetune_accepts_an_original_tensorflow_checkpoint(tmp_path):
    """`finetune --ckpt <TF checkpoint dir>` converts the discriminator once and fine-tunes it."""
    tf_dir = FIXTURES / "tf_checkpoints" / "fp32-tied"
    out = tmp_path / "run"
    args = ["--loader", "ner", "--data-dir", str(FIXTURES / "ner-tiny"), "--ckpt", str(tf_dir), "--output-dir", str(out),
            "--max-steps", "2", "--batch-size", "4", "--max-seq-length", "16"]
    result = _finetune(args)
    assert "converted TF checkpoint" in result.output
    converted = out / "converted-discriminator"
    assert json.loads((converted / "conversion_report.json").read_text())["step"] == 10
    report = json.loads((out / "results.json").read_text())
    assert report["trials"][0]["test"]["num_words"] == read_ner_file(FIXTURES / "ner-tiny" / "test.tsv").num_words
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(out / "trial-0" / "model")
    assert model.config.vocab_size == len((tf_dir / "vocab.txt").read_text().split())
    # a second run reuses the conversion
    result = _finetune([*args, "--trials", "2"])
    assert "converted TF checkpoint" not in result.output


def _listed_commands(output: str) -> set[str]:
    """The command names of a help screen's Commands panel (first word of each of its rows)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "Commands" in line)
    names = set()
    for line in lines[start + 1 :]:
        row = line.strip("│ ").split()
        if line.startswith("╰"):
            break
        if row and line.startswith("│ ") and not line.startswith("│  "):
            names.add(row[0])
    return names


def test_app_has_the_commands():
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert _listed_commands(result.output) == {"finetune", "run-finetuning", "evaluate", "predict", "benchmark", "pretrain", "convert"}
    result = runner.invoke(app, ["pretrain", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert _listed_commands(result.output) == {"build-vocab", "build-data", "train", "eval", "export", "demo", "plot"}


def test_recorded_best_epoch_dev_scores_equal_a_fresh_evaluation(tmp_path, tiny_checkpoint):
    """run_trial reuses the best epoch's dev result instead of scoring dev again: they must agree."""
    from downstream.checkpoints import load_tokenizer
    from downstream.ner.task import NerTask
    from downstream.settings import FinetuneSettings
    from downstream.trial.runner import _best_dev_result
    from downstream.trial.trainer import build_trainer

    task = NerTask({"train": FIXTURES / "ner-tiny" / "train.tsv", "dev": FIXTURES / "ner-tiny" / "devel.tsv",
                    "test": FIXTURES / "ner-tiny" / "test.tsv"})
    tokenizer = load_tokenizer(str(tiny_checkpoint))
    task.encode(tokenizer, max_seq_length=16)
    settings = FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path, num_train_epochs=3,
                                learning_rate=1e-3, per_device_train_batch_size=2, metric="loss", greater_is_better=False)
    trainer, recorder = build_trainer(settings, task, tokenizer, seed=0, output_dir=tmp_path / "ckpt")
    trainer.train()
    assert len(recorder.history) == 3
    recorded, recorded_loss = _best_dev_result(trainer, recorder)
    fresh = trainer.evaluate()
    assert recorded_loss == pytest.approx(fresh["eval_loss"], rel=1e-5)
    assert recorded.metrics["f1"] == pytest.approx(fresh["eval_f1"])
    assert recorded.predictions == recorder.last.predictions


def test_a_nan_training_loss_is_not_hidden(tmp_path, tiny_checkpoint):
    """A diverging fine-tuning run shows: the Trainer's default would swap a nan step loss for the running mean
    (and wait on the device every step to check it)."""
    import math

    import torch

    from downstream.checkpoints import load_tokenizer
    from downstream.ner.task import NerTask
    from downstream.settings import FinetuneSettings
    from downstream.trial.trainer import build_trainer

    task = NerTask({"train": FIXTURES / "ner-tiny" / "train.tsv", "dev": FIXTURES / "ner-tiny" / "devel.tsv",
                    "test": FIXTURES / "ner-tiny" / "test.tsv"})
    tokenizer = load_tokenizer(str(tiny_checkpoint))
    task.encode(tokenizer, max_seq_length=16)
    settings = FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path, num_train_epochs=1,
                                learning_rate=1e-3, per_device_train_batch_size=2)
    trainer, _ = build_trainer(settings, task, tokenizer, seed=0, output_dir=tmp_path / "ckpt")
    compute_loss, calls = trainer.compute_loss, []

    def nan_at_the_second_step(*args, **kwargs):
        calls.append(1)
        loss = compute_loss(*args, **kwargs)
        return loss * torch.tensor(float("nan")) if len(calls) == 2 else loss

    trainer.compute_loss = nan_at_the_second_step
    trainer.args.load_best_model_at_end = False  # the nan's weights are not a model to load back
    assert math.isnan(trainer.train().training_loss)
    assert len(calls) > 2


def test_asynchronous_step_arguments_are_accepted_by_the_trainer(tmp_path):
    """The spelling of the GPU-only settings against the installed transformers (a CPU cannot run them)."""
    from transformers import TrainingArguments

    from bioelectra.trainer_args import asynchronous_step_arguments

    gpu = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, **asynchronous_step_arguments(True))
    assert gpu.accelerator_config.non_blocking is True and gpu.logging_nan_inf_filter is False
    cpu = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, **asynchronous_step_arguments(False))
    assert cpu.accelerator_config.non_blocking is False and cpu.dataloader_pin_memory is False


def test_split_batch_slices_rows_within_the_token_budget():
    import torch

    from downstream.trial.trainer import split_batch

    batch = {"input_ids": torch.arange(40).view(10, 4), "labels": torch.zeros(10, 4), "scalar": 3}
    assert split_batch(batch, 0) == [batch]
    assert split_batch(batch, 40) == [batch]
    chunks = split_batch(batch, 12)  # 3 rows of 4 tokens per slice
    assert [c["input_ids"].shape[0] for c in chunks] == [3, 3, 3, 1]
    assert torch.equal(torch.cat([c["input_ids"] for c in chunks]), batch["input_ids"])
    assert all(c["scalar"] == 3 for c in chunks)
    assert [c["input_ids"].shape[0] for c in split_batch(batch, 2)] == [1] * 10  # never an empty slice


def test_micro_batches_give_the_whole_batch_update(tmp_path, tiny_checkpoint):
    """A batch run as micro-batches yields the same loss and gradients as the whole batch (no dropout)."""
    import torch

    from downstream.checkpoints import load_tokenizer
    from downstream.ner.task import NerTask
    from downstream.settings import CPU_MICRO_BATCH_TOKENS, FinetuneSettings
    from downstream.trial.trainer import build_trainer, split_batch

    task = NerTask({"train": FIXTURES / "ner-tiny" / "train.tsv", "dev": FIXTURES / "ner-tiny" / "devel.tsv",
                    "test": FIXTURES / "ner-tiny" / "test.tsv"})
    tokenizer = load_tokenizer(str(tiny_checkpoint))
    task.encode(tokenizer, max_seq_length=32)
    settings = FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path, per_device_train_batch_size=8)
    trainer, _ = build_trainer(settings, task, tokenizer, seed=0, output_dir=tmp_path / "ckpt")
    assert trainer.micro_batch_tokens == CPU_MICRO_BATCH_TOKENS == 1024  # the CPU default
    model = trainer.model
    trainer.current_gradient_accumulation_steps = 1  # set by train(); this test calls training_step alone
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    features = task.dataset("train").features
    batch = task.data_collator(tokenizer)([features[i] for i in range(min(8, len(features)))])
    rows, length = batch["input_ids"].shape
    assert rows >= 4
    # the slices hold different numbers of labelled words: the weighting matters
    assert len({int(batch["labels"][i].ne(-100).sum()) for i in range(rows)}) > 1

    def step(budget: int) -> tuple[float, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        trainer.micro_batch_tokens = budget
        loss = trainer.training_step(model, dict(batch))
        return loss.item(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    whole_loss, whole_grads = step(0)
    split_loss, split_grads = step(length * 3)  # slices of 3 rows
    assert split_loss == pytest.approx(whole_loss, rel=1e-5)
    assert len(split_grads) == len(whole_grads)
    for a, b in zip(whole_grads, split_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    # and a wrong weighting would be visible: plain averaging of the slice means differs
    with torch.no_grad():
        means = [model(**c).loss.item() for c in split_batch(batch, length * 3)]
    assert sum(means) / len(means) != pytest.approx(whole_loss, rel=1e-4)


def test_layerwise_lr_decay_follows_the_original_rule(tmp_path, tiny_checkpoint):
    """Original ELECTRA ``_get_layer_lrs``: head 1, layer i of L at decay**(L + 1 - i), embeddings
    decay**(L + 2); the Trainer's optimizer and schedule carry the factors (weight decay as before)."""
    import torch

    from downstream.checkpoints import load_tokenizer
    from downstream.ner.task import NerTask
    from downstream.settings import FinetuneSettings
    from downstream.trial.trainer import build_trainer, layerwise_lr_scales

    task = NerTask({"train": FIXTURES / "ner-tiny" / "train.tsv", "dev": FIXTURES / "ner-tiny" / "devel.tsv",
                    "test": FIXTURES / "ner-tiny" / "test.tsv"})
    tokenizer = load_tokenizer(str(tiny_checkpoint))
    task.encode(tokenizer, max_seq_length=32)
    model = task.build_model(str(tiny_checkpoint))
    scales = layerwise_lr_scales(model, 0.5)  # 2 layers
    assert scales["electra.embeddings.word_embeddings.weight"] == 0.5**4
    assert scales["electra.embeddings.LayerNorm.bias"] == 0.5**4
    assert scales["electra.encoder.layer.0.attention.self.query.weight"] == 0.5**3
    assert scales["electra.encoder.layer.1.output.dense.weight"] == 0.5**2
    assert scales["classifier.weight"] == scales["classifier.bias"] == 1.0
    assert set(scales) == {n for n, p in model.named_parameters() if p.requires_grad}
    assert set(layerwise_lr_scales(model, 1.0).values()) == {1.0}
    with pytest.raises(ValueError, match="layerwise_lr_decay"):
        layerwise_lr_scales(model, 0.0)

    settings = FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path,
                                learning_rate=1e-3, layerwise_lr_decay=0.5, max_steps=4, warmup_ratio=0.0)
    trainer, _ = build_trainer(settings, task, tokenizer, seed=0, output_dir=tmp_path / "ckpt")
    trainer.create_optimizer_and_scheduler(num_training_steps=4)
    names = {p: n for n, p in trainer.model.named_parameters()}
    seen = set()
    for group in trainer.optimizer.param_groups:
        for p in group["params"]:
            name = names[p]
            seen.add(name)
            assert group["lr"] == pytest.approx(1e-3 * scales[name]), name
            expected_wd = 0.0 if name.endswith("bias") or "LayerNorm" in name else 0.01
            assert group["weight_decay"] == expected_wd, name
    assert seen == set(scales)
    trainer.optimizer.step()  # no gradients yet: changes nothing, keeps the step order torch expects
    trainer.lr_scheduler.step()  # linear decay scales every group alike
    ratios = {g["lr"] / g["initial_lr"] for g in trainer.optimizer.param_groups}
    assert len(ratios) == 1 and ratios.pop() == pytest.approx(0.75)
    # the default keeps Trainer's own two groups and one rate
    plain, _ = build_trainer(FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path,
                                              learning_rate=1e-3), task, tokenizer, seed=0, output_dir=tmp_path / "p")
    plain.create_optimizer()
    assert {g["lr"] for g in plain.optimizer.param_groups} == {1e-3}
    assert isinstance(plain.optimizer, torch.optim.Optimizer)


def test_finetune_default_learning_rate_for_a_checkpoint_directory(tmp_path, tiny_checkpoint):
    """Without --learning-rate, a checkpoint directory gets ELECTRA's fine-tuning default 1e-4."""
    out = tmp_path / "run"
    _finetune(["--loader", "ner", "--data-dir", str(FIXTURES / "ner-tiny"), "--ckpt", str(tiny_checkpoint),
               "--max-steps", "1", "--batch-size", "2", "--max-seq-length", "16", "--output-dir", str(out)])
    assert json.loads((out / "results.json").read_text())["settings"]["learning_rate"] == 1e-4
