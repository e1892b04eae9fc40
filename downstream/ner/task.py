"""The NER task kind: token classification on BioBERT TSV / IOB2 / CoNLL files (``downstream.task.Task``)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, ClassVar

from downstream.dataset_specs import CHUNK_DATASETS
from downstream.errors import DownstreamError
from downstream.ner.analysis import ner_classification_report, ner_errors
from downstream.ner.card import CARD, card_info, card_sections
from downstream.ner.conll2000 import find_tagging_files, is_conll2000_file, read_tagging_file
from downstream.ner.data import (
    EncodedSplit,
    NerSplit,
    build_label_list,
    encode_split,
    word_predictions,
    write_conll_predictions,
)
from downstream.ner.metrics import NER_METRIC_MODE, ner_metrics
from downstream.ner.types import BARE_TAGS, GIVEN, UNTYPED_WARNING, entity_type_of, has_bare_labels
from downstream.registry import locate_task_files
from downstream.task import SPLITS, ClassifierTask, EvalResult

logger = logging.getLogger(__name__)


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


class NerTask(ClassifierTask):
    """Token classification on a NER benchmark (BioBERT TSV / IOB2 / CoNLL files) or on CoNLL-2000 chunking
    (``--dataset chunk``; :mod:`downstream.ner.conll2000`): the same IOB2 tagging and conlleval scoring, its
    phrases scored per chunk type."""

    kind = "ner"
    model_class_name = "AutoModelForTokenClassification"
    #: Metrics summarised over trials (``results.json`` ``summary``), the first is the headline.
    headline_metrics = ("f1", "precision", "recall", "accuracy")
    #: Metrics of ``results.md``'s summary rows.
    report_metrics = ("f1", "precision", "recall")
    #: ``results.md`` per-trial columns; terminal table and epoch rows.
    trial_metrics = ("precision", "recall", "f1")
    table_metrics = ("f1",)
    default_settings: ClassVar[dict[str, Any]] = {}
    #: Settings of other task kinds, left out of the trial fingerprint.
    #: The model card: pipeline tag, task name and Hub tag; its metrics (front matter, then results table);
    #: its kind-specific sections (usage, labels, limits, what the scores are).
    card: ClassVar[dict[str, str]] = CARD
    #: ``bioelectra benchmark``: the suite of this kind's datasets, and the metrics of its table row(s).
    suite: ClassVar[str] = "ner"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("f1", "entity-level F1"),)
    card_metrics: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1", "accuracy")
    card_sections = staticmethod(card_sections)

    @classmethod
    def card_info(cls, labels: list[str]) -> dict[str, str]:
        return card_info(labels)
    own_options = ("iob1_policy",)
    #: Options no other kind takes, with the error shown when another kind is given one.
    exclusive_options: ClassVar[dict[str, str]] = {"entity_type": "--entity-type is for NER data (--loader ner)"}
    #: What the F1 is, for tables.
    f1_name = "entity-level F1"
    #: ``results.md`` split-size columns: ``(counts key, column title)``.
    count_columns = (("sentences", "sentences"), ("words", "words"), ("entities", "entities"), ("windows", "windows"))
    #: The counts key with the number of units of a split (for logs).
    size_key = "sentences"
    predictions_filename = "test_predictions.txt"
    metric_mode = NER_METRIC_MODE

    def __init__(
        self,
        files: dict[str, Path],
        *,
        iob1_policy: str = "repair",
        max_train_examples: int | None = None,
        max_eval_examples: int | None = None,
        entity_type: str | None = None,
        entity_type_source: str = GIVEN,
    ):
        self.files = files
        self.entity_type: str | None = None
        self.entity_type_source = entity_type_source
        self.splits: dict[str, NerSplit] = {
            name: read_tagging_file(files[name], iob1_policy=iob1_policy) for name in SPLITS
        }
        #: CoNLL-2000 chunking data: its phrases are chunks; a split read from another split's file is noted.
        self.chunking = is_conll2000_file(files["train"])
        if self.chunking:
            self.f1_name = "phrase-level F1 (chunks)"
        self.split_notes = _shared_file_notes(files)
        #: whether the files have bare B / I tags (typed here by ``entity_type``, when one is known)
        self.files_bare = any(t in ("B", "I") for split in self.splits.values() for s in split.sentences for t in s.tags)
        if max_train_examples is not None:
            train = self.splits["train"]
            train.sentences = train.sentences[:max_train_examples]
        if max_eval_examples is not None:
            for name in ("dev", "test"):
                self.splits[name].sentences = self.splits[name].sentences[:max_eval_examples]
        self.set_labels(build_label_list(self.splits.values()))
        if self.files_bare and entity_type is not None:
            self._retype(entity_type)
        elif self.files_bare:
            logger.warning(UNTYPED_WARNING, files["train"].parent)
        self.unseen_labels = _labels_not_in_training(self.splits)
        self.encoded: dict[str, EncodedSplit] = {}

    def use_labels(self, labels: list[str]) -> None:
        """Take a saved model's label order. Bare ``B`` / ``I`` tags and a single entity type are the same
        entities: a model saved with bare labels is scored on typed data with the tags made bare again, a
        model with one type (``B-Disease``) on bare data with that type given to them (same metrics).

        Raises:
            DownstreamError: the label sets differ otherwise (both listed).
        """
        model_types = {label.split("-", 1)[1] for label in labels if "-" in label}
        if set(labels) != set(self.labels) and self.files_bare:
            if set(labels) <= BARE_TAGS:
                self._retype(None)
            elif len(model_types) == 1 and self.entity_type is None:
                model_type = next(iter(model_types))
                logger.warning("the files' bare B / I tags are scored as %s, the model's type: were they of another "
                               "type, the scores would mean nothing", model_type)  # fmt: skip
                self._retype(model_type)
            elif len(model_types) == 1 and self.entity_type_source != GIVEN:
                model_type = next(iter(model_types))
                raise DownstreamError(
                    f"the model finds {model_type} entities, the files' bare B / I tags are {self.entity_type} "
                    f"({self.entity_type_source}): one type scored against another means nothing. Give "
                    f"--entity-type {model_type} to score these files as {model_type} anyway."
                )
        super().use_labels(labels)

    def _retype(self, entity_type: str | None) -> None:
        """Give the files' bare entity tags the type ``entity_type`` (``None``: make them bare again) and
        rebuild the labels; typed tags of the files keep their type."""
        def retag(tag: str) -> str:
            if tag == "O":
                return tag
            if entity_type is None:
                return tag[0] if tag[2:] == (self.entity_type or "") else tag
            return f"{tag}-{entity_type}" if tag in ("B", "I") else tag

        for split in self.splits.values():
            split.sentences = [dataclasses.replace(s, tags=tuple(retag(t) for t in s.tags)) for s in split.sentences]
        logger.info("bare B / I tags read as %s", f"{entity_type} ({self.entity_type_source})" if entity_type else "B / I")
        self.entity_type = entity_type
        self.set_labels(build_label_list(self.splits.values()))

    def baseline(self, name: str) -> dict[str, dict[str, Any]]:
        """Tagging every word ``O`` (the majority class): no entity found, F1 0, word accuracy the share of ``O``."""
        gold = [list(s.tags) for s in self.splits[name].sentences]
        metrics = ner_metrics(gold, [["O"] * len(tags) for tags in gold])
        return {"values": {m: metrics[m] for m in self.headline_metrics}, "predictions": dict.fromkeys(self.headline_metrics, "O")}

    def predicted_classes(self, result: EvalResult) -> list[str]:
        return [tag for sentence in result.predictions for tag in sentence]

    def counts(self) -> dict[str, dict[str, Any]]:
        counts = {name: {"file": str(self.files[name]), **split.counts()} for name, split in self.splits.items()}
        for name, note in self.split_notes.items():
            counts[name]["note"] = note
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
        from downstream.token_classification import load_token_classifier

        return load_token_classifier(checkpoint, self.labels, **config_overrides)

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str]:
        """``classification_report.txt`` (entity- and word-level reports) and ``errors.txt`` (wrong sentences)."""
        gold = {name: [s.tags for s in self.splits[name].sentences] for name in results}
        report = ner_classification_report({name: (gold[name], r.predictions) for name, r in results.items()}, info)
        return report, ner_errors({name: (self.splits[name], r.predictions) for name, r in results.items()})

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        write_conll_predictions(path, self.splits[name], result.predictions)

    def report_extras(self, settings) -> dict[str, Any]:
        if has_bare_labels(self.labels):
            extras: dict[str, Any] = {"untyped_labels": True}
        elif self.entity_type:
            extras = {"entity_type": self.entity_type, "entity_type_source": self.entity_type_source}
        else:
            extras = {}
        if self.chunking:
            extras["format"] = "CoNLL-2000 chunking (word POS chunk-tag; phrases scored per chunk type)"
            extras["task_title"] = "Chunking"
        if self.split_notes:
            extras["split"] = self.split_notes
        return extras

    @staticmethod
    def fingerprint_extras(settings) -> dict[str, Any]:
        """The type of the bare tags, when one is known: it names the saved model's labels."""
        entity_type = entity_type_of(settings)[0]
        return {"entity_type": entity_type} if entity_type is not None else {}

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """The data format when it is CoNLL-2000 chunking, and which split stands in for a missing one."""
        lines = [f"- Data: {report['format']}."] if report.get("format") else []
        lines += [f"- Split: {note}." for note in (report.get("split") or {}).values()]
        return [""] + lines if lines else []

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        """``train`` / ``dev`` / ``test`` files of ``settings.data_dir``, else of the registered dataset.

        Raises:
            DownstreamError: neither is given, or the files are missing.
        """
        chunking = settings.dataset in CHUNK_DATASETS  # the folder must be CoNLL-2000, and is told so if not
        return locate_task_files(settings, cls.kind, lambda folder: find_tagging_files(folder, chunking=chunking))

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {
            "iob1_policy": settings.iob1_policy,
            "max_train_examples": settings.max_train_examples,
            "max_eval_examples": settings.max_eval_examples,
            **dict(zip(("entity_type", "entity_type_source"), entity_type_of(settings), strict=True)),
        }


def _shared_file_notes(files: dict[str, Path]) -> dict[str, str]:
    """``{split: note}`` for a dev or test split read from the other's file (CoNLL-2000 has no dev file: the
    original ELECTRA code evaluates chunking on the test set); logged once."""
    if files["dev"] != files["test"]:
        return {}
    note = f"dev and test are the same file, {files['test'].name} (the development split is the test set, as the original ELECTRA code evaluates chunking): the dev scores are test scores"
    logger.warning("%s", note)
    return {"dev": note}


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
