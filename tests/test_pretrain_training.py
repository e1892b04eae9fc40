"""Pre-training jobs: strict hparams, metrics, Trainer hooks, resume, init-from, the CLI end to end."""

import json
import logging
import math
import shutil
import time
from types import SimpleNamespace

import pytest
import torch
from pretrain_fixture import Crash, make_data_dir, tiny_hparams
from transformers import TrainerCallback

from bioelectra.optimization import ElectraAdamW, electra_lr_lambda
from bioelectra.pretraining import (
    HPARAM_ALIASES,
    PretrainingHparams,
    binary_auc,
    parse_hparams_arg,
    prepare_pretraining,
    resolve_hparams,
    run_pretraining,
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data_dir(tmp_path_factory.mktemp("pretrain-data") / "data")


# --- hparams ------------------------------------------------------------------------------------


def test_size_defaults_are_the_originals():
    small, base, large = (resolve_hparams(s) for s in ("small", "base", "large"))
    assert (small.learning_rate, small.per_device_train_batch_size, small.mask_prob) == (5e-4, 128, 0.15)
    assert (base.learning_rate, base.per_device_train_batch_size) == (2e-4, 256)
    assert (large.learning_rate, large.per_device_train_batch_size, large.mask_prob) == (2e-4, 2048, 0.25)
    assert (small.disc_weight, small.gen_weight, small.temperature, small.weight_decay) == (
        50.0,
        1.0,
        1.0,
        0.01,
    )
    assert (small.warmup_steps, small.lr_decay_power, small.adam_epsilon, small.max_grad_norm) == (
        10000,
        1.0,
        1e-6,
        1.0,
    )
    assert small.adam_bias_correction is False
    assert small.max_steps == 1_000_000


def test_unknown_hparam_is_an_error_naming_it_and_the_valid_keys():
    with pytest.raises(ValueError, match=r"unknown hparam 'disc_weigth'.*disc_weight.*mask_prob"):
        resolve_hparams("small", {"disc_weigth": 10})


def test_hparam_overrides_aliases_and_bad_values():
    hp = resolve_hparams("base", {"num_train_steps": 10, "train_batch_size": 4, "mask_prob": 0.2})
    assert (hp.max_steps, hp.per_device_train_batch_size, hp.mask_prob, hp.learning_rate) == (
        10,
        4,
        0.2,
        2e-4,
    )
    assert set(HPARAM_ALIASES.values()) <= {f for f in PretrainingHparams.__dataclass_fields__}
    with pytest.raises(ValueError, match="given twice"):
        resolve_hparams("small", {"max_steps": 1, "num_train_steps": 2})
    with pytest.raises(ValueError, match="temperature"):
        resolve_hparams("small", {"temperature": 0})
    with pytest.raises(ValueError, match="unknown model size"):
        resolve_hparams("huge")


def test_parse_hparams_inline_and_file(tmp_path):
    assert parse_hparams_arg('{"mask_prob": 0.2}') == {"mask_prob": 0.2}
    f = tmp_path / "hp.json"
    f.write_text('{"disc_weight": 10}')
    assert parse_hparams_arg(str(f)) == {"disc_weight": 10}
    assert parse_hparams_arg(None) == {}
    with pytest.raises(ValueError, match="invalid JSON"):
        parse_hparams_arg("{mask_prob: 1}")
    with pytest.raises(ValueError, match="neither"):
        parse_hparams_arg(str(tmp_path / "missing.json"))


def test_several_hparams_merge_in_order_and_say_what_they_override(tmp_path, caplog):
    """``--hparams recipe.json --hparams '{...}'``: key by key, the later wins; it used to drop the first."""
    recipe = tmp_path / "recipe.json"
    recipe.write_text('{"max_steps": 30000, "learning_rate": 5e-4, "model_hparam_overrides": {"hidden_size": 256}}')
    with caplog.at_level(logging.INFO, logger="bioelectra.pretraining.settings"):
        merged = parse_hparams_arg([str(recipe), '{"max_steps": 100, "model_hparam_overrides": {}}'])
    assert merged == {"max_steps": 100, "learning_rate": 5e-4, "model_hparam_overrides": {}}
    assert "overrides the earlier max_steps, model_hparam_overrides" in caplog.text
    assert parse_hparams_arg([]) == {} and parse_hparams_arg([str(recipe)]) == parse_hparams_arg(str(recipe))
    with pytest.raises(ValueError, match="invalid JSON"):
        parse_hparams_arg([str(recipe), "{max_steps: 1}"])


# --- metrics ------------------------------------------------------------------------------------


def test_binary_auc_hand_cases():
    assert binary_auc(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1])) == pytest.approx(0.75)
    assert binary_auc(torch.tensor([0.9, 0.8, 0.1]), torch.tensor([1, 1, 0])) == 1.0
    assert binary_auc(torch.tensor([0.5, 0.5, 0.5, 0.5]), torch.tensor([0, 1, 0, 1])) == 0.5  # ties averaged
    # one tie across classes: pairs (pos 0.5 vs neg 0.5) count half -> (1 + 0.5 + 1 + 1) / 4
    assert binary_auc(torch.tensor([0.5, 0.9, 0.5, 0.1]), torch.tensor([1, 1, 0, 0])) == pytest.approx(0.875)
    assert math.isnan(binary_auc(torch.tensor([0.2, 0.3]), torch.tensor([1, 1])))


