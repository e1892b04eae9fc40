"""``ElectraPretrainingModel``: ELECTRA's generator + discriminator trained with replaced token detection.

Pure model code: configuration in, tensors out. It knows nothing of data, training or the command line.
The objective follows the paper (Clark et al., 2020, Section 2) and the original code
(google-research/electra, ``run_pretraining.py: PretrainingModel`` and ``pretrain/pretrain_helpers.py``):

1. the generator (a small masked language model) predicts the masked positions;
2. a token is sampled at each masked position from the generator's softmax (fp32, with a temperature),
   without gradient (:func:`bioelectra.sampling.sample_replacements`: the original's distribution, drawn in
   two Gumbel-max stages);
3. the discriminator labels every real token of the corrupted sequence as original (0) or replaced (1);
4. ``loss = gen_weight * mlm_loss + disc_weight * disc_loss``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForPreTraining,
    ElectraForMaskedLM,
    ElectraForPreTraining,
    PreTrainedModel,
)
from transformers.modeling_outputs import ModelOutput
from transformers.models.electra.modeling_electra import ElectraEmbeddings

from bioelectra.configuration import ElectraPretrainingConfig
from bioelectra.sampling import sample_replacements

#: Parameters of the embedding block shared by the generator and the discriminator (original
#: ``run_pretraining.py``: the generator is built with ``embedding_size`` and reuses the "electra/embeddings"
#: variables unless ``untied_generator_embeddings``).
SHARED_EMBEDDING_PARAMETERS = (
    "word_embeddings.weight",
    "position_embeddings.weight",
    "token_type_embeddings.weight",
    "LayerNorm.weight",
    "LayerNorm.bias",
)


def masked_lm_positions(masked: torch.Tensor, num_slots: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The masked positions of each row in a fixed number of slots, the original's layout
    (``pretrain_helpers.py``: ``masked_lm_positions`` / ``masked_lm_weights``, read with ``gather_positions``).

    Every shape is known before the data is seen, so nothing waits for the device (boolean indexing,
    ``tensor[masked]``, needs the count of masked positions on the host: one synchronisation each time) and
    ``torch.compile`` traces the whole step as one graph.

    Args:
        masked: `(batch_size, length)` bool, True at the masked positions.
        num_slots: `N`, 1 <= N <= length; every row must have at most ``N`` masked positions.

    Returns:
        ``(positions, weights)``, both `(batch_size, N)`: ``positions`` (int64) holds each row's masked
        positions in increasing order, then distinct unmasked positions as filler; ``weights`` (bool) is True
        in the slots that hold a masked position.
    """
    order = torch.argsort((~masked).to(torch.uint8), dim=1, stable=True)  # (B, L): masked first, in order
    positions = order[:, :num_slots]  # (B, N)
    return positions, masked.gather(1, positions)  # (B, N), (B, N)


