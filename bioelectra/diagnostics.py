"""Diagnostics of a pre-trained encoder beyond the loss: has it learned to use context?

A short pre-training run can reach a good ``disc_auc`` without ever using context: early on the generator
samples rare tokens, and "this token is rare, so it was replaced" needs no attention at all. Such a
discriminator still attends uniformly to the whole sequence, as at initialisation. Once the generator
samples frequent tokens it has nothing to go on, and its fine-tuning results are no better than a random
initialisation's. The normalised attention entropy shows this directly:

    H_norm = - sum_k a_qk log a_qk / log(n)

for each head and query over the ``n`` real (non-padding) keys of the sequence; 1.0 is uniform attention
(a randomly initialised BERT-style encoder is at about 0.99), and a trained encoder's heads are peaked
(lower values). :func:`attention_entropy` averages it over heads and real queries, per layer.
"""

from __future__ import annotations

import math
from typing import Any

import torch

#: Clean (unmasked) validation examples whose attention entropy is reported (``pretrain eval``, and every
#: evaluation during pre-training): always the first ones, so that the figures of two checkpoints compare;
#: one extra forward pass of each encoder per evaluation.
ATTENTION_PROBE_EXAMPLES = 32


@torch.no_grad()
def attention_entropy(
    encoder: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **inputs: torch.Tensor
) -> list[float]:
    """Normalised attention entropy per layer of a BERT-style encoder (1.0 = uniform attention).

    Args:
        encoder: a transformers encoder that returns ``attentions`` with ``output_attentions=True``
            (``ElectraModel``, ``BertModel``, ...; it must run the ``eager`` attention implementation,
            which is set on its config for the call and restored afterwards).
        input_ids: `(batch_size, sequence_length)` token ids.
        attention_mask: `(batch_size, sequence_length)`, 1 for real tokens, 0 for padding; all ones when
            omitted. Padding queries are left out, and padding keys get no weight and do not count in ``n``.
        **inputs: other inputs of the encoder (``token_type_ids``).

    Returns:
        One float per layer, in [0, 1]: the mean over heads and real query positions of the entropy of
        each attention distribution divided by ``log(n)``, ``n`` the number of real tokens of its sequence
        (sequences with fewer than 2 real tokens are skipped).

    Raises:
        ValueError: no sequence has 2 or more real tokens, or the encoder returns no attentions.
    """
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    config = encoder.config
    previous = config._attn_implementation
    config._attn_implementation = "eager"
    try:
        out = encoder(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True, **inputs)
    finally:
        config._attn_implementation = previous
    if not out.attentions:
        raise ValueError(f"{type(encoder).__name__} returned no attentions")
    real = attention_mask.bool()  # (B, L)
    n = real.sum(dim=1)  # (B,)
    keep = n >= 2  # (B,)
    if not bool(keep.any()):
        raise ValueError("no sequence with 2 or more real tokens: attention entropy is undefined")
    norm = torch.log(n.clamp(min=2).float())  # (B,)
    result = []
    for probs in out.attentions:  # each (B, heads, L, L)
        p = probs.float() * real[:, None, None, :]  # padding keys carry (numerically) no weight
        ent = -(p * torch.log(p.clamp(min=1e-12))).sum(dim=-1)  # (B, heads, L)
        ent = ent / norm[:, None, None]
        query_ok = (real & keep[:, None])[:, None, :].expand_as(ent)  # (B, heads, L)
        result.append(float(ent[query_ok].mean()))
    return result


def summarize_attention_entropy(per_layer: list[float]) -> dict[str, Any]:
    """``{"attention_entropy": mean over layers, "attention_entropy_per_layer": [...]}``, rounded."""
    return {
        "attention_entropy": round(sum(per_layer) / len(per_layer), 4) if per_layer else math.nan,
        "attention_entropy_per_layer": [round(v, 4) for v in per_layer],
    }


def pretraining_attention_report(model: Any, examples: Any, pad: Any, device: torch.device) -> dict[str, dict[str, Any]]:
    """:func:`summarize_attention_entropy` of both encoders of an ``ElectraPretrainingModel`` on the first
    :data:`ATTENTION_PROBE_EXAMPLES` of ``examples``, clean (unmasked): ``{"discriminator": {...},
    "generator": {...}}``. The model is put in eval mode (no dropout) and left there.

    Args:
        model: an ``ElectraPretrainingModel`` (its ``discriminator.electra`` and ``generator.electra``).
        examples: a non-empty indexable dataset of ``{"input_ids", "token_type_ids"}`` rows (the validation
            examples of ``build-data``).
        pad: the collator's ``pad`` (rows -> ``input_ids`` / ``attention_mask`` / ``token_type_ids``, each
            `(batch_size, sequence_length)`).
        device: the model's device.
    """
    rows = [examples[i] for i in range(min(ATTENTION_PROBE_EXAMPLES, len(examples)))]
    batch = {k: v.to(device) for k, v in pad(rows).items()}
    model.eval()
    return {
        name: summarize_attention_entropy(attention_entropy(part.electra, **batch))
        for name, part in (("discriminator", model.discriminator), ("generator", model.generator))
    }
