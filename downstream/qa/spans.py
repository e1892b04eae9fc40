"""Extractive question answering between the examples and the answers: windowing long contexts for the
model, turning start / end logits back into answer texts, and pooling them per question (BioASQ). Reading
and splitting the files are in :mod:`downstream.qa.data`, the metrics in :mod:`downstream.qa.metrics`.

The windowing and post-processing follow the SQuAD reference code (Devlin et al. 2019, BERT's
``run_squad.py``: ``convert_examples_to_features``, ``_check_is_max_context``, ``write_predictions``) with a
fast tokenizer's offset mapping in place of the whitespace-token bookkeeping:

- ``doc_stride`` is, as in ``run_squad.py``, the step in tokens between the starts of two windows, cut
  here from the context's tokens (not by the tokenizer's overflow, see :func:`encode_qa_features`);
- a window whose context does not hold the whole answer is labelled ``[CLS]`` (index 0) for start and end,
  as is an impossible question;
- at prediction, a span may start only at a token whose window gives it the most context
  (``min(left, right) + 0.01 * window length``), the score of a span is ``start_logit + end_logit``, and the
  SQuAD 2.0 no-answer score is the minimum over an example's windows of ``start_logit[0] + end_logit[0]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from downstream.qa.data import QaExample, QaSplit

# ---------------------------------------------------------------------------------------------- windowing


@dataclass
class QaFeatures:
    """The model's windows over a list of examples, one entry per window in every list.

    Attributes:
        input_ids, token_type_ids, attention_mask: ``[CLS] question [SEP] context window [SEP]``, unpadded
            (length at most ``max_seq_length``); ``token_type_ids`` is empty when the tokenizer gives none.
        start_positions, end_positions: token index of the answer's first / last token in the window, or 0
            (``[CLS]``) when the answer is not wholly inside it or the question is impossible.
        example_index: the index in ``examples`` of the window's example.
        offset_mapping: per token, the ``(start, end)`` characters in the context, ``None`` for question and
            special tokens.
        max_context: per token, whether this window gives that context token its most context
            (``run_squad.py``'s ``token_is_max_context``); ``False`` for non-context tokens.
    """

    input_ids: list[list[int]] = field(default_factory=list)
    token_type_ids: list[list[int]] = field(default_factory=list)
    attention_mask: list[list[int]] = field(default_factory=list)
    start_positions: list[int] = field(default_factory=list)
    end_positions: list[int] = field(default_factory=list)
    example_index: list[int] = field(default_factory=list)
    offset_mapping: list[list[tuple[int, int] | None]] = field(default_factory=list)
    max_context: list[list[bool]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.input_ids)

    def model_inputs(self, index: int, *, with_labels: bool = True) -> dict[str, list[int] | int]:
        """The tensors of window ``index`` for the model (``start_positions`` / ``end_positions`` included
        with ``with_labels``)."""
        row: dict[str, list[int] | int] = {"input_ids": self.input_ids[index], "attention_mask": self.attention_mask[index]}
        if self.token_type_ids:
            row["token_type_ids"] = self.token_type_ids[index]
        if with_labels:
            row["start_positions"] = self.start_positions[index]
            row["end_positions"] = self.end_positions[index]
        return row


def answer_token_span(offsets: Sequence[tuple[int, int] | None], start_char: int, end_char: int) -> tuple[int, int]:
    """``(start, end)`` token indices of the characters ``[start_char, end_char)`` in one window, or ``(0, 0)``
    when the window's context does not hold them all. ``offsets``: per token, context characters or ``None``."""
    context = [i for i, o in enumerate(offsets) if o is not None]
    if not context or offsets[context[0]][0] > start_char or offsets[context[-1]][1] < end_char:
        return 0, 0
    start = next(i for i in context if offsets[i][1] > start_char)  # first token ending after the answer starts
    end = next(i for i in reversed(context) if offsets[i][0] < end_char)  # last token starting before it ends
    return (start, end) if start <= end else (0, 0)


@dataclass(frozen=True)
class PairTemplate:
    """Where a tokenizer puts its special tokens around a pair ``(A, B)``, read off the tokenizer itself
    (``[CLS] A [SEP] B [SEP]`` with token types ``0 ... 0 1 ... 1`` for BERT and ELECTRA).

    Attributes:
        prefix, middle, suffix: the special token ids before ``A``, between ``A`` and ``B``, after ``B``.
        prefix_types, middle_types, suffix_types: their token type ids; ``a_type`` / ``b_type`` those of the
            tokens of ``A`` / ``B``. All types are empty / ``None`` when the tokenizer gives none.
    """

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    prefix_types: tuple[int, ...] | None
    middle_types: tuple[int, ...] | None
    suffix_types: tuple[int, ...] | None
    a_type: int | None
    b_type: int | None

    @classmethod
    def of(cls, tokenizer) -> PairTemplate:
        """Encode a two-word pair and read where its special tokens fall (``sequence_ids``).

        Raises:
            ValueError: the tokenizer does not place the two texts as two contiguous blocks.
        """
        probe = tokenizer("a", "b", add_special_tokens=True)
        ids, seq = probe["input_ids"], probe.sequence_ids(0)
        a = [i for i, s in enumerate(seq) if s == 0]
        b = [i for i, s in enumerate(seq) if s == 1]
        if not a or not b or a != list(range(a[0], a[-1] + 1)) or b != list(range(b[0], b[-1] + 1)) or a[-1] > b[0]:
            raise ValueError(f"{type(tokenizer).__name__} does not encode a pair as two contiguous blocks: {seq}")
        types = probe.get("token_type_ids")

        def pick(values, lo, hi):
            return None if values is None else tuple(values[lo:hi])

        return cls(
            prefix=tuple(ids[: a[0]]), middle=tuple(ids[a[-1] + 1 : b[0]]), suffix=tuple(ids[b[-1] + 1 :]),
            prefix_types=pick(types, 0, a[0]), middle_types=pick(types, a[-1] + 1, b[0]),
            suffix_types=pick(types, b[-1] + 1, len(ids)),
            a_type=None if types is None else types[a[0]], b_type=None if types is None else types[b[0]],
        )  # fmt: skip

    @property
    def num_special(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    def join(self, a: Sequence[int], b: Sequence[int]) -> tuple[list[int], list[int] | None]:
        """``(input_ids, token_type_ids)`` of the pair; ``token_type_ids`` is ``None`` without types."""
        ids = [*self.prefix, *a, *self.middle, *b, *self.suffix]
        if self.a_type is None:
            return ids, None
        types = [*self.prefix_types, *[self.a_type] * len(a), *self.middle_types, *[self.b_type] * len(b), *self.suffix_types]
        return ids, types


def window_starts(num_tokens: int, budget: int, doc_stride: int) -> list[tuple[int, int]]:
    """``(start, end)`` token ranges of the context windows: ``budget`` tokens each, starts ``min(budget,
    doc_stride)`` apart, the last one ending at the last token (``run_squad.py``'s ``doc_spans`` loop). An
    empty context gives one empty window, so that every question has a window."""
    spans, start = [], 0
    while True:
        end = min(num_tokens, start + budget)
        spans.append((start, end))
        if end >= num_tokens:
            return spans
        start += min(budget, doc_stride)


def encode_qa_features(
    examples: Sequence[QaExample],
    tokenizer,
    *,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
) -> QaFeatures:
    """Tokenise ``question [SEP] context`` into overlapping windows (``run_squad.py`` defaults: 384, 128, 64).

    The question keeps its first ``max_query_length`` tokens; the context is tokenised once, whole, and cut
    into windows of ``max_seq_length - question tokens - special tokens`` tokens whose starts are
    ``doc_stride`` tokens apart (:func:`window_starts`); each window is joined to the question with the
    tokenizer's own special tokens (:class:`PairTemplate`). The windows are built here rather than with the
    tokenizer's ``return_overflowing_tokens``, which tokenizers 0.23.2 cuts short (two windows, the second
    partial, for any long context; upstream dates it to 0.23.1's truncation early exit). Training labels
    use each example's first answer (as ``run_squad.py``).

    Raises:
        ValueError: a slow tokenizer (no offsets), non-positive settings, or a question that leaves no room
            for context in ``max_seq_length`` (the example named).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"encode_qa_features needs a fast tokenizer (offset mapping), got {type(tokenizer).__name__}")
    if min(max_seq_length, doc_stride, max_query_length) < 1:
        raise ValueError(f"max_seq_length, doc_stride, max_query_length must be positive, got {max_seq_length}, {doc_stride}, {max_query_length}")
    template = PairTemplate.of(tokenizer)
    features = QaFeatures()
    for index, example in enumerate(examples):
        question = tokenizer(example.question, add_special_tokens=False)["input_ids"][:max_query_length]  # run_squad.py's query_tokens
        budget = max_seq_length - len(question) - template.num_special  # context tokens per window
        if budget < 1:
            raise ValueError(f"example {example.id!r}: a {len(question)}-token question leaves no context room in max_seq_length={max_seq_length}")
        context = tokenizer(example.context, add_special_tokens=False, truncation=False, return_offsets_mapping=True, verbose=False)
        context_offsets = [tuple(o) for o in context["offset_mapping"]]
        answer = None if example.is_impossible or not example.answers or example.answers[0][1] < 0 else example.answers[0]
        first = len(features)
        for start, end in window_starts(len(context["input_ids"]), budget, doc_stride):
            input_ids, token_type_ids = template.join(question, context["input_ids"][start:end])
            offsets: list[tuple[int, int] | None] = [None] * (len(template.prefix) + len(question) + len(template.middle))
            offsets += context_offsets[start:end] + [None] * len(template.suffix)
            span_start, span_end = (0, 0) if answer is None else answer_token_span(offsets, *_stripped_span(*answer))
            features.input_ids.append(input_ids)
            if token_type_ids is not None:
                features.token_type_ids.append(token_type_ids)
            features.attention_mask.append([1] * len(input_ids))
            features.start_positions.append(span_start)
            features.end_positions.append(span_end)
            features.example_index.append(index)
            features.offset_mapping.append(offsets)
        _mark_max_context(features, range(first, len(features)))
    return features


def _stripped_span(text: str, start: int) -> tuple[int, int]:
    """The characters ``[start, end)`` of ``text`` at ``start`` without its surrounding whitespace (COVID-QA's
    answers often end in a space, which belongs to no token)."""
    return start + len(text) - len(text.lstrip()), start + len(text.rstrip())


def _mark_max_context(features: QaFeatures, windows: range) -> None:
    """Fill ``max_context`` for one example's windows: a context token (identified by its character span)
    belongs to the window maximising ``min(tokens left, tokens right) + 0.01 * window length``, the first on
    ties (``run_squad.py``'s ``_check_is_max_context``)."""
    best: dict[tuple[int, int], tuple[float, int]] = {}
    for w in windows:
        positions = [i for i, o in enumerate(features.offset_mapping[w]) if o is not None]
        n = len(positions)
        for j, i in enumerate(positions):
            score = min(j, n - 1 - j) + 0.01 * n
            key = features.offset_mapping[w][i]
            if key not in best or score > best[key][0]:
                best[key] = (score, w)
    for w in windows:
        offsets = features.offset_mapping[w]
        features.max_context.append([o is not None and best[o][1] == w for o in offsets])


# ------------------------------------------------------------------------------------------ post-processing


@dataclass
class NbestAnswer:
    """One candidate: its text, start character in the context (-1 for no answer), score
    (``start_logit + end_logit``) and probability (softmax over the n-best scores)."""

    text: str
    start: int
    score: float
    probability: float = 0.0


@dataclass
class QaPrediction:
    """An example's answer (``""`` = no answer), its start character (-1 for none), the n-best list (best
    first), the no-answer score (``None`` unless SQuAD 2.0) and the best span's score (``None`` if none)."""

    text: str
    start: int
    nbest: list[NbestAnswer]
    null_score: float | None = None
    best_span_score: float | None = None


def postprocess_predictions(
    examples: Sequence[QaExample],
    features: QaFeatures,
    start_logits: Any,
    end_logits: Any,
    *,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    version_2: bool = False,
    null_threshold: float = 0.0,
) -> dict[str, QaPrediction]:
    """Answer texts from the model's logits (``run_squad.py``'s ``write_predictions``).

    Args:
        start_logits, end_logits: shape ``(num_windows, sequence_length)`` (array, tensor or lists); a row may
            be longer than its window (padding, e.g. -100 from the Trainer) and is cut to the window.
        n_best_size: the top start and end indices tried per window, and the length of the n-best list.
        max_answer_length: longest answer in tokens (``end - start + 1``).
        version_2: consider no answer: predicted when ``null_score > best_span_score + null_threshold``.

    Returns:
        Example id -> :class:`QaPrediction`; a span's text is ``context[offsets[start][0]:offsets[end][1]]``.
        A span must start and end on context tokens, start at a token whose window gives it the most context,
        and not end before it starts.

    Raises:
        ValueError: logits and windows differ in number, a row shorter than its window, or an example with no
            window.
    """
    import numpy as np

    starts = [np.asarray(row, dtype=np.float64) for row in start_logits]
    ends = [np.asarray(row, dtype=np.float64) for row in end_logits]
    if not len(starts) == len(ends) == len(features):
        raise ValueError(f"{len(starts)} start and {len(ends)} end logits rows for {len(features)} windows")
    windows_of: dict[int, list[int]] = {}
    for w, index in enumerate(features.example_index):
        windows_of.setdefault(index, []).append(w)
    predictions: dict[str, QaPrediction] = {}
    for index, example in enumerate(examples):
        if index not in windows_of:
            raise ValueError(f"example {example.id!r} (index {index}) has no window in the features")
        candidates: list[NbestAnswer] = []
        null_score: float | None = None
        for w in windows_of[index]:
            offsets = features.offset_mapping[w]
            length = len(offsets)
            if len(starts[w]) < length or len(ends[w]) < length:
                raise ValueError(f"window {w}: logits of length {len(starts[w])}/{len(ends[w])} for {length} tokens")
            s_logits, e_logits = starts[w][:length], ends[w][:length]
            window_null = float(s_logits[0] + e_logits[0])
            null_score = window_null if null_score is None else min(null_score, window_null)
            top_starts = np.argsort(-s_logits, kind="stable")[:n_best_size]
            top_ends = np.argsort(-e_logits, kind="stable")[:n_best_size]
            for s in top_starts:
                if offsets[s] is None or not features.max_context[w][s]:
                    continue
                for e in top_ends:
                    if offsets[e] is None or e < s or e - s + 1 > max_answer_length:
                        continue
                    start_char, end_char = offsets[s][0], offsets[e][1]
                    candidates.append(NbestAnswer(example.context[start_char:end_char], start_char, float(s_logits[s] + e_logits[e])))
        if version_2:
            candidates.append(NbestAnswer("", -1, null_score))
        candidates.sort(key=lambda c: -c.score)
        nbest: list[NbestAnswer] = []
        seen: set[str] = set()
        for candidate in candidates:
            if candidate.text in seen:
                continue
            seen.add(candidate.text)
            nbest.append(candidate)
            if len(nbest) == n_best_size:
                break
        if version_2 and "" not in seen:
            nbest.append(NbestAnswer("", -1, null_score))
        if not nbest:
            nbest.append(NbestAnswer("", -1, 0.0))
        scores = np.array([c.score for c in nbest])
        probabilities = np.exp(scores - scores.max())
        probabilities /= probabilities.sum()
        for candidate, probability in zip(nbest, probabilities, strict=True):
            candidate.probability = float(probability)
        best_span = next((c for c in nbest if c.text), None)
        if best_span is None or (version_2 and null_score - best_span.score > null_threshold):
            text, start = "", -1
        else:
            text, start = best_span.text, best_span.start
        predictions[example.id] = QaPrediction(
            text, start, nbest, null_score if version_2 else None, None if best_span is None else best_span.score
        )
    return predictions


# ------------------------------------------------------------------------------------- pooling by question

#: Longest pooled answer kept, in characters (BioBERT's ``transform_n2b_factoid``).
MAX_POOLED_ANSWER_CHARS = 100


def _clean_pooled(text: str) -> str:
    """An answer as BioBERT's BioASQ post-processing leaves it: surrounding whitespace, a trailing ``,``, ``.``
    or space and wrapping parentheses removed."""
    text = text.strip()
    while text and text[-1] in ",. ":
        text = text[:-1]
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    return text


def pool_by_question(split: QaSplit, predictions: dict[str, QaPrediction]) -> dict[str, QaPrediction]:
    """One prediction per question from the predictions of its examples (BioASQ: one per snippet), as
    BioBERT's ``transform_n2b_factoid`` does: every example's n-best answers, cleaned (:func:`_clean_pooled`),
    empty ones and ones over :data:`MAX_POOLED_ANSWER_CHARS` characters dropped, merged case-insensitively
    (the first spelling kept) with their probabilities summed, best first.

    Returns:
        Question id -> :class:`QaPrediction` (``start`` -1; ``nbest`` scores and probabilities are the sums).
    """
    pooled: dict[str, dict[str, list]] = {}
    for example in split.examples:
        merged = pooled.setdefault(example.question_id, {})
        for candidate in predictions[example.id].nbest:
            text = _clean_pooled(candidate.text)
            if not text or len(text) > MAX_POOLED_ANSWER_CHARS:
                continue
            entry = merged.setdefault(text.lower(), [text, 0.0])
            entry[1] += candidate.probability
    result = {}
    for question_id, merged in pooled.items():
        ranked = sorted(merged.values(), key=lambda e: -e[1])
        nbest = [NbestAnswer(text, -1, total, total) for text, total in ranked]
        result[question_id] = QaPrediction(nbest[0].text if nbest else "", -1, nbest)
    return result
