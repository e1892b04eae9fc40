"""The replaced-token demo: what the discriminator thinks of each token of a text, first as given, then after
the demo itself replaced some of its tokens.

ELECTRA's discriminator (``ElectraForPreTraining``) gives each token a logit; ``sigmoid(logit)`` is its
probability that the token was replaced (paper Section 2; ``> 0.5`` = "replaced", as the original's
``disc_accuracy``). The second view corrupts the text the way pre-training does: it picks ``replace_prob`` of
the candidate tokens (never [CLS], [SEP], [MASK] or [PAD]: the original ``pretrain_helpers._get_candidates_mask``),
puts [MASK] there, and samples a token at each from the generator's masked-LM distribution at temperature 1
(:func:`bioelectra.sampling.sample_replacements`); with no generator, uniformly random vocabulary tokens
(special tokens excepted). A sample equal to the original token is *not* a replacement (``is_replaced =
sampled != original``, paper Section 2 and the original ``run_pretraining.py``).

Models: a discriminator folder (``save_pretrained`` of ``ElectraForPreTraining`` with tokenizer files, e.g. an
export's ``discriminator/``), a shipped model or preset name (as ``--ckpt``:
:func:`bioelectra.checkpoints.resolve_checkpoint`), an export folder holding ``discriminator/`` and
``generator/``, a ``pretrain train`` output folder (its last complete checkpoint) or one of its
``checkpoint-N`` folders (the whole :class:`~bioelectra.modeling.ElectraPretrainingModel`).

Library only: the functions return dataclasses and raise; ``bioelectra pretrain demo`` prints.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from bioelectra.pretraining.demo_model import DemoModel, load_demo_model

logger = logging.getLogger(__name__)

#: A token is reported as "replaced" by the discriminator when ``sigmoid(logit)`` exceeds this (the
#: original's ``disc_accuracy`` / ``disc_precision`` threshold).
REPLACED_THRESHOLD = 0.5

#: ``replacement`` choices: the generator when the model has one, else random tokens (``auto``).
REPLACEMENTS = ("auto", "generator", "random")


@dataclass(frozen=True)
class DetectionSummary:
    """The discriminator against the demo's replacements, over the candidate tokens of one sequence (the
    ones that could be replaced: [CLS], [SEP], [MASK] and [PAD] left out).

    Args:
        num_tokens: candidate tokens.
        num_replaced: of them, those the demo replaced.
        num_found: replaced tokens with probability above the threshold (true positives).
        num_false_alarms: tokens not replaced with probability above the threshold (false positives).
        accuracy: fraction of the candidate tokens on the right side of the threshold.
        auc: area under the ROC curve of the probabilities against ``is_replaced``
            (:func:`bioelectra.pretraining.metrics.binary_auc`); ``None`` when nothing, or everything, was
            replaced.
        threshold: the probability threshold (0.5).
    """

    num_tokens: int
    num_replaced: int
    num_found: int
    num_false_alarms: int
    accuracy: float
    auc: float | None
    threshold: float = REPLACED_THRESHOLD


@dataclass(frozen=True)
class TokenDetection:
    """The discriminator on one token sequence. Every list has one entry per token, [CLS] and [SEP]
    included, in order.

    Args:
        text: the input text.
        tokens: the tokens the discriminator saw (the corrupted ones, where the demo replaced some).
        token_ids: their vocabulary ids.
        probabilities: ``sigmoid(discriminator logit)``, in [0, 1]: the probability of "replaced".
        is_special: [CLS], [SEP], [MASK] or [PAD] in the original text (never replaced, left out of the
            summary).
        original_tokens: the text's own tokens (equal to ``tokens`` where nothing was replaced).
        chosen: positions the demo picked for replacement ([MASK]ed for the generator). A picked position whose
            sample equals the original token is chosen but not replaced.
        is_replaced: the demo's labels: ``tokens[i] != original_tokens[i]`` (all False for the text as
            given).
        replacement: ``None`` (the text as given), ``"generator"`` or ``"random"``.
        truncated: the text was longer than the model's positions and was cut.
        threshold: the probability above which a token counts as detected.
    """

    text: str
    tokens: list[str]
    token_ids: list[int]
    probabilities: list[float]
    is_special: list[bool]
    original_tokens: list[str]
    chosen: list[bool]
    is_replaced: list[bool]
    replacement: str | None = None
    truncated: bool = False
    threshold: float = REPLACED_THRESHOLD

    @property
    def predicted_replaced(self) -> list[bool]:
        """Per token: the discriminator's probability is above :attr:`threshold`."""
        return [p > self.threshold for p in self.probabilities]

    def summary(self) -> DetectionSummary:
        """:class:`DetectionSummary` over the candidate (non-special) tokens."""
        from bioelectra.pretraining.metrics import binary_auc

        keep = [not s for s in self.is_special]
        probs = [p for p, k in zip(self.probabilities, keep, strict=True) if k]
        labels = [r for r, k in zip(self.is_replaced, keep, strict=True) if k]
        predicted = [p > self.threshold for p in probs]
        found = sum(p and r for p, r in zip(predicted, labels, strict=True))
        false_alarms = sum(p and not r for p, r in zip(predicted, labels, strict=True))
        correct = sum(p == r for p, r in zip(predicted, labels, strict=True))
        auc = (
            binary_auc(torch.tensor(probs), torch.tensor(labels, dtype=torch.long)) if probs else float("nan")
        )
        return DetectionSummary(
            num_tokens=len(probs),
            num_replaced=sum(labels),
            num_found=found,
            num_false_alarms=false_alarms,
            accuracy=correct / len(probs) if probs else float("nan"),
            auc=None if math.isnan(auc) else auc,
            threshold=self.threshold,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fields, ``predicted_replaced`` and ``summary``."""
        out = asdict(self)
        out["probabilities"] = [round(p, 6) for p in self.probabilities]
        out["predicted_replaced"] = self.predicted_replaced
        out["summary"] = asdict(self.summary())
        return out


@dataclass(frozen=True)
class DemoSentence:
    """One text: the discriminator on it as given, and on the demo's corrupted copy of it."""

    text: str
    as_given: TokenDetection
    corrupted: TokenDetection

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "as_given": self.as_given.to_dict(), "corrupted": self.corrupted.to_dict()}


