"""The GLUE task kind (``--loader glue --dataset cola|sst-2|mrpc|sts-b|qqp|mnli|mnli-mm|qnli|rte|wnli``, and
the original ELECTRA names ``sst``, ``sts``): single sentences and sentence pairs into a sequence classifier
(the relation-extraction heads), STS-B as a regression (one output, mean squared error), GLUE's metrics,
test predictions in the GLUE server's submission format (``downstream.task.Task``).

As the original ELECTRA code (``finetune/classification/classification_tasks.py``): ``[CLS] a [SEP] b [SEP]``
with the longer segment cut first (BERT's ``_truncate_seq_pair``: ``truncation="longest_first"``); STS-B's
target is the score divided by 5 (its ``(label - min) / max`` normalisation), predictions are multiplied
back; MRPC and STS-B train on both orders of each pair (``double_unordered``). Reading: :mod:`downstream.glue.data`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bioelectra.textio import atomic_write_text
from downstream.classification import RE_HEADS, EncodedReSplit, encode_pair_splits, first_output
from downstream.errors import DownstreamError
from downstream.glue.analysis import glue_classification_report, glue_errors
from downstream.glue.card import CARD, card_sections
from downstream.glue.data import GlueSplit, double_unordered_pairs, find_glue_files, read_glue_file
from downstream.glue.metrics import GLUE_METRIC_MODE, glue_scores
from downstream.glue.spec import (
    GLUE_SOURCES,
    GLUE_TASKS,
    ORIGINAL_GLUE_NAMES,
    GlueSpec,
    glue_spec,
    is_glue_name,
)
from downstream.task import ClassifierTask, EvalResult, argmax_logits, best_constant

#: The GLUE server's note on test predictions (the test labels are hidden).
UNSCORED = (
    "GLUE's test labels are hidden: predictions written in the GLUE server's submission format, not scored"
)


def _shown(value) -> str:
    """A label as GLUE writes it: class names as they are, scores with three decimals."""
    return f"{value:.3f}" if isinstance(value, float) else str(value)


class GlueEvaluator:
    """``compute_metrics`` on one GLUE split: predictions back in file order, GLUE's metrics on a labelled
    split (:func:`downstream.glue.metrics.glue_scores`), none on GLUE's test set. ``last`` holds the result;
    its predictions are class names, or scores on the 0-5 scale for STS-B."""

    def __init__(self, spec: GlueSpec, split: GlueSplit, encoded: EncodedReSplit, labels: list[str]):
        self.spec, self.split, self.encoded, self.labels = spec, split, encoded, labels
        self.last: EvalResult | None = None

    def __call__(self, eval_prediction) -> dict[str, float]:
        import numpy as np

        values = np.asarray(eval_prediction.predictions).reshape(-1)
        if len(values) != len(self.split.examples):
            raise DownstreamError(
                f"{len(values)} predictions for {len(self.split.examples)} examples of {self.split.path}"
            )
        predicted: list[Any] = [None] * len(values)
        for position, value in zip(self.encoded.example_index, values, strict=True):
            predicted[position] = (
                float(value) * self.spec.score_range[1]
                if self.spec.is_regression
                else self.labels[int(value)]
            )
        if self.split.labelled:
            metrics = glue_scores(self.spec, [e.label for e in self.split.examples], predicted)
        else:
            metrics = {"num_examples": len(predicted), "scored": False, "note": UNSCORED}
        self.last = EvalResult(metrics=metrics, predictions=predicted)
        return {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


class GlueTask(ClassifierTask):
    """One GLUE task: its train, development and (optional) test file, its labels in the original's order
    (STS-B: one output, ``score``), the original's input and head.

    Args:
        files: ``{"train", "dev"[, "test"]}`` (:func:`downstream.glue.data.find_glue_files`).
        glue_task: the task's name (:func:`downstream.glue.spec.glue_spec`).
        max_train_examples: keep only the first N training examples (before ``double_unordered``).
        double_unordered: MRPC and STS-B: train on both orders of each pair (the original's default); no
            effect on the other tasks.
        re_head: the classifier head, as for relation extraction (``electra``: dropout + linear over ``[CLS]``,
            ELECTRA's; ``hf``: ``ElectraClassificationHead``).

    Raises:
        DataFormatError: bad rows (file and line named).
        DownstreamError: an unknown task or head.
    """

    kind = "glue"
    headline_metrics: ClassVar[tuple[str, ...]] = ("accuracy", "f1", "mcc", "pearson", "spearman")
    report_metrics = headline_metrics
    trial_metrics = headline_metrics
    table_metrics = headline_metrics
    default_settings: ClassVar[dict[str, Any]] = {}
    card: ClassVar[dict[str, str]] = CARD
    suite: ClassVar[str] = "glue"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("accuracy", "accuracy"),)
    card_metrics: ClassVar[tuple[str, ...]] = ("accuracy", "f1", "mcc", "pearson", "spearman")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("accuracy", "f1", "mcc", "pearson", "spearman")
    card_sections = staticmethod(card_sections)
    own_options = ("re_head", "double_unordered")
    exclusive_options: ClassVar[dict[str, str]] = {
        "double_unordered": "--double-unordered / --no-double-unordered are for GLUE's sentence-pair tasks MRPC and STS-B (--loader glue)"
    }
    original_task_names: ClassVar[tuple[str, ...]] = ORIGINAL_GLUE_NAMES
    original_result_keys: ClassVar[tuple[str, ...]] = ("mcc", "pearson", "spearman", "mse", "accuracy", "f1")
    metric_mode = GLUE_METRIC_MODE
    count_columns = (("examples", "examples"), ("truncated", "truncated"))
    size_key = "examples"
    predictions_filename = "test_predictions.tsv"

    def __init__(self, files: dict[str, Path], *, glue_task: str, max_train_examples: int | None = None,
                 max_eval_examples: int | None = None, double_unordered: bool = True, re_head: str = "electra"):  # fmt: skip
        if re_head not in RE_HEADS:
            raise DownstreamError(
                f"unknown classifier head {re_head!r}; expected one of {', '.join(RE_HEADS)}"
            )
        self.spec = glue_spec(glue_task)
        self.re_head, self.model_class_name = re_head, RE_HEADS[re_head]
        self.files = dict(files)
        self.splits: dict[str, GlueSplit] = {
            "train": read_glue_file(files["train"], self.spec),
            "dev": read_glue_file(files["dev"], self.spec),
            "test": read_glue_file(files["test"], self.spec, labelled=False) if "test" in files
            else GlueSplit(None, [], labelled=False, note="no test file: test not run"),
        }  # fmt: skip
        self.file_counts = {"train": len(self.splits["train"].examples)}
        if max_train_examples is not None:
            self.splits["train"].examples = self.splits["train"].examples[:max_train_examples]
        if max_eval_examples is not None:  # the first N: a smoke run's scores, not comparable with GLUE's
            for name in ("dev", "test"):
                self.splits[name].examples = self.splits[name].examples[:max_eval_examples]
        self.double_unordered = bool(double_unordered and self.spec.symmetric)
        if self.double_unordered:
            self.splits["train"] = double_unordered_pairs(self.splits["train"])
        self.set_labels(["score"] if self.spec.is_regression else list(self.spec.labels))
        self.headline_metrics = self.report_metrics = self.trial_metrics = self.table_metrics = (
            self.spec.metrics
        )
        self.f1_name = "F1 of class 1" if "f1" in self.spec.metrics else self.spec.selection
        self.predictions_filename = f"{self.spec.submission}.tsv"
        self.encoded: dict[str, EncodedReSplit] = {}

    def baseline(self, name: str) -> dict[str, dict[str, Any]] | None:
        """The best single-class prediction of split ``name`` (the majority class for accuracy, all-``1`` for
        F1; MCC is 0 for any constant); ``None`` for STS-B (a constant score has no correlation) or an
        unlabelled split (GLUE's test)."""
        split = self.splits[name]
        if self.spec.is_regression or not split.labelled or not split.examples:
            return None
        gold = [e.label for e in split.examples]
        return best_constant(lambda predicted: glue_scores(self.spec, gold, predicted), list(self.spec.labels),
                             len(gold), self.headline_metrics)  # fmt: skip

    def predicted_classes(self, result: EvalResult) -> list[str] | None:
        return None if self.spec.is_regression else [str(p) for p in result.predictions]

    def _target(self, label):
        """The training target of a label: its id, or STS-B's score / 5 (the original's normalisation)."""
        return float(label) / self.spec.score_range[1] if self.spec.is_regression else self.label2id[label]

    def counts(self) -> dict[str, dict[str, Any]]:
        counts = {}
        for name, split in self.splits.items():
            counts[name] = {
                "file": str(split.path) if split.path else "-", "examples": len(split.examples),
                "labels": split.label_counts(), "labelled": split.labelled,
                **({"note": split.note} if split.note else {}), **(self.encoded[name].stats if name in self.encoded else {}),
            }  # fmt: skip
        counts["train"]["examples_in_file"] = self.file_counts["train"]
        return counts

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        examples = {name: split.examples for name, split in self.splits.items()}
        self.encoded.update(encode_pair_splits(examples, tokenizer, self._target, max_seq_length=max_seq_length, unit="examples"))

    def dataset(self, name: str) -> EncodedReSplit:
        return self.encoded[name]

    def evaluator(self, name: str) -> GlueEvaluator:
        return GlueEvaluator(self.spec, self.splits[name], self.encoded[name], self.labels)

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorWithPadding

        return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def build_model(self, checkpoint: str, **config_overrides):
        """:func:`downstream.classification.load_sequence_classifier` with this task's labels (STS-B: one
        output, ``problem_type="regression"``)."""
        from downstream.classification import load_sequence_classifier

        if self.spec.is_regression:
            config_overrides = {"problem_type": "regression", **config_overrides}
        return load_sequence_classifier(checkpoint, head=self.re_head, labels=self.labels, **config_overrides)

    def reduce_logits(self, logits, labels):
        """Class ids (argmax), or STS-B's one output ``(batch,)``."""
        if self.spec.is_regression:
            return first_output(logits, labels)
        return argmax_logits(logits, labels)

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str]:
        """``classification_report.txt`` (metrics, confusion) and ``errors.txt`` (the development set's wrong answers)."""
        labelled = {name: r for name, r in results.items() if self.splits[name].labelled}
        report = glue_classification_report(
            self.spec, {name: r.metrics for name, r in labelled.items()}, info
        )
        return report, glue_errors(
            self.spec, {name: (self.splits[name], r.predictions) for name, r in labelled.items()}
        )

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        """GLUE's submission file (``<Task>.tsv``: ``index<TAB>prediction``, labels as GLUE names them, STS-B
        scores with three decimals) for GLUE's test set; ``index<TAB>gold<TAB>prediction`` for a labelled split."""
        split = self.splits[name]
        if not split.examples:
            return
        pairs = zip(split.examples, result.predictions, strict=True)
        if split.labelled:
            rows = ["index\tgold\tprediction"] + [
                f"{e.index}\t{_shown(e.label)}\t{_shown(p)}" for e, p in pairs
            ]
        else:
            rows = ["index\tprediction"] + [f"{e.index}\t{_shown(p)}" for e, p in pairs]
        atomic_write_text(Path(path), "\n".join(rows) + "\n")

    def report_extras(self, settings) -> dict[str, Any]:
        return {"glue_task": self.spec.name, "selection_metric": settings.metric, "model_class": self.model_class_name,
                "double_unordered": self.double_unordered, "submission_file": self.predictions_filename}  # fmt: skip

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """The task, the selection metric, double_unordered and the test set's note."""
        lines = [
            "",
            f"GLUE task `{report.get('glue_task')}`; best epoch by development `{report.get('selection_metric')}`.",
        ]
        if report.get("double_unordered"):
            lines.append("Training pairs in both orders (the original's double_unordered).")
        test = report["counts"].get("test", {})
        lines.append(
            f"Test: {UNSCORED} (`trial-<i>/{report.get('submission_file')}`)."
            if test.get("examples")
            else "Test: no test file."
        )
        return lines

    @classmethod
    def spec_of(cls, settings) -> GlueSpec:
        """The GLUE task of ``settings``: ``dataset``, else the name of ``data_dir`` (GLUE's folder names).

        Raises:
            DownstreamError: an unknown ``dataset``, or no dataset and a folder name that is no GLUE task.
        """
        if settings.dataset:
            return glue_spec(settings.dataset)
        if settings.data_dir is not None and is_glue_name(Path(settings.data_dir).name):
            return glue_spec(Path(settings.data_dir).name)
        raise DownstreamError(
            f"--data-dir {settings.data_dir}: give --dataset to say which GLUE task it holds ({', '.join(GLUE_TASKS)})"
        )

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        """``settings.data_dir`` in GLUE's layout, else ``<cache>/datasets/glue/<GLUE folder>``; nothing is
        downloaded.

        Raises:
            DownstreamError: no GLUE task named.
            DatasetUnavailableError: the folder or its train / development file missing (where GLUE is found said).
        """
        from downstream.errors import DatasetUnavailableError
        from downstream.registry import cache_root

        spec = cls.spec_of(settings)
        if settings.data_dir is not None:
            return find_glue_files(settings.data_dir, spec)
        folder = cache_root() / "datasets" / "glue" / spec.folder
        if not folder.is_dir():
            raise DatasetUnavailableError(
                f"GLUE {spec.folder} is not in {folder}, and GLUE is not downloaded by this package (its own hosting "
                f"has moved). Get it from {GLUE_SOURCES}; then give --data-dir <folder with train.tsv, {spec.dev_file}, "
                f"{spec.test_file}> or put the folder at {folder}"
            )
        return find_glue_files(folder, spec)

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {"glue_task": cls.spec_of(settings).name, "max_train_examples": settings.max_train_examples,
                "max_eval_examples": settings.max_eval_examples, "double_unordered": settings.double_unordered, "re_head": settings.re_head}  # fmt: skip

    @classmethod
    def dataset_defaults(cls, dataset: str | None, data_dir: Path | None) -> dict[str, Any]:
        """The selection metric of the GLUE task named (the original's reported metric), else none."""
        for name in (dataset, Path(data_dir).name if data_dir is not None else None):
            if is_glue_name(name):
                return {"metric": glue_spec(name).selection}
        return {}
