"""The self-attention's query, key and value projections as one matrix multiplication.

``transformers``' ``ElectraSelfAttention`` projects the hidden states three times, ``query``, ``key`` and
``value``, each an ``nn.Linear`` of `(A, H)` (``A`` = heads x head size). :func:`fuse_qkv_projections` gives each
self-attention module of a model a forward pass that concatenates the three weights into one `(3A, H)` matrix
(and the biases into one `(3A,)` vector) and projects once: one matrix multiplication instead of three in the
forward pass, and in the backward pass one for the input's gradient (instead of three and two additions) and
one for the weights'. The parameters stay the three ``nn.Linear`` modules', so the state dict, checkpoints,
``save_pretrained`` / ``from_pretrained``, the optimizer's parameter groups and weight decay are unchanged; the
concatenation is a copy of the weights per call (small beside the projection: `3A x H` against
`tokens x 3A x H` multiply-adds), which a compiler fuses with the bf16 cast that autocast makes anyway.

Every output element is the same dot product as before, so the result equals the three projections' up to the
summation order a matrix-multiplication kernel picks (tested: ``tests/test_fused_attention.py``). Why: a
pre-training step of ELECTRA-Small at 128 x 128 is some 2,300 kernels of a few microseconds (the
device profiles in ``bench/results/pretrain-step-h200-2026-11-27-*.json``), and at its width (256) the three
projections are small matrix multiplications; fusing query, key and value is the standard remedy (the original
BERT and ELECTRA code computes them apart; NVIDIA's and most fast BERT implementations fuse them). Whether it
pays on a GPU is for the bench to say (``bench/pretrain_throughput.py --fuse-qkv``).
"""

from __future__ import annotations

import types

import torch
import torch.nn.functional as F
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.electra.modeling_electra import ElectraSelfAttention, eager_attention_forward

#: Keyword arguments of ``ElectraSelfAttention.forward`` (transformers 5.17: ``past_key_values``; 5.24:
#: ``cache``; ``encoder_hidden_states`` is passed by ``ElectraAttention`` as None) that the fused forward pass
#: does not handle: when one is not None, the module's own forward pass runs instead.
UNFUSED_KWARGS = ("past_key_values", "cache", "encoder_hidden_states")


def fused_qkv_forward(
    module: nn.Module, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``ElectraSelfAttention.forward`` with query, key and value projected by one matrix multiplication.

    Args:
        module: an ``ElectraSelfAttention`` (its ``query``, ``key``, ``value``, ``config``, ``scaling``, ...).
        hidden_states: `(batch_size, length, H)`.
        attention_mask: as the module's own forward pass takes it (the attention interface's mask).
        kwargs: passed to the attention interface, as the module's own forward pass does; with a key-value cache
            or encoder states (:data:`UNFUSED_KWARGS` not None) the module's own forward pass runs instead.

    Returns:
        ``(attention output (batch_size, length, A), attention weights or None)``, as the module's own.
    """
    if any(kwargs.get(name) is not None for name in UNFUSED_KWARGS):
        return type(module).forward(module, hidden_states, attention_mask=attention_mask, **kwargs)
    for name in UNFUSED_KWARGS:
        kwargs.pop(name, None)
    input_shape = hidden_states.shape[:-1]
    weight = torch.cat([module.query.weight, module.key.weight, module.value.weight])  # (3A, H)
    bias = torch.cat([module.query.bias, module.key.bias, module.value.bias])  # (3A,)
    qkv = F.linear(hidden_states, weight, bias)  # (B, L, 3A)
    # (B, L, 3, heads, d) -> 3 x (B, heads, L, d): the layout the three projections give, as strided views
    query, key, value = qkv.view(*input_shape, 3, -1, module.attention_head_size).permute(2, 0, 3, 1, 4).unbind(0)
    attention = ALL_ATTENTION_FUNCTIONS.get_interface(module.config._attn_implementation, eager_attention_forward)
    output, weights = attention(
        module,
        query,
        key,
        value,
        attention_mask,
        dropout=0.0 if not module.training else module.dropout.p,
        scaling=module.scaling,
        **kwargs,
    )
    return output.reshape(*input_shape, -1).contiguous(), weights


def self_attention_modules(model: nn.Module) -> list[nn.Module]:
    """The ``ElectraSelfAttention`` modules of ``model`` (generator and discriminator alike), in module order."""
    return [m for m in model.modules() if isinstance(m, ElectraSelfAttention)]


def fuse_qkv_projections(model: nn.Module) -> int:
    """Give every ``ElectraSelfAttention`` of ``model`` the fused forward pass (:func:`fused_qkv_forward`), in
    place, as an instance attribute (the class is untouched; ``del module.forward`` undoes it). Parameters,
    state dict and checkpoints do not change. Returns the number of modules changed (0: none in ``model``);
    calling it again changes nothing more."""
    modules = self_attention_modules(model)
    for module in modules:
        module.forward = types.MethodType(fused_qkv_forward, module)
    return len(modules)


def is_fused(module: nn.Module) -> bool:
    """Whether ``module`` runs :func:`fused_qkv_forward`."""
    forward = module.__dict__.get("forward")
    return isinstance(forward, types.MethodType) and forward.__func__ is fused_qkv_forward