@dataclass(frozen=True)
class DemoResult:
    """What :func:`replaced_token_demo` returns.

    Args:
        model: the folder the weights came from.
        layout: see :class:`DemoModel`.
        has_generator: whether the model came with a generator.
        replacement: how the corrupted copies were made: ``"generator"`` or ``"random"``.
        replace_prob: fraction of the candidate tokens picked for replacement.
        seed: the seed of the picks and samples (each sentence is seeded with it).
        sentences: one per input text.
    """

    model: str
    layout: str
    has_generator: bool
    replacement: str
    replace_prob: float
    seed: int
    sentences: list[DemoSentence] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "sentences"}
        out["threshold"] = REPLACED_THRESHOLD
        out["sentences"] = [s.to_dict() for s in self.sentences]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


# ---- the demo -------------------------------------------------------------------------------------------


def _encode(demo: DemoModel, text: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, bool]:
    """``(input_ids, attention_mask, token_type_ids, truncated)``, each `(1, L)`, on the model's device.

    Raises:
        ValueError: empty text, or text that gives no token.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"empty text {text!r}: expected a sentence to score")
    tokenizer = demo.tokenizer
    limit = min(demo.discriminator.config.max_position_embeddings, tokenizer.model_max_length or 10**9)
    enc = tokenizer(text, truncation=True, max_length=limit, return_tensors="pt", verbose=False)
    full = len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
    input_ids = enc["input_ids"]  # (1, L)
    if input_ids.shape[1] <= tokenizer.num_special_tokens_to_add():
        raise ValueError(f"text {text!r} gives no tokens (only [CLS] and [SEP]): nothing to score")
    device = next(demo.discriminator.parameters()).device
    token_type_ids = enc.get("token_type_ids", torch.zeros_like(input_ids))
    truncated = full > input_ids.shape[1] - tokenizer.num_special_tokens_to_add()
    return input_ids.to(device), enc["attention_mask"].to(device), token_type_ids.to(device), truncated


def _special_mask(demo: DemoModel, input_ids: torch.Tensor) -> torch.Tensor:
    """`(L,)` True at [CLS], [SEP], [MASK] and [PAD] (never replaced: the original ``_get_candidates_mask``)."""
    tok = demo.tokenizer
    ids = [
        i for i in (tok.cls_token_id, tok.sep_token_id, tok.mask_token_id, tok.pad_token_id) if i is not None
    ]
    return torch.isin(input_ids[0], torch.tensor(ids, device=input_ids.device))  # (L,)


@torch.no_grad()
def _probabilities(demo: DemoModel, input_ids, attention_mask, token_type_ids) -> list[float]:
    logits = demo.discriminator(
        input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
    ).logits  # (1, L)
    return torch.sigmoid(logits.float())[0].tolist()


def detect_replaced_tokens(demo: DemoModel, text: str) -> TokenDetection:
    """The discriminator's probability of "replaced" for each token of ``text`` as given.

    Returns:
        :class:`TokenDetection` with ``replacement=None`` (nothing chosen, nothing replaced).

    Raises:
        ValueError: empty text.
    """
    input_ids, attention_mask, token_type_ids, truncated = _encode(demo, text)
    ids = input_ids[0].tolist()
    tokens = demo.tokenizer.convert_ids_to_tokens(ids)
    n = len(ids)
    return TokenDetection(
        text=text,
        tokens=tokens,
        token_ids=ids,
        probabilities=_probabilities(demo, input_ids, attention_mask, token_type_ids),
        is_special=_special_mask(demo, input_ids).tolist(),
        original_tokens=list(tokens),
        chosen=[False] * n,
        is_replaced=[False] * n,
        replacement=None,
        truncated=truncated,
    )


@torch.no_grad()
def replace_and_detect(
    demo: DemoModel, text: str, *, replace_prob: float = 0.15, seed: int = 42, replacement: str = "auto"
) -> TokenDetection:
    """Replace some tokens of ``text``, then run the discriminator on the result.

    ``k = max(1, round(n * replace_prob))`` of the ``n`` candidate tokens are picked uniformly without
    replacement. With the generator, all ``k`` become [MASK] and a token is sampled at each from the
    generator's masked-LM softmax at temperature 1 (:func:`bioelectra.sampling.sample_replacements`, the
    sampler of pre-training); otherwise each gets a uniformly random vocabulary id, special tokens excepted.
    A sample equal to the original token is no replacement (``is_replaced`` 0, ``chosen`` 1).

    The picks and samples are seeded with ``seed`` (a forked RNG: the global random state is untouched), so
    the same text, model and seed always give the same result.

    Args:
        demo: from :func:`load_demo_model`.
        text: the sentence.
        replace_prob: fraction of the candidate tokens to pick, in (0, 1].
        seed: random seed.
        replacement: ``"auto"`` (the generator when there is one), ``"generator"`` or ``"random"``.

    Raises:
        ValueError: empty text, ``replace_prob`` outside (0, 1], an unknown ``replacement``, or
            ``"generator"`` for a model without one.
    """
    from bioelectra.sampling import sample_replacements

    if not 0.0 < replace_prob <= 1.0:
        raise ValueError(f"replace_prob={replace_prob}: expected a fraction in (0, 1]")
    method = _replacement_method(demo, replacement)
    input_ids, attention_mask, token_type_ids, truncated = _encode(demo, text)
    special = _special_mask(demo, input_ids)  # (L,)
    candidates = (~special).nonzero().squeeze(-1)  # (n,)
    rng = torch.Generator().manual_seed(seed)
    k = min(len(candidates), max(1, round(len(candidates) * replace_prob)))
    picked = (
        candidates[torch.randperm(len(candidates), generator=rng)[:k].to(candidates.device)].sort().values
    )  # (k,)
    if method == "generator":
        masked = input_ids.clone()
        masked[0, picked] = demo.tokenizer.mask_token_id  # (1, L)
        logits = demo.generator(
            input_ids=masked, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).logits[0, picked]  # (k, V)
        with torch.random.fork_rng(devices=[logits.device] if logits.device.type == "cuda" else []):
            torch.manual_seed(seed)
            sampled = sample_replacements(logits, temperature=1.0)  # (k,)
    else:
        size = min(len(demo.tokenizer), demo.discriminator.config.vocab_size)
        allowed = torch.tensor(sorted(set(range(size)) - set(demo.tokenizer.all_special_ids)))  # (V',)
        sampled = allowed[torch.randint(len(allowed), (k,), generator=rng)].to(input_ids.device)  # (k,)
    corrupted = input_ids.clone()
    corrupted[0, picked] = sampled.to(corrupted.dtype)  # (1, L)
    chosen = torch.zeros_like(special)
    chosen[picked] = True
    is_replaced = corrupted[0].ne(input_ids[0])  # (L,): a sample equal to the original is no replacement
    ids = corrupted[0].tolist()
    return TokenDetection(
        text=text,
        tokens=demo.tokenizer.convert_ids_to_tokens(ids),
        token_ids=ids,
        probabilities=_probabilities(demo, corrupted, attention_mask, token_type_ids),
        is_special=special.tolist(),
        original_tokens=demo.tokenizer.convert_ids_to_tokens(input_ids[0].tolist()),
        chosen=chosen.tolist(),
        is_replaced=is_replaced.tolist(),
        replacement=method,
        truncated=truncated,
    )


def _replacement_method(demo: DemoModel, replacement: str) -> str:
    if replacement not in REPLACEMENTS:
        raise ValueError(f"replacement {replacement!r}: expected one of {list(REPLACEMENTS)}")
    if replacement == "generator" and demo.generator is None:
        raise ValueError(
            f"{demo.source}: no generator to sample replacements from (a discriminator folder); pass an export "
            "folder (discriminator/ + generator/) or a `pretrain train` folder, or use random replacements"
        )
    if replacement == "auto":
        return "generator" if demo.generator is not None else "random"
    return replacement


def replaced_token_demo(
    model: str | os.PathLike | DemoModel,
    texts: Sequence[str],
    *,
    replace_prob: float = 0.15,
    seed: int = 42,
    replacement: str = "auto",
    device: str | torch.device = "cpu",
) -> DemoResult:
    """The whole demo: each text as given (:func:`detect_replaced_tokens`) and corrupted
    (:func:`replace_and_detect`).

    Args:
        model: see :func:`load_demo_model`, or a loaded :class:`DemoModel`.
        texts: one or more sentences.
        replace_prob, seed, replacement: see :func:`replace_and_detect`.
        device: see :func:`load_demo_model`.

    Raises:
        ValueError: no texts, an empty text (its position named), or the errors of the two functions.
        FileNotFoundError: see :func:`load_demo_model`.
    """
    if not texts:
        raise ValueError("no text given: expected one or more sentences")
    for i, text in enumerate(texts, 1):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"text {i} of {len(texts)} is empty: expected a sentence")
    if not 0.0 < replace_prob <= 1.0:
        raise ValueError(f"replace_prob={replace_prob}: expected a fraction in (0, 1]")
    demo = model if isinstance(model, DemoModel) else load_demo_model(model, device=device)
    method = _replacement_method(demo, replacement)
    sentences = [
        DemoSentence(
            text=text,
            as_given=detect_replaced_tokens(demo, text),
            corrupted=replace_and_detect(
                demo, text, replace_prob=replace_prob, seed=seed, replacement=method
            ),
        )
        for text in texts
    ]
    return DemoResult(
        model=demo.source,
        layout=demo.layout,
        has_generator=demo.generator is not None,
        replacement=method,
        replace_prob=replace_prob,
        seed=seed,
        sentences=sentences,
    )
