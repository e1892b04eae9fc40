"""Dynamic masking: the original ``pretrain_helpers.mask`` rules on a batch."""

import pytest
import torch

from bioelectra.masking import ElectraMaskingCollator, max_predictions_per_seq

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4


def collator(**kw) -> ElectraMaskingCollator:
    args = dict(
        pad_token_id=PAD,
        cls_token_id=CLS,
        sep_token_id=SEP,
        mask_token_id=MASK,
        mask_prob=0.15,
        max_seq_length=128,
    )
    args.update(kw)
    return ElectraMaskingCollator(**args)


def examples(n: int, length: int, seed: int = 0) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        k = length - (i % 7) * 3  # varying lengths, so the batch is padded
        body = torch.randint(5, 100, (k - 3,), generator=g).tolist()
        half = len(body) // 2
        ids = [CLS, *body[:half], SEP, *body[half:], SEP]
        out.append({"input_ids": ids, "token_type_ids": [0] * (half + 2) + [1] * (len(body) - half + 1)})
    return out


def test_max_predictions_per_seq_is_the_originals_cap():
    assert max_predictions_per_seq(0.15, 128) == 19  # int(0.155 * 128) = int(19.84)
    assert max_predictions_per_seq(0.25, 512) == 130  # int(0.255 * 512) = int(130.56)
    assert collator().max_predictions_per_seq == 19


def test_padding_attention_mask_and_token_types():
    exs = examples(4, 20)
    batch = collator()(exs)
    assert set(batch) == {"input_ids", "attention_mask", "token_type_ids", "labels"}
    width = max(len(e["input_ids"]) for e in exs)
    for key in batch:
        assert batch[key].shape == (4, width) and batch[key].dtype == torch.long
    for i, e in enumerate(exs):
        n = len(e["input_ids"])
        assert batch["attention_mask"][i].tolist() == [1] * n + [0] * (width - n)
        assert batch["token_type_ids"][i, :n].tolist() == e["token_type_ids"]
        assert (batch["input_ids"][i, n:] == PAD).all()
        assert (batch["labels"][i, n:] == -100).all()
    assert collator(pad_to_multiple_of=8)(exs)["input_ids"].shape[1] % 8 == 0


def test_special_tokens_and_padding_are_never_masked():
    # [MASK] already present in the input must not be chosen either
    exs = examples(64, 40)
    exs[0]["input_ids"][3] = MASK
    c = collator(generator=torch.Generator().manual_seed(1))
    original = c.pad(exs)["input_ids"]
    for _ in range(20):
        batch = c(exs)
        chosen = batch["labels"] != -100
        assert not torch.isin(original[chosen], torch.tensor([PAD, CLS, SEP, MASK])).any()
        assert (batch["attention_mask"][chosen] == 1).all()
        # labels hold the original token; unchosen positions are untouched
        assert torch.equal(batch["labels"][chosen], original[chosen])
        assert torch.equal(batch["input_ids"][~chosen], original[~chosen])


def test_number_masked_per_sequence_follows_the_original_rule():
    exs = examples(32, 60) + [{"input_ids": [CLS, 7, SEP]}, {"input_ids": [CLS, SEP]}]
    c = collator(max_seq_length=64)
    batch = c(exs)
    counts = (batch["labels"] != -100).sum(1)
    for i, e in enumerate(exs):
        n = len(e["input_ids"])
        candidates = sum(t not in (CLS, SEP, MASK, PAD) for t in e["input_ids"])
        expected = min(max(1, min(c.max_predictions_per_seq, round(n * 0.15))), candidates)
        assert counts[i].item() == expected, (i, n)
    # cap: a long sequence never gets more than int((mask_prob + 0.005) * max_seq_length)
    long_c = collator(mask_prob=0.5, max_seq_length=128)
    long_batch = long_c([{"input_ids": [CLS, *range(5, 131), SEP]}])
    assert (long_batch["labels"] != -100).sum().item() == long_c.max_predictions_per_seq == 64


def test_mask_rate_and_85_15_split():
    c = collator(generator=torch.Generator().manual_seed(0))
    chosen_total = real_total = masked_total = kept_total = 0
    for seed in range(30):
        batch = c(examples(64, 128, seed=seed))
        chosen = batch["labels"] != -100
        chosen_total += chosen.sum().item()
        real_total += batch["attention_mask"].sum().item()
        masked_total += (chosen & (batch["input_ids"] == MASK)).sum().item()
        kept_total += (chosen & (batch["input_ids"] == batch["labels"])).sum().item()
    assert abs(chosen_total / real_total - 0.15) < 0.005
    assert abs(masked_total / chosen_total - 0.85) < 0.01
    # no random replacement: every chosen position is either [MASK] or its own token
    assert masked_total + kept_total == chosen_total


def test_dynamic_masking_differs_between_calls():
    c = collator()
    exs = examples(8, 100)
    assert not torch.equal(c(exs)["labels"], c(exs)["labels"])


def test_bad_input_raises():
    with pytest.raises(ValueError, match="expected 1..16"):
        collator(max_seq_length=16)([{"input_ids": list(range(20))}])
    with pytest.raises(ValueError, match="empty batch"):
        collator()([])
    with pytest.raises(ValueError, match="mask_prob"):
        collator(mask_prob=1.5)
