"""The learning-rate range test (finetune --find-lr): the sweep, the smoothing, the suggestion, a tiny model."""

import hashlib
import json
import math

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.settings import FinetuneSettings
from downstream.tuning.lr_finder import DIVERGENCE_FACTOR, lr_range_test, smooth_losses, suggest, sweep_rates

PNG = b"\x89PNG\r\n\x1a\n"


def test_sweep_rates_rise_exponentially():
    rates = sweep_rates(1e-6, 1.0, 7)
    assert rates[0] == pytest.approx(1e-6) and rates[-1] == pytest.approx(1.0)
    assert all(b / a == pytest.approx(10.0) for a, b in zip(rates, rates[1:], strict=False))
    assert len(sweep_rates(1e-7, 1.0, 100)) == 100
    for bad in [(1.0, 1e-3, 5), (0.0, 1.0, 5), (1e-3, math.inf, 5)]:
        with pytest.raises(ValueError, match="0 < start < end"):
            sweep_rates(*bad)
    with pytest.raises(ValueError, match="at least 2"):
        sweep_rates(1e-7, 1.0, 1)


def test_smoothing_is_a_bias_corrected_moving_average():
    assert smooth_losses([2.0, 2.0, 2.0]) == pytest.approx([2.0, 2.0, 2.0])  # no pull towards the zero start
    # by hand, beta 0.5: avg 0.5, 1.25 -> corrected 0.5 / 0.5 = 1.0, 1.25 / 0.75
    assert smooth_losses([1.0, 2.0], beta=0.5) == pytest.approx([1.0, 1.25 / 0.75])
    assert smooth_losses([4.0, 0.0], beta=0.98) == pytest.approx([4.0, 0.98 * 0.02 * 4.0 / (1 - 0.98**2)])


def test_suggestion_is_the_steepest_descent_before_the_minimum():
    rates = sweep_rates(1e-6, 1.0, 7)  # 1e-6 .. 1, one decade per step
    # flat, then falling fastest at 1e-3 (central differences per decade: 0, 0, -0.5, -2, -1.6), lowest at 1e-1
    found = suggest(rates, [5.0, 5.0, 5.0, 4.0, 1.0, 0.8, 3.0])
    assert found["steepest"] == pytest.approx(1e-3)
    assert found["min_loss"] == pytest.approx(1e-1) and found["min_loss_over_10"] == pytest.approx(1e-2)
    # a loss that only falls: where it falls most (slopes per decade -0.1, -0.5, -1.95, -1.75, -0.3, ...)
    assert suggest(rates, [9.0, 8.9, 8.0, 5.0, 4.5, 4.4, 4.3])["steepest"] == pytest.approx(1e-4)
    # past the minimum (1.0 at 1e-4) the loss diverges; its last drop (9.8 -> 1.5 at rate 1) is not looked at
    found = suggest(rates, [3.0, 2.0, 1.0, 9.0, 9.5, 9.8, 1.5])
    assert found["steepest"] == pytest.approx(1e-6) and found["min_loss"] == pytest.approx(1e-4)
    with pytest.raises(ValueError):
        suggest(rates[:1], [1.0])


def _settings(tmp_path, checkpoint, **overrides):
    values = dict(task="ner", checkpoint=str(checkpoint), checkpoint_name="tiny", output_dir=tmp_path / "out",
                  data_dir=FIXTURES / "ner-tiny", entity_type="Disease", per_device_train_batch_size=2,
                  max_seq_length=16, learning_rate=1e-3)  # fmt: skip
    values.update(overrides)
    return FinetuneSettings(**values)


def _checkpoint_digest(checkpoint):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(checkpoint.iterdir()) if p.is_file()}


