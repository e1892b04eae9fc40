"""ELECTRA's whole training step as one function, compiled and captured as one CUDA graph.

A pre-training step of ELECTRA-Small is some 2,300-2,800 small kernels. Launched one by one from Python (the
Trainer's step: forward, ``backward``, ``clip_grad_norm_``, ``optimizer.step()``, the scheduler), the host is
the limit: on an H200 the eager step of ELECTRA-Small 128 x 128 ran at 13.5 steps/s
(``bench/results/pretrain-step-h200-2026-11-27-eager.json``).
:class:`WholeTrainingStep` does the same arithmetic as one function with no host synchronisation inside:

1. the forward pass (``ElectraPretrainingModel``: replaced token detection, bf16 autocast on CUDA);
2. the gradients of the loss (``torch.autograd.grad``: they never live in ``param.grad``);
3. the global gradient-norm clip (the formula of ``torch.nn.utils.clip_grad_norm_``, the Trainer's clip:
   ``g *= min(1, max_norm / (norm + 1e-6))``);
4. the optimizer's update (:func:`bioelectra.optimization.adamw_update_`, the original's AdamW) on the
   optimizer's own state, the learning rate read from a 0-d device tensor per parameter group; uncompiled
   (``compile_scope`` ``forward`` and ``layers``), through torch's fused AdamW kernel where it runs;
5. the sums of ``loss``, ``mlm_loss``, ``disc_loss`` accumulated on the device, read at logging time.

``bf16_weight_copies=True`` (with ``bf16``) keeps a bf16 copy of every weight and bias that autocast would cast
for a matrix product (:func:`autocast_weights`), written by the update after the fp32 parameters (one
multi-tensor copy), and runs the forward pass on the copies: autocast then casts no weight, and the gradients
come back in bf16, made fp32 in one multi-tensor copy. The arithmetic is autocast's (the same bf16 values in
every matrix product, the same gradients; the update stays on the fp32 parameters), without a cast kernel per
weight in the forward pass and per gradient in the backward pass (some 300 each in ELECTRA-Small's step).

``compile=True`` runs the step through ``torch.compile`` with ``fullgraph=True`` (a graph break is an error, not
a silent slowdown), as ``compile_scope`` says (:data:`COMPILE_SCOPES`): the whole forward pass (with its
backward) as one graph and the clip + update as another (``step``), the forward pass alone as one graph and the
update eager (``forward``), or each region on its own (``layers``, torch's "regional compilation": every
transformer layer, the identical layers sharing one compilation, the embeddings and the two heads; the rest and
the update eager). ``capture=True`` (CUDA) records the whole step once as a CUDA graph (``torch.cuda.graph``)
and replays it: each step is then a copy of the batch into static buffers, a fill of the learning rates and one
graph launch. Shapes must stay the same (``pretrain train`` pads every batch to ``max_seq_length`` and drops an
epoch's short last batch).

The arithmetic equals the Trainer's step within float tolerance (the same loss, the same clip, the same
update): ``tests/test_pretrain_step.py``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import torch

from bioelectra.optimization import adamw_update_, uses_fused

logger = logging.getLogger(__name__)

#: The training step's modes (hparam ``train_step``): ``trainer`` is the Trainer's own step (accelerate's
#: autocast, ``backward``, ``clip_grad_norm_``, ``optimizer.step()``); ``whole`` is :class:`WholeTrainingStep`
#: (compiled with ``torch_compile``); ``captured`` is the whole step replayed as one CUDA graph (on CUDA; off
#: it, ``whole``); ``auto`` (the default) is ``captured`` where it can run and ``trainer`` elsewhere
#: (:func:`resolve_train_step`).
TRAIN_STEP_MODES = ("auto", "trainer", "whole", "captured")


def resolve_train_step(mode: str, *, cuda: bool, processes: int, accumulation_steps: int) -> tuple[str, str]:
    """``train_step`` made concrete, with the reason for the log: ``auto`` is ``captured`` on one CUDA device
    without gradient accumulation, else ``trainer`` (the whole step neither all-reduces nor accumulates, and off
    CUDA there is no graph to capture). Any other mode is returned as it is.

    Why ``captured``: on an H200 (``bench/results/pretrain-step-h200-2026-11-27-*.json``) the
    captured step ran ELECTRA-Small 128 x 128 at 41.4 steps/s against the Trainer step's 13.5 (eager kernels,
    1-2 s to capture), and compiled too, bioelectra-small's recipe at 120.5 against 31.0."""
    if mode != "auto":
        return mode, "as set"
    if not cuda:
        return "trainer", "no CUDA device: nothing to capture"
    if processes > 1 or accumulation_steps > 1:
        return "trainer", f"{processes} process(es), gradient_accumulation_steps={accumulation_steps}"
    return "captured", "one CUDA device, no gradient accumulation"

