"""The extractive question answering task kind (``--loader qa``): SQuAD 1.1 / 2.0 JSON (COVID-QA, BioASQ
factoid in BioBERT's SQuAD form), start / end logits over overlapping context windows
(``downstream.task.Task``).

The reading and the split by document are in :mod:`downstream.qa.data`, the windows and the answer
post-processing in :mod:`downstream.qa.spans`, the metrics (SQuAD exact match and token F1; BioASQ strict / lenient accuracy and MRR over the top 5) in
:mod:`downstream.qa.metrics`. This module puts them behind the trial runner's interface.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any, ClassVar

from bioelectra.textio import atomic_write_text
from downstream.errors import DatasetUnavailableError, DownstreamError
from downstream.qa.analysis import qa_classification_report, qa_errors
from downstream.qa.card import CARD, card_sections
from downstream.qa.data import (
    QaSplit,
    read_golden_factoid,
    split_by_document,
)
from downstream.qa.metrics import bioasq_factoid_metrics, squad_metrics
from downstream.qa.mrqa import MRQA_SUFFIXES, read_qa_file
from downstream.qa.spans import (
    QaFeatures,
    QaPrediction,
    encode_qa_features,
    pool_by_question,
    postprocess_predictions,
)
from downstream.registry import find_named_splits
from downstream.settings import QA_DEFAULTS
from downstream.task import SPLITS, EvalResult, TaskKind, first_questions

logger = logging.getLogger(__name__)

#: How the scores are computed, stated in every QA result.
QA_METRIC_MODE = (
    "SQuAD exact match and token F1 (official evaluate-v1.1 / v2.0 definitions: lower-cased, punctuation and "
    "articles removed; max over gold answers; MRQA files scored the same against each question's answers, as "
    "mrqa_official_eval.py); BioASQ factoid strict / lenient accuracy and MRR over the "
    "top 5 distinct n-best answers"
)

#: Split of a single SQuAD file (no split given, e.g. COVID-QA) into train / dev / test, by document.
SINGLE_FILE_FRACTIONS = (0.8, 0.1, 0.1)

#: File name endings read: SQuAD JSON, MRQA JSONL.
QA_SUFFIXES = (".json", ".json.gz", *MRQA_SUFFIXES)


def find_qa_files(folder: str | Path) -> dict[str, Path]:
    """The SQuAD-format files of ``folder``.

    ``train`` / ``dev`` (or ``devel``) / ``test`` ``.json`` files (``.json.gz``, MRQA's ``.jsonl(.gz)``
    accepted) are used as they are; ``train`` and ``test`` alone get a development part cut from train by
    document; ``train`` and ``dev`` alone (the original ELECTRA layout, ``finetuning_data/squad/(train|dev).json``,
    which reports the dev set) are scored on the dev file as the test split too; a folder with exactly one
    JSON file and no split files (COVID-QA) is split by document (:data:`SINGLE_FILE_FRACTIONS`).

    Returns:
        ``{"train", "dev", "test"}``, ``{"train", "test"}`` or ``{"all"}`` paths.

    Raises:
        DatasetUnavailableError: no folder, or nothing usable in it (what was expected is listed).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetUnavailableError(f"data folder not found: {folder}" if not folder.exists() else
                                      f"{folder}: is a file; --data-dir takes the folder that holds the SQuAD JSON file(s)")
    found = find_named_splits(folder, QA_SUFFIXES)
    if "train" in found and "test" in found:
        return found
    if "train" in found and "dev" in found:
        return {**found, "test": found["dev"]}
    if found:
        raise DatasetUnavailableError(
            f"{folder}: has {', '.join(p.name for p in found.values())} but not train.json with test.json or dev.json "
            "(expected train.json, dev.json, test.json (.jsonl for MRQA), or a single SQuAD JSON file to split by document)"
        )
    candidates = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(QA_SUFFIXES))
    if len(candidates) == 1:
        return {"all": candidates[0]}
    raise DatasetUnavailableError(
        f"{folder}: expected train.json, dev.json (optional) and test.json, or exactly one SQuAD JSON file "
        f"to split by document; found {len(candidates)} JSON files{': ' + ', '.join(p.name for p in candidates) if candidates else ''}"
    )