def test_metrics_on_hand_made_outputs():
    from types import SimpleNamespace

    from bioelectra.pretraining.metrics import _finish_metrics, _MetricSums

    labels = torch.tensor([[-100, 5, -100, 7]])
    attention_mask = torch.tensor([[1, 1, 1, 0]])
    out = SimpleNamespace(  # three slots: positions 1 and 3, then position 0 as filler
        masked_positions=labels != -100,
        masked_lm_positions=torch.tensor([[1, 3, 0]]),
        masked_lm_weights=torch.tensor([[True, True, False]]),
        # slot 0 predicts 5 (right), slot 1 nothing; the filler's scores and sample must not count
        gen_logits=torch.tensor([[[0.0] * 5 + [10.0, 0.0, 0.0], [0.0] * 8, [0.0] * 7 + [50.0]]]),
        sampled_ids=torch.tensor([[5, 3, 7]]),
        disc_logits=torch.tensor([[-2.0, -1.0, 3.0, 9.0]]),  # predictions 0, 0, 1 (pad ignored)
        is_replaced=torch.tensor([[0, 0, 1, 0]]),
    )
    sums = _MetricSums()
    sums.update(out, labels, attention_mask)
    m = _finish_metrics(sums.scalars(), torch.cat(sums.probs), torch.cat(sums.labels))
    assert m["masked_lm_accuracy"] == 0.5
    assert m["sampled_masked_lm_accuracy"] == 0.5
    assert m["disc_accuracy"] == 1.0 and m["disc_precision"] == 1.0 and m["disc_recall"] == 1.0
    assert m["disc_auc"] == 1.0
    expected_disc = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor([-2.0, -1.0, 3.0]), torch.tensor([0.0, 0.0, 1.0])
    )
    assert m["disc_loss"] == pytest.approx(expected_disc.item(), rel=1e-5)
    ce = torch.nn.functional.cross_entropy(out.gen_logits[0, :2], torch.tensor([5, 7]))
    assert m["masked_lm_loss"] == pytest.approx(ce.item(), rel=1e-5)


# --- Trainer hooks ------------------------------------------------------------------------------


def test_resume_warns_only_of_keys_that_are_not_tied(data_dir, tmp_path, trainer_warnings):
    """A checkpoint lacks the tied parameters by design (they are tied again, silently); a key missing for
    any other reason, or one the model does not have, is still warned about, by name."""
    trainer, _ = prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "out", hparams=tiny_hparams())
    tied = sorted(trainer.model._tied_weights_keys)
    assert "generator.generator_lm_head.weight" in tied
    trainer._issue_warnings_after_load(SimpleNamespace(missing_keys=tied, unexpected_keys=[]))
    assert trainer_warnings == []
    lost = "discriminator.discriminator_predictions.dense.weight"
    trainer._issue_warnings_after_load(SimpleNamespace(missing_keys=[*tied, lost], unexpected_keys=["extra.bias"]))
    assert len(trainer_warnings) == 2
    missing, unexpected = trainer_warnings
    assert lost in missing and not any(key in missing for key in tied)
    assert "extra.bias" in unexpected
    head = trainer.model.generator.generator_lm_head.weight
    assert head is trainer.model.discriminator.electra.embeddings.word_embeddings.weight


def test_trainer_uses_electras_optimizer_and_schedule(data_dir, tmp_path):
    trainer, resume = prepare_pretraining(
        data_dir=data_dir, output_dir=tmp_path / "out", hparams=tiny_hparams(warmup_steps=3, max_steps=12)
    )
    assert resume is None
    trainer.create_optimizer_and_scheduler(num_training_steps=12)
    assert isinstance(trainer.optimizer, ElectraAdamW)
    assert trainer.optimizer.defaults["bias_correction"] is False
    lambdas = [trainer.lr_scheduler.lr_lambdas[0](s) for s in range(12)]
    assert lambdas == [electra_lr_lambda(s, warmup_steps=3, num_train_steps=12) for s in range(12)]
    decay_names = {
        n
        for n, p in trainer.model.named_parameters()
        if any(p is q for q in trainer.optimizer.param_groups[0]["params"])
    }
    assert decay_names and not any("LayerNorm" in n or n.endswith("bias") for n in decay_names)
    hp = json.loads((tmp_path / "out" / "hparams.json").read_text())
    assert hp["max_seq_length"] == 32 and hp["model_size"] == "small"
    # the model's fixed prediction slots are the collator's cap: int((0.15 + 0.005) * 32) = 4
    assert trainer.model.config.max_predictions_per_seq == trainer.data_collator.max_predictions_per_seq == 4
    # a nan loss shows in the logs (Trainer's default filter would hide it)
    assert trainer.args.logging_nan_inf_filter is False


def test_training_batches_are_full_unless_one_batch_is_all_there_is(data_dir, tmp_path):
    """The original's input_fn drops an epoch's short last batch (drop_remainder=True); under torch.compile
    that batch would be a new shape to compile for. A split smaller than one batch still trains."""
    trainer, _ = prepare_pretraining(
        data_dir=data_dir, output_dir=tmp_path / "out", hparams=tiny_hparams(per_device_train_batch_size=10)
    )
    assert trainer.args.dataloader_drop_last is True
    batches = list(trainer.get_train_dataloader())
    assert len(batches) == 64 // 10  # the fixture's 64 training examples: 6 full batches, the 4 left dropped
    assert all(b["input_ids"].shape[0] == 10 for b in batches)
    trainer, _ = prepare_pretraining(
        data_dir=data_dir, output_dir=tmp_path / "big", hparams=tiny_hparams(per_device_train_batch_size=100)
    )
    assert trainer.args.dataloader_drop_last is False
    assert [b["input_ids"].shape[0] for b in trainer.get_train_dataloader()] == [64]


