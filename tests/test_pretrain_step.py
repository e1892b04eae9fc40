"""The whole training step (``train_step`` whole / captured): the same arithmetic as the Trainer's step, one
compiled graph per part (no graph break, no recompilation when the learning rate moves), and in ``pretrain
train`` the same losses, checkpoints and resume as the Trainer's own step."""

import json
import math
import re

import pytest
import torch
from pretrain_fixture import Crash, make_data_dir, tiny_hparams

from bioelectra.compile_records import CACHE_COUNTERS
from bioelectra.configuration import ElectraPretrainingConfig
from bioelectra.diagnostics import attention_entropy
from bioelectra.fused_attention import fuse_qkv_projections
from bioelectra.masking import ElectraMaskingCollator, max_predictions_per_seq
from bioelectra.modeling import ElectraPretrainingModel
from bioelectra.optimization import (
    ElectraAdamW,
    UpdatedInStepAdamW,
    adamw_update_,
    decay_parameter_groups,
    electra_lr_scheduler,
    fused_adamw_available,
)
from bioelectra.pretraining.compile_cache import (
    compile_cache_counts,
    load_compile_cache,
    save_compile_cache,
)
from bioelectra.pretraining.jobs import prepare_pretraining, run_pretraining
from bioelectra.pretraining.settings import resolve_hparams
from bioelectra.pretraining.step import WholeTrainingStep, resolve_train_step

SEQ = 32


def _config(layers: int = 2) -> ElectraPretrainingConfig:
    config = ElectraPretrainingConfig.from_size(
        "small",
        vocab_size=100,
        model_overrides=dict(
            hidden_size=32, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64
        ),
    )
    config.max_predictions_per_seq = max_predictions_per_seq(config.mask_prob, SEQ)
    config._attn_implementation = "sdpa"
    return config


def _batches(n: int = 3, batch: int = 8) -> list[dict]:
    """Padded, masked batches of one shape (8 x 32), rows of 10-29 tokens."""
    gen = torch.Generator().manual_seed(0)
    collator = ElectraMaskingCollator(
        pad_token_id=0, cls_token_id=2, sep_token_id=3, mask_token_id=4, mask_prob=0.15, max_seq_length=SEQ,
        pad_to_multiple_of=SEQ, generator=gen,
    )  # fmt: skip
    lengths = torch.randint(10, 30, (n, batch), generator=gen)
    return [
        collator([{"input_ids": [2, *torch.randint(5, 100, (int(k),), generator=gen).tolist(), 3]} for k in row])
        for row in lengths
    ]


def _train(
    mode: str, steps: int = 5, *, backend: str = "aot_eager", bias_correction: bool = False, layers: int = 2,
    fuse_qkv: bool = False,
):  # fmt: skip
    """``steps`` steps of a tiny model: ``trainer`` (forward, backward, clip_grad_norm_, ElectraAdamW, the
    schedule: the Trainer's order) or the whole step (``whole``; ``compiled``, one graph of the forward pass and
    one of the update; ``forward``, the forward pass's alone; ``layers``, its layers compiled), with ``fuse_qkv``
    query, key and value as one projection. Returns losses, model, step."""
    torch.manual_seed(0)
    model = ElectraPretrainingModel(_config(layers)).train()
    if fuse_qkv:
        fuse_qkv_projections(model)
    optimizer_class = ElectraAdamW if mode == "trainer" else UpdatedInStepAdamW
    optimizer = optimizer_class(
        decay_parameter_groups(model, weight_decay=0.01), lr=1e-3, weight_decay=0.01, bias_correction=bias_correction
    )
    scheduler = electra_lr_scheduler(optimizer, warmup_steps=3, num_train_steps=50)  # the rate moves every step
    whole = None
    if mode != "trainer":
        whole = WholeTrainingStep(
            model, optimizer, max_grad_norm=1.0, bf16=False, compile=mode in ("compiled", "forward", "layers"),
            compile_backend=backend, compile_scope={"layers": "layers", "forward": "forward"}.get(mode, "step"),
        )  # fmt: skip
    batches, losses = _batches(), []
    for i in range(steps):
        batch = batches[i % len(batches)]
        if whole is None:
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        else:
            loss = whole(batch)
            optimizer.step()  # the Trainer still calls it: a no-op
        scheduler.step()
        losses.append(float(loss.detach()))
    return losses, model, whole