class QaDataset:
    """The model inputs of one split's windows (a map-style dataset for the Trainer)."""

    def __init__(self, features: QaFeatures, indices: list[int], *, with_labels: bool = True):
        self.features = features
        self.indices = indices
        self.with_labels = with_labels

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> dict:
        return self.features.model_inputs(self.indices[index], with_labels=self.with_labels)


class QaEvaluator:
    """``compute_metrics`` for the Trainer on one QA split: the windows' start / end logits become each
    question's answer and n-best list (:func:`downstream.qa.spans.postprocess_predictions`), scored with the SQuAD
    and BioASQ measures. The full result (predictions with their n-best lists) is kept in ``last``."""

    def __init__(self, split: QaSplit, features: QaFeatures, *, n_best_size: int, max_answer_length: int,
                 null_score_threshold: float):  # fmt: skip
        self.split = split
        self.features = features
        self.n_best_size = n_best_size
        self.max_answer_length = max_answer_length
        self.null_score_threshold = null_score_threshold
        self.last: EvalResult | None = None

    def __call__(self, eval_prediction) -> dict[str, float]:
        logits = eval_prediction.predictions
        if not isinstance(logits, tuple | list) or len(logits) != 2:
            raise DownstreamError(f"expected start and end logits from the QA model, got {type(logits).__name__}")
        predictions = postprocess_predictions(
            self.split.examples, self.features, logits[0], logits[1],
            n_best_size=self.n_best_size, max_answer_length=self.max_answer_length,
            version_2=self.split.version_2, null_threshold=self.null_score_threshold,
        )  # fmt: skip
        if self.split.pooled:  # BioASQ: a question's snippets answer together
            predictions = pool_by_question(self.split, predictions)
        metrics = qa_metrics(self.split, predictions)
        self.last = EvalResult(metrics=metrics, predictions=predictions)
        return {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def qa_metrics(split: QaSplit, predictions: dict[str, QaPrediction]) -> dict[str, Any]:
    """SQuAD exact match / F1 and BioASQ strict / lenient accuracy / MRR of ``predictions`` (by question id:
    pooled already for a pooled split) on ``split`` (fractions in [0, 1]); plus ``mode``."""
    gold = split.gold()
    metrics: dict[str, Any] = squad_metrics(gold, {q: p.text for q, p in predictions.items()}, version_2=split.version_2)
    factoid = bioasq_factoid_metrics(gold, {q: [c.text for c in p.nbest if c.text] for q, p in predictions.items()})
    metrics.update({k: factoid[k] for k in ("strict_accuracy", "lenient_accuracy", "mrr")})
    metrics["mode"] = QA_METRIC_MODE
    return metrics


class QaTask(TaskKind):
    """Extractive question answering on SQuAD-format data.

    Reads the files (a single file is split by document; a missing development file is cut from train by
    document), tokenises ``[CLS] question [SEP] context window [SEP]`` into windows ``doc_stride`` tokens
    apart, and trains ``AutoModelForQuestionAnswering`` (ELECTRA's QA head: start / end logits) on every
    window, the answer's token span or ``[CLS]`` when the window does not hold it (``run_squad.py``), of
    which ``null_window_fraction`` of the answerless ones are kept (seeded; 1.0 keeps all). Evaluation
    always reads every window.

    Args:
        files: ``{"train", "dev", "test"}``, ``{"train", "test"}`` or ``{"all"}`` (see :func:`find_qa_files`).
        max_train_examples: keep only the first N training questions.
        max_eval_examples: score only the first N development and test questions.
        dev_fraction: fraction of the training documents cut off as the development part when there is none.
        dev_split_seed: seed of the splits by document and of the answerless-window sample.
        doc_stride, max_query_length: windowing (:func:`downstream.qa.spans.encode_qa_features`).
        max_answer_length, n_best_size, null_score_threshold: post-processing
            (:func:`downstream.qa.spans.postprocess_predictions`).
        null_window_fraction: fraction in (0, 1] of the training windows without the answer that are kept.

    Raises:
        DataFormatError: bad JSON or fields (file and JSON path named).
        ValueError: settings out of range, or too few documents to split.
    """

    kind = "qa"
    model_class_name = "AutoModelForQuestionAnswering"
    headline_metrics = ("exact_match", "f1", "strict_accuracy", "lenient_accuracy", "mrr")
    report_metrics = ("exact_match", "f1")
    table_metrics = ("exact_match", "f1")
    trial_metrics = ("exact_match", "f1", "strict_accuracy", "lenient_accuracy", "mrr")
    #: The model card: pipeline tag, task name and Hub tag; its metrics (front matter, then results table);
    #: its kind-specific sections (usage, labels, limits, what the scores are).
    card: ClassVar[dict[str, str]] = CARD
    #: ``bioelectra benchmark``: the suite of this kind's datasets, and the metrics of its table row(s).
    suite: ClassVar[str] = "qa"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("exact_match", "exact match"), ("f1", "token F1"))
    card_metrics: ClassVar[tuple[str, ...]] = ("exact_match", "f1", "strict_accuracy", "lenient_accuracy", "mrr")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("exact_match", "f1", "strict_accuracy", "lenient_accuracy", "mrr")
    card_sections = staticmethod(card_sections)
    own_options = ("dev_fraction", "dev_split_seed")
    #: The metrics of the original's results lines (``squad: exact_match: 80.10 - f1: 87.90``).
    original_result_keys: ClassVar[tuple[str, ...]] = ("exact_match", "f1")
    #: Options no other kind takes, with the error shown when another kind is given one.
    exclusive_options: ClassVar[dict[str, str]] = {
        key: f"--{key.replace('_', '-')} is for question answering (--loader qa)" for key in QA_DEFAULTS
    }
    f1_name = "token F1"
    metric_mode = QA_METRIC_MODE
    count_columns = (
        ("questions", "questions"),
        ("documents", "documents"),
        ("windows", "windows"),
        ("training_windows", "training windows"),
    )
    size_key = "questions"
    predictions_filename = "predictions.json"
    #: Defaults of this kind where finetune's differ (``run_squad.py``: 384 sub-tokens).
    default_settings: ClassVar[dict[str, Any]] = {"max_seq_length": 384}
    labels: ClassVar[list[str]] = []
    #: No label set: a saved model's ``id2label`` is not read (``bioelectra evaluate``).
    has_labels = False

    def __init__(
        self,
        files: dict[str, Path],
        *,
        max_train_examples: int | None = None,
        max_eval_examples: int | None = None,
        dev_fraction: float = 0.1,
        dev_split_seed: int = 42,
        doc_stride: int = QA_DEFAULTS["doc_stride"],
        max_query_length: int = QA_DEFAULTS["max_query_length"],
        max_answer_length: int = QA_DEFAULTS["max_answer_length"],
        n_best_size: int = QA_DEFAULTS["n_best_size"],
        null_score_threshold: float = QA_DEFAULTS["null_score_threshold"],
        null_window_fraction: float = QA_DEFAULTS["null_window_fraction"],
    ):
        if not 0.0 < null_window_fraction <= 1.0:
            raise ValueError(f"--null-window-fraction {null_window_fraction}: expected a fraction in (0, 1]")
        if min(doc_stride, max_query_length, max_answer_length, n_best_size) < 1:
            raise ValueError("--doc-stride, --max-query-length, --max-answer-length and --n-best-size must be at least 1")
        self.files = dict(files)
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.max_answer_length = max_answer_length
        self.n_best_size = n_best_size
        self.null_score_threshold = null_score_threshold
        self.null_window_fraction = null_window_fraction
        self.dev_split_seed = dev_split_seed
        self.split_notes: dict[str, str] = {}
        self.file_stats: dict[str, dict[str, Any]] = {}
        if "all" in files:
            source = read_qa_file(files["all"])
            self.file_stats["source"] = {"file": str(source.path), "documents": len(source.document_ids), **self._file_stats(source)}
            self.splits = split_by_document(source, SINGLE_FILE_FRACTIONS, seed=dev_split_seed)
            note = (f"{files['all'].name} split by document, its {len(source.document_ids)} documents shuffled with random.Random("
                    f"{dev_split_seed}) and dealt so that each part gets about its share of the questions: "
                    f"{', '.join(f'{n} {f:g}' for n, f in zip(SPLITS, SINGLE_FILE_FRACTIONS, strict=True))}")  # fmt: skip
            self.split_notes = dict.fromkeys(SPLITS, note)
            logger.info("%s", note)
        else:
            golden = read_golden_factoid(files["golden"]) if "golden" in files else None
            read = {name: read_qa_file(files[name], golden=golden) for name in SPLITS if name in files}
            if files.get("dev") == files.get("test"):
                self.split_notes["test"] = (f"test is the dev file {files['dev'].name} (no test file; the original ELECTRA "
                                            "code scores SQuAD and MRQA on dev): the test scores are dev scores")  # fmt: skip
                logger.warning("%s", self.split_notes["test"])
            self.file_stats = {name: self._file_stats(split) for name, split in read.items()}
            if "dev" not in read:
                unit = "question_id" if read["train"].pooled else "document_id"
                parts = split_by_document(read["train"], (1 - dev_fraction, dev_fraction), seed=dev_split_seed,
                                          names=("train", "dev"), by=unit)  # fmt: skip
                read["train"], read["dev"] = parts["train"], parts["dev"]
                note = (f"cut from {files['train'].name}: {dev_fraction:g} of its {'questions' if read['train'].pooled else 'documents'},"
                        f" random.Random({dev_split_seed})")  # fmt: skip
                self.split_notes["dev"] = note
                logger.info("no development file: development part %s", note)
            self.splits = {name: read[name] for name in SPLITS}
        if max_train_examples is not None:
            self.splits["train"].examples = self.splits["train"].examples[:max_train_examples]
        for name in ("dev", "test"):
            self.splits[name].examples = first_questions(self.splits[name].examples, max_eval_examples)
        for name, split in self.splits.items():
            if not split.examples:
                raise ValueError(f"{split.path}: the {name} part has no question")
        self.version_2 = any(s.version_2 for s in self.splits.values())
        self.features: dict[str, QaFeatures] = {}
        self.train_windows: list[int] = []

    # the Task interface ------------------------------------------------------------------------------------

    def counts(self) -> dict[str, dict[str, Any]]:
        """Per split: its file, questions, documents, windows (and the training windows kept); the answers
        the reader relocated or dropped are under the file they were read from (``source`` for a single
        file that was split)."""
        counts: dict[str, dict[str, Any]] = {}
        for name, split in self.splits.items():
            entry: dict[str, Any] = {
                "file": str(split.path),
                "questions": len(split.questions()),
                "examples": len(split.examples),
                "documents": len(split.document_ids),
                "impossible": sum(1 for e in split.examples if e.is_impossible),
                **self.file_stats.get(name, {}),
            }
            if name in self.split_notes:
                entry["note"] = self.split_notes[name]
            if name in self.features:
                entry["windows"] = len(self.features[name])
            if name == "train" and self.train_windows:
                entry["training_windows"] = len(self.train_windows)
            counts[name] = entry
        if "source" in self.file_stats:
            counts["source"] = self.file_stats["source"]
        return counts

    @staticmethod
    def _file_stats(split: QaSplit) -> dict[str, Any]:
        """What the reader fixed in one file: answers relocated, answers and questions dropped."""
        return {
            "questions_in_file": split.num_questions,
            "relocated_answers": split.num_relocated,
            "dropped_answers": split.num_dropped,
            "dropped_questions": len(split.dropped_example_ids),
            "dropped_question_ids": split.dropped_example_ids[:20],
        }

    def use_labels(self, labels: list[str]) -> None:
        """Extractive QA has no label set: nothing to take from a saved model."""

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        """Windows of every split; the training windows without the answer sampled down to
        ``null_window_fraction`` (seeded)."""
        for name, split in self.splits.items():
            self.features[name] = encode_qa_features(
                split.examples, tokenizer, max_seq_length=max_seq_length, doc_stride=self.doc_stride,
                max_query_length=self.max_query_length,
            )  # fmt: skip
        train = self.features["train"]
        positive = [i for i in range(len(train)) if train.start_positions[i] != 0]
        null = [i for i in range(len(train)) if train.start_positions[i] == 0]
        if self.null_window_fraction < 1.0:
            rng = random.Random(self.dev_split_seed)
            null = sorted(rng.sample(null, round(len(null) * self.null_window_fraction)))
        self.train_windows = sorted(positive + null)
        logger.info(
            "windows: train %d (%d with the answer, %d of %d without kept), dev %d, test %d",
            len(self.train_windows), len(positive), len(null), len(train) - len(positive),
            len(self.features["dev"]), len(self.features["test"]),
        )  # fmt: skip

    def dataset(self, name: str) -> QaDataset:
        if name == "train":
            return QaDataset(self.features["train"], self.train_windows)
        return QaDataset(self.features[name], list(range(len(self.features[name]))))

    def evaluator(self, name: str) -> QaEvaluator:
        return QaEvaluator(self.splits[name], self.features[name], n_best_size=self.n_best_size,
                           max_answer_length=self.max_answer_length, null_score_threshold=self.null_score_threshold)  # fmt: skip

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorWithPadding

        return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def build_model(self, checkpoint: str, **config_overrides):
        """A fresh ``AutoModelForQuestionAnswering`` from ``checkpoint`` (its ``qa_outputs`` layer initialised
        from the current torch seed)."""
        import torch
        from transformers import AutoModelForQuestionAnswering

        from downstream.checkpoints import quiet_transformers

        with quiet_transformers():
            model = AutoModelForQuestionAnswering.from_pretrained(
                checkpoint, dtype=torch.float32, ignore_mismatched_sizes=True, **config_overrides
            )
        model.accepts_loss_kwargs = False  # a plain mean loss: see NerTask.build_model
        return model

    def reduce_logits(self, logits, labels):
        """Keep the start and end logits (``(batch, sequence_length)`` each): the answer needs both."""
        if isinstance(logits, tuple | list):
            return tuple(logits[:2])
        raise DownstreamError(f"expected (start_logits, end_logits) from the QA model, got {type(logits).__name__}")

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str]:
        """``classification_report.txt`` (the scores of each split) and ``errors.txt`` (wrong answers)."""
        report = qa_classification_report({name: r.metrics for name, r in results.items()}, info)
        return report, qa_errors({name: (self.splits[name], r.predictions) for name, r in results.items()})

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        """``predictions.json`` (question id -> answer text, as the SQuAD evaluation script reads it) and
        ``nbest_predictions.json`` beside it (id -> the n-best list: text, start character, score, probability)."""
        predictions: dict[str, QaPrediction] = result.predictions
        atomic_write_text(Path(path), json.dumps({q: p.text for q, p in predictions.items()}, indent=2, ensure_ascii=False) + "\n")
        nbest = {
            q: [{"text": c.text, "start": c.start, "score": round(c.score, 4), "probability": round(c.probability, 6)} for c in p.nbest]
            for q, p in predictions.items()
        }
        atomic_write_text(Path(path).with_name("nbest_predictions.json"), json.dumps(nbest, indent=1, ensure_ascii=False) + "\n")

    def report_extras(self, settings) -> dict[str, Any]:
        return {
            "version_2": self.version_2,
            "qa_settings": {
                "doc_stride": self.doc_stride, "max_query_length": self.max_query_length,
                "max_answer_length": self.max_answer_length, "n_best_size": self.n_best_size,
                "null_score_threshold": self.null_score_threshold, "null_window_fraction": self.null_window_fraction,
            },
            "split": self.split_notes,
        }  # fmt: skip

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """The split, what the reader fixed in the files, and the window / answer settings."""
        lines = [""]
        for note in dict.fromkeys((report.get("split") or {}).values()):
            lines.append(f"- Split: {note}.")
        counts = report.get("counts") or {}
        for name in ("source", *SPLITS):
            c = counts.get(name) or {}
            if "relocated_answers" in c:
                lines.append(
                    f"- `{Path(c.get('file', name)).name}` ({name}): {c['questions_in_file']} questions; "
                    f"{c['relocated_answers']} answers not at their `answer_start` relocated to the nearest "
                    f"occurrence of their text, {c['dropped_answers']} whose text is not in the context dropped "
                    f"({c['dropped_questions']} questions left without an answer removed)."
                )
        qa = report.get("qa_settings") or {}
        if qa:
            lines.append("- Windows and answers: " + ", ".join(f"{k} {v}" for k, v in qa.items()) + ".")
        return lines

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        """The SQuAD files of ``settings.data_dir`` or of the registered dataset (:func:`find_qa_files`).

        Raises:
            DownstreamError: neither is given, or the files are missing.
        """
        from downstream.registry import locate_task_files

        return locate_task_files(settings, cls.kind, find_qa_files)

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {
            "max_train_examples": settings.max_train_examples,
            "max_eval_examples": settings.max_eval_examples,
            "dev_fraction": settings.dev_fraction,
            "dev_split_seed": settings.dev_split_seed,
            "doc_stride": settings.doc_stride,
            "max_query_length": settings.max_query_length,
            "max_answer_length": settings.max_answer_length,
            "n_best_size": settings.n_best_size,
            "null_score_threshold": settings.null_score_threshold,
            "null_window_fraction": settings.null_window_fraction,
        }