def test_logged_loss_is_not_rescaled_under_gradient_accumulation(data_dir, tmp_path):
    # the Trainer's loss-scaling trap (a forward with **kwargs): the logged loss must be the mean micro-batch loss, not twice it
    run_pretraining(
        data_dir=data_dir,
        output_dir=tmp_path / "out",
        hparams=tiny_hparams(gradient_accumulation_steps=2, per_device_train_batch_size=4, max_steps=2),
    )
    state = json.loads((tmp_path / "out" / "checkpoint-2" / "trainer_state.json").read_text())
    logs = [h for h in state["log_history"] if "loss" in h and "mlm_loss" in h]
    assert len(logs) == 2
    for h in logs:
        assert h["loss"] == pytest.approx(h["mlm_loss"] + 50.0 * h["disc_loss"], rel=2e-3)


class _SlowCollator:
    """The real collator, ``seconds`` late per batch: a data loader slower than the model's step."""

    def __init__(self, collator, seconds: float):
        self.collator, self.seconds = collator, seconds

    def __call__(self, features):
        time.sleep(self.seconds)
        return self.collator(features)

    def __getattr__(self, name):
        return getattr(self.collator, name)


class _SlowEvaluation(TrainerCallback):
    def on_evaluate(self, args, state, control, **kwargs):
        time.sleep(2.0)


def test_training_logs_carry_the_speed_and_the_data_wait(data_dir, tmp_path):
    """Each training log has the steps per second since the previous one, evaluation time left out, and the
    share of it spent waiting for batches: here a loader 0.5 s late per batch and a 2 s evaluation. The bounds
    follow from the measured speed, so that a loaded machine's slower steps do not fail it."""
    trainer, _ = prepare_pretraining(
        data_dir=data_dir,
        output_dir=tmp_path / "out",
        hparams=tiny_hparams(max_steps=4, logging_steps=2, eval_steps=2, save_steps=100, num_eval_steps=1),
        callbacks=[_SlowEvaluation()],
    )
    trainer.data_collator = _SlowCollator(trainer.data_collator, 0.5)
    trainer.train()
    logs = {h["step"]: h for h in trainer.state.log_history if "loss" in h}
    assert sorted(logs) == [1, 2, 4]  # logging_first_step, then every 2
    for step in (2, 4):
        # each step of a window waited at least the loader's 0.5 s: a window of n steps lasts n / steps_per_second
        # seconds, of which n * 0.5 s were waiting, whatever the load makes of the steps themselves
        floor = 0.5 * logs[step]["steps_per_second"]
        assert 0.9 * floor <= logs[step]["data_wait_fraction"] <= 1.0, (logs[step], floor)
    # the window of step 4 follows the 2 s evaluation at step 2, left out: its steps take as long as step 2's
    # (1 step since step 1), not a second more each (the 2 s spread over its 2 steps)
    per_step = {2: 1 / logs[2]["steps_per_second"], 4: 2 / logs[4]["steps_per_second"] / 2}
    assert per_step[4] < per_step[2] + 0.75, per_step
    assert not any("steps_per_second" in h for h in trainer.state.log_history if "eval_step" in h)


def _lr_log(output_dir, step):
    state = json.loads((output_dir / f"checkpoint-{step}" / "trainer_state.json").read_text())
    return {h["step"]: h["learning_rate"] for h in state["log_history"] if "learning_rate" in h}


@pytest.mark.slow
def test_rerun_resumes_an_interrupted_run_with_its_schedule(data_dir, tmp_path):
    out = tmp_path / "out"
    hp = tiny_hparams(max_steps=6, save_steps=3, warmup_steps=2, learning_rate=1e-3)
    with pytest.raises(KeyboardInterrupt):
        run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp, callbacks=[Crash(4)])
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-3"]
    # the same call again: continues from step 3 to 6
    summary = run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp)
    assert summary["global_step"] == 6
    lrs = _lr_log(out, 6)
    assert sorted(lrs) == [1, 2, 3, 4, 5, 6]
    for step, lr in lrs.items():  # logged after step s: the rate used at step s (0-based s - 1)
        assert lr == pytest.approx(
            1e-3 * electra_lr_lambda(step - 1, warmup_steps=2, num_train_steps=6), abs=1e-9
        )
    assert set(summary["eval"]) >= {
        "masked_lm_accuracy",
        "masked_lm_loss",
        "sampled_masked_lm_accuracy",
        "disc_loss",
        "disc_auc",
        "disc_accuracy",
        "disc_precision",
        "disc_recall",
    }
    # a finished run re-run: nothing more to do, same step
    assert run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp)["global_step"] == 6


@pytest.mark.slow
def test_max_train_seconds_stops_saved_and_the_rerun_finishes(data_dir, tmp_path):
    """The wall-clock budget (leased GPU time): the run stops at the first step past it with a checkpoint,
    the schedule still that of max_steps; the same call again resumes towards max_steps."""
    out = tmp_path / "out"
    hp = tiny_hparams(max_steps=6, save_steps=100, warmup_steps=2, max_train_seconds=1e-6)
    summary = run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp)
    assert summary["global_step"] == 1
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1"]
    assert json.loads((out / "checkpoint-1" / "trainer_state.json").read_text())["max_steps"] == 6
    assert run_pretraining(data_dir=data_dir, output_dir=out, hparams=tiny_hparams(max_steps=6, save_steps=100, warmup_steps=2))["global_step"] == 6
    with pytest.raises(ValueError, match="max_train_seconds"):
        resolve_hparams("small", {"max_train_seconds": -1})