def test_whole_step_equals_the_trainers_step():
    """Same forward, gradients, clip and update, in the same order: the same losses and weights."""
    ref_losses, ref_model, _ = _train("trainer")
    losses, model, whole = _train("whole")
    assert losses == pytest.approx(ref_losses, rel=1e-6)
    for (name, p), q in zip(model.named_parameters(), ref_model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=name)
    sums, count = whole.take_sums()
    assert count == 5 and float(sums["loss"]) == pytest.approx(sum(losses), rel=1e-6)
    assert float(sums["loss"]) == pytest.approx(float(sums["mlm_loss"]) + 50.0 * float(sums["disc_loss"]), rel=1e-5)
    assert whole.take_sums()[1] == 0 and float(whole.sums.abs().sum()) == 0.0


def test_whole_step_with_bias_correction_equals_the_eager_optimizer():
    ref_losses, ref_model, _ = _train("trainer", 4, bias_correction=True)
    losses, model, _ = _train("whole", 4, bias_correction=True)
    assert losses == pytest.approx(ref_losses, rel=1e-6)
    for p, q in zip(model.parameters(), ref_model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("mode", "graphs"), [("compiled", 2), ("forward", 1)])
def test_compiled_whole_step_is_one_graph_per_part_and_matches_eager(mode, graphs):
    """fullgraph=True: a graph break fails the compilation; error_on_recompile: the learning rate, which moves
    every step (warmup), is a tensor, not a guard. aot_eager keeps eager kernels: the same random numbers.
    compile_scope "step" compiles the forward pass and the update (2 graphs), "forward" the forward pass only."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    eager, eager_model, _ = _train("whole")
    counters.clear()
    with torch._dynamo.config.patch(error_on_recompile=True):
        compiled, model, _ = _train(mode)
    assert counters["stats"]["unique_graphs"] == graphs
    assert compiled == pytest.approx(eager, rel=1e-5)
    for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)
    torch._dynamo.reset()


@pytest.mark.parametrize("mode", ["compiled", "layers"])
def test_compiled_whole_step_with_fused_qkv_is_one_graph_and_matches_the_unfused_eager_step(mode):
    """hparam fuse_qkv: the fused projection compiles without a graph break in the step and layer scopes, and
    trains as the three projections do (the same losses and weights after 5 steps, up to float rounding)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    eager, eager_model, _ = _train("whole")
    counters.clear()
    # "layers" compiles the generator's width and the discriminator's: a second compilation, not a recompilation
    with torch._dynamo.config.patch(error_on_recompile=mode == "compiled"):
        compiled, model, _ = _train(mode, fuse_qkv=True)
    assert counters["stats"]["unique_graphs"] == {"compiled": 2, "layers": 5}[mode]
    assert compiled == pytest.approx(eager, rel=1e-5)
    for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    torch._dynamo.reset()


@pytest.mark.skipif(not fused_adamw_available("cpu"), reason="torch's fused AdamW kernel does not run on this CPU")
@pytest.mark.parametrize(("mode", "kernel_calls"), [("whole", 2), ("forward", 2), ("compiled", 0)])
def test_the_whole_steps_eager_update_runs_torchs_fused_kernel(mode, kernel_calls):
    """One call of torch's fused AdamW kernel per parameter group and step where the update runs eagerly (the
    whole step, compile_scope forward); the compiled update (step) traces the foreach passes instead."""
    from unittest import mock

    torch._dynamo.reset()
    with mock.patch.object(torch, "_fused_adamw_", wraps=torch._fused_adamw_) as kernel:
        _train(mode, steps=1)
    assert kernel.call_count == kernel_calls  # 2 groups: with weight decay and without
    torch._dynamo.reset()


