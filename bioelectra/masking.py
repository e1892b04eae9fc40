"""Dynamic masking for ELECTRA pre-training: a collator that pads a batch and masks it anew every time.

Source: the original ``pretrain/pretrain_helpers.py: mask`` (google-research/electra):

- the number of positions to mask in a sequence is ``max(1, min(N, round(num_tokens * mask_prob)))``,
  where ``num_tokens`` counts the real tokens ([CLS] and [SEP] included, as the original's ``input_mask``)
  and ``N = max_predictions_per_seq = int((mask_prob + 0.005) * max_seq_length)``
  (``configure_pretraining.py``);
- [CLS], [SEP], [MASK] and padding are never chosen (``_get_candidates_mask``);
- 85% of the chosen positions become [MASK], 15% keep their token; no random tokens (the generator
  provides the replacements).

One deliberate difference: positions are drawn uniformly *without* replacement, so a sequence gets exactly
its number of masked positions (the original's ``tf.random.categorical`` draws with replacement and can
pick a position twice).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

#: Fraction of the chosen positions replaced by [MASK]; the rest keep their token
#: (original ``pretrain_helpers.mask``: ``tf.less(tf.random.uniform([B, N]), 0.85)``).
MASK_TOKEN_FRACTION = 0.85


def max_predictions_per_seq(mask_prob: float, max_seq_length: int) -> int:
    """Cap on the masked positions of one sequence: ``int((mask_prob + 0.005) * max_seq_length)``.

    Source: original ``configure_pretraining.py`` (``self.max_predictions_per_seq``).
    """
    return int((mask_prob + 0.005) * max_seq_length)


@dataclass(frozen=True, kw_only=True)
class ElectraMaskingCollator:
    """Pads a list of examples and masks them for replaced token detection.

    Args:
        pad_token_id, cls_token_id, sep_token_id, mask_token_id (`int`): the tokenizer's special ids.
        mask_prob (`float`): fraction of the real tokens to mask (original ``mask_prob``, 0.15; 0.25 large).
        max_seq_length (`int`): the pre-training sequence length; sets the per-sequence cap
            :func:`max_predictions_per_seq`. An example longer than this raises ``ValueError``.
        mask_token_fraction (`float`, defaults to 0.85): fraction of chosen positions set to [MASK].
        pad_to_multiple_of (`int`, *optional*): pad the batch length up to a multiple (8 suits GPUs).
        generator (`torch.Generator`, *optional*): random source; the global one when omitted.

    Calling it on a list of mappings with ``input_ids`` (and optionally ``token_type_ids``, or
    ``segment_a_length``: segment B starts at that position, build-data's format 2) returns int64
    tensors of shape `(batch_size, batch_length)`:

    - ``input_ids``: the masked ids;
    - ``attention_mask``: 1 on real tokens, 0 on padding;
    - ``token_type_ids``: segment ids (0 on padding);
    - ``labels``: the original id at each chosen position, -100 elsewhere.
    """

    pad_token_id: int
    cls_token_id: int
    sep_token_id: int
    mask_token_id: int
    mask_prob: float
    max_seq_length: int
    mask_token_fraction: float = MASK_TOKEN_FRACTION
    pad_to_multiple_of: int | None = None
    generator: torch.Generator | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.mask_prob < 1.0:
            raise ValueError(f"mask_prob={self.mask_prob}: expected a fraction in (0, 1)")
        if not 0.0 <= self.mask_token_fraction <= 1.0:
            raise ValueError(f"mask_token_fraction={self.mask_token_fraction}: expected a fraction in [0, 1]")
        if self.max_seq_length < 2:
            raise ValueError(f"max_seq_length={self.max_seq_length}: expected >= 2")

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, **kwargs: Any) -> ElectraMaskingCollator:
        """Take the special ids from a (WordPiece) tokenizer; ``kwargs`` are the other fields.

        Raises:
            ValueError: the tokenizer lacks one of ``[PAD]`` ``[CLS]`` ``[SEP]`` ``[MASK]``.
        """
        ids = {
            "pad_token_id": tokenizer.pad_token_id,
            "cls_token_id": tokenizer.cls_token_id,
            "sep_token_id": tokenizer.sep_token_id,
            "mask_token_id": tokenizer.mask_token_id,
        }
        missing = [k for k, v in ids.items() if v is None]
        if missing:
            raise ValueError(f"tokenizer {type(tokenizer).__name__} has no {missing}: needed for masking")
        return cls(**ids, **kwargs)

    @property
    def max_predictions_per_seq(self) -> int:
        """See :func:`max_predictions_per_seq`."""
        return max_predictions_per_seq(self.mask_prob, self.max_seq_length)

    def __call__(self, examples: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        batch = self.pad(examples)
        input_ids, labels = self.mask(batch["input_ids"], batch["attention_mask"])
        batch["input_ids"], batch["labels"] = input_ids, labels
        return batch

    def pad(self, examples: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        """Right-pad ``input_ids`` / ``token_type_ids`` to the longest example; build ``attention_mask``.

        Raises:
            ValueError: an empty batch, an empty example, or one longer than ``max_seq_length``.
        """
        if not examples:
            raise ValueError("cannot collate an empty batch")
        lengths = [len(ex["input_ids"]) for ex in examples]
        for i, n in enumerate(lengths):
            if n == 0 or n > self.max_seq_length:
                raise ValueError(
                    f"example {i} of the batch has {n} tokens; expected 1..{self.max_seq_length}"
                )
        width = max(lengths)
        if self.pad_to_multiple_of:
            width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        batch_size = len(examples)
        input_ids = torch.full((batch_size, width), self.pad_token_id, dtype=torch.long)  # (B, L)
        token_type_ids = torch.zeros((batch_size, width), dtype=torch.long)  # (B, L)
        attention_mask = torch.zeros((batch_size, width), dtype=torch.long)  # (B, L)
        for i, ex in enumerate(examples):
            n = lengths[i]
            input_ids[i, :n] = torch.as_tensor(ex["input_ids"], dtype=torch.long)
            if ex.get("token_type_ids") is not None:
                token_type_ids[i, :n] = torch.as_tensor(ex["token_type_ids"], dtype=torch.long)
            elif ex.get("segment_a_length") is not None:  # build-data format 2: segment B from there on
                token_type_ids[i, int(ex["segment_a_length"]) : n] = 1
            attention_mask[i, :n] = 1
        return {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}

    def mask(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Choose and mask positions of a padded batch.

        Args:
            input_ids: `(batch_size, length)` int64 original ids.
            attention_mask: `(batch_size, length)` 1 on real tokens.

        Returns:
            ``(masked_input_ids, labels)``, both `(batch_size, length)` int64; ``labels`` holds the original
            id at the chosen positions and -100 elsewhere.
        """
        batch_size, length = input_ids.shape
        special = torch.tensor([self.cls_token_id, self.sep_token_id, self.mask_token_id, self.pad_token_id])
        candidates = attention_mask.bool() & ~torch.isin(input_ids, special)  # (B, L)
        num_tokens = attention_mask.sum(dim=1).float()  # (B,)
        # original: num_to_predict = max(1, min(N, round(num_tokens * mask_prob))); also <= candidates here
        num_to_predict = torch.round(num_tokens * self.mask_prob).clamp(max=self.max_predictions_per_seq)
        num_to_predict = torch.minimum(num_to_predict.clamp(min=1), candidates.sum(dim=1).float())  # (B,)
        # uniform sample without replacement: rank the candidates by random keys, keep the first k of each row
        keys = torch.rand((batch_size, length), generator=self.generator)  # (B, L)
        keys = keys.masked_fill(~candidates, -1.0)
        order = keys.argsort(dim=1, descending=True)  # (B, L)
        ranks = torch.empty_like(order).scatter_(
            1, order, torch.arange(length).expand(batch_size, length).contiguous()
        )  # (B, L): rank of each position
        chosen = candidates & (ranks < num_to_predict.unsqueeze(1))  # (B, L)
        to_mask = chosen & (
            torch.rand((batch_size, length), generator=self.generator) < self.mask_token_fraction
        )
        labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))  # (B, L)
        masked = input_ids.masked_fill(to_mask, self.mask_token_id)  # (B, L)
        return masked, labels
