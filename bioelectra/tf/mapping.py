"""Original ELECTRA variable names (google-research/electra ``model/modeling.py``, ``run_pretraining.py``,
``model/optimization.py``) -> transformers' ``ElectraForPreTraining`` / ``ElectraForMaskedLM`` parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass

# ==================================================================================================
# name mapping: original ELECTRA -> transformers' Electra
# ==================================================================================================

#: Variables that are optimizer state or bookkeeping, never model weights. Suffixes are the slots of the
#: original AdamWeightDecayOptimizer (``model/optimization.py``: ``adam_m``, ``adam_v``) and of TF's own
#: optimizers (``Adam``, ``Adam_1``, ``Momentum``, ``lamb_m``/``lamb_v`` of LAMB variants).
OPTIMIZER_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1", "/Momentum", "/lamb_m", "/lamb_v")
BOOKKEEPING_VARIABLES = frozenset(
    {"global_step", "beta1_power", "beta2_power", "current_loss_scale", "good_steps", "loss_scale"}
)

_LAYER_RE = re.compile(r"^(electra|generator)/encoder/layer_(\d+)/")

#: Within one encoder layer: original sub-path -> transformers sub-module.
_LAYER_PARTS = {
    "attention/self/query": "attention.self.query",
    "attention/self/key": "attention.self.key",
    "attention/self/value": "attention.self.value",
    "attention/output/dense": "attention.output.dense",
    "attention/output/LayerNorm": "attention.output.LayerNorm",
    "intermediate/dense": "intermediate.dense",
    "output/dense": "output.dense",
    "output/LayerNorm": "output.LayerNorm",
}


def _is_ignored(name: str) -> bool:
    return name in BOOKKEEPING_VARIABLES or name.endswith(OPTIMIZER_SLOT_SUFFIXES)


@dataclass(frozen=True)
class Source:
    """Where one transformers parameter comes from: TF variable ``name``, transposed or not."""

    name: str
    transpose: bool


def _linear(mapping: dict[str, Source], tf_scope: str, hf_module: str) -> None:
    mapping[f"{hf_module}.weight"] = Source(f"{tf_scope}/kernel", True)  # TF (in, out) -> torch (out, in)
    mapping[f"{hf_module}.bias"] = Source(f"{tf_scope}/bias", False)


def _layer_norm(mapping: dict[str, Source], tf_scope: str, hf_module: str) -> None:
    mapping[f"{hf_module}.weight"] = Source(f"{tf_scope}/gamma", False)
    mapping[f"{hf_module}.bias"] = Source(f"{tf_scope}/beta", False)


def _encoder_mapping(
    *, embeddings_scope: str, encoder_scope: str, num_layers: int, project: bool
) -> dict[str, Source]:
    """``electra.*`` parameters of a transformers Electra model from the original scopes."""
    m: dict[str, Source] = {}
    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        m[f"electra.embeddings.{table}.weight"] = Source(f"{embeddings_scope}/{table}", False)
    _layer_norm(m, f"{embeddings_scope}/LayerNorm", "electra.embeddings.LayerNorm")
    if project:
        _linear(m, f"{encoder_scope}/embeddings_project", "electra.embeddings_project")
    for i in range(num_layers):
        for tf_part, hf_part in _LAYER_PARTS.items():
            tf_scope = f"{encoder_scope}/encoder/layer_{i}/{tf_part}"
            hf_module = f"electra.encoder.layer.{i}.{hf_part}"
            (_layer_norm if tf_part.endswith("LayerNorm") else _linear)(m, tf_scope, hf_module)
    return m


def discriminator_mapping(num_layers: int, *, project: bool) -> dict[str, Source]:
    """``ElectraForPreTraining`` parameter -> original variable.

    ``electra/embeddings/*`` (word, position, token type, LayerNorm gamma/beta),
    ``electra/embeddings_project``
    (when embedding size != hidden size), ``electra/encoder/layer_N/...``, and the replaced-token-detection
    head ``discriminator_predictions/dense`` (H -> H) and ``dense_1`` (H -> 1, transformers'
    ``dense_prediction``). Kernels are transposed.
    """
    m = _encoder_mapping(
        embeddings_scope="electra/embeddings", encoder_scope="electra", num_layers=num_layers, project=project
    )
    _linear(m, "discriminator_predictions/dense", "discriminator_predictions.dense")
    _linear(m, "discriminator_predictions/dense_1", "discriminator_predictions.dense_prediction")
    return m


def generator_mapping(
    num_layers: int, *, project: bool, untied_embeddings: bool, shared_encoder: bool
) -> dict[str, Source]:
    """``ElectraForMaskedLM`` parameter -> original variable.

    The original generator reads the discriminator's ``electra/embeddings/*`` unless
    ``untied_generator_embeddings`` (then ``generator/embeddings/*``); ``generator/embeddings_project`` when
    its hidden size differs from the embedding size; ``generator/encoder/layer_N/...`` (or the
    discriminator's encoder when ``untied_generator`` was false); the head ``generator_predictions/dense``
    (H_gen -> E), ``generator_predictions/LayerNorm`` and ``generator_predictions/output_bias``
    (transformers' ``generator_lm_head.bias``; its weight is tied to the word embeddings).
    """
    scope = "electra" if shared_encoder else "generator"
    m = _encoder_mapping(
        embeddings_scope="generator/embeddings" if untied_embeddings else "electra/embeddings",
        encoder_scope=scope,
        num_layers=num_layers,
        project=project,
    )
    _linear(m, "generator_predictions/dense", "generator_predictions.dense")
    _layer_norm(m, "generator_predictions/LayerNorm", "generator_predictions.LayerNorm")
    m["generator_lm_head.bias"] = Source("generator_predictions/output_bias", False)
    return m
