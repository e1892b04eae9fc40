"""The yes/no question answering task kind (``--loader yesno``): PubMedQA PQA-L and BioASQ yes/no, the
question and its passage as a sentence pair into a sequence classifier (the relation-extraction heads),
accuracy and macro-F1 over the questions (``downstream.task.Task``). Reading and splits:
:mod:`downstream.yesno.data`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

from bioelectra.textio import atomic_write_text
from downstream.classification import RE_HEADS, EncodedReSplit
from downstream.errors import DataFormatError, DownstreamError
from downstream.task import SPLITS, ClassifierTask, EvalResult, best_constant, first_questions
from downstream.yesno.analysis import yesno_classification_report, yesno_errors
from downstream.yesno.card import CARD, card_sections
from downstream.yesno.data import (
    YESNO_LABELS,
    YesNoSplit,
    cut_by_question,
    find_yesno_files,
    pubmedqa_split,
    read_golden_yesno,
    read_yesno_file,
)
from downstream.yesno.metrics import YESNO_METRIC_MODE, classification_metrics

logger = logging.getLogger(__name__)


def encode_pair_split(split: YesNoSplit, tokenizer, label2id: dict[str, int], *, max_seq_length: int) -> EncodedReSplit:
    """``[CLS] question [SEP] passage [SEP]``, the passage cut so that the pair fits ``max_seq_length``
    sub-tokens (``truncation="only_second"``; the question is never cut). One feature per example, in order.

    Raises:
        ValueError: a question that alone leaves no room for the passage (the example named).
    """
    rows, truncated = [], 0
    for example in split.examples:
        full = tokenizer(example.question, example.context, truncation=False, verbose=False)
        if len(full["input_ids"]) > max_seq_length:
            truncated += 1
            if len(tokenizer(example.question)["input_ids"]) + 2 >= max_seq_length:
                raise ValueError(f"{split.path}: example {example.id!r}: the question alone fills --max-seq-length {max_seq_length}")
            full = tokenizer(example.question, example.context, truncation="only_second", max_length=max_seq_length)
        rows.append({"input_ids": full["input_ids"], "token_type_ids": full["token_type_ids"], "labels": label2id[example.label]})
    stats = {"truncated": truncated, "subtokens": sum(len(r["input_ids"]) for r in rows)}
    return EncodedReSplit(features=rows, example_index=list(range(len(rows))), stats=stats)


class YesNoEvaluator:
    """``compute_metrics`` for the Trainer on one yes/no split: the class probabilities of a question's
    examples (BioASQ: one per snippet; PubMedQA: one) are averaged and the likeliest answer taken; accuracy
    and macro-F1 over the questions. The full result (per question: gold, predicted, probabilities) is kept
    in ``last``."""

    def __init__(self, split: YesNoSplit, labels: list[str]):
        self.split = split
        self.labels = labels
        self.last: EvalResult | None = None

    def __call__(self, eval_prediction) -> dict[str, float]:
        import numpy as np

        logits = np.asarray(eval_prediction.predictions, dtype=np.float64)  # (examples, labels)
        if logits.shape != (len(self.split.examples), len(self.labels)):
            raise DownstreamError(f"logits of shape {logits.shape} for {len(self.split.examples)} examples and {len(self.labels)} labels")
        probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        pooled: dict[str, list] = {}
        for example, row in zip(self.split.examples, probabilities, strict=True):
            pooled.setdefault(example.question_id, []).append(row)
        gold = self.split.question_labels()
        rows = []
        for question_id, label in gold.items():
            mean = np.mean(pooled[question_id], axis=0)
            rows.append({
                "question_id": question_id, "gold": label, "predicted": self.labels[int(mean.argmax())],
                "probabilities": {name: round(float(p), 6) for name, p in zip(self.labels, mean, strict=True)},
                "examples": len(pooled[question_id]),
            })  # fmt: skip
        metrics = classification_metrics([r["gold"] for r in rows], [r["predicted"] for r in rows], labels=self.labels)
        self.last = EvalResult(metrics=metrics, predictions=rows)
        return {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


class YesNoTask(ClassifierTask):
    """Yes/no(/maybe) question answering: the question and its passage as a sentence pair, classified over
    the answers found in train + dev (in ``yes``, ``no``, ``maybe`` order).

    Splits: PubMedQA's ``ori_pqal.json`` gets its official split (:func:`downstream.yesno.data.pubmedqa_split`,
    BLURB's fold 0: 450 / 50 / 500); split files are used as given; a missing development file is cut from
    train by question (``dev_fraction``, ``dev_split_seed``).

    Args:
        files: ``{"all"}`` or ``{"train", "test"[, "dev"][, "golden"]}`` (:func:`downstream.yesno.data.find_yesno_files`).
        max_train_examples: keep only the first N training examples.
        max_eval_examples: score only the first N development and test questions.
        dev_fraction, dev_split_seed: the development cut when there is no development file.
        re_head: the classifier head, as for relation extraction (``electra``: dropout + linear over
            ``[CLS]``, ELECTRA's; ``hf``: ``ElectraClassificationHead``).

    Raises:
        DataFormatError: bad files (file and field named), a test answer the training data never has.
        DownstreamError: an unknown head.
    """

    kind = "yesno"
    headline_metrics = ("accuracy", "f1", "precision", "recall")
    report_metrics = ("accuracy", "f1")
    trial_metrics = ("accuracy", "f1")
    table_metrics = ("accuracy", "f1")
    default_settings: ClassVar[dict[str, Any]] = {"max_seq_length": 512}
    #: The model card: pipeline tag, task name and Hub tag; its metrics (front matter, then results table);
    #: its kind-specific sections (usage, labels, limits, what the scores are).
    card: ClassVar[dict[str, str]] = CARD
    #: ``bioelectra benchmark``: the suite of this kind's datasets, and the metrics of its table row(s).
    suite: ClassVar[str] = "qa"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("accuracy", "accuracy"),)  # BLURB scores yes/no QA by accuracy
    card_metrics: ClassVar[tuple[str, ...]] = ("accuracy", "f1", "precision", "recall")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("accuracy", "f1", "precision", "recall")
    card_sections = staticmethod(card_sections)
    own_options = ("re_head", "dev_fraction", "dev_split_seed")
    f1_name = "macro-F1"
    metric_mode = YESNO_METRIC_MODE
    count_columns = (("questions", "questions"), ("examples", "examples"), ("truncated", "truncated"))
    size_key = "questions"
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
    ):
        if re_head not in RE_HEADS:
            raise DownstreamError(f"unknown classifier head {re_head!r}; expected one of {', '.join(RE_HEADS)}")
        self.re_head = re_head
        self.model_class_name = RE_HEADS[re_head]
        self.files = dict(files)
        if "all" in files:
            self.splits = pubmedqa_split(read_yesno_file(files["all"]))
        else:
            golden = read_golden_yesno(files["golden"]) if "golden" in files else None
            read = {name: read_yesno_file(files[name], golden) for name in SPLITS if name in files}
            if "dev" not in read:
                read["train"], read["dev"] = cut_by_question(read["train"], dev_fraction, dev_split_seed)
            self.splits = {name: read[name] for name in SPLITS}
        if max_train_examples is not None:
            self.splits["train"].examples = self.splits["train"].examples[:max_train_examples]
        present = {e.label for name in ("train", "dev") for e in self.splits[name].examples}
        self.set_labels([label for label in YESNO_LABELS if label in present])
        unseen = {e.label for e in self.splits["test"].examples} - present
        for name in ("dev", "test"):  # after the label set is read from the whole development split
            self.splits[name].examples = first_questions(self.splits[name].examples, max_eval_examples)
        if unseen:
            raise DataFormatError(f"{self.splits['test'].path}: test answers {sorted(unseen)} never occur in train or dev")
        self.encoded: dict[str, EncodedReSplit] = {}

    def baseline(self, name: str) -> dict[str, dict[str, Any]]:
        """The best single-answer prediction of split ``name`` over its questions (accuracy: the majority answer)."""
        gold = list(self.splits[name].question_labels().values())
        return best_constant(lambda predicted: classification_metrics(gold, predicted, labels=self.labels),
                             self.labels, len(gold), self.headline_metrics)  # fmt: skip

    def predicted_classes(self, result: EvalResult) -> list[str]:
        return [row["predicted"] for row in result.predictions]

    def counts(self) -> dict[str, dict[str, Any]]:
        counts = {}
        for name, split in self.splits.items():
            counts[name] = {
                "file": str(split.path), "questions": len(split.question_labels()), "examples": len(split.examples),
                "labels": split.label_counts(), **({"note": split.note} if split.note else {}),
                **(self.encoded[name].stats if name in self.encoded else {}),
            }  # fmt: skip
        return counts

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        for name, split in self.splits.items():
            self.encoded[name] = encode_pair_split(split, tokenizer, self.label2id, max_seq_length=max_seq_length)
            if self.encoded[name].stats["truncated"]:
                logger.info("%s: %d of %d passages cut to fit %d sub-tokens", name,
                            self.encoded[name].stats["truncated"], len(split.examples), max_seq_length)  # fmt: skip

    def dataset(self, name: str) -> EncodedReSplit:
        return self.encoded[name]

    def evaluator(self, name: str) -> YesNoEvaluator:
        return YesNoEvaluator(self.splits[name], self.labels)

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorWithPadding

        return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def build_model(self, checkpoint: str, **config_overrides):
        """:func:`downstream.classification.load_sequence_classifier` with this task's answers as labels."""
        from downstream.classification import load_sequence_classifier

        return load_sequence_classifier(checkpoint, head=self.re_head, labels=self.labels, **config_overrides)

    def reduce_logits(self, logits, labels):
        """Keep the logits ``(batch, num_labels)``: a BioASQ question averages its snippets' probabilities."""
        return logits[0] if isinstance(logits, tuple | list) else logits

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str]:
        """``classification_report.txt`` (per answer, macro average, confusion) and ``errors.txt`` (wrong answers)."""
        report = yesno_classification_report({name: r.metrics for name, r in results.items()}, info)
        return report, yesno_errors({name: (self.splits[name], r.predictions) for name, r in results.items()})

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        """``question_id<TAB>gold<TAB>predicted<TAB>P(answer)...`` with a header, one line per question."""
        rows = ["question_id\tgold\tpredicted\t" + "\t".join(f"p_{label}" for label in self.labels)]
        rows += [
            f"{r['question_id']}\t{r['gold']}\t{r['predicted']}\t" + "\t".join(f"{r['probabilities'][label]:.4f}" for label in self.labels)
            for r in result.predictions
        ]
        atomic_write_text(Path(path), "\n".join(rows) + "\n")

    def report_extras(self, settings) -> dict[str, Any]:
        return {"model_class": self.model_class_name, "split": {name: s.note for name, s in self.splits.items() if s.note}}

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """Questions per answer of each split, and where the split comes from."""
        lines = ["", "Questions per answer:", ""]
        for split in SPLITS:
            labels = ", ".join(f"{k} {v}" for k, v in report["counts"][split].get("labels", {}).items())
            note = (report.get("split") or {}).get(split)
            lines.append(f"- {split}: {labels}" + (f" ({note})" if note else ""))
        return lines

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        """The yes/no files of ``settings.data_dir`` or of the registered dataset.

        Raises:
            DownstreamError: neither is given, or the files are missing.
        """
        from downstream.registry import locate_task_files

        return locate_task_files(settings, cls.kind, find_yesno_files)

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {
            "max_train_examples": settings.max_train_examples,
            "max_eval_examples": settings.max_eval_examples,
            "dev_fraction": settings.dev_fraction,
            "dev_split_seed": settings.dev_split_seed,
            "re_head": settings.re_head,
        }