class _Tick(TrainerCallback):
    """Advance a fake clock by ``seconds`` at the end of every optimizer step."""

    def __init__(self, clock: dict, seconds: float) -> None:
        self.clock, self.seconds = clock, seconds

    def on_step_end(self, args, state, control, **kwargs):
        self.clock["now"] += self.seconds


@pytest.mark.slow
def test_schedule_fitted_to_the_time_ends_decayed_and_saved(data_dir, tmp_path, monkeypatch):
    """fit_schedule_to_time: the run measures its speed (here a fake clock: 0.5 s a step), sets the schedule's
    end to the steps the rest of the budget holds, and stops there, far below max_steps, with its learning
    rate decayed, a checkpoint and the final evaluation; the checkpoint records the fitted length, so the
    same call again finds the run finished."""
    from bioelectra.pretraining import callbacks as callbacks_module

    clock = {"now": 0.0}
    monkeypatch.setattr(callbacks_module, "time", SimpleNamespace(monotonic=lambda: clock["now"], perf_counter=time.perf_counter))
    out = tmp_path / "out"
    hp = tiny_hparams(max_steps=1000, save_steps=1000, warmup_steps=10, max_train_seconds=60.0, fit_schedule_to_time=True)
    summary = run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp, callbacks=[_Tick(clock, 0.5)])
    # 2 steps/s measured from step 20 on, 60 s: up to 120 steps, refitted at every step; the deadline would have
    # stopped the run at step 121 (the first step past 60 s), with the learning rate far from 0
    steps = summary["global_step"]
    assert 100 <= steps <= 120
    checkpoints = sorted(out.glob("checkpoint-*"))
    assert [c.name for c in checkpoints] == [f"checkpoint-{steps}"]
    assert json.loads((checkpoints[0] / "trainer_state.json").read_text())["max_steps"] == steps
    schedule = torch.load(checkpoints[0] / "scheduler.pt", weights_only=False)["lr_lambdas"][0]
    assert schedule["num_train_steps"] == steps and schedule["warmup_steps"] == 10
    fitted = json.loads((out / "fitted_schedule.json").read_text())
    assert fitted["max_steps"] == steps and fitted["peak_learning_rate"] == hp["learning_rate"]
    assert fitted["steps_per_second"] == pytest.approx(2.0)
    logged = [r for r in json.loads((checkpoints[0] / "trainer_state.json").read_text())["log_history"] if "learning_rate" in r]
    assert logged[-1]["learning_rate"] < 0.05 * hp["learning_rate"]  # decayed, not cut off at the deadline
    records = [json.loads(line) for line in (out / "log_history.jsonl").read_text().splitlines()]
    final = next(r for r in records if "train_runtime" in r)  # samples/s of the steps run, not of max_steps
    assert final["train_samples_per_second"] == pytest.approx(final["train_steps_per_second"] * hp["per_device_train_batch_size"], rel=1e-3)
    assert summary["eval"] is not None and (out / "eval_results.json").is_file()
    # run again: finished at the fitted length, nothing more to train
    assert run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp, callbacks=[_Tick(clock, 0.5)])["global_step"] == steps
    with pytest.raises(ValueError, match="fit_schedule_to_time"):
        resolve_hparams("small", {"fit_schedule_to_time": True})


def test_a_time_fitted_run_stopped_near_its_fitted_end_is_recorded_finished(tmp_path, monkeypatch):
    """A run that stops within 1% of its fitted length (the deadline a step early, or the Trainer at the fitted
    max_steps while the next fit would have gone a step further) records the step reached as its length, so a
    re-run finds it finished; one stopped well before it (a kill, an early deadline) keeps the fitted length."""
    from bioelectra.pretraining import callbacks as callbacks_module

    clock = {"now": 0.0}
    monkeypatch.setattr(callbacks_module, "time", SimpleNamespace(monotonic=lambda: clock["now"], perf_counter=time.perf_counter))

    def run_until(stop_at: int) -> SimpleNamespace:
        callback = callbacks_module.TimeFittedScheduleCallback(1000.0, skip_steps=1)
        args = SimpleNamespace(max_steps=10**6, world_size=1, output_dir=str(tmp_path), learning_rate=1e-3, eval_strategy="no")
        state = SimpleNamespace(global_step=0, max_steps=10**6, is_world_process_zero=True, eval_steps=0)
        control = SimpleNamespace(should_training_stop=False, should_save=False, should_evaluate=False)
        clock["now"] = 0.0
        callback.on_train_begin(args, state, control)
        for step in range(1, stop_at + 1):  # one step a second
            clock["now"], state.global_step = float(step), step
            control.should_training_stop = step == stop_at
            callback.on_step_end(args, state, control)
        return state

    assert run_until(990).max_steps == 990  # fitted to 999 at step 989
    assert json.loads((tmp_path / "fitted_schedule.json").read_text())["max_steps"] == 990
    assert run_until(500).max_steps == 499 + int(501 * 0.97)  # stopped early: the fit of step 499 stands, a re-run goes on