def test_compiled_forward_graph_holds_no_autocast_so_the_aot_autograd_cache_can_keep_it():
    """bf16 autocast is set around the compiled forward pass, not inside it: torch's AOT autograd cache refuses a
    graph with an autocast entry (its log: "Unsupported call_function target _enter_autocast"), and a carried
    compile cache then still traces the forward and backward passes. The losses are the eager bf16 step's."""
    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def bf16_losses(compile_backend):
        torch.manual_seed(0)
        model = ElectraPretrainingModel(_config()).train()
        optimizer = UpdatedInStepAdamW(decay_parameter_groups(model, weight_decay=0.01), lr=1e-3, weight_decay=0.01)
        whole = WholeTrainingStep(model, optimizer, max_grad_norm=1.0, bf16=True, compile=compile_backend is not None,
                                  compile_backend=compile_backend or "inductor", compile_scope="forward")  # fmt: skip
        return [float(whole(batch).detach()) for batch in _batches()]

    torch._dynamo.reset()
    compiled = bf16_losses(recording)
    torch._dynamo.reset()
    assert len(graphs) == 1
    targets = [getattr(node.target, "__name__", str(node.target)) for node in graphs[0].graph.nodes]
    assert not [t for t in targets if "autocast" in t]
    assert "linear" in targets  # the model is in the graph
    assert compiled == pytest.approx(bf16_losses(None), rel=1e-6)


def test_layer_scoped_compile_compiles_once_per_layer_width_and_matches_eager():
    """compile_scope="layers": each transformer layer compiled in place, identical layers sharing one
    compilation, so the graphs do not grow with the depth (5 for 1 layer and for 3: the layers of the
    generator's width and of the discriminator's, the shared embeddings, the generator's head with the sampling,
    the discriminator's head with its loss; the update stays eager); the same losses and weights as the eager whole step (aot_eager keeps
    eager kernels); eager_outside_step runs the compiled layers eagerly (no compilation for an evaluation)."""
    from torch._dynamo.utils import counters

    graphs = {}
    for layers in (1, 3):
        torch._dynamo.reset()
        eager, eager_model, _ = _train("whole", layers=layers)
        counters.clear()
        compiled, model, whole = _train("layers", layers=layers)
        graphs[layers] = counters["stats"]["unique_graphs"]
        assert compiled == pytest.approx(eager, rel=1e-5)
        for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)
        with whole.eager_outside_step(), torch.no_grad():  # an evaluation: another shape, no gradients
            batch = _batches(1, batch=3)[0]
            model.eval()(**batch)
            # the attention entropy's output_attentions adds transformers' output-capturing hooks to the layers
            entropy = attention_entropy(model.discriminator.electra, batch["input_ids"])
        assert len(entropy) == layers
        model.train()
        more = [float(whole(b).detach()) for b in _batches(2)]  # training goes on with the hooks in place
        assert all(math.isfinite(x) for x in more)
        assert counters["stats"]["unique_graphs"] == graphs[layers]  # nothing compiled again
    assert graphs == {1: 5, 3: 5}
    torch._dynamo.reset()
    with pytest.raises(ValueError, match="compile_scope 'model'"):
        WholeTrainingStep(model, whole.optimizer, max_grad_norm=1.0, bf16=False, compile=True, compile_scope="model")


