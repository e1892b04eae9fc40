"""The PICO task kind (``--loader pico``): EBM PICO in BLURB's form, every token tagged ``O``, ``I-PAR``,
``I-INT`` or ``I-OUT`` by a token classifier (the token machinery of :mod:`downstream.token_classification`,
shared with NER), scored by BLURB's macro token-level F1 (:mod:`downstream.pico.metrics`).

What differs from NER is the data (IO tags, documents) and the metric (tokens, not spans); without a training
file (``../shared/data`` has only dev and test) a model trained elsewhere is scored with ``bioelectra evaluate``
and fine-tuning says where the file comes from (:data:`downstream.pico.data.TRAIN_FILE_HELP`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

from downstream.errors import DownstreamError
from downstream.pico.card import CARD, card_sections
from downstream.pico.data import (
    PICO_ELEMENTS,
    PICO_LABELS,
    TRAIN_FILE_HELP,
    PicoSplit,
    find_pico_files,
    read_pico_file,
    write_pico_predictions,
)
from downstream.pico.metrics import PICO_METRIC_MODE, pico_metrics
from downstream.task import SPLITS, ClassifierTask, EvalResult, best_constant
from downstream.token_classification import EncodedSplit, encode_split, word_predictions

logger = logging.getLogger(__name__)


class PicoEvaluator:
    """``compute_metrics`` on one PICO split: token predictions mapped back to every token of the file's
    sentences (windows reassembled), scored by :func:`downstream.pico.metrics.pico_metrics`; the full result
    (per-element scores, the predicted tags) is kept in ``last``."""

    def __init__(self, split: PicoSplit, encoded: EncodedSplit, id2label: dict[int, str]):
        self.split, self.encoded, self.id2label = split, encoded, id2label
        self.last: EvalResult | None = None

    def __call__(self, eval_prediction) -> dict[str, float]:
        predicted = word_predictions(self.encoded, eval_prediction.predictions, eval_prediction.label_ids)
        tags = [[self.id2label[i] for i in sentence] for sentence in predicted]
        metrics = pico_metrics([list(s.tags) for s in self.split.sentences], tags)
        if metrics["num_words"] != self.split.num_words:
            raise DownstreamError(f"evaluated {metrics['num_words']} tokens, the file has {self.split.num_words}")
        self.last = EvalResult(metrics=metrics, predictions=tags)
        return {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}


class PicoTask(ClassifierTask):
    """PICO extraction on EBM PICO (BLURB's files): token classification over ``O``, ``I-PAR``, ``I-INT``,
    ``I-OUT``.

    Args:
        files: ``{"dev", "test"[, "train"]}`` (:func:`downstream.pico.data.find_pico_files`).
        max_train_examples: keep only the first N training sentences.
        max_eval_examples: score only the first N development and test sentences.

    Raises:
        DataFormatError: a bad file (file and line named).
    """

    kind = "pico"
    model_class_name = "AutoModelForTokenClassification"
    headline_metrics = ("f1", "precision", "recall", "micro_f1", "accuracy")
    report_metrics = ("f1", "precision", "recall")
    trial_metrics = ("precision", "recall", "f1")
    table_metrics = ("f1",)
    default_settings: ClassVar[dict[str, Any]] = {}
    card: ClassVar[dict[str, str]] = CARD
    suite: ClassVar[str] = "pico"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("f1", "macro token-level F1"),)
    card_metrics: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1", "micro_f1", "accuracy")
    card_sections = staticmethod(card_sections)
    f1_name = "macro token-level F1 (PAR, INT, OUT)"
    metric_mode = PICO_METRIC_MODE
    count_columns = (("documents", "abstracts"), ("sentences", "sentences"), ("tokens", "tokens"), ("windows", "windows"))
    size_key = "sentences"
    predictions_filename = "test_predictions.tsv"
    #: Why this task cannot be fine-tuned (no training file), or ``None``: the trial runner refuses to train then.
    not_trainable: str | None = None

    def __init__(self, files: dict[str, Path], *, max_train_examples: int | None = None, max_eval_examples: int | None = None):
        self.files = dict(files)
        self.splits: dict[str, PicoSplit] = {name: read_pico_file(files[name]) for name in SPLITS if name in files}
        if "train" not in self.splits:  # evaluation of a model trained elsewhere needs none
            self.splits["train"] = PicoSplit(Path(files["dev"]).with_name("train.tsv"), [])
            self.not_trainable = f"{Path(files['dev']).parent}: no train.tsv. {TRAIN_FILE_HELP}"
        if max_train_examples is not None:
            self.splits["train"].sentences = self.splits["train"].sentences[:max_train_examples]
        if max_eval_examples is not None:
            for name in ("dev", "test"):
                self.splits[name].sentences = self.splits[name].sentences[:max_eval_examples]
        self.set_labels(list(PICO_LABELS))
        self.encoded: dict[str, EncodedSplit] = {}

    def baseline(self, name: str) -> dict[str, dict[str, Any]]:
        """The best single-tag prediction of split ``name`` over its tokens (``O`` for accuracy; for the F1s,
        the element whose all-tokens prediction scores best)."""
        gold = [list(s.tags) for s in self.splits[name].sentences]

        def score(constant: list[str]) -> dict[str, Any]:
            return pico_metrics(gold, [[constant[0]] * len(tags) for tags in gold])

        return best_constant(score, self.labels, 1, self.headline_metrics)

    def predicted_classes(self, result: EvalResult) -> list[str]:
        return [tag for sentence in result.predictions for tag in sentence]

    def counts(self) -> dict[str, dict[str, Any]]:
        counts = {name: {"file": str(split.path), **split.counts()} for name, split in self.splits.items()}
        if self.not_trainable:
            counts["train"]["file"] = f"absent ({self.splits['train'].path.name} not in {self.splits['train'].path.parent})"
        for name, encoded in self.encoded.items():
            counts[name].update(encoded.stats)
        return counts

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        """Tokenise every split once (dev and test sorted by length: less padding)."""
        for name, split in self.splits.items():
            if not split.sentences:  # no training file: nothing to encode
                self.encoded[name] = EncodedSplit([], [], [], [], 0, stats={"windows": 0, "split_sentences": 0, "truncated_words": 0, "subtokens": 0})
                continue
            self.encoded[name] = encode_split(split, tokenizer, self.label2id, max_seq_length=max_seq_length, sort_by_length=(name != "train"))

    def dataset(self, name: str) -> EncodedSplit:
        return self.encoded[name]

    def evaluator(self, name: str) -> PicoEvaluator:
        return PicoEvaluator(self.splits[name], self.encoded[name], self.id2label)

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None):
        from transformers import DataCollatorForTokenClassification

        return DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=pad_to_multiple_of)

    def build_model(self, checkpoint: str, **config_overrides):
        """A fresh token classifier with the four IO tags (:func:`downstream.token_classification.load_token_classifier`)."""
        from downstream.token_classification import load_token_classifier

        return load_token_classifier(checkpoint, self.labels, **config_overrides)

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str]:
        """``classification_report.txt`` (per element P / R / F1 and support, macro and micro) and ``errors.txt``
        (the first sentences with a wrong tag: token, gold, predicted)."""
        lines = [f"PICO scores ({PICO_METRIC_MODE}); best epoch {info.get('best_epoch')}", ""]
        for name, result in results.items():
            m = result.metrics
            lines += [f"{name}:", f"  {'element':<8} {'precision':>9} {'recall':>9} {'f1':>9} {'support':>9}"]
            for element in PICO_ELEMENTS:
                t = m["per_type"][element]
                lines.append(f"  {element:<8} {100 * t['precision']:9.2f} {100 * t['recall']:9.2f} {100 * t['f1']:9.2f} {t['support']:9d}")
            lines += [f"  {'macro':<8} {100 * m['precision']:9.2f} {100 * m['recall']:9.2f} {100 * m['f1']:9.2f}",
                      f"  micro-F1 {100 * m['micro_f1']:.2f}, token accuracy {100 * m['accuracy']:.2f}", ""]  # fmt: skip
        errors = []
        for name, result in results.items():
            wrong = [(s, p) for s, p in zip(self.splits[name].sentences, result.predictions, strict=True) if list(s.tags) != p]
            errors.append(f"{name}: {len(wrong)} of {len(result.predictions)} sentences with a wrong tag; the first 20:")
            for sentence, predicted in wrong[:20]:
                errors.append(f"  {sentence.document} (line {sentence.line}): " + " ".join(
                    w if g == p else f"[{w} {g}->{p}]" for w, g, p in zip(sentence.words, sentence.tags, predicted, strict=True)))
            errors.append("")
        return "\n".join(lines), "\n".join(errors)

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        write_pico_predictions(path, self.splits[name], result.predictions)

    def report_extras(self, settings) -> dict[str, Any]:
        return {"format": "EBM PICO in BLURB's form (IO tags O, I-PAR, I-INT, I-OUT)"}

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """Tokens per tag of each split."""
        lines = ["", "Tokens per tag:", ""]
        for split in SPLITS:
            tags = report["counts"].get(split, {}).get("tags") or {}
            lines.append(f"- {split}: " + (", ".join(f"{k} {v}" for k, v in tags.items()) or "no file"))
        return lines

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        """The PICO files of ``settings.data_dir`` or of the registered dataset (dev and test; train when present).

        Raises:
            DownstreamError: neither is given, or dev / test are missing.
        """
        from downstream.registry import locate_task_files

        return locate_task_files(settings, cls.kind, find_pico_files)

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {"max_train_examples": settings.max_train_examples, "max_eval_examples": settings.max_eval_examples}