def test_one_slow_step_after_the_skipped_ones_does_not_end_the_warmup(tmp_path, monkeypatch):
    """The first fit waits until the speed has been measured over ``min_window_steps`` steps. A run of 420 s at
    30 steps/s whose 21st step stalls for 20 s (a data-loader stall, a recompilation): fitted from that one step
    (``min_window_steps=1``, the rule until 2026-11-26) the run looks 49 steps long, a quarter of it lies behind
    step 21, and the warmup ends there; fitted over 20 steps, the warmup stays a quarter of
    the run as the speed recovers."""
    from bioelectra.optimization import ElectraAdamW, electra_lr_scheduler, fit_warmup
    from bioelectra.pretraining import callbacks as callbacks_module

    clock = {"now": 0.0}
    monkeypatch.setattr(callbacks_module, "time", SimpleNamespace(monotonic=lambda: clock["now"], perf_counter=time.perf_counter))

    def run(min_window_steps: int, steps: int = 2000):
        callback = callbacks_module.TimeFittedScheduleCallback(420.0, skip_steps=20, min_window_steps=min_window_steps)
        scheduler = electra_lr_scheduler(ElectraAdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0), warmup_steps=5000, num_train_steps=25_000)
        args = SimpleNamespace(max_steps=25_000, world_size=1, output_dir=str(tmp_path), learning_rate=5e-4, eval_strategy="no")
        state = SimpleNamespace(global_step=0, max_steps=25_000, is_world_process_zero=True, eval_steps=0)
        control = SimpleNamespace(should_training_stop=False, should_save=False, should_evaluate=False)
        clock["now"] = 0.0
        callback.on_train_begin(args, state, control)
        rates = []
        for step in range(1, steps + 1):
            clock["now"] += 20.0 if step == 21 else 1 / 30
            state.global_step = step
            callback.on_step_end(args, state, control, lr_scheduler=scheduler)
            rates.append(scheduler.lr_lambdas[0](step))
        return scheduler.lr_lambdas[0], state, rates

    schedule, state, rates = run(min_window_steps=1)
    assert schedule.warmup_steps <= 21 and rates[21] > 0.5  # the old rule: warmup over by step 22 (the recipe's: 0.0044)
    schedule, state, rates = run(min_window_steps=20)
    assert schedule.warmup_steps == fit_warmup(5000, state.max_steps) > 2000  # still warming up at step 2,000
    assert rates[:39] == pytest.approx([s / 5000 * (1 - s / 25_000) for s in range(1, 40)])  # before the first fit (step 40): the recipe's
    assert rates[1999] == pytest.approx(2000 / schedule.warmup_steps * (1 - 2000 / state.max_steps))


@pytest.mark.parametrize(
    "damage",
    ["trainer_state.json", "optimizer.pt", "truncate-optimizer", "truncate-weights", "bad-state-json"],
)
def test_a_kill_during_a_checkpoint_save_never_blocks_the_rerun(data_dir, tmp_path, damage):
    """Fault injection: the folder a kill -9 leaves while the Trainer writes checkpoint-N (a file missing
    or cut short). The same call again resumes from the newest complete checkpoint, says which one it
    skipped and why, and moves the broken one aside (never deleted); eval and export skip it too."""
    from bioelectra.pretraining import INCOMPLETE_DIR, export_checkpoint, find_checkpoint

    out = tmp_path / "out"
    hp = tiny_hparams(max_steps=6, save_steps=2, warmup_steps=2, save_total_limit=5)
    with pytest.raises(KeyboardInterrupt):
        run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp, callbacks=[Crash(5)])
    broken = out / "checkpoint-4"
    if damage in ("trainer_state.json", "optimizer.pt"):
        (broken / damage).unlink()
    elif damage == "truncate-optimizer":
        data = (broken / "optimizer.pt").read_bytes()
        (broken / "optimizer.pt").write_bytes(data[: len(data) // 2])
    elif damage == "truncate-weights":
        data = (broken / "model.safetensors").read_bytes()
        (broken / "model.safetensors").write_bytes(data[:100])
    else:
        (broken / "trainer_state.json").write_text('{"global_st')
    assert find_checkpoint(out) == out / "checkpoint-2"  # eval / export pick the complete one
    summary = run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp)
    assert summary["global_step"] == 6
    assert (out / INCOMPLETE_DIR / "checkpoint-4").is_dir()  # moved aside, not deleted
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]
    assert json.loads((out / "checkpoint-6" / "trainer_state.json").read_text())["global_step"] == 6
    export_checkpoint(model_dir=out, output_dir=tmp_path / "export")
    assert (tmp_path / "export" / "discriminator" / "model.safetensors").is_file()


