"""The RE task kind: sentence-level relation classification (BLURB / BioBERT / Bio-ELECTRA TSV, DDI XML)
(``downstream.task.Task``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

from downstream.classification import RE_HEADS, EncodedReSplit, re_metric_mode, re_metrics
from downstream.errors import DownstreamError
from downstream.registry import locate_dataset_dir
from downstream.relation.analysis import re_classification_report, re_errors
from downstream.relation.card import CARD, card_sections
from downstream.relation.data import (
    NEGATIVE_LABELS,
    ReExample,
    ReSplit,
    add_placeholder_tokens,
    build_re_label_list,
    check_labels,
    cut_dev_split,
    encode_re_split,
    find_re_files,
    placeholders_in,
    read_re_file,
    write_re_predictions,
)
from downstream.relation.ddi import build_ddi_tsvs, ddi_document_of
from downstream.task import SPLITS, ClassifierTask, EvalResult, best_constant

logger = logging.getLogger(__name__)


class ReEvaluator:
    """``compute_metrics`` for the Trainer on one RE split: maps the (length-sorted) predictions back to
    file order and scores them with :func:`downstream.classification.re_metrics`. The full result (per-class
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


class ReTask(ClassifierTask):
    """Sentence-level relation classification on an RE benchmark (BLURB / BioBERT / Bio-ELECTRA TSV, DDI XML).

    Reads the files (building DDI's TSVs from the XML zip once, cached), cuts a seeded development split
    from train when there is none (or it is empty), fixes the label set from train + dev (negative label
    first), and refuses test labels outside it. ``encode`` adds the entity placeholders found in the data
    to the tokenizer as single special tokens (see ``downstream.relation.data``); ``build_model`` resizes the
    embeddings to match.

    Args:
        files: ``{"train", "test"[, "dev"]}`` paths, or ``{"ddi_zip": path}``.
        max_train_examples: keep only the first N training examples (after the dev cut).
        max_eval_examples: score only the first N development and test examples.
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
    report_metrics = ("f1", "precision", "recall")
    trial_metrics = ("precision", "recall", "f1")
    table_metrics = ("f1",)
    default_settings: ClassVar[dict[str, Any]] = {}
    #: The model card: pipeline tag, task name and Hub tag; its metrics (front matter, then results table);
    #: its kind-specific sections (usage, labels, limits, what the scores are).
    card: ClassVar[dict[str, str]] = CARD
    #: ``bioelectra benchmark``: the suite of this kind's datasets, and the metrics of its table row(s).
    suite: ClassVar[str] = "re"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("f1", "micro-F1"),)
    card_metrics: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1", "accuracy")
    card_sections = staticmethod(card_sections)
    own_options = ("fold", "re_head", "iob1_policy", "dev_fraction", "dev_split_seed")
    #: Options no other kind takes, with the error shown when another kind is given one.
    exclusive_options: ClassVar[dict[str, str]] = dict.fromkeys(
        ("fold", "folds"), "--fold / --folds are for cross-validated relation extraction data (--loader re)"
    )
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
        max_eval_examples: int | None = None,
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
        self.set_labels(build_re_label_list([self.splits["train"], self.splits["dev"]]))
        for name in SPLITS:
            check_labels(self.splits[name], self.label2id)
        if max_eval_examples is not None:  # after the label set is read from the whole development split
            for name in ("dev", "test"):
                self.splits[name].examples = self.splits[name].examples[:max_eval_examples]
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

    def baseline(self, name: str) -> dict[str, dict[str, Any]]:
        """The best single-class prediction of split ``name``: the majority class (accuracy), all-positive (F1)."""
        gold = [e.label for e in self.splits[name].examples]
        return best_constant(lambda predicted: re_metrics(gold, predicted, positive_labels=self.positive_labels, labels=self.labels),
                             self.labels, len(gold), self.headline_metrics)  # fmt: skip

    def predicted_classes(self, result: EvalResult) -> list[str]:
        return list(result.predictions)

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
        tokenizer with placeholders (``encode`` first): :func:`downstream.classification.load_sequence_classifier`.

        Raises:
            DownstreamError: ``re_head="electra"`` on a non-ELECTRA checkpoint.
        """
        from downstream.classification import load_sequence_classifier

        return load_sequence_classifier(checkpoint, head=self.re_head, labels=self.labels, vocab_size=self.vocab_size, **config_overrides)

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str]:
        """``classification_report.txt`` (per class, micro over the positive labels, confusion) and ``errors.txt``."""
        report = re_classification_report({name: r.metrics for name, r in results.items()}, info)
        return report, re_errors({name: (self.splits[name], r.predictions) for name, r in results.items()})

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        write_re_predictions(path, self.splits[name], result.predictions)

    def set_labels(self, labels: list[str]) -> None:
        super().set_labels(labels)
        self.positive_labels = [label for label in self.labels if label not in NEGATIVE_LABELS]

    def report_extras(self, settings) -> dict[str, Any]:
        return {"fold": settings.fold, "positive_labels": self.positive_labels, "model_class": self.model_class_name}

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """Examples per label of each split."""
        lines = ["", "Examples per label (train: as in the file):", ""]
        for split in ("train", "dev", "test"):
            labels = ", ".join(f"{k} {v}" for k, v in report["counts"][split].get("labels", {}).items())
            lines.append(f"- {split}: {labels}")
        return lines

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        """The RE files of ``settings.data_dir`` or of the registered dataset (its fold ``settings.fold``).

        Raises:
            DownstreamError: neither is given, or the files are missing.
        """
        return find_re_files(cls.data_folder(settings), fold=settings.fold)

    @staticmethod
    def data_folder(settings) -> Path:
        """The folder of ``settings``' RE data (a fold folder's parent for cross-validated data)."""
        if settings.data_dir is not None:
            return Path(settings.data_dir)
        if not settings.dataset:
            raise DownstreamError("no data: give a registered dataset name or a data directory")
        return locate_dataset_dir(settings.dataset, task="re")

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {
            "max_train_examples": settings.max_train_examples,
            "max_eval_examples": settings.max_eval_examples,
            "dev_fraction": settings.dev_fraction,
            "dev_split_seed": settings.dev_split_seed,
            "re_head": settings.re_head,
        }


def _ddi_group(example: ReExample) -> str:
    return ddi_document_of(example.index)
