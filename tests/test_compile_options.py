"""The hparams compile_mode and compile_options (bioelectra/pretraining/compile_options.py): a torch.compile mode
and inductor's options, merged and checked before any work, and handed to every compilation of the whole step."""

import pytest
import torch
import torch._inductor

from bioelectra.configuration import ElectraPretrainingConfig
from bioelectra.modeling import ElectraPretrainingModel
from bioelectra.optimization import UpdatedInStepAdamW, decay_parameter_groups
from bioelectra.pretraining.compile_options import COMPILE_MODES, CUDAGRAPHS_OPTION, inductor_options
from bioelectra.pretraining.settings import resolve_hparams
from bioelectra.pretraining.step import COMPILE_SCOPES, WholeTrainingStep


def test_a_mode_is_torchs_set_of_options_and_given_options_win():
    for mode in COMPILE_MODES:
        expected = torch._inductor.list_mode_options(mode) if mode != "default" else {}
        assert inductor_options(mode) == expected
    tuned = inductor_options("max-autotune-no-cudagraphs")
    assert tuned["max_autotune"] is True and not tuned.get(CUDAGRAPHS_OPTION)
    merged = inductor_options("max-autotune-no-cudagraphs", {"coordinate-descent-tuning": False, "combo_kernels": True})
    assert merged == {"max_autotune": True, "coordinate_descent_tuning": False, "combo_kernels": True}
    assert inductor_options("default", None) == {} and inductor_options("default", {}) == {}


def test_a_float_option_given_as_an_integer_becomes_a_float_as_torch_wants_it():
    from torch._inductor import config

    name = next(k for k, v in config.get_config_copy().items() if isinstance(v, float))
    assert inductor_options("default", {name: 3}) == {name: 3.0}
    assert isinstance(inductor_options("default", {name: 3})[name], float)


@pytest.mark.parametrize(
    ("mode", "options", "message"),
    [
        ("fast", None, "hparam compile_mode='fast': expected one of default, reduce-overhead, max-autotune"),
        ("default", {"max_autotun": True}, "'max_autotun' is not an option of torch's inductor (did you mean max_autotune"),
        ("default", {"max_autotune": 1}, "'max_autotune' is 1; inductor's max_autotune takes a bool"),
        ("default", {"epilogue_fusion": "yes"}, "inductor's epilogue_fusion takes a bool"),
        ("default", ["max_autotune"], "hparam compile_options=['max_autotune']: expected a JSON object"),
    ],
)  # fmt: skip
def test_bad_modes_and_options_are_refused_by_name(mode, options, message):
    with pytest.raises(ValueError) as info:
        inductor_options(mode, options)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("mode", "options"), [("reduce-overhead", None), ("max-autotune", None), ("default", {"triton.cudagraphs": True})]
)
def test_inductors_cuda_graphs_are_refused_inside_the_captured_step_only(mode, options):
    with pytest.raises(ValueError, match="cannot run inside the training step captured.*max-autotune-no-cudagraphs"):
        inductor_options(mode, options, capture=True)
    assert inductor_options(mode, options, capture=False)[CUDAGRAPHS_OPTION] is True
    assert inductor_options("max-autotune", {"triton.cudagraphs": False}, capture=True)[CUDAGRAPHS_OPTION] is False


def test_the_hparams_are_checked_when_they_are_read():
    hp = resolve_hparams("small", {"compile_mode": "max-autotune-no-cudagraphs", "compile_options": {"combo_kernels": True}})
    assert (hp.compile_mode, hp.compile_options) == ("max-autotune-no-cudagraphs", {"combo_kernels": True})
    assert resolve_hparams("small", {}).compile_mode == "default" and resolve_hparams("small", {}).compile_options == {}
    with pytest.raises(ValueError, match="'max_autotun' is not an option"):
        resolve_hparams("small", {"compile_options": {"max_autotun": True}})
    with pytest.raises(ValueError, match="compile_mode='max_autotune'"):
        resolve_hparams("small", {"compile_mode": "max_autotune"})
    with pytest.raises(ValueError, match="compile_options"):
        resolve_hparams("small", {"compile_options": "max-autotune"})


def _tiny_model() -> ElectraPretrainingModel:
    config = ElectraPretrainingConfig.from_size(
        "small", vocab_size=100,
        model_overrides=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                             max_position_embeddings=64),
    )  # fmt: skip
    return ElectraPretrainingModel(config).train()


@pytest.mark.parametrize("scope", COMPILE_SCOPES)
def test_every_compilation_of_the_whole_step_gets_the_options(scope, monkeypatch):
    """Each torch.compile call of a scope (step: the forward pass and the update; forward: the forward pass;
    layers: each region and both heads) gets the options; without options, none is passed (inductor's own
    defaults), and another backend than inductor refuses them."""
    calls = []

    def recording_compile(fn, **kwargs):
        calls.append(kwargs)
        return fn

    monkeypatch.setattr(torch, "compile", recording_compile)
    options = inductor_options("max-autotune-no-cudagraphs", {"epilogue_fusion": False})
    model = _tiny_model()
    optimizer = UpdatedInStepAdamW(decay_parameter_groups(model, weight_decay=0.01), lr=1e-3)
    step = WholeTrainingStep(model, optimizer, max_grad_norm=1.0, bf16=False, compile=True, compile_scope=scope,
                             compile_options=options)  # fmt: skip
    # layers: the embedding block (the two networks share it), 2 + 2 transformer layers, the two heads
    expected_calls = {"step": 2, "forward": 1, "layers": 1 + 2 * 2 + 2}[scope]
    assert len(calls) == expected_calls
    assert all(call["options"] == options and call["fullgraph"] and call["backend"] == "inductor" for call in calls)
    assert step.compile_options == options

    calls.clear()
    WholeTrainingStep(_tiny_model(), UpdatedInStepAdamW(_tiny_model().parameters(), lr=1e-3), max_grad_norm=1.0,
                      bf16=False, compile=True, compile_scope=scope)  # fmt: skip
    assert calls and all("options" not in call for call in calls)
    with pytest.raises(ValueError, match="compile_options are inductor's; the backend is 'aot_eager'"):
        WholeTrainingStep(model, optimizer, max_grad_norm=1.0, bf16=False, compile=True, compile_scope=scope,
                          compile_backend="aot_eager", compile_options=options)  # fmt: skip
