"""ELECTRA's optimizer and schedule against hand-computed values (original model/optimization.py)."""

import math

import pytest
import torch
from torch import nn

from bioelectra.optimization import (
    ElectraAdamW,
    ElectraSchedule,
    decay_parameter_groups,
    electra_lr_lambda,
    electra_lr_scheduler,
    fit_warmup,
)


def test_lr_is_warmup_times_polynomial_decay_from_step_zero():
    f = lambda s: electra_lr_lambda(s, warmup_steps=10, num_train_steps=100, power=1.0)  # noqa: E731
    assert f(0) == 0.0
    assert f(5) == pytest.approx(0.5 * (1 - 5 / 100))  # warmup and decay together
    assert f(10) == pytest.approx(0.9)
    assert f(50) == pytest.approx(0.5)
    assert f(100) == 0.0 and f(150) == 0.0
    g = lambda s: electra_lr_lambda(s, warmup_steps=0, num_train_steps=100, power=2.0)  # noqa: E731
    assert g(0) == 1.0 and g(50) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="num_train_steps"):
        electra_lr_lambda(1, warmup_steps=0, num_train_steps=0)


def test_scheduler_follows_the_lambda():
    p = nn.Parameter(torch.zeros(1))
    opt = ElectraAdamW([p], lr=2.0)
    sched = electra_lr_scheduler(opt, warmup_steps=4, num_train_steps=8)
    seen = []
    for _ in range(8):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx(
        [2.0 * electra_lr_lambda(s, warmup_steps=4, num_train_steps=8) for s in range(8)]
    )


def test_fit_warmup_shortens_a_long_warmup_to_a_quarter_of_the_run():
    assert fit_warmup(1000, 10_000) == 1000  # a tenth of the run: as asked
    assert fit_warmup(5000, 8000) == 2000  # more than a quarter: a quarter
    assert fit_warmup(0, 10) == 0 and fit_warmup(10, 2) == 1 and fit_warmup(10, 100, max_fraction=0.05) == 5
    with pytest.raises(ValueError, match="num_train_steps"):
        fit_warmup(10, 0)


def test_refitted_schedule_steepens_the_warmup_to_the_same_peak_and_is_saved_with_the_scheduler():
    p = nn.Parameter(torch.zeros(1))
    opt = ElectraAdamW([p], lr=1.0)
    sched = electra_lr_scheduler(opt, warmup_steps=5000, num_train_steps=1_000_000)
    schedule = sched.lr_lambdas[0]
    assert isinstance(schedule, ElectraSchedule)
    before = [schedule(s) for s in range(0, 200, 20)]
    schedule.refit(200, 8000)  # during the warmup: 2,000 steps to the same peak, decay to step 8,000
    assert (schedule.warmup_steps, schedule.num_train_steps) == (2000, 8000)
    after = [schedule(s) for s in range(0, 200, 20)]
    expected = [b * 2.5 * (1 - s / 8000) / (1 - s / 1_000_000) for b, s in zip(before, range(0, 200, 20), strict=True)]
    assert after == pytest.approx(expected)  # 5,000 / 2,000 times steeper
    assert schedule(2000) == pytest.approx(1 - 2000 / 8000) and schedule(8000) == 0.0  # the whole peak, decayed
    schedule.refit(3000, 9000)  # after the warmup: only the end moves
    assert (schedule.warmup_steps, schedule.num_train_steps) == (2000, 9000)
    # a resumed run gets the refitted schedule back from the scheduler's state, not the one it was built with
    fresh = electra_lr_scheduler(ElectraAdamW([nn.Parameter(torch.zeros(1))], lr=1.0), warmup_steps=5000, num_train_steps=1_000_000)
    fresh.load_state_dict(sched.state_dict())
    assert vars(fresh.lr_lambdas[0]) == vars(schedule)
    with pytest.raises(ValueError, match="num_train_steps"):
        schedule.refit(10, 0)


def test_weight_decay_excludes_layernorm_and_biases():
    model = nn.Sequential()
    model.add_module("dense", nn.Linear(3, 3))
    model.add_module("LayerNorm", nn.LayerNorm(3))
    groups = decay_parameter_groups(model, weight_decay=0.01)
    decay_ids = {id(p) for p in groups[0]["params"]}
    assert groups[0]["weight_decay"] == 0.01 and groups[1]["weight_decay"] == 0.0
    assert decay_ids == {id(model.dense.weight)}
    assert {id(p) for p in groups[1]["params"]} == {
        id(model.dense.bias),
        id(model.LayerNorm.weight),
        id(model.LayerNorm.bias),
    }


@pytest.mark.parametrize("foreach", [True, False])
def test_adamw_without_bias_correction_matches_the_original_update(foreach):
    torch.manual_seed(0)
    w0 = torch.randn(5)
    grads = [torch.randn(5) for _ in range(3)]
    p = nn.Parameter(w0.clone())
    opt = ElectraAdamW([p], lr=0.1, weight_decay=0.01, eps=1e-6, foreach=foreach)
    w, m, v = w0.clone(), torch.zeros(5), torch.zeros(5)
    for g in grads:
        p.grad = g.clone()
        opt.step()
        # original AdamWeightDecayOptimizer.apply_gradients
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - 0.1 * (m / (v.sqrt() + 1e-6) + 0.01 * w)
        assert torch.allclose(p.detach(), w, atol=1e-6)


def test_adamw_with_bias_correction_matches_torch_adamw():
    torch.manual_seed(0)
    a = nn.Parameter(torch.randn(4))
    b = nn.Parameter(a.detach().clone())
    ours = ElectraAdamW([a], lr=0.01, weight_decay=0.1, eps=1e-8, bias_correction=True)
    ref = torch.optim.AdamW([b], lr=0.01, weight_decay=0.1, eps=1e-8)
    for _ in range(5):
        g = torch.randn(4)
        a.grad, b.grad = g.clone(), g.clone()
        ours.step()
        ref.step()
    assert torch.allclose(a, b, atol=1e-6)


def test_first_step_without_bias_correction_is_smaller():
    # m = 0.1 g, v = 0.001 g^2: the update is 0.1 / sqrt(0.001) ~ 3.16 in units of lr (sign of g)
    p = nn.Parameter(torch.zeros(1))
    p.grad = torch.ones(1)
    ElectraAdamW([p], lr=1.0, weight_decay=0.0).step()
    assert p.item() == pytest.approx(-0.1 / (math.sqrt(0.001) + 1e-6), rel=1e-5)


def test_make_optimizer_picks_electras_adamw_off_cuda():
    from bioelectra.pretraining import make_optimizer, resolve_hparams

    p = nn.Parameter(torch.zeros(2))
    opt = make_optimizer([{"params": [p]}], resolve_hparams("small"), cuda=False)
    assert isinstance(opt, ElectraAdamW) and opt.defaults["bias_correction"] is False
    assert opt.defaults["eps"] == 1e-6 and opt.defaults["lr"] == 5e-4
    corrected = make_optimizer(
        [{"params": [p]}], resolve_hparams("small", {"adam_bias_correction": True}), cuda=False
    )
    assert isinstance(corrected, ElectraAdamW) and corrected.defaults["bias_correction"] is True
