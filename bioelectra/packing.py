"""Packing a document's sentences into ELECTRA pre-training examples: pure functions on token-id lists,
with the constants of the original ``build_pretraining_dataset.py`` (``ExampleBuilder``)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

#: ``ExampleBuilder._create_example``: ``if random.random() < 0.1: first_segment_target_length = 100000``.
SINGLE_SEGMENT_PROB = 0.1


#: ``ExampleBuilder._create_example``: ``if random.random() < 0.05: target = random.randint(5, max_length)``.
RANDOM_LENGTH_PROB = 0.05


MIN_RANDOM_LENGTH = 5


#: ``ExampleBuilder._create_example``: a sentence crossing A's target goes to A half of the time.
CROSSING_SENTENCE_TO_A_PROB = 0.5


def draw_target_length(rng: random.Random, max_seq_length: int) -> int:
    """Target length of the next example: ``max_seq_length``, or (p=0.05) uniform in [5, max_seq_length]."""
    if rng.random() < RANDOM_LENGTH_PROB:
        return rng.randint(MIN_RANDOM_LENGTH, max_seq_length)
    return max_seq_length


def split_segments(
    sentences: Sequence[list[int]], *, target_length: int, max_seq_length: int, rng: random.Random
) -> tuple[list[int], list[int], list[list[int]]]:
    """Split accumulated sentences into segments A and B and cut them to fit (original ``_create_example``).

    Returns:
        ``(first_segment, second_segment, overflow)``: token ids of A and B without special tokens
        (``len(A) + len(B) + 3 <= max_seq_length``, or ``len(A) + 2`` when B is empty) and the cut-off
        pieces ``[tail of A, tail of B]`` (empty pieces omitted).
    """
    if rng.random() < SINGLE_SEGMENT_PROB:
        first_target = 100000  # the original's "one segment" sentinel
    else:
        first_target = (target_length - 3) // 2  # -3: [CLS] and two [SEP] not yet added
    first: list[int] = []
    second: list[int] = []
    for sentence in sentences:
        if (
            not first
            or len(first) + len(sentence) < first_target
            or (not second and len(first) < first_target and rng.random() < CROSSING_SENTENCE_TO_A_PROB)
        ):
            first.extend(sentence)
        else:
            second.extend(sentence)
    keep_first = max_seq_length - 2
    keep_second = max(0, max_seq_length - min(len(first), keep_first) - 3)
    overflow = [piece for piece in (first[keep_first:], second[keep_second:]) if piece]
    return first[:keep_first], second[:keep_second], overflow


@dataclass
class PackStats:
    """Token counts of packing: ``tokens = tokens_in_examples + tokens_lost`` (WordPiece, no specials)."""

    sentences: int = 0
    tokens: int = 0
    tokens_in_examples: int = 0
    tokens_lost: int = 0
    examples: int = 0
    single_segment_examples: int = 0


def pack_document(
    sentences: Iterable[list[int]],
    *,
    max_seq_length: int,
    rng: random.Random,
    carry_overflow: bool = True,
    stats: PackStats | None = None,
) -> Iterator[tuple[list[int], list[int]]]:
    """Pack one document's tokenized sentences into examples (see the module docstring for the rules).

    Args:
        sentences: WordPiece ids per line, without special tokens.
        max_seq_length: tokens per example including [CLS] and [SEP]s (at least 5).
        rng: the document's random generator.
        carry_overflow: carry cut tokens into the next example of the document (True) or drop them (False,
            the original's behaviour).
        stats: counts updated in place.

    Yields:
        ``(first_segment, second_segment)`` token ids; ``second_segment`` may be empty (single segment).
    """
    stats = stats if stats is not None else PackStats()
    target = draw_target_length(rng, max_seq_length)
    current: list[list[int]] = []
    current_length = 0

    def emit() -> Iterator[tuple[list[int], list[int]]]:
        nonlocal current, current_length, target
        first, second, overflow = split_segments(
            current, target_length=target, max_seq_length=max_seq_length, rng=rng
        )
        target = draw_target_length(rng, max_seq_length)
        stats.examples += 1
        stats.single_segment_examples += not second
        stats.tokens_in_examples += len(first) + len(second)
        if carry_overflow:
            current = overflow
            current_length = sum(len(piece) for piece in overflow)
        else:
            stats.tokens_lost += sum(len(piece) for piece in overflow)
            current, current_length = [], 0
        yield first, second

    for sentence in sentences:
        stats.sentences += 1
        if not sentence:
            continue
        stats.tokens += len(sentence)
        current.append(sentence)
        current_length += len(sentence)
        while current_length >= target:
            yield from emit()
    while current_length > 0:  # end of document: flush (the original's blank-line example)
        yield from emit()