@pytest.mark.parametrize("lr", [3e-4, "tensor"])
def test_adamw_update_is_the_originals_per_parameter_update(lr):
    """The multi-tensor update (a float or a 0-d tensor learning rate) against ElectraAdamW's per-parameter
    loop, the original's arithmetic written out."""
    torch.manual_seed(1)
    params = [torch.randn(5, 3), torch.randn(7)]
    grads = [torch.randn_like(p) for p in params]
    m = [torch.randn_like(p) * 0.1 for p in params]
    v = [torch.rand_like(p) * 0.01 for p in params]
    expected = [p.clone() for p in params]
    loop = ElectraAdamW([{"params": [torch.nn.Parameter(p) for p in expected], "weight_decay": 0.01}], lr=3e-4, foreach=False)
    for p, g, mm, vv in zip(loop.param_groups[0]["params"], grads, m, v, strict=True):
        p.grad = g.clone()
        loop.state[p] = {"step": 0, "exp_avg": mm.clone(), "exp_avg_sq": vv.clone()}
    loop.step()
    rate = torch.tensor(3e-4) if lr == "tensor" else lr
    adamw_update_(params, grads, m, v, lr=rate, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)
    for p, q in zip(params, loop.param_groups[0]["params"], strict=True):
        torch.testing.assert_close(p, q.detach(), rtol=1e-6, atol=1e-7)


def test_capture_needs_cuda_and_the_step_needs_electras_optimizer():
    model = ElectraPretrainingModel(_config())
    with pytest.raises(ValueError, match="capture needs a CUDA device"):
        WholeTrainingStep(model, UpdatedInStepAdamW(model.parameters()), max_grad_norm=1.0, bf16=False, capture=True)
    with pytest.raises(ValueError, match="ElectraAdamW"):
        WholeTrainingStep(model, torch.optim.SGD(model.parameters(), lr=0.1), max_grad_norm=1.0, bf16=False)


def test_updated_in_step_optimizer_does_nothing_itself():
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.ones(3)
    UpdatedInStepAdamW([p], lr=0.1).step()
    assert torch.equal(p.detach(), torch.ones(3))


# --- pretrain train -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data_dir(tmp_path_factory.mktemp("step-data") / "data")


def _losses(out, step):
    state = json.loads((out / f"checkpoint-{step}" / "trainer_state.json").read_text())
    return {h["step"]: h for h in state["log_history"] if "loss" in h}


