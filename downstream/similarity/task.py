"""The sentence-similarity task kind (``--loader similarity --dataset biosses``): a sentence pair into the
sequence classifier with one output (the regression head GLUE's STS-B uses, ``problem_type="regression"``,
mean squared error on the gold score), scored by Pearson correlation (BLURB's metric for BIOSSES: Gu et al.
2021, "Domain-Specific Language Model Pretraining for Biomedical Natural Language Processing", Table 2) with
Spearman correlation beside it (``downstream.task.Task``). Reading: :mod:`downstream.similarity.data`.

The input is ``[CLS] sent1 [SEP] sent2 [SEP]``, the longer sentence cut first
(:func:`downstream.classification.encode_sentence_pairs`); the target is the gold score itself (BIOSSES:
0-4), so a prediction is on the data's own scale. Every development and test prediction is written
(``dev_predictions.tsv``, ``test_predictions.tsv``: ``pair_id<TAB>gold<TAB>prediction``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bioelectra.textio import atomic_write_text
from downstream.classification import (
    RE_HEADS,
    EncodedReSplit,
    encode_pair_splits,
    first_output,
    regression_scores,
)
from downstream.errors import DownstreamError
from downstream.similarity.analysis import similarity_errors, similarity_report
from downstream.similarity.card import CARD, card_sections
from downstream.similarity.data import SimilaritySplit, find_similarity_files, read_similarity_file
from downstream.task import SPLITS, ClassifierTask, EvalResult

#: How the similarity scores are computed, stated in every result.
SIMILARITY_METRIC_MODE = (
    "Pearson correlation of predicted and gold scores (BLURB's BIOSSES metric, Gu et al. 2021), Spearman "
    "correlation and the mean squared error beside it (scipy.stats.pearsonr / spearmanr)"
)


class SimilarityEvaluator:
    """``compute_metrics`` on one split: the one output of each pair back in file order, Pearson and Spearman
    correlation (:func:`downstream.classification.regression_scores`). ``last`` holds the result; its
    predictions are the scores, in file order."""

    def __init__(self, split: SimilaritySplit, encoded: EncodedReSplit):
        self.split, self.encoded = split, encoded
        self.last: EvalResult | None = None

    def __call__(self, eval_prediction) -> dict[str, float]:
        import numpy as np

        values = np.asarray(eval_prediction.predictions, dtype=np.float64).reshape(-1)  # (pairs,), length order
        if len(values) != len(self.split.examples):
            raise DownstreamError(f"{len(values)} predictions for {len(self.split.examples)} pairs of {self.split.path}")
        predicted = [0.0] * len(values)
        for position, value in zip(self.encoded.example_index, values, strict=True):
            predicted[position] = float(value)
        metrics = regression_scores([e.label for e in self.split.examples], predicted)
        metrics["mode"] = SIMILARITY_METRIC_MODE
        self.last = EvalResult(metrics=metrics, predictions=predicted)
        return {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


class SimilarityTask(ClassifierTask):
    """Sentence similarity: scored sentence pairs, one regression output (``score``).

    Args:
        files: ``{"train", "dev", "test"}`` (:func:`downstream.similarity.data.find_similarity_files`).
        max_train_examples: keep only the first N training pairs.
        max_eval_examples: score only the first N development and test pairs (a smoke run: not comparable
            with published figures).
        re_head: the classifier head, as for relation extraction and GLUE (``electra``: dropout + linear over
            ``[CLS]``, ELECTRA's; ``hf``: ``ElectraClassificationHead``).

    Raises:
        DataFormatError: bad rows (file and line named).
        DownstreamError: an unknown head.
    """

    kind = "similarity"
    headline_metrics: ClassVar[tuple[str, ...]] = ("pearson", "spearman")
    report_metrics: ClassVar[tuple[str, ...]] = ("pearson", "spearman")
    trial_metrics: ClassVar[tuple[str, ...]] = ("pearson", "spearman")
    table_metrics: ClassVar[tuple[str, ...]] = ("pearson", "spearman")
    #: The best epoch is the one with the best development Pearson correlation (BLURB's metric).
    default_settings: ClassVar[dict[str, Any]] = {"metric": "pearson"}
    card: ClassVar[dict[str, str]] = CARD
    suite: ClassVar[str] = "similarity"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("pearson", "Pearson"),)
    card_metrics: ClassVar[tuple[str, ...]] = ("pearson", "spearman")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("pearson", "spearman")
    card_sections = staticmethod(card_sections)
    own_options = ("re_head",)
    original_result_keys: ClassVar[tuple[str, ...]] = ("pearson", "spearman", "mse")
    f1_name = "Pearson correlation"
    metric_mode = SIMILARITY_METRIC_MODE
    count_columns = (("examples", "pairs"), ("truncated", "truncated"))
    size_key = "examples"
    predictions_filename = "test_predictions.tsv"
    dev_predictions_filename: ClassVar[str | None] = "dev_predictions.tsv"

    def __init__(self, files: dict[str, Path], *, max_train_examples: int | None = None, max_eval_examples: int | None = None,
                 re_head: str = "electra"):  # fmt: skip
        if re_head not in RE_HEADS:
            raise DownstreamError(f"unknown classifier head {re_head!r}; expected one of {', '.join(RE_HEADS)}")
        self.re_head, self.model_class_name = re_head, RE_HEADS[re_head]
        self.files = dict(files)
        self.splits: dict[str, SimilaritySplit] = {name: read_similarity_file(files[name]) for name in SPLITS}
        self.file_counts = {name: len(split.examples) for name, split in self.splits.items()}
        if max_train_examples is not None:
            self.splits["train"].examples = self.splits["train"].examples[:max_train_examples]
        if max_eval_examples is not None:
            for name in ("dev", "test"):
                self.splits[name].examples = self.splits[name].examples[:max_eval_examples]
        self.set_labels(["score"])
        self.encoded: dict[str, EncodedReSplit] = {}

    def counts(self) -> dict[str, dict[str, Any]]:
        counts = {}
        for name, split in self.splits.items():
            low_high = split.score_range()
            counts[name] = {
                "file": str(split.path), "examples": len(split.examples), "examples_in_file": self.file_counts[name],
                "score_range": list(low_high) if low_high else None, **(self.encoded[name].stats if name in self.encoded else {}),
            }  # fmt: skip
        return counts

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        examples = {name: split.examples for name, split in self.splits.items()}
        self.encoded.update(encode_pair_splits(examples, tokenizer, float, max_seq_length=max_seq_length, unit="pairs"))

    def dataset(self, name: str) -> EncodedReSplit:
        return self.encoded[name]

    def evaluator(self, name: str) -> SimilarityEvaluator:
        return SimilarityEvaluator(self.splits[name], self.encoded[name])

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorWithPadding

        return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def build_model(self, checkpoint: str, **config_overrides):
        """:func:`downstream.classification.load_sequence_classifier` with one output (``problem_type="regression"``)."""
        from downstream.classification import load_sequence_classifier

        config_overrides = {"problem_type": "regression", **config_overrides}
        return load_sequence_classifier(checkpoint, head=self.re_head, labels=self.labels, **config_overrides)

    def reduce_logits(self, logits, labels):
        """The one output ``(batch,)``."""
        return first_output(logits, labels)

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str]:
        """``classification_report.txt`` (correlations, mean squared error) and ``errors.txt`` (the largest errors)."""
        report = similarity_report({name: r.metrics for name, r in results.items()}, info)
        return report, similarity_errors({name: (self.splits[name], r.predictions) for name, r in results.items()})

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        """``pair_id<TAB>gold<TAB>prediction`` with a header, one line per pair in file order (the gold score as
        read, the prediction to eight significant digits: enough to recompute the correlations)."""
        rows = ["pair_id\tgold\tprediction"]
        rows += [f"{e.index}\t{e.label:g}\t{p:.8g}" for e, p in zip(self.splits[name].examples, result.predictions, strict=True)]
        atomic_write_text(Path(path), "\n".join(rows) + "\n")

    def report_extras(self, settings) -> dict[str, Any]:
        return {"model_class": self.model_class_name, "selection_metric": settings.metric,
                "dev_predictions_file": self.dev_predictions_filename}  # fmt: skip

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """The selection metric, the gold score range of each split, and the prediction files."""
        ranges = "; ".join(
            f"{split} {c['score_range'][0]:g}-{c['score_range'][1]:g}"
            for split in SPLITS if (c := report["counts"].get(split, {})).get("score_range")
        )  # fmt: skip
        return [
            "",
            f"Best epoch by development `{report.get('selection_metric')}`. Gold scores: {ranges}.",
            "Every prediction: `trial-<i>/dev_predictions.tsv` and `trial-<i>/test_predictions.tsv` (pair_id, gold, prediction).",
        ]

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        """The files of ``settings.data_dir`` or of the registered dataset (never downloaded: where to get it said).

        Raises:
            DownstreamError: neither is given, or an unknown dataset.
            DatasetUnavailableError: the files are missing.
        """
        from downstream.registry import locate_task_files

        return locate_task_files(settings, cls.kind, find_similarity_files)

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {"max_train_examples": settings.max_train_examples, "max_eval_examples": settings.max_eval_examples,
                "re_head": settings.re_head}  # fmt: skip
