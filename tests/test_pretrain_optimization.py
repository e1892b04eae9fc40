"""ELECTRA's optimizer and schedule against hand-computed values (original model/optimization.py)."""

import json
import math
from unittest import mock

import pytest
import torch
from torch import nn

from bioelectra.optimization import (
    FUSED_MAX_BETA,
    NO_BIAS_CORRECTION_STEP,
    ElectraAdamW,
    ElectraSchedule,
    adamw_update_,
    decay_parameter_groups,
    electra_lr_lambda,
    electra_lr_scheduler,
    fit_warmup,
    fused_adamw_available,
    uses_fused,
)

needs_fused = pytest.mark.skipif(not fused_adamw_available("cpu"), reason="torch's fused AdamW kernel does not run on this CPU")


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


@pytest.mark.parametrize(("foreach", "fused"), [(True, False), pytest.param(True, True, marks=needs_fused), (False, None)])
def test_adamw_without_bias_correction_matches_the_original_update(foreach, fused):
    """The foreach passes, torch's fused kernel (given NO_BIAS_CORRECTION_STEP) and the per-parameter loop."""
    torch.manual_seed(0)
    w0 = torch.randn(5)
    grads = [torch.randn(5) for _ in range(3)]
    p = nn.Parameter(w0.clone())
    opt = ElectraAdamW([p], lr=0.1, weight_decay=0.01, eps=1e-6, foreach=foreach, fused=fused)
    w, m, v = w0.clone(), torch.zeros(5), torch.zeros(5)
    for g in grads:
        p.grad = g.clone()
        with mock.patch.object(torch, "_fused_adamw_", wraps=torch._fused_adamw_) as kernel:
            opt.step()
        assert kernel.called == bool(foreach and fused)
        # original AdamWeightDecayOptimizer.apply_gradients
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - 0.1 * (m / (v.sqrt() + 1e-6) + 0.01 * w)
        assert torch.allclose(p.detach(), w, atol=1e-6)


@pytest.mark.parametrize("fused", [False, pytest.param(True, marks=needs_fused)])
def test_adamw_with_bias_correction_matches_torch_adamw(fused):
    torch.manual_seed(0)
    a = nn.Parameter(torch.randn(4))
    b = nn.Parameter(a.detach().clone())
    ours = ElectraAdamW([a], lr=0.01, weight_decay=0.1, eps=1e-8, bias_correction=True, fused=fused)
    ref = torch.optim.AdamW([b], lr=0.01, weight_decay=0.1, eps=1e-8)
    for _ in range(5):
        g = torch.randn(4)
        a.grad, b.grad = g.clone(), g.clone()
        ours.step()
        ref.step()
    assert torch.allclose(a, b, atol=1e-6)


def test_the_fused_kernels_bias_correction_is_exactly_one_at_the_no_correction_step():
    for beta in (0.9, 0.999, 0.99999, FUSED_MAX_BETA - 1e-12):
        assert 1.0 - beta**NO_BIAS_CORRECTION_STEP == 1.0  # float64, as the kernels take beta
    for beta in (0.9, 0.999, 0.99999):
        assert float(1.0 - torch.tensor(beta) ** NO_BIAS_CORRECTION_STEP) == 1.0  # float32
    assert 1.0 - 0.999999999999**NO_BIAS_CORRECTION_STEP < 1.0  # why the kernel is not used that close to 1


@needs_fused
@pytest.mark.parametrize("bias_correction", [False, True])
def test_fused_update_equals_the_foreach_update_with_tensor_rates_and_in_a_compiled_function(bias_correction):
    """Several steps of ELECTRA-like shapes at a 0-d tensor learning rate: the fused kernel's parameters and
    moments equal the foreach passes'. Traced by torch.compile (fullgraph) the fused request runs the foreach
    passes, which compile, and gives the same values."""
    torch.manual_seed(0)
    shapes = [(30, 8), (8,), (16, 8), (1,)]
    grads = [[torch.randn(s) for s in shapes] for _ in range(4)]
    lr = torch.tensor(1e-2)

    def train(fused: bool, compiled: bool = False):
        torch.manual_seed(1)
        params = [torch.randn(s) for s in shapes]
        m, v = [torch.zeros(s) for s in shapes], [torch.zeros(s) for s in shapes]
        update = lambda g, step: adamw_update_(  # noqa: E731
            params, g, m, v, lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01, step=step, fused=fused
        )
        if compiled:
            update = torch.compile(update, backend="aot_eager", fullgraph=True)
        for t, g in enumerate(grads, start=1):
            update([x.clone() for x in g], torch.tensor(float(t)) if bias_correction else None)
        return params + m + v

    reference = train(False)
    # with the correction, the kernel divides by 1 - beta^t in float64, the foreach passes in float32
    tolerance = dict(rtol=3e-5, atol=1e-6) if bias_correction else dict(rtol=1e-6, atol=1e-7)
    for got in (train(True), train(True, compiled=True)):
        for a, b in zip(got, reference, strict=True):
            torch.testing.assert_close(a, b, **tolerance)
    torch._dynamo.reset()


def test_a_group_uses_the_fused_kernel_as_set_or_where_it_runs():
    p = nn.Parameter(torch.zeros(2))
    assert uses_fused({"fused": True}, p) and not uses_fused({"fused": False}, p)
    assert uses_fused({"fused": None}, p) == uses_fused({}, p) == fused_adamw_available("cpu")
    assert ElectraAdamW([p]).param_groups[0]["fused"] is None


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


@needs_fused
def test_adamw_update_bench_reports_both_updates(tmp_path, capsys):
    """bench/adamw_update.py on ELECTRA-Small's parameter groups (a 1,000-entry vocabulary): both updates timed,
    the same parameters reached from the same state, the JSON printed and written."""
    from conftest import REPO_ROOT, load_script

    bench = load_script(REPO_ROOT / "bench" / "adamw_update.py")
    report = bench.main(["--sizes", "small", "--vocab-size", "1000", "--repeats", "1", "--device", "cpu",
                         "--out", str(tmp_path / "adamw.json")])  # fmt: skip
    (case,) = report["cases"]
    assert case["size"] == "small" and case["tensors"] > 100 and case["parameters"] > 10_000_000
    assert case["foreach"]["ms_per_update"] > 0 and case["fused"]["ms_per_update"] > 0 and case["fused_speedup"] > 0
    assert case["max_parameter_difference"] < 1e-6
    assert report["device"].endswith(" cores") or report["device"].endswith(" core")  # the CPU named, with its cores
    assert json.loads((tmp_path / "adamw.json").read_text()) == report == json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("argv", "message"), [
    (["--sizes", "tiny"], "--sizes 'tiny': expected presets among base, large, small"),
    (["--repeats", "0"], "--repeats 0: expected at least 1 timed update"),
])  # fmt: skip
def test_adamw_update_bench_refuses_unknown_sizes_and_no_repeats(argv, message, capsys):
    from conftest import REPO_ROOT, load_script

    bench = load_script(REPO_ROOT / "bench" / "adamw_update.py")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
