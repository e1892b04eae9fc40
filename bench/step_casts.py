#!/usr/bin/env python3
"""The casts of one whole training step (bf16 autocast), with and without ``bf16_weight_copies``; prints JSON.

For each setting, one step of ``WholeTrainingStep`` (``compile_scope`` ``forward``) traced by AOT autograd with a
recording backend (no code generation: the graphs any device's compiler starts from):

- ``forward_input_casts``: casts of the forward graph's inputs (the parameters, or their copies) to bf16;
- ``backward_output_casts``: casts to fp32 among the backward graph's outputs (the parameters' gradients);
- ``forward_nodes`` / ``backward_nodes``: the graphs' ``call_function`` nodes;

then ``eager_cast_ops_per_step``: the ``aten::_to_copy`` calls of one uncompiled whole step (torch.profiler on
this device's eager kernels; a step before it warms up), each a kernel launch of its own unless a compiler groups
them. Under autocast a linear layer's weight and bias are cast at every use and their gradients cast back
(ELECTRA-Small's whole step counted 303 and 299: docs/results/pretraining-findings.md); the copies are written by the update in one multi-tensor
copy instead.

    bench/step_casts.py --size small --layers 12 --batch-size 2 --out casts.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import device_name  # noqa: E402
from pretrain_cases import case_config, make_batches  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402
from torch._functorch.aot_autograd import make_boxed_func  # noqa: E402

from bioelectra.modeling import ElectraPretrainingModel  # noqa: E402
from bioelectra.optimization import UpdatedInStepAdamW, decay_parameter_groups  # noqa: E402
from bioelectra.pretraining.step import WholeTrainingStep, autocast_weights  # noqa: E402
from bioelectra.textio import atomic_write_text  # noqa: E402

#: The cast ops of an AOT graph (a dtype conversion is one of them after decomposition).
CASTS = ("prims.convert_element_type.default", "aten._to_copy.default")


def cast_dtype(node: torch.fx.Node) -> torch.dtype | None:
    """The dtype a cast node converts to; None for any other node."""
    if node.op != "call_function" or str(node.target) not in CASTS:
        return None
    return node.kwargs.get("dtype") or (node.args[1] if len(node.args) > 1 else None)


def graph_casts(forward: torch.fx.GraphModule, backward: torch.fx.GraphModule) -> dict:
    """The counts of the module docstring from one step's forward and backward graphs."""
    inputs = {n for n in forward.graph.nodes if n.op == "placeholder"}
    (output,) = [n for n in backward.graph.nodes if n.op == "output"]
    returned = {n for n in output.args[0] if isinstance(n, torch.fx.Node)}
    return {
        "forward_input_casts": sum(1 for n in forward.graph.nodes if cast_dtype(n) == torch.bfloat16 and n.args[0] in inputs),
        "backward_output_casts": sum(1 for n in returned if cast_dtype(n) == torch.float32),
        "forward_nodes": sum(1 for n in forward.graph.nodes if n.op == "call_function"),
        "backward_nodes": sum(1 for n in backward.graph.nodes if n.op == "call_function"),
    }


def measure(config, batch: dict, *, copies: bool, device: torch.device) -> dict:
    """One setting: the traced graphs' casts, then the eager step's cast ops."""
    result: dict = {"bf16_weight_copies": copies}
    graphs: list[torch.fx.GraphModule] = []

    def record(gm, _inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    for compiled in (True, False):
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = ElectraPretrainingModel(config).to(device).train()
        optimizer = UpdatedInStepAdamW(decay_parameter_groups(model, weight_decay=0.01), lr=1e-4, weight_decay=0.01)
        backend = aot_autograd(fw_compiler=record, bw_compiler=record)
        whole = WholeTrainingStep(model, optimizer, max_grad_norm=1.0, bf16=True, compile=compiled,
                                  compile_backend=backend, compile_scope="forward", bf16_weight_copies=copies)  # fmt: skip
        whole(batch)
        if compiled:
            result.update(graph_casts(*graphs[:2]))
            continue
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            whole(batch)
        result["eager_cast_ops_per_step"] = sum(e.count for e in prof.key_averages() if e.key == "aten::_to_copy")
        result["copied_tensors"] = len(whole._copies)
    torch._dynamo.reset()
    return result


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="small", help="an original size (small, base, large) or a --hparams JSON file")
    p.add_argument("--layers", type=int, default=None, help="transformer layers (default: the size's)")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--vocab-size", type=int, default=30522)
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config, label = case_config(args.size, args.vocab_size, args.seq_len, args.layers)
    (batch,) = make_batches(1, args.batch_size, args.seq_len, config.discriminator_config.vocab_size, config.mask_prob, 0)
    batch = {k: v.to(device) for k, v in batch.items()}
    report = {
        "device": device_name(device),
        "torch": torch.__version__,
        "size": label,
        "layers": config.discriminator_config.num_hidden_layers,
        "seq_len": args.seq_len,
        "batch_size": args.batch_size,
        "linear_tensors": len(autocast_weights(ElectraPretrainingModel(config))),
        "settings": [measure(config, batch, copies=copies, device=device) for copies in (False, True)],
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        atomic_write_text(args.out, text + "\n")
    return report


if __name__ == "__main__":
    main()
