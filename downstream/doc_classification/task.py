"""The multi-label document-classification task kind (``--loader doc-classification --dataset hoc``): BLURB's
HoC (Hallmarks of Cancer), an abstract to any of its ten hallmarks (``downstream.task.Task``).

As BLURB's own fine-tuning and evaluation (module docstring of :mod:`downstream.doc_classification.metrics`):
the model classifies each SENTENCE (``[CLS] sentence [SEP]``, one sigmoid per label, the binary cross-entropy
against the sentence's own flags: ``problem_type="multi_label_classification"`` on the sequence-classifier
heads GLUE and relation extraction use); an ABSTRACT gets the union of its sentences' labels, and is scored
against the union of their gold labels. So an abstract longer than ``max_seq_length`` sub-tokens (many of HoC's
are longer than 512) is never cut: each sentence is an input, and only a sentence longer than
``max_seq_length`` is cut (counted in ``truncated``). An abstract with no gold label (HoC: 272) scores by
the labels it is wrongly given.

The decision threshold on the sentence probabilities is chosen on the development split (the best BLURB
micro-F1 over :data:`~downstream.doc_classification.metrics.THRESHOLDS`), recorded in the development result
(``threshold``) and used for the test split; the F1 at BLURB's fixed 0.5 is reported beside it.
Every development and test abstract's labels are written (``dev_predictions.tsv``, ``test_predictions.tsv``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bioelectra.textio import atomic_write_text
from downstream.classification import RE_HEADS, EncodedReSplit, encode_pair_splits
from downstream.doc_classification.analysis import doc_errors, doc_report
from downstream.doc_classification.card import CARD, card_sections
from downstream.doc_classification.data import DocSplit, find_doc_files, label_names, read_doc_file
from downstream.doc_classification.metrics import (
    BLURB_THRESHOLD,
    DOC_METRIC_MODE,
    choose_threshold,
    decide,
    doc_scores,
)
from downstream.errors import DataFormatError, DownstreamError
from downstream.task import ClassifierTask, EvalResult, best_constant

#: The baseline that gives every abstract every label (the best single prediction for an F1 on rare labels).
EVERY_LABEL = "every label"


class DocEvaluator:
    """``compute_metrics`` on one split: sentence logits back in file order, sigmoid probabilities, each
    abstract's highest per label, the labels over the threshold, BLURB's micro-F1 (``threshold`` ``None``:
    chosen on this split, the development one). ``last`` holds the result; its predictions are one row per
    abstract: ``doc_id``, ``gold`` and ``predicted`` label positions, ``probabilities``."""

    def __init__(self, split: DocSplit, encoded: EncodedReSplit, labels: list[str], threshold: float | None):
        self.split, self.encoded, self.labels, self.threshold = split, encoded, labels, threshold
        self.last: EvalResult | None = None

    def __call__(self, eval_prediction) -> dict[str, float]:
        import numpy as np

        logits = np.asarray(eval_prediction.predictions, dtype=np.float64)  # (sentences, labels), length order
        if logits.shape != (len(self.split.sentences), len(self.labels)):
            raise DownstreamError(f"logits of shape {logits.shape} for {len(self.split.sentences)} sentences and {len(self.labels)} labels")
        probabilities = np.empty_like(logits)
        probabilities[self.encoded.example_index] = 1.0 / (1.0 + np.exp(-logits))  # file order
        gold_of = self.split.document_labels()
        docs = list(self.split.documents)
        doc_probabilities = [probabilities[self.split.documents[doc]].max(axis=0) for doc in docs]  # (labels,) each
        gold = [gold_of[doc] for doc in docs]
        chosen = self.threshold is None
        threshold = choose_threshold(gold, doc_probabilities, self.labels) if chosen else self.threshold
        predicted = decide(doc_probabilities, threshold)
        metrics = doc_scores(gold, predicted, self.labels)
        metrics["threshold"] = threshold
        metrics["threshold_source"] = "chosen on this split (development)" if chosen else "chosen on the development split"
        metrics["f1_at_0_5"] = doc_scores(gold, decide(doc_probabilities, BLURB_THRESHOLD), self.labels)["f1"]
        metrics["num_sentences"] = len(self.split.sentences)
        rows = [{"doc_id": doc, "gold": sorted(g), "predicted": sorted(p), "probabilities": [round(float(x), 6) for x in probs]}
                for doc, g, p, probs in zip(docs, gold, predicted, doc_probabilities, strict=True)]  # fmt: skip
        self.last = EvalResult(metrics=metrics, predictions=rows)
        return {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


class DocClassificationTask(ClassifierTask):
    """Multi-label document classification over sentence-split abstracts (module docstring).

    Args:
        files: ``{"train", "dev", "test"}`` (:func:`downstream.doc_classification.data.find_doc_files`).
        max_train_examples: keep only the first N training sentences.
        max_eval_examples: score only the first N development and test abstracts (a smoke run: not comparable
            with published figures).
        re_head: the classifier head, as for relation extraction (``electra``: dropout + linear over
            ``[CLS]``, ELECTRA's; ``hf``: ``ElectraClassificationHead``).

    Raises:
        DataFormatError: bad rows (file and line named), splits with different numbers of label flags.
        DownstreamError: an unknown head.
    """

    kind = "doc-classification"
    headline_metrics: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall")
    report_metrics: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall")
    trial_metrics: ClassVar[tuple[str, ...]] = ("f1",)
    table_metrics: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall")
    default_settings: ClassVar[dict[str, Any]] = {}
    card: ClassVar[dict[str, str]] = CARD
    suite: ClassVar[str] = "doc-classification"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("f1", "micro-F1"),)
    card_metrics: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall")
    card_sections = staticmethod(card_sections)
    own_options = ("re_head",)
    f1_name = "micro-F1 (BLURB, abstracts x labels)"
    metric_mode = DOC_METRIC_MODE
    count_columns = (("abstracts", "abstracts"), ("sentences", "sentences"), ("truncated", "truncated"))
    size_key = "abstracts"
    predictions_filename = "test_predictions.tsv"
    dev_predictions_filename: ClassVar[str | None] = "dev_predictions.tsv"

    def __init__(self, files: dict[str, Path], *, max_train_examples: int | None = None, max_eval_examples: int | None = None,
                 re_head: str = "electra"):  # fmt: skip
        if re_head not in RE_HEADS:
            raise DownstreamError(f"unknown classifier head {re_head!r}; expected one of {', '.join(RE_HEADS)}")
        self.re_head, self.model_class_name = re_head, RE_HEADS[re_head]
        self.files = dict(files)
        self.splits: dict[str, DocSplit] = {"train": read_doc_file(files["train"])}
        num_labels = len(self.splits["train"].sentences[0].label)
        for name in ("dev", "test"):
            try:
                self.splits[name] = read_doc_file(files[name], num_labels=num_labels)
            except DataFormatError as exc:
                raise DataFormatError(f"{exc} (the training file {files['train']} has {num_labels})") from None
        self.file_counts = {name: (len(s.documents), len(s.sentences)) for name, s in self.splits.items()}
        self.splits["train"].keep_sentences(max_train_examples)
        for name in ("dev", "test"):
            self.splits[name].keep_documents(max_eval_examples)
        self.set_labels(label_names(num_labels))
        #: The decision threshold the test split is scored with (:meth:`adopt_dev_result`).
        self.threshold: float | None = None
        self.encoded: dict[str, EncodedReSplit] = {}

    def adopt_dev_result(self, dev: EvalResult) -> None:
        """Score the test split with the threshold the kept epoch's development result chose."""
        self.threshold = dev.metrics.get("threshold", self.threshold)

    def baseline(self, name: str) -> dict[str, dict[str, Any]]:
        """The best single prediction for every abstract of split ``name``: one label, or every label."""
        split = self.splits[name]
        gold = [split.document_labels()[doc] for doc in split.documents]
        sets = {EVERY_LABEL: frozenset(range(len(self.labels))), **{label: frozenset([k]) for k, label in enumerate(self.labels)}}

        def score(predicted: list[str]) -> dict[str, Any]:
            return doc_scores(gold, [sets[p] for p in predicted], self.labels)

        return best_constant(score, list(sets), len(gold), self.headline_metrics)

    def predicted_classes(self, result: EvalResult) -> list[str]:
        """Each abstract's predicted label set as one string (``-``: none)."""
        return [" + ".join(self.labels[k] for k in row["predicted"]) or "-" for row in result.predictions]

    def counts(self) -> dict[str, dict[str, Any]]:
        counts = {}
        for name, split in self.splits.items():
            gold = split.document_labels()
            counts[name] = {
                "file": str(split.path), "abstracts": len(split.documents), "sentences": len(split.sentences),
                "abstracts_in_file": self.file_counts[name][0], "sentences_in_file": self.file_counts[name][1],
                "abstracts_without_label": sum(1 for g in gold.values() if not g),
                "labels": {label: sum(1 for g in gold.values() if k in g) for k, label in enumerate(self.labels)},
                **(self.encoded[name].stats if name in self.encoded else {}),
            }  # fmt: skip
        return counts

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        sentences = {name: split.sentences for name, split in self.splits.items()}
        self.encoded.update(encode_pair_splits(sentences, tokenizer, lambda flags: [float(v) for v in flags],
                                               max_seq_length=max_seq_length, unit="sentences"))  # fmt: skip

    def dataset(self, name: str) -> EncodedReSplit:
        return self.encoded[name]

    def evaluator(self, name: str) -> DocEvaluator:
        """The development split chooses its threshold; the test split uses the adopted one (0.5 before any)."""
        threshold = None if name == "dev" else (self.threshold if self.threshold is not None else BLURB_THRESHOLD)
        return DocEvaluator(self.splits[name], self.encoded[name], self.labels, threshold)

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorWithPadding

        return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def build_model(self, checkpoint: str, **config_overrides):
        """:func:`downstream.classification.load_sequence_classifier` with one sigmoid per label
        (``problem_type="multi_label_classification"``)."""
        from downstream.classification import load_sequence_classifier

        config_overrides = {"problem_type": "multi_label_classification", **config_overrides}
        return load_sequence_classifier(checkpoint, head=self.re_head, labels=self.labels, **config_overrides)

    def reduce_logits(self, logits, labels):
        """Keep the logits ``(batch, num_labels)``: the evaluator takes their sigmoid."""
        return logits[0] if isinstance(logits, tuple | list) else logits

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str]:
        """``classification_report.txt`` (per label and micro average, threshold) and ``errors.txt`` (wrong label sets)."""
        report = doc_report({name: r.metrics for name, r in results.items()}, info)
        return report, doc_errors({name: (self.splits[name], r.predictions) for name, r in results.items()}, self.labels)

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        """``pmid<TAB>gold<TAB>prediction<TAB>p_0 ... p_<K-1>`` with a header, one line per abstract: the gold
        and predicted label positions comma-separated (empty: none; names in ``results.json``'s ``labels``),
        then each label's highest sentence probability (the predicted labels are those over the threshold)."""
        header = ["pmid", "gold", "prediction", *(f"p_{k}" for k in range(len(self.labels)))]
        rows = ["\t".join(header)]
        rows += ["\t".join([r["doc_id"], ",".join(map(str, r["gold"])), ",".join(map(str, r["predicted"])),
                            *(f"{p:.4f}" for p in r["probabilities"])]) for r in result.predictions]  # fmt: skip
        atomic_write_text(Path(path), "\n".join(rows) + "\n")

    def report_extras(self, settings) -> dict[str, Any]:
        return {"model_class": self.model_class_name, "dev_predictions_file": self.dev_predictions_filename}

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """The thresholds of the trials, the mean per-label test F1 over trials, and where the predictions are."""
        trials = report.get("trials") or []
        lines = ["", "An abstract's labels are the union of its sentences' (BLURB); the threshold is chosen on dev."]
        thresholds = [t["dev"].get("threshold") for t in trials if isinstance(t.get("dev"), dict)]
        if thresholds:
            lines.append("Thresholds (per trial): " + ", ".join(f"{x:.2f}" for x in thresholds if x is not None) + ".")
        per_label = [t["test"].get("per_label") for t in trials if isinstance(t.get("test"), dict) and t["test"].get("per_label")]
        if per_label:
            lines += ["", "| label | test precision | test recall | test F1 | support |", "|---|---:|---:|---:|---:|"]
            for label in per_label[0]:
                mean = {m: sum(p[label][m] for p in per_label) / len(per_label) for m in ("precision", "recall", "f1")}
                lines.append(f"| {label} | {100 * mean['precision']:.2f} | {100 * mean['recall']:.2f} | {100 * mean['f1']:.2f} | "
                             f"{per_label[0][label]['support']} |")  # fmt: skip
            lines.append(f"(mean over {len(per_label)} trial(s))")
        lines.append("Every prediction: `trial-<i>/dev_predictions.tsv` and `trial-<i>/test_predictions.tsv` (pmid, gold, prediction).")
        return lines

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        """The files of ``settings.data_dir`` or of the registered dataset (never downloaded: where to get it said).

        Raises:
            DownstreamError: neither is given, or an unknown dataset.
            DatasetUnavailableError: the files are missing.
        """
        from downstream.registry import locate_task_files

        return locate_task_files(settings, cls.kind, find_doc_files)

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {"max_train_examples": settings.max_train_examples, "max_eval_examples": settings.max_eval_examples,
                "re_head": settings.re_head}  # fmt: skip
