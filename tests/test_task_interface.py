"""The Task interface: every registered task kind implements it, the trial runner reads nothing else, and
the loose ends of the old if-chains stay fixed (tuple logits, warmup over the whole run)."""

from __future__ import annotations

import inspect

import pytest
import torch
from conftest import FIXTURES

from downstream.kinds import TASKS, build_task, task_class
from downstream.settings import FinetuneSettings
from downstream.task import Task, argmax_logits


def test_every_task_kind_implements_the_protocol():
    members = [name for name in dir(Task) if not name.startswith("_")]
    annotations = set(Task.__annotations__)
    assert {"locate_files", "options", "encode", "build_model", "reduce_logits", "report_extras"} <= set(members)
    for kind, cls in TASKS.items():
        assert cls.kind == kind
        for name in members:
            assert callable(getattr(cls, name, None)), f"{cls.__name__} lacks {name}()"
        for name in annotations - {"labels", "f1_name", "metric_mode", "model_class_name"}:
            assert hasattr(cls, name), f"{cls.__name__} lacks class attribute {name}"
    assert set(TASKS) == {"ner", "re", "qa", "yesno", "glue", "similarity", "doc-classification", "linking", "pico"}
    with pytest.raises(Exception, match="task kind 'summarization' is not supported"):
        task_class("summarization")


def test_argmax_logits_keeps_every_output_of_a_tuple():
    start, end = torch.randn(2, 7), torch.randn(2, 7)
    reduced = argmax_logits((start, end), None)
    assert isinstance(reduced, tuple) and len(reduced) == 2  # QA's end logits are not dropped
    assert torch.equal(reduced[0], start.argmax(-1)) and torch.equal(reduced[1], end.argmax(-1))
    assert torch.equal(argmax_logits((start,), None), start.argmax(-1))
    assert torch.equal(argmax_logits(start, None), start.argmax(-1))


def test_finetune_trainer_is_importable_and_subclassable():
    from transformers import Trainer

    from downstream.trial.trainer import FinetuneTrainer

    assert issubclass(FinetuneTrainer, Trainer)
    assert inspect.getmodule(FinetuneTrainer).__name__ == "downstream.trial.trainer"

    class Custom(FinetuneTrainer):
        pass

    assert Custom.micro_batch_tokens == 0


@pytest.mark.parametrize(("ratio", "expected"), [(0.1, 0.1), (1.0, 6)])
def test_a_warmup_ratio_of_one_warms_up_over_the_whole_run(tmp_path, tiny_checkpoint, ratio, expected):
    """transformers 5 reads warmup_steps >= 1 as steps: 1.0 used to mean one step, not the whole run."""
    from downstream.checkpoints import load_tokenizer
    from downstream.trial.trainer import build_trainer, warmup_steps

    settings = FinetuneSettings(task="ner", checkpoint=str(tiny_checkpoint), output_dir=tmp_path, data_dir=FIXTURES / "ner-tiny",
                                warmup_ratio=ratio, num_train_epochs=3, per_device_train_batch_size=2)  # fmt: skip
    task = build_task("ner", task_class("ner").locate_files(settings), **task_class("ner").options(settings))
    tokenizer = load_tokenizer(str(tiny_checkpoint))
    task.encode(tokenizer, max_seq_length=16)
    assert warmup_steps(settings, len(task.dataset("train"))) == expected  # 4 sentences / 2 x 3 epochs = 6
    trainer, _ = build_trainer(settings, task, tokenizer, seed=0, output_dir=tmp_path / "ckpt")
    trainer.create_optimizer_and_scheduler(num_training_steps=6)
    rates = []
    for _ in range(6):
        rates.append(trainer.lr_scheduler.get_last_lr()[0])
        trainer.optimizer.step()
        trainer.lr_scheduler.step()
    if ratio == 1.0:
        assert rates == sorted(rates) and rates[-1] < settings.learning_rate  # still rising at the last step
    else:
        assert max(rates) == pytest.approx(settings.learning_rate) and rates[-1] < max(rates)