#: What ``torch.compile`` covers in a compiled whole step (hparam ``compile_scope``): ``step``, the whole forward
#: pass (embeddings, both encoders, the generator's sampling, the losses) as one graph, every layer unrolled in
#: it, and the clip + update as another; ``forward``, that forward graph alone, the clip and the update eager;
#: ``layers`` (torch's "regional compilation"), each region compiled on its own: every transformer layer, the
#: embedding block, the generator's head (vocabulary scores, masked-LM loss, sampling, corruption) and the
#: discriminator's head with its loss; the glue between them (the encoders' masks) and the update run as eager
#: kernels. Under ``capture`` eager kernels are in the CUDA graph all the same, so no host launches them (the
#: update is a few dozen multi-tensor kernels). With ``layers``, identical layers share one compilation, so the
#: compile time does not grow with the depth: ELECTRA-Small's 12 discriminator and 12 generator layers compile
#: twice (one per width), not 24 times unrolled; the heads are regions of their own since in
#: eager kernels they make several passes over the `(slots, vocabulary)` scores. The update's graph grows with
#: the parameters (402 in ELECTRA-Small) and was the longest compilation of all. Measured on a 2-core CPU
#: (inductor, ELECTRA-Small, batch 4 x 128, a cold inductor cache; the first step / a later one):
#: ``step`` 145 s with 1 layer and 720 s / 0.69-0.73 s with 12; ``forward`` 159 s / 0.68-0.69 s with 12;
#: ``layers`` 47 s and 41 s / 0.90-0.92 s, with the heads (bench, batch 4 x 128, 4 steps) 72.5-73.2 s /
#: 0.70-0.84 s against 46-47 s / 0.78-0.89 s without them (docs/results/pretraining-findings.md, "Compiling the
#: whole step on the CPU").
COMPILE_SCOPES = ("step", "forward", "layers")

#: The losses summed on the device for the logs, in this order.
LOSS_NAMES = ("loss", "mlm_loss", "disc_loss")

#: The batch keys of the masking collator, copied into the captured graph's static inputs.
BATCH_KEYS = ("input_ids", "attention_mask", "token_type_ids", "labels")

#: Eager steps run (on a side stream) before a CUDA graph is captured: allocator, cuBLAS workspaces, autograd
#: and, with ``compile``, the compilation itself (torch's "whole network capture" recipe). Their updates are
#: undone before the capture.
CAPTURE_WARMUP_STEPS = 3

#: ``torch.nn.utils.clip_grad_norm_``'s guard against a zero norm, so the clip equals the Trainer's.
CLIP_EPS = 1e-6