def test_pretrain_train_with_the_whole_step_logs_the_trainers_losses(data_dir, tmp_path):
    """``train_step: whole`` through the Trainer: the same logged losses, parts, gradient norms and learning
    rates as the Trainer's own step (same seed, data and masking), the same checkpoints."""
    base = dict(max_steps=4, save_steps=2, logging_steps=1, attn_implementation="sdpa")
    run_pretraining(data_dir=data_dir, output_dir=tmp_path / "trainer", hparams=tiny_hparams(**base))
    run_pretraining(data_dir=data_dir, output_dir=tmp_path / "whole", hparams=tiny_hparams(**base, train_step="whole"))
    ref, got = _losses(tmp_path / "trainer", 4), _losses(tmp_path / "whole", 4)
    assert sorted(got) == sorted(ref) == [1, 2, 3, 4]
    for step in ref:
        for key in ("loss", "mlm_loss", "disc_loss", "grad_norm", "learning_rate"):
            assert got[step][key] == pytest.approx(ref[step][key], rel=1e-4), (step, key)
    assert sorted(p.name for p in (tmp_path / "whole").glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    state = torch.load(tmp_path / "whole" / "checkpoint-4" / "optimizer.pt", weights_only=False)["state"]
    assert {float(s["step"]) for s in state.values()} == {4.0}  # the update counts, saved with the moments


def test_pretrain_train_whole_step_resumes(data_dir, tmp_path):
    """A run of the whole step killed after its checkpoint at step 2 resumes to the same step-4 loss as a run
    that was never stopped (its optimizer state, step counts included, restored from the checkpoint)."""
    hp = tiny_hparams(max_steps=4, save_steps=2, logging_steps=1, train_step="whole")
    run_pretraining(data_dir=data_dir, output_dir=tmp_path / "straight", hparams=hp)
    with pytest.raises(KeyboardInterrupt):
        run_pretraining(data_dir=data_dir, output_dir=tmp_path / "resumed", hparams=hp, callbacks=[Crash(3)])
    assert sorted(p.name for p in (tmp_path / "resumed").glob("checkpoint-*")) == ["checkpoint-2"]
    summary = run_pretraining(data_dir=data_dir, output_dir=tmp_path / "resumed", hparams=hp)
    assert summary["global_step"] == 4
    # resumed: data order and the step-2 state restored; the random masking stream differs slightly
    straight, resumed = _losses(tmp_path / "straight", 4), _losses(tmp_path / "resumed", 4)
    assert resumed[4]["learning_rate"] == pytest.approx(straight[4]["learning_rate"], rel=1e-9)
    assert resumed[4]["loss"] == pytest.approx(straight[4]["loss"], rel=0.05)


def test_the_first_compiled_step_of_a_run_logs_how_the_compile_caches_served_it(data_dir, tmp_path, monkeypatch, caplog):
    """With torch_compile the run's first step says, once, how long it took and how torch's compile caches served
    its graphs (the line a loan's log shows for a carried cache), and writes the same into the run's folder
    (first_compiled_step.json); a run without torch_compile does neither. torch.compile is left out here (the C++
    build would take minutes): no graph is compiled, so the counts are zero."""
    import bioelectra.pretraining.trainer as trainer_module
    from bioelectra.pretraining import FIRST_COMPILED_STEP_FILE

    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: fn)
    lines: dict[bool, list[str]] = {}
    for compiled in (True, False):
        hp = tiny_hparams(max_steps=2, train_step="whole", torch_compile=compiled, compile_scope="layers",
                          compile_cache=str(tmp_path / f"cache-{compiled}.bin"))  # fmt: skip
        caplog.clear()
        with caplog.at_level("INFO", logger="bioelectra.pretraining.trainer"):
            run_pretraining(data_dir=data_dir, output_dir=tmp_path / f"run-{compiled}", hparams=hp)
        lines[compiled] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("the first compiled step:")]
        assert (tmp_path / f"run-{compiled}" / FIRST_COMPILED_STEP_FILE).is_file() is compiled
    assert lines[False] == [] and len(lines[True]) == 1, lines
    assert re.fullmatch(r"the first compiled step: \d+\.\d s; graphs from a cache: inductor 0 of 0, AOT autograd 0 of 0",
                        lines[True][0])  # fmt: skip
    record = json.loads((tmp_path / "run-True" / FIRST_COMPILED_STEP_FILE).read_text())
    assert record["seconds"] > 0 and record["global_step"] == 0 and record["compile_cache_loaded"] is False
    assert record["compile_cache"] == str(tmp_path / "cache-True.bin")  # nothing there to load: the first run
    assert set(record["compile_cache_counts"]) == {n for names in CACHE_COUNTERS.values() for n in names}
    assert (record["train_step"], record["compile_scope"], record["compile_mode"]) == ("whole", "layers", "default")

    # a resumed run compiles again: its record replaces the first, with the step it began at and the cache it loaded
    monkeypatch.setattr(trainer_module, "load_compile_cache", lambda path: True)
    counts = iter([{"fxgraph_cache_hit": 1, "fxgraph_cache_miss": 1}, {"fxgraph_cache_hit": 4, "fxgraph_cache_miss": 2}])
    monkeypatch.setattr(trainer_module, "compile_cache_counts",
                        lambda since=None: {k: v - (since or {}).get(k, 0) for k, v in next(counts).items()})  # fmt: skip
    caplog.clear()
    with caplog.at_level("INFO", logger="bioelectra.pretraining.trainer"):
        run_pretraining(data_dir=data_dir, output_dir=tmp_path / "run-True",
                        hparams=tiny_hparams(max_steps=3, train_step="whole", torch_compile=True, compile_scope="layers",
                                             compile_cache=str(tmp_path / "cache-True.bin")))  # fmt: skip
    record = json.loads((tmp_path / "run-True" / FIRST_COMPILED_STEP_FILE).read_text())
    assert record["global_step"] == 2 and record["compile_cache_loaded"] is True
    assert record["compile_cache_counts"] == {"fxgraph_cache_hit": 3, "fxgraph_cache_miss": 1}  # over the step only
    resumed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("the first compiled step:")]
    assert len(resumed) == 1 and resumed[0].endswith("; graphs from a cache: inductor 3 of 4, AOT autograd 0 of 0")