def test_cli_train_eval_export_end_to_end(data_dir, tmp_path):
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from typer.testing import CliRunner

    from bioelectra.cli import pretrain_app

    runner = CliRunner()
    recipe = tmp_path / "recipe.json"  # a recipe file, then an inline override of one of its keys
    recipe.write_text(json.dumps(tiny_hparams(max_steps=6, save_steps=4, eval_steps=4, learning_rate=2e-3)))
    out = tmp_path / "run"
    result = runner.invoke(
        pretrain_app,
        ["train", "--data-dir", str(data_dir), "--output-dir", str(out), "--hparams", str(recipe),
         "--hparams", '{"max_steps": 8}'],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{") :])
    assert summary["global_step"] == 8
    assert json.loads((out / "hparams.json").read_text())["learning_rate"] == 2e-3
    eval_results = json.loads((out / "eval_results.json").read_text())
    for name in ("masked_lm_accuracy", "sampled_masked_lm_accuracy", "disc_accuracy", "disc_precision"):
        assert 0.0 <= eval_results[name] <= 1.0
    state = json.loads((out / "checkpoint-8" / "trainer_state.json").read_text())
    assert any(
        "eval_disc_auc" in h and h["step"] == 4 for h in state["log_history"]
    )  # logged during training
    losses = [h["loss"] for h in state["log_history"] if "loss" in h]
    assert losses[-1] < losses[0]
    # the same logs as JSON lines, as they happened, with the final train_runtime record the checkpoint lacks
    lines = [json.loads(line) for line in (out / "log_history.jsonl").read_text().splitlines()]
    assert [h for h in lines if "train_runtime" not in h] == state["log_history"]
    assert lines[-1]["step"] == 8 and lines[-1]["train_runtime"] > 0

    result = runner.invoke(pretrain_app, ["eval", "--model-dir", str(out), "--checkpoint", "4"])
    assert result.exit_code == 0, result.output
    ev = json.loads((out / "eval_checkpoint-4.json").read_text())
    entropy_keys = {"disc_attention_entropy", "gen_attention_entropy"}
    assert ev["step"] == 4 and set(ev["metrics"]) == set(eval_results) - {"step", "epoch"} - entropy_keys
    during = next(h for h in state["log_history"] if "eval_disc_auc" in h and h["step"] == 4)
    for part, key in (("discriminator", "disc"), ("generator", "gen")):  # a few steps leave attention about uniform
        report = ev["attention_entropy"][part]
        assert len(report["attention_entropy_per_layer"]) == 2 and 0.9 < report["attention_entropy"] <= 1.0
        # the evaluation during training probed the same examples with the same weights
        assert during[f"eval_{key}_attention_entropy"] == pytest.approx(report["attention_entropy"], abs=2e-4)
        assert 0.9 < eval_results[f"{key}_attention_entropy"] <= 1.0

    export = tmp_path / "export"
    result = runner.invoke(pretrain_app, ["export", "--model-dir", str(out), "--output-dir", str(export)])
    assert result.exit_code == 0, result.output
    ner = AutoModelForTokenClassification.from_pretrained(export / "discriminator", num_labels=3)
    assert ner.config.hidden_size == 32
    tok = AutoTokenizer.from_pretrained(export / "discriminator")
    assert len(tok) == 100
    vocab_lines = (export / "generator" / "vocab.txt").read_text().splitlines()
    assert vocab_lines == (data_dir / "vocab.txt").read_text().splitlines()
    enc = tok("w1 w2 w3", return_tensors="pt")
    assert ner(**enc).logits.shape == (1, 5, 3)

    # the exported discriminator fine-tunes through `finetune`
    from conftest import FIXTURES

    from bioelectra.cli import app

    ft_out = tmp_path / "finetune"
    result = runner.invoke(
        app,
        ["finetune", "--loader", "ner", "--data-dir", str(FIXTURES / "ner-tiny"), "--ckpt", str(export / "discriminator"),
         "--output-dir", str(ft_out), "--max-steps", "2", "--batch-size", "4", "--max-seq-length", "16"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    finetuned = json.loads((ft_out / "results.json").read_text())
    assert finetuned["trials"][0]["test"]["num_words"] == finetuned["counts"]["test"]["words"] > 0

    # --dtype float16: half-size files, the same weights rounded; fine-tuning loads them back as float32
    export16 = tmp_path / "export16"
    result = runner.invoke(
        pretrain_app, ["export", "--model-dir", str(out), "--output-dir", str(export16), "--dtype", "float16"]
    )
    assert result.exit_code == 0, result.output
    from safetensors.torch import load_file

    w32 = load_file(export / "discriminator" / "model.safetensors")
    w16 = load_file(export16 / "discriminator" / "model.safetensors")
    assert set(w16) == set(w32) and all(v.dtype == torch.float16 for v in w16.values())
    for key, value in w32.items():
        torch.testing.assert_close(w16[key].float(), value, rtol=1e-3, atol=1e-4)
    from downstream.ner.task import NerTask

    task = NerTask({"train": FIXTURES / "ner-tiny" / "train.tsv", "dev": FIXTURES / "ner-tiny" / "devel.tsv",
                    "test": FIXTURES / "ner-tiny" / "test.tsv"})
    assert next(task.build_model(str(export16 / "discriminator")).parameters()).dtype == torch.float32

    # --init-from the export (discriminator/ + generator/): weights carried over, fresh schedule
    cont = tmp_path / "cont"
    result = runner.invoke(
        pretrain_app,
        ["train", "--data-dir", str(data_dir), "--output-dir", str(cont), "--init-from", str(export),
         "--hparams", json.dumps(tiny_hparams(max_steps=2, save_steps=2))],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads((cont / "hparams.json").read_text())["init_from"] == str(export.resolve())

    # bad hparams: exit code 2 and the key named
    result = runner.invoke(
        pretrain_app,
        ["train", "--data-dir", str(data_dir), "--output-dir", str(out), "--hparams", '{"bogus": 1}'],
    )
    assert result.exit_code == 2 and "bogus" in result.output


def test_init_from_loads_the_given_weights(data_dir, tmp_path):
    from bioelectra.pretraining import build_model, resolve_hparams

    hp = resolve_hparams("small", tiny_hparams())
    source = build_model("small", hp, vocab_size=100, pad_token_id=0)
    source.save_pretrained(tmp_path / "src")
    trainer, _ = prepare_pretraining(
        data_dir=data_dir, output_dir=tmp_path / "out", hparams=tiny_hparams(), init_from=tmp_path / "src"
    )
    for key, value in source.state_dict().items():
        assert torch.equal(value, trainer.model.state_dict()[key]), key
    assert trainer.model.embeddings_are_shared()
    assert trainer.model.config.disc_weight == 50.0
    assert trainer.model.config.max_predictions_per_seq == trainer.data_collator.max_predictions_per_seq
    from bioelectra.pretraining import load_pretraining_model

    assert load_pretraining_model(tmp_path / "src", disc_weight=3.0).config.disc_weight == 3.0
    with pytest.raises(ValueError, match="untied_generator_embeddings"):
        load_pretraining_model(tmp_path / "src", untied_generator_embeddings=True)
    with pytest.raises(FileNotFoundError, match="discriminator/"):
        load_pretraining_model(tmp_path)


def test_init_from_with_another_vocabulary_of_the_same_size_is_refused(data_dir, tmp_path):
    from bioelectra.pretraining import build_model, resolve_hparams

    source = build_model("small", resolve_hparams("small", tiny_hparams()), vocab_size=100, pad_token_id=0)
    source.save_pretrained(tmp_path / "src")
    from transformers import AutoTokenizer

    vocab = AutoTokenizer.from_pretrained(data_dir / "tokenizer").get_vocab()
    words = sorted(vocab, key=vocab.get)
    (tmp_path / "src" / "vocab.txt").write_text("\n".join(words) + "\n")
    prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "ok", hparams=tiny_hparams(), init_from=tmp_path / "src")
    words[10], words[11] = words[11], words[10]  # the same entries, two ids swapped
    (tmp_path / "src" / "vocab.txt").write_text("\n".join(words) + "\n")
    with pytest.raises(ValueError, match=f"differs from the data's tokenizer at id 10 \\({words[10]!r} against {words[11]!r}\\)"):
        prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "out", hparams=tiny_hparams(), init_from=tmp_path / "src")


@pytest.mark.parametrize("layout", ["joint", "pair"])
def test_init_from_half_precision_weights_trains_float32_parameters(data_dir, tmp_path, layout):
    """A bfloat16 export (the campaign's continuation carries one) or a joint model saved in bfloat16 starts
    training with float32 parameters holding the same values (transformers 5 keeps a saved dtype)."""
    from bioelectra.pretraining import build_model, export_checkpoint, resolve_hparams

    hp = resolve_hparams("small", tiny_hparams())
    source = build_model("small", hp, vocab_size=100, pad_token_id=0).to(torch.bfloat16)
    source.config.dtype = "bfloat16"
    source.save_pretrained(tmp_path / "joint")
    if layout == "pair":
        shutil.copytree(data_dir / "tokenizer", tmp_path / "joint", dirs_exist_ok=True)
        export_checkpoint(model_dir=tmp_path / "joint", output_dir=tmp_path / "pair", dtype="bfloat16")
    trainer, _ = prepare_pretraining(
        data_dir=data_dir, output_dir=tmp_path / "out", hparams=tiny_hparams(), init_from=tmp_path / layout
    )
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}
    for key, value in source.state_dict().items():
        assert torch.equal(value.float(), trainer.model.state_dict()[key]), key


def test_empty_validation_split_skips_metrics_in_training_and_fails_eval(tmp_path):
    from bioelectra.pretraining import evaluate_checkpoint

    data = make_data_dir(tmp_path / "data", n_train=16, n_validation=0)
    summary = run_pretraining(
        data_dir=data,
        output_dir=tmp_path / "out",
        hparams=tiny_hparams(max_steps=2, save_steps=2, eval_steps=1),
    )
    assert summary["global_step"] == 2 and summary["eval"] is None
    assert not (tmp_path / "out" / "eval_results.json").exists()
    with pytest.raises(ValueError, match="validation split is empty"):
        evaluate_checkpoint(model_dir=tmp_path / "out")


def test_bioelectra_mini_recipe_hparams_resolve():
    """The recipe's hparams.json is valid input for `pretrain train --hparams` and sets the run's shape."""
    from pathlib import Path

    from bioelectra.pretraining import build_model

    path = Path(__file__).resolve().parent.parent / "recipes" / "bioelectra-mini" / "hparams.json"
    hp = resolve_hparams("small", json.loads(path.read_text()))
    assert hp.max_steps > hp.warmup_steps > 0 and hp.adam_bias_correction
    config = build_model("small", hp, vocab_size=31620, pad_token_id=0).config
    disc, gen = config.discriminator_config, config.generator_config
    assert disc.num_hidden_layers == gen.num_hidden_layers == hp.model_hparam_overrides["num_hidden_layers"]
    # dropout off in both networks (the generator copies the discriminator's)
    assert disc.hidden_dropout_prob == gen.hidden_dropout_prob == 0.0
    assert disc.attention_probs_dropout_prob == gen.attention_probs_dropout_prob == 0.0
    # run 7: all weights tied, so the generator has the discriminator's shape
    assert hp.untied_generator is False and config.untied_generator is False
    assert gen.hidden_size == disc.hidden_size == hp.model_hparam_overrides["hidden_size"]


def test_train_shows_a_step_progress_bar_and_prints_logs_once(data_dir, tmp_path, capfd):
    run_pretraining(
        data_dir=data_dir,
        output_dir=tmp_path / "out",
        hparams=tiny_hparams(per_device_train_batch_size=4, max_steps=3, logging_steps=1),
    )
    err = capfd.readouterr().err
    assert "3/3" in err  # tqdm's step counter of the training bar
    # the bar does not also print the log dicts (the module's logger does, once per logging step)
    assert "'mlm_loss'" not in err


def test_progress_bar_follows_a_fitted_length_without_drawing_more_often():
    """The step bar's total follows ``state.max_steps`` (a schedule fitted to the time moves it at every step),
    and is drawn at tqdm's own pace: on a GPU at tens of steps a second, drawing every step twice fills the
    log and costs the host."""
    import io

    from tqdm.auto import tqdm

    from bioelectra.pretraining.callbacks import StepProgressCallback

    callback, out = StepProgressCallback(), io.StringIO()
    callback.training_bar = tqdm(total=100, file=out, mininterval=3600.0)
    callback.current_step = 0
    written = len(out.getvalue())
    state = SimpleNamespace(is_world_process_zero=True, global_step=0, max_steps=100)
    for step, fitted in ((1, 120), (2, 118), (3, 119)):
        state.global_step, state.max_steps = step, fitted
        callback.on_step_end(None, state, None)
        assert (callback.training_bar.total, callback.training_bar.n) == (fitted, step)
    assert len(out.getvalue()) == written  # within tqdm's mininterval: no draw at all
    callback.training_bar.close()


@pytest.fixture
def trainer_warnings():
    """The messages the Trainer logs at WARNING and above (transformers' loggers do not propagate)."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    handler, log = Keep(level=logging.WARNING), logging.getLogger("transformers.trainer")
    log.addHandler(handler)
    yield records
    log.removeHandler(handler)


def test_tied_generator_trains_resumes_and_stays_tied(data_dir, tmp_path, trainer_warnings):
    """``untied_generator: false`` through the Trainer: checkpoints store the shared encoder once, a resumed
    run keeps generator and discriminator on one encoder without warning that the tied parameters are
    missing from the checkpoint, and the refusal to change the layout is clear."""
    from bioelectra.pretraining import load_pretraining_model

    out = tmp_path / "out"
    hp = tiny_hparams(max_steps=4, save_steps=2, untied_generator=False, learning_rate=1e-3)
    with pytest.raises(KeyboardInterrupt):
        run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp, callbacks=[Crash(3)])
    first = load_pretraining_model(out / "checkpoint-2")
    assert first.generator.electra is first.discriminator.electra
    assert run_pretraining(data_dir=data_dir, output_dir=out, hparams=hp)["global_step"] == 4
    assert not [m for m in trainer_warnings if "missing keys" in m or "unexpected keys" in m]
    last = load_pretraining_model(out / "checkpoint-4")
    assert last.config.untied_generator is False and last.generator.electra is last.discriminator.electra
    key = "electra.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(first.discriminator.state_dict()[key], last.discriminator.state_dict()[key])
    with pytest.raises(ValueError, match="untied_generator=False"):
        load_pretraining_model(out / "checkpoint-4", untied_generator=True)


@pytest.mark.parametrize(("eval_steps", "expected"), [(3, 2), (4, 2), (0, 1)])
def test_the_final_evaluation_runs_once(data_dir, tmp_path, monkeypatch, eval_steps, expected):
    """Evaluations during training at every eval_steps, and once after the last step: when the schedule
    already evaluated at the last step, that result is the final one (it used to run again)."""
    from bioelectra.pretraining import trainer as trainer_module

    calls = []
    real = trainer_module.pretraining_metrics

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "pretraining_metrics", counting)
    summary = run_pretraining(data_dir=data_dir, output_dir=tmp_path / "out",
                              hparams=tiny_hparams(max_steps=6, save_steps=6, eval_steps=eval_steps, num_eval_steps=1))  # fmt: skip
    assert len(calls) == expected  # 3: steps 3 and 6; 4: step 4 and the end; 0: the end only
    assert "disc_auc" in summary["eval"]


def test_train_batch_size_is_the_global_batch(monkeypatch):
    """The original's train_batch_size means all processes together: the same --hparams train the same
    global batch on 1 or 8 processes; a per-device cap turns into accumulation steps; mismatches are named."""
    monkeypatch.setenv("WORLD_SIZE", "8")
    hp = resolve_hparams("small", {"train_batch_size": 128})
    assert (hp.per_device_train_batch_size, hp.gradient_accumulation_steps, hp.train_batch_size) == (16, 1, 128)
    capped = resolve_hparams("small", {"train_batch_size": 128, "per_device_train_batch_size": 4})
    assert (capped.per_device_train_batch_size, capped.gradient_accumulation_steps) == (4, 4)
    assert resolve_hparams("small", {"per_device_train_batch_size": 8}).train_batch_size == 64  # HF meaning
    assert resolve_hparams("small").per_device_train_batch_size == 16  # the original's 128, split
    with pytest.raises(ValueError, match="train_batch_size=100 .* does not divide into 8 process"):
        resolve_hparams("small", {"train_batch_size": 100})
    with pytest.raises(ValueError, match="disagree"):
        resolve_hparams("small", {"train_batch_size": 128, "per_device_train_batch_size": 3})
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert resolve_hparams("small", {"train_batch_size": 128}).per_device_train_batch_size == 128