@dataclass
class ElectraPretrainingOutput(ModelOutput):
    r"""Output of :class:`ElectraPretrainingModel`.

    ``N`` is the number of prediction slots per sequence: ``config.max_predictions_per_seq`` (at most the
    sequence length), or, when that is None, the largest number of masked positions (``labels`` not -100)
    of a sequence of the batch. Slot ``j`` of row ``b`` holds the masked position
    ``masked_lm_positions[b, j]`` where ``masked_lm_weights[b, j]``; the other slots are filler.

    Args:
        loss (`torch.FloatTensor` of shape `()`): ``gen_weight * mlm_loss + disc_weight * disc_loss``
            (only when ``labels`` is given).
        mlm_loss (`torch.FloatTensor` of shape `()`): the generator's cross-entropy, mean over the masked
            positions (nats).
        disc_loss (`torch.FloatTensor` of shape `()`): the discriminator's binary cross-entropy, mean over
            the real (``attention_mask == 1``) tokens (nats).
        gen_logits (`torch.FloatTensor` of shape `(batch_size, N, vocab_size)`): generator scores in each
            slot (meaningful where ``masked_lm_weights``).
        sampled_ids (`torch.LongTensor` of shape `(batch_size, N)`): tokens sampled from the generator in each
            slot (written into the sequence only where ``masked_lm_weights``).
        disc_logits (`torch.FloatTensor` of shape `(batch_size, sequence_length)`): discriminator scores;
            > 0 means "replaced".
        is_replaced (`torch.LongTensor` of shape `(batch_size, sequence_length)`): RTD labels, 1 where the
            discriminator's input differs from the original token, 0 elsewhere (padding included).
        masked_positions (`torch.BoolTensor` of shape `(batch_size, sequence_length)`): where ``labels`` is
            not -100.
        masked_lm_positions (`torch.LongTensor` of shape `(batch_size, N)`): the position of each slot
            (:func:`masked_lm_positions`).
        masked_lm_weights (`torch.BoolTensor` of shape `(batch_size, N)`): True in the slots holding a masked
            position.
        disc_input_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`): the corrupted sequence
            the discriminator saw.
    """

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    disc_loss: torch.FloatTensor | None = None
    gen_logits: torch.FloatTensor | None = None
    sampled_ids: torch.LongTensor | None = None
    disc_logits: torch.FloatTensor | None = None
    is_replaced: torch.LongTensor | None = None
    masked_positions: torch.BoolTensor | None = None
    masked_lm_positions: torch.LongTensor | None = None
    masked_lm_weights: torch.BoolTensor | None = None
    disc_input_ids: torch.LongTensor | None = None


