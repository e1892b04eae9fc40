"""The shape of a converted model: sizes read from the checkpoint's tensors, checked against a
``config.json`` (Bio-ELECTRA's format or transformers') and the original ``--hparams``, and the name
mappings of both networks. Used by :func:`bioelectra.tf.convert.convert_tf_checkpoint`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bioelectra.tf.bundle import TFCheckpointReader
from bioelectra.tf.errors import TFCheckpointError
from bioelectra.tf.mapping import (
    _LAYER_RE,
    Source,
    discriminator_mapping,
    generator_mapping,
)

#: Keys accepted in a ``config.json`` next to the checkpoint: Bio-ELECTRA's format (its README) and the keys
#: of a transformers ``ElectraConfig`` (5.x, plus 4.x's ``position_embedding_type`` / ``torch_dtype``).
CONFIG_KEYS = frozenset(
    """model_type model_size vocab_size embedding_size hidden_size num_hidden_layers num_attention_heads
    intermediate_size generator_size hidden_act hidden_dropout_prob attention_probs_dropout_prob
    max_position_embeddings type_vocab_size initializer_range layer_norm_eps do_lower_case architectures
    pad_token_id summary_type summary_use_proj summary_activation summary_last_dropout position_embedding_type
    use_cache classifier_dropout transformers_version torch_dtype dtype _name_or_path add_cross_attention
    bos_token_id eos_token_id chunk_size_feed_forward id2label label2id is_decoder is_encoder_decoder
    output_attentions output_hidden_states problem_type return_dict tie_word_embeddings""".split()
)


#: Sizes whose given value must equal what the tensors say.
_SHAPE_KEYS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


_SIZES = {"small": 256, "base": 768, "large": 1024}  # hidden size of the original model sizes


def _infer_lower_case(vocab: list[str]) -> bool:
    """Cased when >= 1% of the word pieces hold capitals (``[unused]``/special tokens aside)."""
    pieces = [t for t in vocab if not (t.startswith("[") and t.endswith("]"))]
    cased = sum(1 for t in pieces if any(c.isupper() for c in t))
    return cased < max(1, 0.01 * len(pieces))


def _layers(names: Iterable[str], scope: str, where: str) -> int:
    found = sorted({int(m.group(2)) for n in names if (m := _LAYER_RE.match(n)) and m.group(1) == scope})
    if found and found != list(range(len(found))):
        raise TFCheckpointError(f"{where}: {scope} encoder layers are not numbered 0..N-1: {found}")
    return len(found)


def _shape(reader: TFCheckpointReader, name: str) -> tuple[int, ...]:
    if name not in reader:
        raise TFCheckpointError(f"{reader.index_path}: expected variable {name!r} is missing")
    return reader.entries[name].shape


@dataclass
class _Plan:
    disc_config: Any
    gen_config: Any | None
    disc_map: dict[str, Source]
    gen_map: dict[str, Source] | None


def _check_model_size(
    model_size: str | None,
    hidden: int,
    *,
    config: dict,
    config_src: str,
    hparams: dict,
    hparams_src: str,
    overrides: dict,
) -> None:
    """A model size (``--model-size`` > ``config.json`` > ``--hparams``) must agree with the tensors' hidden size."""
    # a model size must agree with the hidden size (the original sizes, or the hparams' own overrides)
    if model_size is not None:
        size_name, size_src, size_hidden = model_size, "--model-size", None
    elif config.get("model_size") is not None:
        size_name, size_src, size_hidden = config["model_size"], config_src, None
    elif hparams.get("model_size") is not None:
        size_name, size_src, size_hidden = hparams["model_size"], hparams_src, overrides.get("hidden_size")
    else:
        size_name = size_src = size_hidden = None
    if size_name is not None:
        if size_name not in _SIZES:
            raise TFCheckpointError(f"{size_src}: model size {size_name!r}; expected one of {sorted(_SIZES)}")
        expected_hidden = int(size_hidden) if size_hidden is not None else _SIZES[size_name]
        if expected_hidden != hidden:
            raise TFCheckpointError(
                f"{size_src}: model size {size_name!r} has hidden size {expected_hidden}, "
                f"but the checkpoint's "
                f"tensors say {hidden}"
            )


