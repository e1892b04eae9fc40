"""Sampling the generator's replacements: one token per masked position from ``softmax(logits / temperature)``.

The original (google-research/electra, ``pretrain/pretrain_helpers.py: sample_from_softmax``) draws with the
Gumbel-max trick over the whole vocabulary: one uniform number and two logarithms per vocabulary entry, in
fp32. At ELECTRA-Small's 128 x 128 batch that is 2,432 masked slots x 30,522 entries, 74 M random numbers a
step; on an H200 the fused kernel doing it (with the generator's log-softmax) was the longest of bioelectra-small's
compiled step, 0.92 ms of 7.96 (``bench/results/pretrain-step-h200-2026-11-27-compiled.json``, top kernels).

:func:`two_stage_gumbel_sample` draws from the same distribution with one random number per block of the
vocabulary plus one per entry of the chosen block: first a block by its total probability, then a token inside
it. :func:`sample_replacements`, the one the model calls, uses it on every device.
"""

from __future__ import annotations

import torch

#: Vocabulary entries per block of :func:`two_stage_gumbel_sample`: it draws ``ceil(V / block) + block``
#: random numbers per row instead of ``V`` (30,522 entries: 239 + 128 = 367, 83 times fewer). A block of 128 is
#: one 256-byte row of bf16 logits: the first stage's per-block log-sum-exp is a short reduction a compiler
#: keeps in registers. Measured on a 2-core CPU only: ``bench/sampling.py`` (2,432 rows, the generator's head
#: compiled; ``bench/results/sampling-2core-cpu-2026-11-28.json``) took 1.03 / 1.19 / 1.55 s at blocks of
#: 64 / 128 / 256 against the one-stage draw's 2.11 s; the same bench on a GPU (``--cases 4864:30522,2432:30522
#: --blocks 64,128,256``) is what would confirm the block there.
SAMPLING_BLOCK = 128

#: The original's Gumbel noise guards (``pretrain_helpers.py``: ``-log(-log(u + 1e-9) + 1e-9)``).
GUMBEL_EPS = 1e-9


def sampling_scores(logits: torch.Tensor, temperature: float, disallow: torch.Tensor | None) -> torch.Tensor:
    """`(M, V)` fp32 ``logits / temperature``, detached, ``-inf`` at each row's ``disallow`` id.

    fp32 whatever the input dtype (bf16 Gumbel noise is biased). The original subtracts 1000 from a disallowed
    logit; ``-inf`` makes its probability exactly 0. A ``where`` on the column index, not a scatter, so a
    compiler fuses it into the reductions that read the scores."""
    scores = logits.detach().float() / temperature
    if disallow is not None:
        columns = torch.arange(scores.shape[-1], device=scores.device)  # (V,)
        scores = torch.where(columns == disallow.unsqueeze(-1), float("-inf"), scores)
    return scores


def gumbel_sample(
    logits: torch.Tensor, *, temperature: float = 1.0, disallow: torch.Tensor | None = None
) -> torch.Tensor:
    """One token per row from ``softmax(logits / temperature)`` by the Gumbel-max trick: ``argmax(s + g)`` with
    ``g = -log(-log(u + 1e-9) + 1e-9)``, ``u ~ U[0, 1)`` per entry (the original's ``sample_from_softmax``).

    Args:
        logits: `(num_rows, vocab_size)` unnormalised scores, any float dtype (the arithmetic is fp32).
        temperature: > 0; the logits are divided by it (original ``temperature``).
        disallow: optional `(num_rows,)` token ids that must not be sampled (probability exactly 0).

    Returns:
        `(num_rows,)` int64 sampled token ids.
    """
    scores = sampling_scores(logits, temperature, disallow)  # (M, V)
    uniform = torch.rand_like(scores)  # (M, V)
    return torch.argmax(scores - torch.log(-torch.log(uniform + GUMBEL_EPS) + GUMBEL_EPS), dim=-1)  # (M,)


def two_stage_gumbel_sample(
    logits: torch.Tensor,
    *,
    temperature: float = 1.0,
    disallow: torch.Tensor | None = None,
    block: int = SAMPLING_BLOCK,
) -> torch.Tensor:
    """One token per row from ``softmax(logits / temperature)``, exactly, in two Gumbel-max draws.

    The vocabulary is cut into blocks of ``block`` entries (the last one shorter when ``block`` does not divide
    it). With ``s`` the scores, ``Z_b`` the sum of ``exp(s_t)`` over block ``b`` and ``Z`` over all:

    1. a block, by :func:`gumbel_sample` over ``log Z_b``: block ``b`` with probability ``Z_b / Z``;
    2. a token inside it, by :func:`gumbel_sample` over its scores: ``t`` with probability ``exp(s_t) / Z_b``.

    So ``P(t) = (Z_b / Z) (exp(s_t) / Z_b) = exp(s_t) / Z``, the softmax, with ``ceil(V / block) + block`` random
    numbers per row instead of ``V``. The scores are read once whole (the per-block log-sum-exp) and once for
    the chosen block.

    Args:
        logits: `(num_rows, vocab_size)` unnormalised scores, any float dtype (the arithmetic is fp32).
        temperature: > 0; the logits are divided by it (original ``temperature``).
        disallow: optional `(num_rows,)` token ids that must not be sampled (probability exactly 0).
        block: entries per block, >= 1 (:data:`SAMPLING_BLOCK`).

    Returns:
        `(num_rows,)` int64 sampled token ids.

    Raises:
        ValueError: ``block`` < 1.
    """
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    scores = sampling_scores(logits, temperature, disallow)  # (M, V)
    rows, vocab = scores.shape
    full, rest = divmod(vocab, block)
    log_mass = torch.logsumexp(scores[:, : full * block].view(rows, full, block), dim=-1)  # (M, full)
    if rest:
        log_mass = torch.cat([log_mass, torch.logsumexp(scores[:, full * block :], dim=-1, keepdim=True)], dim=-1)
    chosen = gumbel_sample(log_mass)  # (M,) block index
    index = chosen.unsqueeze(-1) * block + torch.arange(block, device=scores.device)  # (M, block)
    inside = torch.where(index < vocab, scores.gather(1, index.clamp(max=vocab - 1)), float("-inf"))  # (M, block)
    return chosen * block + gumbel_sample(inside)  # (M,)


def sample_replacements(
    logits: torch.Tensor, *, temperature: float = 1.0, disallow: torch.Tensor | None = None
) -> torch.Tensor:
    """The generator's samples at the masked positions: :func:`two_stage_gumbel_sample`, the original's
    distribution at a fraction of its random numbers. Shapes as its."""
    return two_stage_gumbel_sample(logits, temperature=temperature, disallow=disallow)
