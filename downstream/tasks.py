"""Task adapters: what the trial runner needs to know about one kind of benchmark.

A task reads its files once, builds the label set, encodes the splits once with the checkpoint's
tokenizer, builds a fresh model for each trial, and turns predictions into the benchmark's metrics and
prediction files. ``downstream.trials`` runs the same loop for every task.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from downstream.errors import DownstreamError
from downstream.metrics import ner_metrics
from downstream.ner import (
    EncodedSplit,
    NerSplit,
    build_label_list,
    encode_split,
    read_ner_file,
    word_predictions,
    write_conll_predictions,
)

logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")


def argmax_logits(logits, labels):
    """``preprocess_logits_for_metrics`` hook: keep predicted ids, not the ``(batch, seq, labels)`` logits."""
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(dim=-1)


@dataclass
class EvalResult:
    """Metrics of one split (``metrics``: scalars and reports) and the predictions, ready to write."""

    metrics: dict[str, Any]
    predictions: Any


class NerEvaluator:
    """``compute_metrics`` for the Trainer on one NER split.

    Maps token-level predictions back to every word of the original sentences and scores them with
    seqeval. The Trainer only logs scalars; the full result (per-type report, predicted tags) is kept in
    ``last``.
    """

    def __init__(self, split: NerSplit, encoded: EncodedSplit, id2label: dict[int, str]):
        self.split = split
        self.encoded = encoded
        self.id2label = id2label
        self.last: EvalResult | None = None

    def __call__(self, eval_prediction) -> dict[str, float]:
        predicted = word_predictions(self.encoded, eval_prediction.predictions, eval_prediction.label_ids)
        tags = [[self.id2label[i] for i in sentence] for sentence in predicted]
        gold = [list(s.tags) for s in self.split.sentences]
        metrics = ner_metrics(gold, tags)
        if metrics["num_words"] != self.split.num_words:
            raise DownstreamError(f"evaluated {metrics['num_words']} words, the file has {self.split.num_words}")
        self.last = EvalResult(metrics=metrics, predictions=tags)
        return {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


class NerTask:
    """Token classification on a NER benchmark (BioBERT TSV / IOB2 / CoNLL files)."""

    kind = "ner"
    model_class_name = "AutoModelForTokenClassification"

    def __init__(self, files: dict[str, Path], *, iob1_policy: str = "repair", max_train_examples: int | None = None):
        self.files = files
        self.splits: dict[str, NerSplit] = {name: read_ner_file(files[name], iob1_policy=iob1_policy) for name in SPLITS}
        if max_train_examples is not None:
            train = self.splits["train"]
            train.sentences = train.sentences[:max_train_examples]
        self.labels = build_label_list(self.splits.values())
        self.label2id = {label: i for i, label in enumerate(self.labels)}
        self.id2label = dict(enumerate(self.labels))
        self.encoded: dict[str, EncodedSplit] = {}

    def counts(self) -> dict[str, dict[str, Any]]:
        counts = {name: {"file": str(self.files[name]), **split.counts()} for name, split in self.splits.items()}
        for name, encoded in self.encoded.items():
            counts[name].update(encoded.stats)
        return counts

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        """Tokenise every split once (sorted by length for dev and test: less padding)."""
        for name, split in self.splits.items():
            self.encoded[name] = encode_split(
                split, tokenizer, self.label2id, max_seq_length=max_seq_length, sort_by_length=(name != "train")
            )
            stats = self.encoded[name].stats
            if stats["split_sentences"]:
                logger.info(
                    "%s: %d sentences longer than %d sub-tokens split into windows (every word still predicted)",
                    name,
                    stats["split_sentences"],
                    max_seq_length,
                )

    def dataset(self, name: str) -> EncodedSplit:
        return self.encoded[name]

    def evaluator(self, name: str) -> NerEvaluator:
        return NerEvaluator(self.splits[name], self.encoded[name], self.id2label)

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorForTokenClassification

        return DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def build_model(self, checkpoint: str, **config_overrides):
        """A fresh ``AutoModelForTokenClassification`` from ``checkpoint`` with this task's labels.

        The checkpoint's own head (e.g. ELECTRA's discriminator head) is dropped and a new classifier is
        initialised from the current torch seed.
        """
        from transformers import AutoModelForTokenClassification

        from downstream.checkpoints import quiet_transformers

        with quiet_transformers():
            model = AutoModelForTokenClassification.from_pretrained(
                checkpoint,
                num_labels=len(self.labels),
                id2label=self.id2label,
                label2id=self.label2id,
                ignore_mismatched_sizes=True,
                **config_overrides,
            )
        # The model computes a plain mean loss. Without this, Trainer sees ``**kwargs`` in forward, assumes
        # the loss is normalised by ``num_items_in_batch`` and skips the division by the gradient
        # accumulation steps (the logged and optimised loss grow with accumulation).
        model.accepts_loss_kwargs = False
        return model

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        write_conll_predictions(path, self.splits[name], result.predictions)

    @staticmethod
    def headline(metrics: dict[str, Any]) -> dict[str, float]:
        return {k: metrics[k] for k in ("precision", "recall", "f1", "accuracy")}


def build_task(kind: str, files: dict[str, Path], **options):
    """The task adapter for ``kind`` (``ner`` or ``re``).

    Raises:
        DownstreamError: unknown or not yet supported task kind.
    """
    if kind == "ner":
        return NerTask(files, **options)
    raise DownstreamError(f"task kind {kind!r} is not supported (expected 'ner')")