def test_whole_step_refuses_accumulation_and_pads_to_one_shape(data_dir, tmp_path):
    with pytest.raises(ValueError, match="train_step='whole' runs on one process without gradient accumulation"):
        prepare_pretraining(
            data_dir=data_dir, output_dir=tmp_path / "a",
            hparams=tiny_hparams(train_step="whole", gradient_accumulation_steps=2, per_device_train_batch_size=4),
        )  # fmt: skip
    trainer, _ = prepare_pretraining(
        data_dir=data_dir, output_dir=tmp_path / "b", hparams=tiny_hparams(train_step="captured")
    )
    assert trainer.data_collator.pad_to_multiple_of == 32
    assert {tuple(b["input_ids"].shape) for b in trainer.get_train_dataloader()} == {(8, 32)}
    assert trainer.args.torch_compile is False  # the whole step compiles itself, not the Trainer's model
    with pytest.raises(ValueError, match=r"train_step='fused'.*auto or trainer or whole or captured"):
        resolve_hparams("small", {"train_step": "fused"})


def test_hparam_fuse_qkv_fuses_the_runs_attention_layers(data_dir, tmp_path):
    from bioelectra.fused_attention import is_fused, self_attention_modules

    for fuse in (False, True):
        trainer, _ = prepare_pretraining(
            data_dir=data_dir, output_dir=tmp_path / str(fuse), hparams=tiny_hparams(train_step="whole", fuse_qkv=fuse)
        )
        modules = self_attention_modules(trainer.model)
        assert modules and [is_fused(m) for m in modules] == [fuse] * len(modules)
        assert json.loads((tmp_path / str(fuse) / "hparams.json").read_text())["fuse_qkv"] is fuse


def test_a_layer_scope_under_the_trainers_step_is_said_to_do_nothing(data_dir, tmp_path, caplog):
    """compile_scope and compile_options are the whole step's: under the Trainer's step a warning says so, and
    the Trainer's torch.compile gets compile_mode alone (its torch_compile_mode)."""
    hp = tiny_hparams(train_step="trainer", torch_compile=True, compile_scope="layers",
                      compile_mode="max-autotune-no-cudagraphs", compile_options={"combo_kernels": True})  # fmt: skip
    with caplog.at_level("WARNING", logger="bioelectra.pretraining.jobs"):
        trainer, _ = prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "a", hparams=hp)
    assert "compile_scope and compile_options: the whole step's (train_step whole or captured)" in caplog.text
    assert trainer.args.torch_compile and trainer.args.torch_compile_mode == "max-autotune-no-cudagraphs"
    trainer, _ = prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "b", hparams=tiny_hparams(train_step="trainer"))
    assert trainer.args.torch_compile_mode is None


def test_the_runs_whole_step_compiles_with_the_mode_and_options(data_dir, tmp_path, monkeypatch):
    """hparams compile_mode and compile_options reach every torch.compile of the run's whole step, merged, and
    hparams.json records them; inductor's own CUDA graphs are refused before any work where the step would be
    captured (one CUDA device), and allowed where it runs uncaptured."""
    from bioelectra.pretraining import jobs

    hp = tiny_hparams(train_step="whole", torch_compile=True, compile_scope="forward",
                      compile_mode="max-autotune-no-cudagraphs", compile_options={"epilogue_fusion": False})  # fmt: skip
    trainer, _ = prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "run", hparams=hp)
    recorded = json.loads((tmp_path / "run" / "hparams.json").read_text())
    assert recorded["compile_mode"] == "max-autotune-no-cudagraphs" and recorded["compile_options"] == {"epilogue_fusion": False}
    assert trainer.args.torch_compile is False and trainer.args.torch_compile_mode is None  # the whole step compiles
    calls = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: calls.append(kwargs) or fn)
    trainer.create_optimizer()  # as the Trainer's loop does before its first step
    whole = trainer._make_whole_step(trainer.model)
    expected = {"max_autotune": True, "coordinate_descent_tuning": True, "epilogue_fusion": False}
    assert whole.compile_options == expected and [c["options"] for c in calls] == [expected]

    captured = resolve_hparams("small", tiny_hparams(train_step="captured", torch_compile=True, compile_mode="max-autotune",
                                                     max_seq_length=32))  # as prepare_pretraining resolves it from the data
    jobs._check_train_step(captured)  # no CUDA here: the step runs uncaptured, inductor's CUDA graphs may run
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(ValueError, match="compile_mode='max-autotune'.*max-autotune-no-cudagraphs"):
        jobs._check_train_step(captured)


