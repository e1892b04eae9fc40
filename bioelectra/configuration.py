"""``ElectraPretrainingConfig``: the joint generator + discriminator configuration of ELECTRA pre-training.

Sizes and the generator size rule follow the original code (google-research/electra,
``configure_pretraining.py`` and ``run_pretraining.py: get_generator_config``); the discriminator shapes
come from :data:`bioelectra.presets.ELECTRA_SIZES`.
"""

from __future__ import annotations

import copy
from typing import Any

from transformers import ElectraConfig, PreTrainedConfig

from bioelectra.presets import ELECTRA_SIZES, preset_config

#: Generator width as a fraction of the discriminator's, per size (original ``configure_pretraining.py``:
#: 0.25 by default, 0.33333 for base; paper Table 6: small 1/4, base 1/3, large 1/4).
GENERATOR_HIDDEN_FRACTION: dict[str, float] = {"small": 0.25, "base": 1.0 / 3.0, "large": 0.25}


def generator_config_from_discriminator(
    discriminator_config: ElectraConfig, *, generator_hidden_size: float = 0.25, generator_layers: float = 1.0
) -> ElectraConfig:
    """The generator's ``ElectraConfig`` derived from the discriminator's.

    Rule of the original ``run_pretraining.py: get_generator_config``: hidden = round(disc hidden x
    ``generator_hidden_size``), layers = round(disc layers x ``generator_layers``), intermediate = 4 x
    generator hidden, attention heads = max(1, generator hidden // 64). Everything else (vocabulary,
    ``embedding_size``, dropout, positions) is copied, so the embeddings can be shared.

    Args:
        discriminator_config: the discriminator's configuration.
        generator_hidden_size: fraction of the discriminator's hidden size, in (0, 1].
        generator_layers: fraction of the discriminator's number of layers, in (0, 1].

    Raises:
        ValueError: a fraction outside (0, 1], or a resulting size of 0.
    """
    for name, value in (
        ("generator_hidden_size", generator_hidden_size),
        ("generator_layers", generator_layers),
    ):
        if not 0.0 < value <= 1.0:
            raise ValueError(f"{name}={value}: expected a fraction of the discriminator's size in (0, 1]")
    hidden = int(round(discriminator_config.hidden_size * generator_hidden_size))
    layers = int(round(discriminator_config.num_hidden_layers * generator_layers))
    if hidden < 1 or layers < 1:
        raise ValueError(
            f"generator of hidden size {hidden} and {layers} layers from a discriminator of "
            f"{discriminator_config.hidden_size} x {discriminator_config.num_hidden_layers}: "
            "both must be >= 1"
        )
    kwargs = discriminator_config.to_dict()
    for key in (
        "architectures",
        "model_type",
        "transformers_version",
        "_name_or_path",
        "id2label",
        "label2id",
    ):
        kwargs.pop(key, None)
    kwargs.update(
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=4 * hidden,
        num_attention_heads=max(1, hidden // 64),
        embedding_size=discriminator_config.embedding_size,
    )
    return ElectraConfig(**kwargs)


def _require_same_fields(
    generator_config: ElectraConfig, discriminator_config: ElectraConfig, keys: tuple[str, ...], why: str
) -> None:
    """Raise ``ValueError`` naming the first of ``keys`` on which the two configurations differ, and ``why``
    it matters."""
    for key in keys:
        g, d = getattr(generator_config, key), getattr(discriminator_config, key)
        if g != d:
            raise ValueError(f"generator {key}={g} differs from the discriminator's {d}: {why}")


class ElectraPretrainingConfig(PreTrainedConfig):
    r"""Configuration of :class:`bioelectra.modeling.ElectraPretrainingModel`.

    Args:
        discriminator_config (`dict` or `ElectraConfig`, *optional*):
            the discriminator (``ElectraForPreTraining``). Defaults to the ``small`` preset with the
            Bio-ELECTRA vocabulary size (31,620).
        generator_config (`dict` or `ElectraConfig`, *optional*):
            the generator (``ElectraForMaskedLM``). Defaults to
            :func:`generator_config_from_discriminator` with ``generator_hidden_size`` / ``generator_layers``.
        mask_prob (`float`, defaults to 0.15): fraction of tokens masked (original ``mask_prob``).
        gen_weight (`float`, defaults to 1.0): weight of the generator's MLM loss (original ``gen_weight``).
        disc_weight (`float`, defaults to 50.0): weight of the replaced token detection loss
            (original ``disc_weight``; paper Section 2, lambda = 50).
        sampling_temperature (`float`, defaults to 1.0): the generator's logits are divided by it before
            sampling (original ``temperature``; renamed because transformers 5 refuses to save a model
            config holding the generation parameter ``temperature``).
        disallow_correct (`bool`, defaults to False): never sample the original token at a masked position
            (original ``disallow_correct``).
        untied_generator_embeddings (`bool`, defaults to False): give the generator its own embeddings
            instead of sharing the discriminator's (original ``untied_generator_embeddings``). The
            generator's output layer stays tied to its own input word embeddings either way.
        untied_generator (`bool`, defaults to True): False ties *all* weights: the generator is the
            discriminator's encoder (embeddings and every layer) with its own masked-LM head, so it has the
            discriminator's size and ``generator_hidden_size`` / ``generator_layers`` are ignored (original
            ``untied_generator``; paper Section 3.2, "tie all weights", GLUE 84.4 against 83.6 for tied
            embeddings only, at the cost of a discriminator-sized generator).
        generator_hidden_size (`float`, defaults to 0.25): generator width fraction (original
            ``generator_hidden_size``), used only when ``generator_config`` is not given.
        generator_layers (`float`, defaults to 1.0): generator depth fraction (original
            ``generator_layers``), used only when ``generator_config`` is not given.
        max_predictions_per_seq (`int`, *optional*): at most this many masked positions per sequence (the
            original ``max_predictions_per_seq``, ``int((mask_prob + 0.005) * max_seq_length)``, the masking
            collator's cap; ``pretrain train`` sets it from there). The generator's masked positions are then
            gathered into this many slots per sequence, so the training step never waits for the device to
            count them. None: as many slots as the batch's fullest sequence needs (one host
            synchronisation per forward pass).
        tie_word_embeddings (`bool`, defaults to True): must stay true; transformers 5 applies the
            model's ``_tied_weights_keys`` only when it is.
    """

    model_type = "electra-pretraining"
    sub_configs = {"discriminator_config": ElectraConfig, "generator_config": ElectraConfig}

    def __init__(
        self,
        *,
        discriminator_config: dict[str, Any] | ElectraConfig | None = None,
        generator_config: dict[str, Any] | ElectraConfig | None = None,
        mask_prob: float = 0.15,
        gen_weight: float = 1.0,
        disc_weight: float = 50.0,
        sampling_temperature: float = 1.0,
        disallow_correct: bool = False,
        untied_generator_embeddings: bool = False,
        untied_generator: bool = True,
        generator_hidden_size: float = 0.25,
        generator_layers: float = 1.0,
        max_predictions_per_seq: int | None = None,
        tie_word_embeddings: bool = True,
        **kwargs: Any,
    ) -> None:
        if discriminator_config is None:
            discriminator_config = preset_config("small", vocab_size=31620)
        elif isinstance(discriminator_config, dict):
            discriminator_config = ElectraConfig(**discriminator_config)
        if not untied_generator and untied_generator_embeddings:
            raise ValueError(
                "untied_generator=False shares every weight, embeddings included: it cannot be combined with "
                "untied_generator_embeddings=True"
            )
        if not untied_generator:
            if generator_config is None:
                generator_config = copy.deepcopy(discriminator_config)
            elif isinstance(generator_config, dict):
                generator_config = ElectraConfig(**generator_config)
            _require_same_fields(
                generator_config,
                discriminator_config,
                ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"),
                "untied_generator=False shares the whole encoder, so both must have the same shape",
            )
        elif generator_config is None:
            generator_config = generator_config_from_discriminator(
                discriminator_config,
                generator_hidden_size=generator_hidden_size,
                generator_layers=generator_layers,
            )
        elif isinstance(generator_config, dict):
            generator_config = ElectraConfig(**generator_config)
        if sampling_temperature <= 0:
            raise ValueError(f"sampling_temperature={sampling_temperature}: expected > 0")
        if not 0.0 < mask_prob < 1.0:
            raise ValueError(f"mask_prob={mask_prob}: expected a fraction in (0, 1)")
        if max_predictions_per_seq is not None and (
            isinstance(max_predictions_per_seq, bool) or not isinstance(max_predictions_per_seq, int)
            or max_predictions_per_seq < 1
        ):
            raise ValueError(f"max_predictions_per_seq={max_predictions_per_seq!r}: expected an integer >= 1 or None")
        if not untied_generator_embeddings:
            _require_same_fields(
                generator_config,
                discriminator_config,
                ("vocab_size", "embedding_size", "max_position_embeddings", "type_vocab_size"),
                "shared embeddings need the same shape (untied_generator_embeddings=True gives the generator "
                "its own)",
            )
        # The sub-models never tie on their own: every tie is declared once, on the joint model.
        discriminator_config.tie_word_embeddings = False
        generator_config.tie_word_embeddings = False
        self.discriminator_config = discriminator_config
        self.generator_config = generator_config
        self.mask_prob = mask_prob
        self.gen_weight = gen_weight
        self.disc_weight = disc_weight
        self.sampling_temperature = sampling_temperature
        self.disallow_correct = disallow_correct
        self.untied_generator_embeddings = untied_generator_embeddings
        self.untied_generator = untied_generator
        self.generator_hidden_size = generator_hidden_size
        self.generator_layers = generator_layers
        self.max_predictions_per_seq = max_predictions_per_seq
        kwargs.setdefault("pad_token_id", discriminator_config.pad_token_id)
        super().__init__(tie_word_embeddings=tie_word_embeddings, **kwargs)

    @classmethod
    def from_size(
        cls,
        size: str,
        *,
        vocab_size: int,
        pad_token_id: int = 0,
        embedding_size: int | None = None,
        generator_hidden_size: float | None = None,
        generator_layers: float = 1.0,
        model_overrides: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> ElectraPretrainingConfig:
        """A configuration of an original ELECTRA size (``small``, ``base`` or ``large``).

        Args:
            size: key of :data:`bioelectra.presets.ELECTRA_SIZES`.
            vocab_size: the tokenizer's vocabulary size.
            pad_token_id: the tokenizer's [PAD] id.
            embedding_size: overrides the size's embedding width (original ``embedding_size``).
            generator_hidden_size: generator width fraction; ``None`` takes
                :data:`GENERATOR_HIDDEN_FRACTION` of the size.
            generator_layers: generator depth fraction.
            model_overrides: further ``ElectraConfig`` fields of the discriminator (original
                ``model_hparam_overrides``), e.g. ``{"hidden_size": 64, "num_hidden_layers": 2}``.
            **kwargs: the remaining :class:`ElectraPretrainingConfig` arguments.

        Raises:
            ValueError: unknown size, or an override that is not an ``ElectraConfig`` field.
        """
        if size not in ELECTRA_SIZES:
            raise ValueError(f"unknown ELECTRA size {size!r}; expected one of {sorted(ELECTRA_SIZES)}")
        overrides = dict(model_overrides or {})
        known = set(ElectraConfig().to_dict())
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(
                f"unknown model override(s) {unknown}; valid ElectraConfig fields: {sorted(known)}"
            )
        if embedding_size is not None:
            overrides["embedding_size"] = embedding_size
        overrides.setdefault("pad_token_id", pad_token_id)
        discriminator = preset_config(size, vocab_size=vocab_size, **overrides)
        if generator_hidden_size is None:
            generator_hidden_size = GENERATOR_HIDDEN_FRACTION[size]
        return cls(
            discriminator_config=discriminator,
            generator_hidden_size=generator_hidden_size,
            generator_layers=generator_layers,
            **kwargs,
        )
