"""Token classification shared by the kinds that tag every word of a sentence (NER, PICO): windowed model
inputs, label alignment, per-word predictions reassembled, the model with a fresh token head.

Model inputs: each sentence's words are tokenised with the checkpoint's fast tokenizer
(``is_split_into_words=True``); the first sub-token of a word carries the word's label, the other
sub-tokens ``-100``. A sentence longer than ``max_seq_length - 2`` sub-tokens is split at word boundaries
into consecutive windows, so that EVERY word of every sentence gets exactly one prediction; metrics are
computed on the words of the original files, never on a truncated view.

A split here is any object with ``path`` and ``sentences``, each sentence with ``words``, ``tags`` and ``line``
(:class:`downstream.ner.data.NerSplit`, :class:`downstream.pico.data.PicoSplit`). Kinds import this module;
it imports no kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Label id ignored by the loss and the metrics (PyTorch's CrossEntropyLoss default ignore_index).
IGNORE_INDEX = -100


@dataclass
class EncodedSplit:
    """Model inputs of one split: one feature per window.

    Attributes:
        features: dicts with ``input_ids``, ``token_type_ids``, ``labels`` (lists of ints, unpadded).
        sentence_index: for each feature, the index of its sentence.
        word_start: for each feature, the index (in its sentence) of its first word.
        num_words: for each feature, how many words it covers; each has exactly one labelled sub-token.
        num_split_sentences: sentences that needed more than one window.
        num_truncated_words: words whose sub-tokens alone exceeded a window (their extra sub-tokens,
            which carry no label, were dropped).
    """

    features: list[dict[str, list[int]]]
    sentence_index: list[int]
    word_start: list[int]
    num_words: list[int]
    num_sentences: int
    num_split_sentences: int = 0
    num_truncated_words: int = 0
    stats: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> dict[str, list[int]]:
        return self.features[index]


def word_pieces(tokenizer, sentences: Sequence[Any]) -> list[list[list[int]]]:
    """Sub-token ids of every word: ``result[sentence][word] -> list[int]`` (never empty).

    One batched call of the fast tokenizer (``is_split_into_words=True``, no special tokens). A word the
    tokenizer maps to nothing (e.g. a lone control character) becomes ``[UNK]`` so that it still gets a
    prediction.

    Raises:
        ValueError: the tokenizer is not a fast tokenizer (``word_ids`` is needed).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{type(tokenizer).__name__} is not a fast tokenizer; word alignment needs one")
    batch = tokenizer([list(s.words) for s in sentences], is_split_into_words=True, add_special_tokens=False)
    unk = tokenizer.unk_token_id
    result: list[list[list[int]]] = []
    for i, sentence in enumerate(sentences):
        pieces: list[list[int]] = [[] for _ in sentence.words]
        for token_id, word_id in zip(batch["input_ids"][i], batch.word_ids(i), strict=True):
            if word_id is not None:
                pieces[word_id].append(token_id)
        for piece in pieces:
            if not piece:
                piece.append(unk)
        result.append(pieces)
    return result