class ElectraPretrainingModel(PreTrainedModel):
    """ELECTRA generator (``ElectraForMaskedLM``) + discriminator (``ElectraForPreTraining``).

    Unless ``config.untied_generator_embeddings``, the generator uses the discriminator's embedding module
    (word, position and token-type embeddings and the embedding LayerNorm); the generator's output layer is
    tied to those word embeddings (original ``run_pretraining.py``: ``get_embedding_table()`` as the
    output weights). All ties are declared in ``_tied_weights_keys`` so they survive
    ``save_pretrained`` / ``from_pretrained`` (safetensors stores each shared tensor once).

    The generator's hidden states are projected to the vocabulary only at the masked positions, gathered
    into ``N`` slots per sequence as the original's ``gather_positions`` does (:func:`masked_lm_positions`),
    which saves the ``(batch, length, vocab)`` product. With ``config.max_predictions_per_seq`` set (the
    masking collator's cap; ``pretrain train`` sets it) no step of the forward pass waits for the device.
    """

    config_class = ElectraPretrainingConfig
    config: ElectraPretrainingConfig
    base_model_prefix = "electra_pretraining"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_attention_backend = True
    #: The loss is a mean over this batch's tokens: let Trainer divide by the accumulation steps itself
    #: (transformers' Trainer assumes that a model whose forward takes **kwargs normalises its loss by
    #: num_items_in_batch, and then skips the division by the gradient-accumulation steps).
    accepts_loss_kwargs = False

    def __init__(self, config: ElectraPretrainingConfig) -> None:
        super().__init__(config)
        attn = getattr(config, "_attn_implementation_internal", None)
        if attn is not None:
            config.discriminator_config._attn_implementation = attn
            config.generator_config._attn_implementation = attn
        self.generator = ElectraForMaskedLM(config.generator_config)
        self.discriminator = ElectraForPreTraining(config.discriminator_config)
        if not config.untied_generator:
            # original run_pretraining.py with untied_generator=False: the generator is built in the
            # discriminator's variable scope, so it *is* the discriminator's transformer
            self.generator.electra = self.discriminator.electra
            ties = {
                f"generator.electra.{name}": f"discriminator.electra.{name}"
                for name, _ in self.discriminator.electra.named_parameters()
            }
            ties["generator.generator_lm_head.weight"] = (
                "discriminator.electra.embeddings.word_embeddings.weight"
            )
        elif config.untied_generator_embeddings:
            ties = {
                "generator.generator_lm_head.weight": "generator.electra.embeddings.word_embeddings.weight"
            }
        else:
            self.generator.electra.embeddings = self.discriminator.electra.embeddings
            ties = {
                f"generator.electra.embeddings.{name}": f"discriminator.electra.embeddings.{name}"
                for name in SHARED_EMBEDDING_PARAMETERS
            }
            ties["generator.generator_lm_head.weight"] = (
                "discriminator.electra.embeddings.word_embeddings.weight"
            )
        # transformers 5: a {target: source} dict, applied only when config.tie_word_embeddings is true.
        self._tied_weights_keys = ties
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        """BERT initialisation (normal(0, initializer_range), zero biases, unit LayerNorms), as Electra's."""
        std = self.config.discriminator_config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, ElectraEmbeddings):
            with torch.no_grad():
                module.position_ids.copy_(torch.arange(module.position_ids.shape[-1]).expand((1, -1)))
                module.token_type_ids.zero_()

    def get_input_embeddings(self) -> nn.Module:
        return self.discriminator.electra.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.discriminator.electra.embeddings.word_embeddings = value

    def embeddings_are_shared(self) -> bool:
        """Whether generator and discriminator use the same embedding tensors and the generator's output
        layer is its input word embedding matrix (the ties this class promises)."""
        gen, disc = self.generator.electra.embeddings, self.discriminator.electra.embeddings
        out_tied = self.generator.generator_lm_head.weight is gen.word_embeddings.weight
        if self.config.untied_generator_embeddings:
            return out_tied
        same = all(
            gen.get_parameter(name) is disc.get_parameter(name) for name in SHARED_EMBEDDING_PARAMETERS
        )
        return same and out_tied

    def _prediction_slots(self, masked: torch.Tensor) -> int:
        """`N` for :func:`masked_lm_positions`: ``config.max_predictions_per_seq`` capped at the length (no
        host synchronisation), else the fullest row's count of masked positions (one synchronisation).

        Raises:
            RuntimeError: a row has more than ``config.max_predictions_per_seq`` masked positions (on an
                accelerator, a device-side assertion).
        """
        cap = self.config.max_predictions_per_seq
        if cap is None:
            return max(1, int(masked.sum(dim=1).max()))
        num_slots = min(cap, masked.shape[1])
        torch._assert_async(
            masked.sum(dim=1).le(num_slots).all(),
            f"a sequence has more masked positions than max_predictions_per_seq={cap} (config); "
            "set it to the masking collator's max_predictions_per_seq, or to None",
        )
        return num_slots

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
    ) -> ElectraPretrainingOutput:
        r"""Replaced token detection on a masked batch.

        Args:
            input_ids: `(batch_size, sequence_length)` the masked sequence (the collator's output).
            attention_mask: `(batch_size, sequence_length)`, 1 for real tokens, 0 for padding.
            token_type_ids: `(batch_size, sequence_length)` segment ids.
            labels: `(batch_size, sequence_length)` the original token at each masked position, -100
                elsewhere. Without labels nothing is sampled: the discriminator sees ``input_ids`` as they are
                and no loss is computed.

        Returns:
            :class:`ElectraPretrainingOutput`.
        """
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        real = attention_mask.bool()  # (B, L)
        if labels is None:
            disc_logits = self.discriminator(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits  # (B, L)
            return ElectraPretrainingOutput(disc_logits=disc_logits, disc_input_ids=input_ids)

        cfg = self.config
        masked = labels.ne(-100)  # (B, L)
        num_slots = self._prediction_slots(masked)
        positions, weights = masked_lm_positions(masked, num_slots)  # (B, N), (B, N)
        # 1. generator: hidden states of the masked sequence; 2. its head: vocabulary scores at the masked
        # positions only, the masked-LM loss, the sampled replacements and the corrupted sequence
        gen_hidden = self.generator.electra(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state  # (B, L, H_gen)
        mlm_loss, gen_logits, sampled_ids, disc_input_ids, is_replaced = self.generator_head(
            gen_hidden, input_ids, labels, positions, weights, real
        )
        # 3. discriminator on the corrupted sequence, loss over real tokens only
        disc_hidden = self.discriminator.electra(
            input_ids=disc_input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state  # (B, L, H)
        disc_logits, disc_loss = self.discriminator_head(disc_hidden, is_replaced, real)
        # 4. the joint objective (paper eq. 1; original run_pretraining.py)
        loss = cfg.gen_weight * mlm_loss + cfg.disc_weight * disc_loss
        return ElectraPretrainingOutput(
            loss=loss,
            mlm_loss=mlm_loss,
            disc_loss=disc_loss,
            gen_logits=gen_logits,
            sampled_ids=sampled_ids,
            disc_logits=disc_logits,
            is_replaced=is_replaced,
            masked_positions=masked,
            masked_lm_positions=positions,
            masked_lm_weights=weights,
            disc_input_ids=disc_input_ids,
        )

    def generator_head(
        self,
        gen_hidden: torch.Tensor,
        input_ids: torch.LongTensor,
        labels: torch.LongTensor,
        positions: torch.LongTensor,
        weights: torch.BoolTensor,
        real: torch.BoolTensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.LongTensor, torch.LongTensor]:
        """The generator's head and the corruption (steps 1-2 of :meth:`forward`, after the generator's encoder):
        the vocabulary scores at the masked slots, the masked-LM loss, a replacement sampled at each slot without
        gradient (:func:`bioelectra.sampling.sample_replacements`) and the sequence the discriminator sees. A
        method of its own so that ``compile_scope`` ``layers`` compiles it as one region.

        Args:
            gen_hidden: `(B, L, H_gen)` the generator encoder's last hidden states.
            input_ids, labels: `(B, L)` as :meth:`forward` takes them.
            positions, weights: `(B, N)` from :func:`masked_lm_positions`.
            real: `(B, L)` bool, True at the real (not padding) tokens.

        Returns:
            ``(mlm_loss (), gen_logits (B, N, V), sampled_ids (B, N), disc_input_ids (B, L),
            is_replaced (B, L) int64)``.
        """
        cfg = self.config
        mlm_labels = labels.gather(1, positions)  # (B, N), -100 in the filler slots
        gen_hidden = gen_hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, gen_hidden.shape[-1]))  # (B, N, H_gen)
        gen_logits = self.generator.generator_lm_head(self.generator.generator_predictions(gen_hidden))  # (B, N, V)
        # mean over the masked positions (0 when there are none): a sum over the real slots / their count
        mlm_loss = F.cross_entropy(
            gen_logits.flatten(0, 1).float(), mlm_labels.flatten(), ignore_index=-100, reduction="sum"
        ) / weights.sum().clamp(min=1)
        # no gradient flows to the generator through the discrete sample
        with torch.no_grad():
            sampled_ids = sample_replacements(
                gen_logits.flatten(0, 1),
                temperature=cfg.sampling_temperature,
                disallow=mlm_labels.flatten().clamp(min=0) if cfg.disallow_correct else None,
            ).view_as(positions)  # (B, N)
            # the filler slots write back the token that is there (their positions are distinct, unmasked)
            replacements = torch.where(weights, sampled_ids.to(input_ids.dtype), input_ids.gather(1, positions))
            disc_input_ids = input_ids.scatter(1, positions, replacements)  # (B, L)
            original_ids = torch.where(labels.ne(-100), labels, input_ids)  # (B, L)
            is_replaced = (disc_input_ids.ne(original_ids) & real).long()  # (B, L)
        return mlm_loss, gen_logits, sampled_ids, disc_input_ids, is_replaced

    def discriminator_head(
        self, disc_hidden: torch.Tensor, is_replaced: torch.LongTensor, real: torch.BoolTensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The discriminator's head (``ElectraForPreTraining.discriminator_predictions``) and its loss, the mean
        binary cross-entropy over the real tokens (step 3 of :meth:`forward`, after the discriminator's encoder;
        a method of its own, as :meth:`generator_head`).

        Args:
            disc_hidden: `(B, L, H)` the discriminator encoder's last hidden states.
            is_replaced: `(B, L)` 1 where the token was replaced.
            real: `(B, L)` bool, True at the real tokens.

        Returns:
            ``(disc_logits (B, L), disc_loss ())``.
        """
        disc_logits = self.discriminator.discriminator_predictions(disc_hidden)  # (B, L)
        disc_loss = F.binary_cross_entropy_with_logits(
            disc_logits.float(), is_replaced.float(), weight=real.float(), reduction="sum"
        ) / real.sum().clamp(min=1)  # mean over the real tokens
        return disc_logits, disc_loss

    @classmethod
    def from_pair(
        cls,
        discriminator: ElectraForPreTraining,
        generator: ElectraForMaskedLM,
        **config_overrides,
    ) -> ElectraPretrainingModel:
        """Build the joint model from a trained discriminator and generator.

        The joint model takes the discriminator's embeddings (they are shared); the generator's own input
        embeddings are used only with ``untied_generator_embeddings=True``. Everything else is copied.

        Args:
            discriminator: an ``ElectraForPreTraining``.
            generator: an ``ElectraForMaskedLM`` of the same vocabulary and embedding size.
            **config_overrides: :class:`ElectraPretrainingConfig` arguments (``disc_weight``,
                ``mask_prob``...).

        Raises:
            ValueError: the two disagree on vocabulary size or embedding size (with shared embeddings).
        """
        dcfg, gcfg = copy.deepcopy(discriminator.config), copy.deepcopy(generator.config)
        dcfg.architectures = gcfg.architectures = None
        config = ElectraPretrainingConfig(
            discriminator_config=dcfg, generator_config=gcfg, **config_overrides
        )
        model = cls(config)
        missing, unexpected = model.discriminator.load_state_dict(discriminator.state_dict(), strict=False)
        _check_keys("discriminator", missing, unexpected)
        gen_state = dict(generator.state_dict())
        # what the generator takes from the discriminator: its whole encoder (untied_generator=False) or
        # its embeddings (the default); the output layer then ties to the shared word embeddings
        if not config.untied_generator:
            shared = "electra."
        elif not config.untied_generator_embeddings:
            shared = "electra.embeddings."
        else:
            shared = None
        if shared is not None:
            gen_state = {k: v for k, v in gen_state.items() if not k.startswith(shared)}
            gen_state.pop("generator_lm_head.weight", None)
        missing, unexpected = model.generator.load_state_dict(gen_state, strict=False)
        if shared is not None:
            missing = [k for k in missing if not k.startswith(shared) and k != "generator_lm_head.weight"]
        _check_keys("generator", missing, unexpected)
        model.tie_weights()
        return model

    def split(self) -> tuple[ElectraForPreTraining, ElectraForMaskedLM]:
        """Stand-alone copies of the discriminator and the generator, for ``save_pretrained``.

        The copies own their tensors (the generator gets a copy of the shared embeddings) and tie the
        generator's output layer to its word embeddings (``tie_word_embeddings=True`` in its config).
        """
        dcfg = copy.deepcopy(self.config.discriminator_config)
        gcfg = copy.deepcopy(self.config.generator_config)
        dcfg.tie_word_embeddings = False
        gcfg.tie_word_embeddings = True
        dcfg.architectures, gcfg.architectures = ["ElectraForPreTraining"], ["ElectraForMaskedLM"]
        discriminator = ElectraForPreTraining(dcfg)
        generator = ElectraForMaskedLM(gcfg)
        discriminator.load_state_dict(_cpu_state(self.discriminator), strict=True)
        gen_state = _cpu_state(self.generator)
        missing, unexpected = generator.load_state_dict(gen_state, strict=False)
        _check_keys("generator", missing, unexpected)
        generator.tie_weights()
        return discriminator, generator


def _cpu_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """A detached fp32 CPU copy of ``module``'s state (integer buffers keep their dtype)."""
    return {
        k: v.detach().to("cpu", dtype=torch.float32 if v.is_floating_point() else v.dtype, copy=True)
        for k, v in module.state_dict().items()
    }


def _check_keys(what: str, missing: list[str], unexpected: list[str]) -> None:
    missing = [k for k in missing if not k.endswith(("position_ids", "token_type_ids"))]
    if missing or unexpected:
        raise ValueError(
            f"{what} weights do not fit: missing {sorted(missing)}, unexpected {sorted(unexpected)}"
        )


AutoConfig.register(ElectraPretrainingConfig.model_type, ElectraPretrainingConfig)
AutoModel.register(ElectraPretrainingConfig, ElectraPretrainingModel)
AutoModelForPreTraining.register(ElectraPretrainingConfig, ElectraPretrainingModel)