def test_train_step_auto_captures_on_one_cuda_device_only(data_dir, tmp_path):
    """The default ``auto``: ``captured`` on one CUDA device without accumulation, the Trainer's step elsewhere;
    ``hparams.json`` records the mode chosen, and the run's collator follows it."""
    assert resolve_hparams("small", {}).train_step == "auto"
    assert resolve_train_step("auto", cuda=True, processes=1, accumulation_steps=1)[0] == "captured"
    assert resolve_train_step("auto", cuda=False, processes=1, accumulation_steps=1)[0] == "trainer"
    assert resolve_train_step("auto", cuda=True, processes=2, accumulation_steps=1)[0] == "trainer"
    assert resolve_train_step("auto", cuda=True, processes=1, accumulation_steps=4)[0] == "trainer"
    assert resolve_train_step("whole", cuda=False, processes=1, accumulation_steps=1) == ("whole", "as set")
    hp = tiny_hparams()
    hp.pop("train_step", None)
    trainer, _ = prepare_pretraining(data_dir=data_dir, output_dir=tmp_path / "cpu", hparams=hp)
    recorded = json.loads((tmp_path / "cpu" / "hparams.json").read_text())
    assert recorded["train_step"] == "trainer"  # this CPU: nothing to capture
    assert trainer.hparams.train_step == "trainer"  # the Trainer step the run builds its optimizer for


def test_compile_cache_round_trip(tmp_path, caplog, monkeypatch):
    """save_compile_cache writes torch.compile's artifacts atomically; load_compile_cache reads them back, skips
    a missing file silently and an unreadable one with a warning (the run then compiles from scratch).
    compile_cache_counts tells the cases apart as a loan's calls meet them: a graph compiled anew in an empty
    inductor cache folder, served from that folder, compiled anew in another empty one (a new machine), and
    served there from the carried artifacts (inductor's graph and AOT autograd's each)."""

    def compile_once() -> dict[str, int]:
        torch._dynamo.reset()
        before = compile_cache_counts()
        torch.compile(lambda x: torch.sin(x) * 2 + 1, fullgraph=True)(torch.ones(4))
        return compile_cache_counts(since=before)

    anew = {"fxgraph_cache_hit": 0, "fxgraph_cache_miss": 1, "autograd_cache_hit": 0, "autograd_cache_miss": 1}
    served = {"fxgraph_cache_hit": 1, "fxgraph_cache_miss": 0, "autograd_cache_hit": 1, "autograd_cache_miss": 0}
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-1"))
    assert compile_once().items() >= anew.items()
    assert compile_once().items() >= served.items()
    path = tmp_path / "cache" / "compile-cache.bin"
    assert save_compile_cache(path) > 0 and path.stat().st_size > 0
    assert not list(path.parent.glob(".*.tmp"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-2"))
    assert compile_once().items() >= anew.items()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-3"))
    assert load_compile_cache(path) is True
    assert compile_once().items() >= served.items()
    assert load_compile_cache(tmp_path / "missing.bin") is False
    (tmp_path / "bad.bin").write_bytes(b"not a cache")
    with caplog.at_level("WARNING"):
        assert load_compile_cache(tmp_path / "bad.bin") is False
    assert "not loaded" in caplog.text
    torch._dynamo.reset()