def window_spans(lengths: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Split a sentence's words into consecutive windows of at most ``budget`` sub-tokens.

    Greedy, at word boundaries; a single word longer than ``budget`` gets a window of its own (its
    sub-tokens are cut to ``budget`` by the caller).

    Args:
        lengths: sub-token count of each word.
        budget: sub-tokens per window (``max_seq_length - 2`` for [CLS] and [SEP]).

    Returns:
        ``[(first_word, end_word), ...]`` covering every word exactly once, in order.
    """
    if budget < 1:
        raise ValueError(f"window budget must be >= 1 sub-token, got {budget}")
    spans: list[tuple[int, int]] = []
    start, used = 0, 0
    for index, length in enumerate(lengths):
        length = min(length, budget)
        if used + length > budget and index > start:
            spans.append((start, index))
            start, used = index, 0
        used += length
    if lengths:
        spans.append((start, len(lengths)))
    return spans


def align_labels(pieces: Sequence[Sequence[int]], word_labels: Sequence[int]) -> tuple[list[int], list[int]]:
    """Flatten words' sub-tokens and give the label of each word to its first sub-token, -100 to the rest.

    Returns:
        ``(input_ids, labels)`` without special tokens.
    """
    input_ids: list[int] = []
    labels: list[int] = []
    for piece, label in zip(pieces, word_labels, strict=True):
        input_ids.extend(piece)
        labels.append(label)
        labels.extend([IGNORE_INDEX] * (len(piece) - 1))
    return input_ids, labels


def encode_split(
    split: Any,
    tokenizer,
    label2id: dict[str, int],
    *,
    max_seq_length: int,
    sort_by_length: bool = False,
) -> EncodedSplit:
    """Tokenise a split once and build windowed features.

    Args:
        split: sentences with gold tags.
        tokenizer: the checkpoint's fast tokenizer.
        label2id: tag -> label id.
        max_seq_length: sub-tokens per feature including [CLS] and [SEP].
        sort_by_length: order features by length (evaluation: less padding); the bookkeeping arrays
            follow the same order.

    Returns:
        The features and, for each, where its words come from.

    Raises:
        ValueError: ``max_seq_length`` < 3 or a tag missing from ``label2id``.
    """
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be >= 3 ([CLS] word [SEP]), got {max_seq_length}")
    budget = max_seq_length - 2
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    all_pieces = word_pieces(tokenizer, split.sentences)
    rows: list[tuple[dict[str, list[int]], int, int, int]] = []
    split_sentences = truncated = 0
    for s_index, (sentence, pieces) in enumerate(zip(split.sentences, all_pieces, strict=True)):
        try:
            word_labels = [label2id[t] for t in sentence.tags]
        except KeyError as exc:
            raise ValueError(f"{split.path}:{sentence.line}: tag {exc.args[0]!r} not in the label set {list(label2id)}") from None
        spans = window_spans([len(p) for p in pieces], budget)
        if len(spans) > 1:
            split_sentences += 1
        for start, end in spans:
            window = [p[:budget] for p in pieces[start:end]]
            truncated += sum(1 for p in pieces[start:end] if len(p) > budget)
            ids, labels = align_labels(window, word_labels[start:end])
            feature = {
                "input_ids": [cls_id, *ids, sep_id],
                "token_type_ids": [0] * (len(ids) + 2),
                "labels": [IGNORE_INDEX, *labels, IGNORE_INDEX],
            }
            rows.append((feature, s_index, start, end - start))
    if sort_by_length:
        rows.sort(key=lambda r: len(r[0]["input_ids"]))
    encoded = EncodedSplit(
        features=[r[0] for r in rows],
        sentence_index=[r[1] for r in rows],
        word_start=[r[2] for r in rows],
        num_words=[r[3] for r in rows],
        num_sentences=len(split.sentences),
        num_split_sentences=split_sentences,
        num_truncated_words=truncated,
    )
    encoded.stats = {
        "windows": len(rows),
        "split_sentences": split_sentences,
        "truncated_words": truncated,
        "subtokens": sum(len(r[0]["input_ids"]) for r in rows),
    }
    return encoded


def word_predictions(encoded: EncodedSplit, predicted_ids, label_ids) -> list[list[int]]:
    """Reassemble per-word predictions of the original sentences from per-feature token predictions.

    Args:
        encoded: the split's features in the order they were predicted.
        predicted_ids: array-like ``(num_features, padded_length)`` of predicted label ids.
        label_ids: array-like ``(num_features, padded_length)`` of the features' labels (``-100`` where
            no word starts, and as padding), used to find each word's first sub-token.

    Returns:
        ``result[sentence][word]`` -> predicted label id, every word of every sentence filled.

    Raises:
        ValueError: a feature's labelled positions do not match its word count, or a word was left
            without a prediction (a bookkeeping error, never expected).
    """
    import numpy as np

    predicted_ids = np.asarray(predicted_ids)
    label_ids = np.asarray(label_ids)
    lengths: dict[int, int] = {}
    for s_index, start, count in zip(encoded.sentence_index, encoded.word_start, encoded.num_words, strict=True):
        lengths[s_index] = max(lengths.get(s_index, 0), start + count)
    result: list[list[int]] = [[-1] * lengths.get(i, 0) for i in range(encoded.num_sentences)]
    for row, (s_index, start, count) in enumerate(zip(encoded.sentence_index, encoded.word_start, encoded.num_words, strict=True)):
        positions = np.flatnonzero(label_ids[row] != IGNORE_INDEX)
        if len(positions) != count:
            raise ValueError(f"feature {row}: {len(positions)} labelled sub-tokens for {count} words")
        result[s_index][start : start + count] = predicted_ids[row, positions].tolist()
    missing = sum(1 for sentence in result for p in sentence if p < 0)
    if missing:
        raise ValueError(f"{missing} words were left without a prediction")
    return result


def load_token_classifier(checkpoint: str, labels: list[str], **config_overrides):
    """A fresh ``AutoModelForTokenClassification`` from ``checkpoint`` with ``labels`` (``id2label`` /
    ``label2id`` in that order). The checkpoint's own head (e.g. ELECTRA's discriminator head) is dropped and a
    new classifier is initialised from the current torch seed; fp32 master weights even from fp16/bf16 files.

    The model computes a plain mean loss: ``accepts_loss_kwargs`` is set to ``False``, or the Trainer, seeing
    ``**kwargs`` in ``forward``, would skip the division by the gradient accumulation steps.
    """
    import torch
    from transformers import AutoModelForTokenClassification

    from downstream.checkpoints import quiet_transformers

    with quiet_transformers():
        model = AutoModelForTokenClassification.from_pretrained(
            checkpoint,
            dtype=torch.float32,
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={label: i for i, label in enumerate(labels)},
            ignore_mismatched_sizes=True,
            **config_overrides,
        )
    model.accepts_loss_kwargs = False
    return model