def test_range_test_on_a_tiny_model(tmp_path, tiny_checkpoint):
    before = _checkpoint_digest(tiny_checkpoint)
    settings = _settings(tmp_path, tiny_checkpoint)
    found = lr_range_test(settings, start=1e-3, end=1e3, num_steps=13)  # half a decade per step
    out = settings.output_dir
    assert json.loads((out / "lr_find.json").read_text()) == found
    assert (out / "plots" / "lr_find.png").read_bytes().startswith(PNG)
    assert not (out / "results.json").exists() and not list(out.glob("trial-*"))
    assert _checkpoint_digest(tiny_checkpoint) == before  # the swept weights are thrown away

    rates = found["learning_rates"]
    assert rates[0] == pytest.approx(1e-3) and len(rates) == found["steps_run"] == len(found["losses"])
    ratio = 10**0.5
    assert all(b / a == pytest.approx(ratio) for a, b in zip(rates, rates[1:], strict=False))
    assert all(math.isfinite(x) and x > 0 for x in found["losses"])
    assert found["smoothed_losses"] == pytest.approx(smooth_losses(found["losses"]))
    assert rates[0] <= found["suggested_learning_rate"] <= rates[-1]
    assert found["suggested_learning_rate"] in rates and found["min_loss_learning_rate"] in rates
    # rates of 10 and more make AdamW diverge: the sweep stops once the smoothed loss passes 4x its minimum
    assert found["stopped_early"] and found["steps_run"] < 13 and found["stop_reason"]
    smoothed = found["smoothed_losses"]
    if "smoothed loss passed" in found["stop_reason"]:
        assert smoothed[-1] > DIVERGENCE_FACTOR * min(smoothed)
        assert all(s <= DIVERGENCE_FACTOR * min(smoothed[: i + 1]) for i, s in enumerate(smoothed[:-1]))
    assert found["optimizer"] == settings.optimizer and found["precision"] == "fp32"


def test_range_test_runs_every_step_when_nothing_diverges(tmp_path, tiny_checkpoint, monkeypatch):
    monkeypatch.setattr("downstream.tuning.lr_finder.pyplot", lambda: None)  # matplotlib missing: JSON only
    # also the original ELECTRA optimizer with layer-wise decay, as a trial would use it
    settings = _settings(tmp_path, tiny_checkpoint, optimizer="electra", layerwise_lr_decay=0.8)
    found = lr_range_test(settings, start=1e-7, end=1e-5, num_steps=5)  # more steps than the 2 training batches
    assert not found["stopped_early"] and found["stop_reason"] is None and found["steps_run"] == 5
    assert found["learning_rates"][-1] == pytest.approx(1e-5)
    assert found["optimizer"] == "electra" and found["layerwise_lr_decay"] == 0.8
    assert (settings.output_dir / "lr_find.json").is_file() and not (settings.output_dir / "plots").exists()


def test_finetune_find_lr_command(tmp_path, tiny_checkpoint):
    out = tmp_path / "lr"
    args = ["finetune", "--data-dir", str(FIXTURES / "ner-tiny"), "--ckpt", str(tiny_checkpoint), "--batch-size", "2",
            "--max-seq-length", "16", "--entity-type", "Disease", "--find-lr", "--find-lr-start", "1e-4",
            "--find-lr-end", "1e-2", "--find-lr-steps", "3", "--output-dir", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    found = json.loads((out / "lr_find.json").read_text())
    assert f"suggested learning rate {found['suggested_learning_rate']:.3g}" in result.output
    assert "3 of 3 steps\n" in result.output and "stopped" not in result.output
    assert found["start"] == 1e-4 and found["end"] == 1e-2 and found["learning_rates"] == pytest.approx([1e-4, 1e-3, 1e-2])
    assert (out / "plots" / "lr_find.png").is_file() and not (out / "results.json").exists()

    result = CliRunner().invoke(app, [*args[:-2], "--output-dir", str(tmp_path / "bad"), "--find-lr-start", "1e-2", "--find-lr-end", "1e-3"])
    assert result.exit_code == 2 and "expected 0 < start < end" in result.output
