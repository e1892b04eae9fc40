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
from downstream.metrics import NER_METRIC_MODE, ner_metrics, re_metric_mode, re_metrics
from downstream.ner import (
    EncodedSplit,
    NerSplit,
    build_label_list,
    encode_split,
    read_ner_file,
    word_predictions,
    write_conll_predictions,
)
from downstream.re import (
    NEGATIVE_LABELS,
    EncodedReSplit,
    ReExample,
    ReSplit,
    add_placeholder_tokens,
    build_ddi_tsvs,
    build_re_label_list,
    check_labels,
    cut_dev_split,
    ddi_document_of,
    encode_re_split,
    placeholders_in,
    read_re_file,
    write_re_predictions,
)

logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")


def argmax_logits(logits, labels):
    """``preprocess_logits_for_metrics`` hook: keep predicted ids, not the ``(batch, [seq,] labels)`` logits."""
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
    #: Metrics summarised over trials (``results.json`` ``summary``), the first is the headline.
    headline_metrics = ("f1", "precision", "recall", "accuracy")
    #: What the F1 is, for tables.
    f1_name = "entity-level F1"
    #: ``results.md`` split-size columns: ``(counts key, column title)``.
    count_columns = (("sentences", "sentences"), ("words", "words"), ("entities", "entities"), ("windows", "windows"))
    #: The counts key with the number of units of a split (for logs).
    size_key = "sentences"
    predictions_filename = "test_predictions.txt"
    metric_mode = NER_METRIC_MODE

    def __init__(self, files: dict[str, Path], *, iob1_policy: str = "repair", max_train_examples: int | None = None):
        self.files = files
        self.splits: dict[str, NerSplit] = {name: read_ner_file(files[name], iob1_policy=iob1_policy) for name in SPLITS}
        if max_train_examples is not None:
            train = self.splits["train"]
            train.sentences = train.sentences[:max_train_examples]
        self.labels = build_label_list(self.splits.values())
        self.unseen_labels = _labels_not_in_training(self.splits)
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
        import torch
        from transformers import AutoModelForTokenClassification

        from downstream.checkpoints import quiet_transformers

        with quiet_transformers():
            model = AutoModelForTokenClassification.from_pretrained(
                checkpoint,
                dtype=torch.float32,  # fp32 master weights even from fp16/bf16 files (bf16 is autocast)
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


def _labels_not_in_training(splits: dict[str, NerSplit]) -> dict[str, int]:
    """Tags of the dev / test splits that the training split never has, with their counts (logged: the
    model cannot learn them, so their entities can only be missed)."""
    from collections import Counter

    seen = {t for sentence in splits["train"].sentences for t in sentence.tags}
    unseen: Counter = Counter()
    for name in ("dev", "test"):
        for sentence in splits[name].sentences:
            unseen.update(t for t in sentence.tags if t not in seen)
    if unseen:
        logger.warning(
            "labels in dev/test that training never has (their entities can only be missed): %s",
            ", ".join(f"{t} x{n}" for t, n in sorted(unseen.items())),
        )
    return dict(sorted(unseen.items()))


class ReEvaluator:
    """``compute_metrics`` for the Trainer on one RE split: maps the (length-sorted) predictions back to
    file order and scores them with :func:`downstream.metrics.re_metrics`. The full result (per-class
    report, confusion matrix, predicted labels) is kept in ``last``."""

    def __init__(self, split: ReSplit, encoded: EncodedReSplit, labels: list[str], positive_labels: list[str]):
        self.split = split
        self.encoded = encoded
        self.labels = labels
        self.positive_labels = positive_labels
        self.last: EvalResult | None = None

    def __call__(self, eval_prediction) -> dict[str, float]:
        import numpy as np

        predicted_ids = np.asarray(eval_prediction.predictions).reshape(-1)
        if len(predicted_ids) != len(self.split.examples):
            raise DownstreamError(f"{len(predicted_ids)} predictions for {len(self.split.examples)} examples of {self.split.path}")
        predicted: list[str] = [""] * len(predicted_ids)
        for position, label_id in zip(self.encoded.example_index, predicted_ids, strict=True):
            predicted[position] = self.labels[int(label_id)]
        gold = [e.label for e in self.split.examples]
        metrics = re_metrics(gold, predicted, positive_labels=self.positive_labels, labels=self.labels)
        self.last = EvalResult(metrics=metrics, predictions=predicted)
        return {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


class ReTask:
    """Sentence-level relation classification on an RE benchmark (BLURB / BioBERT / Bio-ELECTRA TSV, DDI XML).

    Reads the files (building DDI's TSVs from the XML zip once, cached), cuts a seeded development split
    from train when there is none (or it is empty), fixes the label set from train + dev (negative label
    first), and refuses test labels outside it. ``encode`` adds the entity placeholders found in the data
    to the tokenizer as single special tokens (see ``downstream.re``); ``build_model`` resizes the
    embeddings to match.

    Args:
        files: ``{"train", "test"[, "dev"]}`` paths, or ``{"ddi_zip": path}``.
        max_train_examples: keep only the first N training examples (after the dev cut).
        dev_fraction: fraction of train cut off as the development split when there is none.
        dev_split_seed: seed of that cut (the same for every trial, so all trials share one dev split).
        re_head: ``electra`` (dropout + linear over [CLS], ELECTRA's fine-tuning head) or ``hf``
            (``ElectraClassificationHead`` via ``AutoModelForSequenceClassification``).
        cache_dir: where DDI's built TSVs go (default ``<cache>/datasets/ddi-built``).

    Raises:
        DataFormatError: bad lines, empty splits, unknown test labels (with file and line).
        DownstreamError: an unknown ``re_head``.
    """

    kind = "re"
    headline_metrics = ("f1", "precision", "recall", "accuracy")
    count_columns = (
        ("examples", "examples"),
        ("truncated", "truncated"),
        ("marker_lost", "marker lost"),
        ("marker_missing", "marker missing in file"),
    )
    size_key = "examples"
    predictions_filename = "test_predictions.tsv"

    def __init__(
        self,
        files: dict[str, Path],
        *,
        max_train_examples: int | None = None,
        dev_fraction: float = 0.1,
        dev_split_seed: int = 42,
        re_head: str = "electra",
        cache_dir: Path | None = None,
    ):
        if re_head not in RE_HEADS:
            raise DownstreamError(f"unknown RE head {re_head!r}; expected one of {', '.join(RE_HEADS)}")
        self.re_head = re_head
        self.model_class_name = RE_HEADS[re_head]
        self.files = dict(files)
        self.source_stats: dict[str, Any] = {}
        if "ddi_zip" in files:
            from downstream.registry import cache_root

            built, self.source_stats = build_ddi_tsvs(files["ddi_zip"], cache_dir or cache_root() / "datasets" / "ddi-built")
            self.files = {"source": files["ddi_zip"], **built}
        self.splits: dict[str, ReSplit] = {
            "train": read_re_file(self.files["train"]),
            "test": read_re_file(self.files["test"]),
        }
        self.file_counts = {"train": len(self.splits["train"].examples)}
        self.file_label_counts = self.splits["train"].label_counts()
        dev = read_re_file(self.files["dev"], allow_empty=True) if "dev" in self.files else None
        if dev is None or not dev.examples:
            train = self.splits["train"]
            is_ddi = "ddi_zip" in files or all(e.index.startswith("DDI-") for e in train.examples[:50])
            kept, cut = cut_dev_split(
                train.examples, fraction=dev_fraction, seed=dev_split_seed, group_of=_ddi_group if is_ddi else None
            )
            how = f"cut from {train.path}: {100 * dev_fraction:g}% of the {'documents' if is_ddi else 'examples'}, random.Random({dev_split_seed})"
            reason = "no development file" if dev is None else f"{dev.path} is empty"
            logger.info("%s: development split %s (%d examples)", reason, how, len(cut))
            dev = ReSplit(path=f"{train.path}[dev cut]", examples=cut, note=how)
            self.splits["train"] = ReSplit(path=train.path, examples=kept, header=train.header,
                                           note=f"{len(cut)} examples moved to the development split")
        self.splits["dev"] = dev
        self.splits = {name: self.splits[name] for name in SPLITS}
        if max_train_examples is not None:
            self.splits["train"].examples = self.splits["train"].examples[:max_train_examples]
        self.labels = build_re_label_list([self.splits["train"], self.splits["dev"]])
        self.label2id = {label: i for i, label in enumerate(self.labels)}
        self.id2label = dict(enumerate(self.labels))
        for name in SPLITS:
            check_labels(self.splits[name], self.label2id)
        self.positive_labels = [label for label in self.labels if label not in NEGATIVE_LABELS]
        if not self.positive_labels or len(self.positive_labels) == len(self.labels):
            raise DownstreamError(
                f"labels {self.labels}: expected one negative label ({', '.join(NEGATIVE_LABELS)}) and at least one positive"
            )
        self.metric_mode = re_metric_mode(self.positive_labels)
        self.f1_name = "F1 of class " + self.positive_labels[0] if len(self.positive_labels) == 1 else (
            "micro F1 over " + ", ".join(self.positive_labels)
        )
        self.placeholders = placeholders_in(self.splits.values())
        self.placeholder_ids: list[int] = []
        self.vocab_size: int | None = None
        self.encoded: dict[str, EncodedReSplit] = {}

    def counts(self) -> dict[str, dict[str, Any]]:
        counts: dict[str, dict[str, Any]] = {}
        for name, split in self.splits.items():
            entry: dict[str, Any] = {"file": split.note if split.note and name == "dev" else split.path, **split.counts()}
            if name == "train":
                entry["examples"] = self.file_counts["train"]  # as in the file
                entry["training_examples"] = len(split.examples)  # after any dev cut / --max-train-examples
                entry["training_labels"] = entry.pop("labels")
                entry["labels"] = self.file_label_counts
                if split.note:
                    entry["note"] = split.note
            counts[name] = entry
            counts[name].update(self.encoded[name].stats if name in self.encoded else {})
        if self.source_stats:
            counts["source"] = {"file": str(self.files.get("source")), **self.source_stats}
        counts["placeholders"] = {"tokens": self.placeholders, "handling": "added as single special tokens; embeddings resized"}
        return counts

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        """Add the placeholders to ``tokenizer`` (in place) and tokenise every split once (dev and test
        sorted by length; predictions are mapped back to file order)."""
        self.placeholder_ids = add_placeholder_tokens(tokenizer, self.placeholders)
        self.vocab_size = len(tokenizer)
        for name, split in self.splits.items():
            self.encoded[name] = encode_re_split(
                split, tokenizer, self.label2id, max_seq_length=max_seq_length,
                placeholder_ids=self.placeholder_ids, sort_by_length=(name != "train"),
            )

    def dataset(self, name: str) -> EncodedReSplit:
        return self.encoded[name]

    def evaluator(self, name: str) -> ReEvaluator:
        return ReEvaluator(self.splits[name], self.encoded[name], self.labels, self.positive_labels)

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorWithPadding

        return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def build_model(self, checkpoint: str, **config_overrides):
        """A fresh sequence classifier from ``checkpoint`` with this task's labels, embeddings resized to the
        tokenizer with placeholders (``encode`` first).

        Raises:
            DownstreamError: ``re_head="electra"`` on a non-ELECTRA checkpoint.
        """
        import torch
        from transformers import AutoConfig, AutoModelForSequenceClassification

        from downstream.checkpoints import quiet_transformers

        # fp32 master weights even from fp16/bf16 files (bf16 is autocast)
        kwargs = dict(dtype=torch.float32, num_labels=len(self.labels), id2label=self.id2label,
                      label2id=self.label2id, ignore_mismatched_sizes=True, **config_overrides)
        with quiet_transformers():
            if self.re_head == "electra":
                from downstream.heads import ElectraForRelationClassification

                model_type = AutoConfig.from_pretrained(checkpoint).model_type
                if model_type != "electra":
                    raise DownstreamError(f"--re-head electra needs an ELECTRA checkpoint, {checkpoint} is {model_type!r} (use --re-head hf)")
                model = ElectraForRelationClassification.from_pretrained(checkpoint, **kwargs)
            else:
                model = AutoModelForSequenceClassification.from_pretrained(checkpoint, **kwargs)
            if self.vocab_size is not None and model.get_input_embeddings().weight.shape[0] != self.vocab_size:
                model.resize_token_embeddings(self.vocab_size)
        # A plain mean loss: see NerTask.build_model (Trainer's loss-scaling trap).
        model.accepts_loss_kwargs = False
        return model

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        write_re_predictions(path, self.splits[name], result.predictions)

    @staticmethod
    def headline(metrics: dict[str, Any]) -> dict[str, float]:
        return {k: metrics[k] for k in ("precision", "recall", "f1", "accuracy")}


#: ``--re-head`` choices -> the model class used.
RE_HEADS = {"electra": "ElectraForRelationClassification", "hf": "AutoModelForSequenceClassification"}


def _ddi_group(example: ReExample) -> str:
    return ddi_document_of(example.index)


def build_task(kind: str, files: dict[str, Path], **options):
    """The task adapter for ``kind`` (``ner`` or ``re``), given that kind's options.

    Raises:
        DownstreamError: unknown task kind.
    """
    if kind == "ner":
        return NerTask(files, **options)
    if kind == "re":
        return ReTask(files, **options)
    raise DownstreamError(f"task kind {kind!r} is not supported (expected 'ner' or 're')")