class WholeTrainingStep:
    """One optimizer step of ELECTRA pre-training as one function (see the module docstring).

    Args:
        model: an ``ElectraPretrainingModel`` in training mode, on its device.
        optimizer: an :class:`bioelectra.optimization.ElectraAdamW` over ``model``'s trainable parameters (its
            parameter groups, learning rates and state are used as they are: checkpoints and resumes see the
            same optimizer as the Trainer's step). Its own ``step()`` must not run as well (the Trainer's
            optimizer is a :class:`bioelectra.optimization.UpdatedInStepAdamW`).
        max_grad_norm: global gradient-norm clip; 0 or less: no clip (the norm is still computed and logged).
        bf16: bf16 autocast of the forward pass (CUDA), as the Trainer's ``bf16=True``.
        compile: ``torch.compile`` what ``compile_scope`` says, ``fullgraph=True``.
        compile_scope: what compiles (:data:`COMPILE_SCOPES`): ``step`` (the forward pass, the update),
            ``forward`` (the forward pass) or ``layers`` (each region of ``model``, :func:`compiled_regions` and
            its two heads, in place: the model's own calls outside the step, an evaluation's, use them too;
            :meth:`eager_outside_step` keeps those eager).
        capture: record the whole step as a CUDA graph at the first call and replay it (CUDA only).
        compile_backend: ``torch.compile``'s backend (``inductor``; tests use ``aot_eager``).
        compile_options: inductor's options for every compilation (``torch.compile(options=...)``;
            :func:`bioelectra.pretraining.compile_options.inductor_options` makes them from the hparams
            ``compile_mode`` and ``compile_options``); None or empty: inductor's defaults.
        bf16_weight_copies: the forward pass reads bf16 copies of :func:`autocast_weights` that the update
            writes (module docstring); needs ``bf16``.

    Attributes:
        grad_norm (`torch.Tensor` of shape `()`): the global gradient norm of the last step, before the clip.
        fused_update (`bool`): whether the update runs through torch's fused AdamW kernel (known from the first
            step on; never with ``compile_scope`` ``step``, whose compiled update traces the foreach passes).

    Raises:
        ValueError: ``capture`` off CUDA, an optimizer that is not an ``ElectraAdamW``, a ``compile_scope``
            not in :data:`COMPILE_SCOPES`, ``compile_options`` with a backend other than ``inductor``, or
            ``bf16_weight_copies`` without ``bf16``.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        max_grad_norm: float,
        bf16: bool,
        compile: bool = False,
        capture: bool = False,
        compile_backend: str = "inductor",
        compile_scope: str = "step",
        compile_options: Mapping[str, Any] | None = None,
        bf16_weight_copies: bool = False,
    ) -> None:
        from bioelectra.optimization import ElectraAdamW

        if not isinstance(optimizer, ElectraAdamW):
            raise ValueError(f"WholeTrainingStep updates with ElectraAdamW's arithmetic, got {type(optimizer).__name__}")
        self.model, self.optimizer = model, optimizer
        self.device = next(model.parameters()).device
        if capture and self.device.type != "cuda":
            raise ValueError(f"capture needs a CUDA device; the model is on {self.device}")
        if compile_scope not in COMPILE_SCOPES:
            raise ValueError(f"compile_scope {compile_scope!r}: expected one of {', '.join(COMPILE_SCOPES)}")
        if bf16_weight_copies and not bf16:
            raise ValueError("bf16_weight_copies stand in for bf16 autocast's casts: they need bf16=True")
        self.max_grad_norm = float(max_grad_norm)
        self.bf16, self.capture, self.bf16_weight_copies = bool(bf16), bool(capture), bool(bf16_weight_copies)
        self.compiled = bool(compile)
        self.compile_scope = compile_scope if compile else ""
        self.compile_options = dict(compile_options or {}) if compile else {}
        if self.compile_options and compile_backend != "inductor":
            raise ValueError(f"compile_options are inductor's; the backend is {compile_backend!r}")
        extra = {"options": self.compile_options} if self.compile_options else {}

        def compiled(fn):
            return torch.compile(fn, fullgraph=True, dynamic=False, backend=compile_backend, **extra)

        self._forward = self._forward_losses
        self._update = self._clip_and_update
        if compile and compile_scope in ("step", "forward"):
            self._forward = compiled(self._forward_losses)
        if compile and compile_scope == "step":
            self._update = compiled(self._clip_and_update)
        if compile and compile_scope == "layers":
            for region in compiled_regions(model):
                # the region's forward, not Module.compile(): that would trace the module's hooks too, and the
                # output-capturing hooks transformers adds for output_attentions (an evaluation's attention
                # entropy) read a ContextVar, which dynamo cannot trace
                region.forward = compiled(region.forward)
            for head in ("generator_head", "discriminator_head"):  # the model's methods, as instance attributes
                setattr(model, head, compiled(getattr(model, head)))
        self.sums = torch.zeros(len(LOSS_NAMES), device=self.device)  # (3,) loss, mlm_loss, disc_loss
        self.count = 0  # steps summed in ``sums``
        self.grad_norm = torch.zeros((), device=self.device)
        self.fused_update = False
        self._bound = False
        self._graph: torch.cuda.CUDAGraph | None = None
        self._static: dict[str, torch.Tensor] = {}
        self._static_loss: torch.Tensor | None = None

    # -- the step's parts --------------------------------------------------------------------------------

    def _forward_losses(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """`(3,)` float32 ``[loss, mlm_loss, disc_loss]`` of the batch, with the graph for the gradients.

        The class's ``forward``: accelerate's mixed precision replaces the instance's ``forward`` with one that
        converts every output to float32 (the generator's logits too, hundreds of MB a step at batch 128).
        The caller sets the autocast (:meth:`_step`), so that the compiled graph holds no autocast entry: torch's
        AOT autograd cache refuses a graph with one, and a carried compile cache then saves inductor's code
        generation but not the tracing of the forward and backward passes."""
        out = type(self.model).forward(self.model, **batch)
        return torch.stack([out.loss.float(), out.mlm_loss.float(), out.disc_loss.float()])  # (3,)

    def _clip_and_update(self, grads: list[torch.Tensor], losses: torch.Tensor) -> None:
        """The global-norm clip, the AdamW update of every group at its ``lr`` tensor, the loss sums; with
        ``bf16_weight_copies``, the copies' bf16 gradients made fp32 first and the copies written last."""
        with torch.no_grad():
            if self._copy_index:  # one multi-tensor copy each way (torch's fast path takes two dtypes on CUDA)
                torch._foreach_copy_(self._grads32, [grads[i] for i in self._copy_index])
                for i, grad in zip(self._copy_index, self._grads32, strict=True):
                    grads[i] = grad
            norms = torch._foreach_norm(grads)  # [()] per parameter, fp32 as the gradients
            grad_norm = torch.linalg.vector_norm(torch.stack(norms))  # ()
            self.grad_norm.copy_(grad_norm)
            if self.max_grad_norm > 0:
                coef = torch.clamp(self.max_grad_norm / (grad_norm + CLIP_EPS), max=1.0)  # ()
                torch._foreach_mul_(grads, coef)
            start = 0
            for (betas, eps, weight_decay, bias_correction, fused), lr, steps, (params, exp_avgs, exp_avg_sqs) in zip(
                self._constants, self._lrs, self._steps, self._groups, strict=True
            ):
                group_grads = grads[start : start + len(params)]
                start += len(params)
                torch._foreach_add_(steps, 1.0)
                adamw_update_(
                    params, group_grads, exp_avgs, exp_avg_sqs, lr=lr, betas=betas, eps=eps,
                    weight_decay=weight_decay, step=steps[0] if bias_correction else None, fused=fused,
                )  # fmt: skip
            if self._copy_index:
                torch._foreach_copy_(self._copies, [self._params[i] for i in self._copy_index])
            self.sums.add_(losses.detach())

    def _step(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The whole step on ``batch``; the `(3,)` losses."""
        # bf16 autocast around the (compiled) forward, without its cast cache, which CUDA graph capture does not
        # allow; set here, outside the compiled function, it is a guard of the graph, not a node in it
        with self._forward_on_copies(), torch.autocast(
            self.device.type, dtype=torch.bfloat16, enabled=self.bf16, cache_enabled=False
        ):
            losses = self._forward(batch)  # (3,)
        grads = torch.autograd.grad(losses[0], self._grad_inputs, allow_unused=True, materialize_grads=True)
        self._update(list(grads), losses)
        return losses

    def _forward_on_copies(self):
        """A context in which the modules hold the bf16 copies in place of the parameters they copy (outside the
        compiled function, as torch.func.functional_call swaps them: the graph reads the copies as inputs);
        a no-op context without ``bf16_weight_copies``."""
        return _holding(self._copied, self._copies) if self._copied else contextlib.nullcontext()

    # -- binding to the optimizer's state ----------------------------------------------------------------

    def _bind(self) -> None:
        """Read the parameters and the optimizer's state (creating it where a fresh optimizer has none), the
        learning-rate tensors and per-parameter step counts (0-d float32 on the device, as torch's capturable
        Adam keeps them). Done at the first step, after a resumed run has loaded the optimizer's state."""
        self._params, self._groups, self._lrs, self._steps, self._constants = [], [], [], [], []
        for group in self.optimizer.param_groups:
            # the constants as a plain tuple: torch.compile guards on every value of a dict it reads, and the
            # group's "lr" changes each step (a recompilation each time)
            betas = (float(group["betas"][0]), float(group["betas"][1]))
            params = [p for p in group["params"] if p.requires_grad]
            fused = bool(params) and uses_fused(group, params[0])  # torch's fused kernel where it runs (not compiled)
            self._constants.append(
                (betas, float(group["eps"]), float(group["weight_decay"]), bool(group["bias_correction"]), fused)
            )
            exp_avgs, exp_avg_sqs, steps = [], [], []
            for p in params:
                state = self.optimizer.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["step"] = 0
                state["step"] = torch.as_tensor(state["step"], dtype=torch.float32).to(self.device).clone()
                exp_avgs.append(state["exp_avg"])
                exp_avg_sqs.append(state["exp_avg_sq"])
                steps.append(state["step"])
            self._params.extend(params)
            self._groups.append((params, exp_avgs, exp_avg_sqs))
            self._steps.append(steps)
            self._lrs.append(torch.tensor(float(group["lr"]), dtype=torch.float32, device=self.device))
        self.fused_update = any(c[-1] for c in self._constants) and not (self.compiled and self.compile_scope == "step")
        self._bind_copies()
        self._bound = True

    def _bind_copies(self) -> None:
        """With ``bf16_weight_copies``: a bf16 copy of each trained parameter of :func:`autocast_weights`, an fp32
        buffer for its gradient, and the inputs of ``torch.autograd.grad`` (a copy in its parameter's place)."""
        self._copied, self._copies, self._copy_index, self._grads32 = [], [], [], []
        self._grad_inputs = list(self._params)
        if not self.bf16_weight_copies:
            return
        position = {id(p): i for i, p in enumerate(self._params)}
        for module, name, param in autocast_weights(self.model):
            if id(param) not in position:
                continue  # frozen, or not the optimizer's
            copy = param.detach().to(torch.bfloat16).requires_grad_(True)
            self._copied.append((module, name, param))
            self._copies.append(copy)
            self._copy_index.append(position[id(param)])
            self._grads32.append(torch.empty_like(param, memory_format=torch.contiguous_format))
            self._grad_inputs[position[id(param)]] = copy
        logger.info("bf16 weight copies: %d tensors (%d parameters) read by the forward pass, written by the update",
                    len(self._copies), sum(c.numel() for c in self._copies))  # fmt: skip

    def _set_learning_rates(self) -> None:
        """Each group's current ``lr`` (a Python float the scheduler set) into its device tensor: a fill
        kernel, no host synchronisation."""
        for group, lr in zip(self.optimizer.param_groups, self._lrs, strict=True):
            lr.fill_(float(group["lr"]))

    # -- the public step ---------------------------------------------------------------------------------

    def __call__(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Train one step on ``batch`` (the collator's tensors on the model's device, `(batch_size, length)`
        each) and return its loss, a `()` float32 device tensor (with ``capture``, a static buffer that the
        next step overwrites: read or copy it before then).

        Raises:
            ValueError: with ``capture``, a batch whose keys, shapes or dtypes differ from the captured one's.
        """
        if not self._bound:
            self._bind()
        self._set_learning_rates()
        self.count += 1
        if not self.capture:
            return self._step(batch)[0]
        if self._graph is None:
            return self._capture_and_run(batch)
        for key, static in self._static.items():
            value = batch.get(key)
            if value is None or value.shape != static.shape or value.dtype != static.dtype:
                raise ValueError(
                    f"captured training step: batch {key!r} is {None if value is None else tuple(value.shape)} "
                    f"{None if value is None else value.dtype}, the graph was captured for {tuple(static.shape)} "
                    f"{static.dtype}; every batch must have one shape (pad to max_seq_length, drop the last short batch)"
                )
            static.copy_(value, non_blocking=True)
        self._graph.replay()
        return self._static_loss

    def _capture_and_run(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Warm up, undo the warm-up's updates, capture the step as a CUDA graph, replay it on ``batch``."""
        self._static = {k: batch[k].clone() for k in BATCH_KEYS if k in batch}
        snapshot = self._state_tensors()
        saved = [t.detach().clone() for t in snapshot]
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(CAPTURE_WARMUP_STEPS):
                self._step(self._static)
        torch.cuda.current_stream(self.device).wait_stream(side)
        with torch.no_grad():  # the warm-up trained on the first batch: back to the state before it
            torch._foreach_copy_(snapshot, saved)
            self.sums.zero_()
        del saved
        self._graph = torch.cuda.CUDAGraph()
        # thread_local: the data loader's pin-memory thread may allocate pinned memory during the capture
        with torch.cuda.graph(self._graph, capture_error_mode="thread_local"):
            self._static_loss = self._step(self._static)[0]
        self._graph.replay()
        logger.info(
            "training step captured as one CUDA graph (%s, batch %s)",
            "compiled" if self.compiled else "eager kernels",
            "x".join(map(str, self._static["input_ids"].shape)),
        )
        return self._static_loss

    def _state_tensors(self) -> list[torch.Tensor]:
        """Every tensor a step changes: parameters, Adam moments, step counts, the loss sums, the norm."""
        tensors = [*self._params]
        for (_, exp_avgs, exp_avg_sqs), steps in zip(self._groups, self._steps, strict=True):
            tensors += [*exp_avgs, *exp_avg_sqs, *steps]
        return tensors + [*self._copies, self.sums, self.grad_norm]

    def eager_outside_step(self):
        """A context in which the model's compiled layers (``compile_scope`` ``layers``) run eagerly: an
        evaluation's forward passes (other shapes, no gradients) would otherwise compile them once more.
        A no-op context for the other scopes."""
        if self.compile_scope != "layers":
            return contextlib.nullcontext()
        return torch.compiler.set_stance("force_eager")

    def take_sums(self) -> tuple[dict[str, torch.Tensor], int]:
        """The loss sums since the last call (device tensors, ``{name: ()}`` for :data:`LOSS_NAMES`) and the
        number of steps they cover; the sums start again from 0."""
        sums = dict(zip(LOSS_NAMES, self.sums.clone().unbind(), strict=True))
        count, self.count = self.count, 0
        self.sums.zero_()
        return sums, count


@contextlib.contextmanager
def _holding(entries: list[tuple[torch.nn.Module, str, torch.nn.Parameter]], tensors: list[torch.Tensor]):
    """Each ``(module, name, parameter)`` of ``entries`` holds the matching tensor of ``tensors`` in place of its
    parameter within the context, and the parameter again after it (an error included)."""
    for (module, name, _), tensor in zip(entries, tensors, strict=True):
        module._parameters[name] = tensor
    try:
        yield
    finally:
        for module, name, param in entries:
            module._parameters[name] = param


def autocast_weights(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str, torch.nn.Parameter]]:
    """The parameters that bf16 autocast casts for a matrix product at every use: the weight and bias of each
    ``nn.Linear`` (``F.linear`` is on autocast's lower-precision list; LayerNorm and embedding lookups run in
    fp32), as ``(module, name, parameter)``, each parameter once. A parameter that a module of another kind holds
    too (the generator's output layer tied to the word embeddings, which the lookup reads in fp32), or that two
    modules share, is left out."""
    holders: dict[int, list[tuple[torch.nn.Module, str, torch.nn.Parameter]]] = {}
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            holders.setdefault(id(param), []).append((module, name, param))
    return [entries[0] for entries in holders.values() if len(entries) == 1 and isinstance(entries[0][0], torch.nn.Linear)]


def compiled_regions(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules whose ``forward`` ``compile_scope`` ``layers`` compiles one by one: the embedding blocks
    (``ElectraEmbeddings``: lookups, sum, LayerNorm, dropout; one module when the generator shares the
    discriminator's) and the transformer layers (:func:`transformer_layers`), in module order, each once."""
    from transformers.models.electra.modeling_electra import ElectraEmbeddings

    return [m for m in model.modules() if isinstance(m, ElectraEmbeddings)] + transformer_layers(model)


def transformer_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer layers of ``model``'s encoders (``transformers``' ``ElectraLayer``: attention and
    feed-forward), generator and discriminator alike, in module order."""
    from transformers.models.electra.modeling_electra import ElectraLayer

    return [m for m in model.modules() if isinstance(m, ElectraLayer)]