def _attention_heads(
    num_attention_heads: int | None,
    hidden: int,
    *,
    config: dict,
    config_src: str,
    overrides: dict,
    hparams_src: str,
) -> int:
    """The discriminator's attention heads, which must divide ``hidden``."""
    # heads: flag > config.json > hparams overrides > the original default max(1, H // 64)
    # (google-research/electra util/training_utils.py get_bert_config)
    if num_attention_heads is not None:
        heads, heads_src = num_attention_heads, "--num-attention-heads"
    elif config.get("num_attention_heads") is not None:
        heads, heads_src = int(config["num_attention_heads"]), config_src
    elif overrides.get("num_attention_heads") is not None:
        heads, heads_src = int(overrides["num_attention_heads"]), hparams_src
    else:
        heads, heads_src = max(1, hidden // 64), "max(1, hidden_size // 64) (original default)"
    if heads < 1 or hidden % heads:
        raise TFCheckpointError(f"{heads_src}: {heads} attention heads do not divide hidden size {hidden}")
    return heads


def _generator_plan(
    reader: TFCheckpointReader,
    names: list[str],
    where: str,
    *,
    config: dict,
    config_src: str,
    hparams: dict,
    hparams_src: str,
    layers: int,
    hidden: int,
    emb: int,
    heads: int,
    common: dict,
):
    """``(generator ElectraConfig, generator name mapping)`` from the tensors, or ``(None, None)`` for a
    checkpoint without a generator; sizes checked against ``config.json`` / ``--hparams``."""
    from transformers import ElectraConfig

    gen_config = gen_map = None
    gen_layers = _layers(names, "generator", where)
    has_head = "generator_predictions/output_bias" in reader
    if has_head:
        shared_encoder = (
            gen_layers == 0
        )  # untied_generator = False: generator and discriminator share weights
        untied = "generator/embeddings/word_embeddings" in reader
        scope = "electra" if shared_encoder else "generator"
        g_layers = layers if shared_encoder else gen_layers
        g_hidden = _shape(reader, f"{scope}/encoder/layer_0/attention/self/query/kernel")[1]
        g_ffn = _shape(reader, f"{scope}/encoder/layer_0/intermediate/dense/kernel")[1]
        g_emb = _shape(reader, "generator/embeddings/word_embeddings")[1] if untied else emb
        gen_size = config.get("generator_size", hparams.get("generator_hidden_size"))
        if gen_size is not None and not shared_encoder and round(hidden * float(gen_size)) != g_hidden:
            raise TFCheckpointError(
                f"{config_src if 'generator_size' in config else hparams_src}: "
                f"generator size {gen_size} x hidden "
                f"{hidden} != the generator's hidden size {g_hidden} in the tensors"
            )
        gen_layers_frac = hparams.get("generator_layers")
        if (
            gen_layers_frac is not None
            and not shared_encoder
            and round(layers * float(gen_layers_frac)) != g_layers
        ):
            raise TFCheckpointError(
                f"{hparams_src}: generator_layers {gen_layers_frac} x {layers} layers != the generator's "
                f"{g_layers} layers in the tensors"
            )
        # original get_generator_config: heads = max(1, generator hidden // 64)
        g_heads = heads if shared_encoder else max(1, g_hidden // 64)
        gen_config = ElectraConfig(
            embedding_size=g_emb,
            hidden_size=g_hidden,
            num_hidden_layers=g_layers,
            num_attention_heads=g_heads,
            intermediate_size=g_ffn,
            tie_word_embeddings=True,
            **common,
        )
        gen_map = generator_mapping(
            g_layers,
            project=f"{scope}/embeddings_project/kernel" in reader,
            untied_embeddings=untied,
            shared_encoder=shared_encoder,
        )
    elif gen_layers:
        raise TFCheckpointError(
            f"{where}: generator/encoder variables but no generator_predictions/output_bias"
        )
    return gen_config, gen_map


def _common_config(
    config: dict, overrides: dict, *, vocab: int, max_pos: int, type_vocab: int, pad_token_id: int
) -> dict[str, Any]:
    """The ``ElectraConfig`` settings the discriminator and the generator share (``config.json`` > the
    hparams' overrides > the original defaults)."""
    return {
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab,
        "hidden_act": config.get("hidden_act", overrides.get("hidden_act", "gelu")),
        "hidden_dropout_prob": float(
            config.get("hidden_dropout_prob", overrides.get("hidden_dropout_prob", 0.1))
        ),
        "attention_probs_dropout_prob": float(
            config.get("attention_probs_dropout_prob", overrides.get("attention_probs_dropout_prob", 0.1))
        ),
        "initializer_range": float(config.get("initializer_range", overrides.get("initializer_range", 0.02))),
        "layer_norm_eps": float(config.get("layer_norm_eps", 1e-12)),  # TF contrib layer_norm's epsilon
        "pad_token_id": pad_token_id,
    }


def _plan(
    reader: TFCheckpointReader,
    *,
    config: dict,
    config_src: str,
    hparams: dict,
    hparams_src: str,
    model_size: str | None,
    num_attention_heads: int | None,
    vocab_size_tokenizer: int,
    pad_token_id: int,
) -> _Plan:
    """Sizes from the tensors, checked against ``config.json`` / ``--hparams``; both name mappings."""
    from transformers import ElectraConfig

    where = str(reader.index_path)
    names = reader.variable_names()
    overrides = dict(hparams.get("model_hparam_overrides") or {})

    vocab, emb = _shape(reader, "electra/embeddings/word_embeddings")
    max_pos, _ = _shape(reader, "electra/embeddings/position_embeddings")
    type_vocab, _ = _shape(reader, "electra/embeddings/token_type_embeddings")
    layers = _layers(names, "electra", where)
    if layers == 0:
        raise TFCheckpointError(f"{where}: no electra/encoder/layer_N variables; not an ELECTRA checkpoint?")
    hidden = _shape(reader, "electra/encoder/layer_0/attention/self/query/kernel")[1]
    ffn = _shape(reader, "electra/encoder/layer_0/intermediate/dense/kernel")[1]
    sizes = {
        "vocab_size": vocab,
        "embedding_size": emb,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": ffn,
        "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab,
    }

    # given sizes must agree with the tensors
    for source, values in ((config_src, config), (hparams_src, {**hparams, **overrides})):
        for key in _SHAPE_KEYS:
            if values.get(key) is not None and int(values[key]) != sizes[key]:
                raise TFCheckpointError(
                    f"{source}: {key} = {values[key]}, but the checkpoint's tensors say {sizes[key]}"
                )
    _check_model_size(
        model_size,
        hidden,
        config=config,
        config_src=config_src,
        hparams=hparams,
        hparams_src=hparams_src,
        overrides=overrides,
    )
    heads = _attention_heads(
        num_attention_heads,
        hidden,
        config=config,
        config_src=config_src,
        overrides=overrides,
        hparams_src=hparams_src,
    )
    if vocab_size_tokenizer > vocab:
        raise TFCheckpointError(
            f"vocab.txt has {vocab_size_tokenizer} entries but the word embeddings have {vocab} rows: "
            "the vocabulary does not belong to this checkpoint"
        )
    common = _common_config(
        config, overrides, vocab=vocab, max_pos=max_pos, type_vocab=type_vocab, pad_token_id=pad_token_id
    )
    disc_config = ElectraConfig(
        embedding_size=emb,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn,
        **common,
    )
    disc_map = discriminator_mapping(layers, project="electra/embeddings_project/kernel" in reader)

    gen_config, gen_map = _generator_plan(
        reader,
        names,
        where,
        config=config,
        config_src=config_src,
        hparams=hparams,
        hparams_src=hparams_src,
        layers=layers,
        hidden=hidden,
        emb=emb,
        heads=heads,
        common=common,
    )
    return _Plan(disc_config, gen_config, disc_map, gen_map)
