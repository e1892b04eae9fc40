"""The interface between the trial runner and a task kind (NER, RE, and the next ones).

A task kind is a class with the attributes and methods of :class:`Task`, registered in
``downstream.kinds.TASKS`` under its ``kind``. The trial runner (``downstream.trial.runner``) reads nothing else
about it: adding a task kind is one module implementing ``Task`` and one entry in that table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

SPLITS = ("train", "dev", "test")

#: Task kind -> the kind-specific settings (:data:`downstream.settings.KIND_OPTIONS`) it reads, filled as
#: each kind's class is defined (:class:`TaskKind`). The settings fingerprint leaves out the others.
KIND_OWN_OPTIONS: dict[str, tuple[str, ...]] = {}

#: Task kind -> its class, filled as each kind's class is defined: what the settings fingerprint asks
#: about a kind (:meth:`TaskKind.fingerprint_extras`) without importing any.
KIND_CLASSES: dict[str, type] = {}


def first_questions(examples: list, n: int | None) -> list:
    """The examples of the first ``n`` questions (by ``question_id``, in file order; all for ``None``):
    ``--max-eval-examples`` on data where several examples answer one question."""
    if n is None:
        return examples
    kept: set = set()
    out = []
    for example in examples:
        if example.question_id not in kept:
            if len(kept) == n:
                continue
            kept.add(example.question_id)
        out.append(example)
    return out


def best_constant(score, labels: list[str], n: int, metrics: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The baseline of a classification split: for each metric, the best score of predicting one class for
    every unit (the majority class for accuracy; for an F1 over positive classes, all-positive).

    Args:
        score: the kind's metric function of the split's predictions (gold fixed).
        labels: the classes.
        n: the number of units scored.
        metrics: the metrics to give.

    Returns:
        ``{"values": {metric: best value}, "predictions": {metric: the class that gives it}}``.
    """
    scores = {label: score([label] * n) for label in labels}
    best = {m: max(labels, key=lambda label, m=m: scores[label][m]) for m in metrics}
    return {"values": {m: scores[best[m]][m] for m in metrics}, "predictions": best}


def argmax_logits(logits, labels):
    """``preprocess_logits_for_metrics`` hook: keep predicted ids, not the ``(batch, [seq,] labels)`` logits.

    A model that returns several logits tensors (question answering: start and end) gives a tuple; each is
    reduced and the tuple kept, so no output is silently dropped.
    """
    if isinstance(logits, tuple):
        reduced = tuple(x.argmax(dim=-1) for x in logits)
        return reduced[0] if len(reduced) == 1 else reduced
    return logits.argmax(dim=-1)


@dataclass
class EvalResult:
    """Metrics of one split (``metrics``: scalars and reports) and the predictions, ready to write."""

    metrics: dict[str, Any]
    predictions: Any


class Task(Protocol):
    """What the trial runner needs from a task kind.

    Class attributes:
        kind: the ``--loader`` name (``ner``, ``re``, ``qa``, ``yesno``, ``glue``, ``similarity``,
            ``doc-classification``).
        headline_metrics: metrics summarised over trials (``results.json`` ``summary``), the first is the
            headline; the terminal table shows the F1.
        report_metrics: the metrics of ``results.md``'s summary rows.
        trial_metrics: the metrics of ``results.md``'s per-trial columns (dev, then test).
        table_metrics: the metrics of the terminal table and of the epoch rows shown while training.
        default_settings: finetune defaults that differ for this kind (e.g. QA: ``max_seq_length`` 384);
            options given on the command line and protocols override them.
        count_columns: ``results.md`` split-size columns, ``(counts key, column title)``.
        size_key: the counts key with the number of units of a split (for logs).
        predictions_filename: the test predictions file of each trial.
        own_options: the kind-specific settings (:data:`downstream.settings.KIND_OPTIONS`) this kind
            reads; the others do not change its result and stay out of the trial fingerprint, so a run's
            finished trials are reused when only those change.
        exclusive_options: options only this kind takes (``settings_from_options`` refuses them for the
            others), each with the error message naming the kind.
        original_task_names, original_result_keys: the original ``run_finetuning.py`` task names this kind
            runs, and the metrics its ``<task>_results.txt`` lines show (:mod:`downstream.original`).
        suite, benchmark_metrics: ``bioelectra benchmark``'s suite of this kind's datasets and the
            ``(metric, title)`` of its table row(s).
        card, card_metrics, card_table_metrics: the model card's ``pipeline_tag``, ``task_name`` and Hub
            ``tag``; its front-matter metrics; its results-table metrics. ``card_sections(settings, labels,
            f1_name)`` gives its usage, labels, limits and scores texts.

    A kind without a Trainer model (entity linking) has a classmethod ``run_trials(settings, *, summarize)``
    that runs its trials and writes its reports itself; ``downstream.trial.runner.run_trials`` hands such a
    run to it, with the runner's summary over trials (``downstream.trial.reports.summarize``, which a kind
    cannot import: the reports import the table of kinds).

    Instance attributes: ``labels``, ``f1_name``, ``metric_mode``, ``model_class_name``. A kind whose datasets
    differ in their metrics or prediction file (GLUE) sets ``headline_metrics``, ``report_metrics``,
    ``trial_metrics``, ``table_metrics`` and ``predictions_filename`` on the instance too. A kind whose data may
    come without a training split (PICO) sets ``not_trainable``, the reason, on such an instance:
    :func:`downstream.kinds.prepare_task` then refuses to train, and evaluation still works.
    """

    kind: ClassVar[str]
    headline_metrics: ClassVar[tuple[str, ...]]
    report_metrics: ClassVar[tuple[str, ...]]
    trial_metrics: ClassVar[tuple[str, ...]]
    table_metrics: ClassVar[tuple[str, ...]]
    default_settings: ClassVar[dict[str, Any]]
    count_columns: ClassVar[tuple[tuple[str, str], ...]]
    size_key: ClassVar[str]
    predictions_filename: ClassVar[str]
    own_options: ClassVar[tuple[str, ...]]
    exclusive_options: ClassVar[dict[str, str]]
    card: ClassVar[dict[str, str]]
    suite: ClassVar[str]
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]]
    card_metrics: ClassVar[tuple[str, ...]]
    card_table_metrics: ClassVar[tuple[str, ...]]
    original_task_names: ClassVar[tuple[str, ...]]
    original_result_keys: ClassVar[tuple[str, ...]]
    labels: list[str]
    f1_name: str
    metric_mode: str
    model_class_name: str

    @classmethod
    def locate_files(cls, settings: Any) -> dict[str, Path]:
        """The split files of ``settings``' dataset or data folder (raises ``DownstreamError``)."""
        ...

    @classmethod
    def options(cls, settings: Any) -> dict[str, Any]:
        """The constructor's keyword options taken from ``settings``."""
        ...

    @classmethod
    def dataset_defaults(cls, dataset: str | None, data_dir: Path | None) -> dict[str, Any]:
        """Settings the kind gives this dataset (e.g. a GLUE task's selection metric), under the options given."""
        ...

    def counts(self) -> dict[str, dict[str, Any]]:
        """Per split: its file and sizes (``count_columns`` keys)."""
        ...

    def use_labels(self, labels: list[str]) -> None:
        """Take a saved model's label order (evaluation of a fine-tuned model); raises on another set."""
        ...

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        """Tokenise every split once."""
        ...

    def dataset(self, name: str) -> Any:
        """The encoded split ``name`` (a torch dataset the Trainer iterates)."""
        ...

    def evaluator(self, name: str) -> Any:
        """``compute_metrics`` for split ``name``; its ``last`` holds the full :class:`EvalResult`."""
        ...

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None) -> Any:
        ...

    def build_model(self, checkpoint: str, **config_overrides) -> Any:
        """A fresh model with this task's head from ``checkpoint`` (head initialised from the torch seed)."""
        ...

    def reduce_logits(self, logits, labels) -> Any:
        """``preprocess_logits_for_metrics``: what the evaluator needs of the logits (e.g. argmax ids)."""
        ...

    @staticmethod
    def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
        """The model card's usage example, labels section, limits and what the scores are."""
        ...

    @classmethod
    def card_info(cls, labels: list[str]) -> dict[str, str]:
        """The card's ``pipeline_tag``, ``task_name`` and Hub ``tag`` for a model with ``labels``."""
        ...

    def analysis(self, results: dict[str, EvalResult], info: dict[str, Any]) -> tuple[str, str] | None:
        """The texts of ``classification_report.txt`` and ``errors.txt`` of one trial (``results``: dev and
        test :class:`EvalResult`; ``info``: ``best_epoch``, ``train_loss``, ``dev_loss``), or ``None``."""
        ...

    def write_predictions(self, path: Path, name: str, result: EvalResult) -> None:
        ...

    def report_extras(self, settings: Any) -> dict[str, Any]:
        """Kind-specific entries of ``results.json``."""
        ...

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        """Kind-specific lines at the end of ``results.md``."""
        ...


class TaskKind:
    """Base of the task kind classes: defining one records its ``own_options`` under its ``kind``
    (:data:`KIND_OWN_OPTIONS`), so the settings fingerprint knows them without importing any kind."""

    kind: ClassVar[str]
    own_options: ClassVar[tuple[str, ...]] = ()
    exclusive_options: ClassVar[dict[str, str]] = {}
    #: The original ``run_finetuning.py`` task names this kind runs (``downstream.original``), besides the
    #: registered benchmarks of the kind.
    original_task_names: ClassVar[tuple[str, ...]] = ()
    #: The development metrics of a trial in the original's ``<task>_results.txt`` line, in order (those present).
    original_result_keys: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1", "micro_f1", "accuracy")
    #: The development predictions file of each trial (and of ``evaluate``), written with ``write_predictions``
    #: beside the test one; ``None``: only the test predictions are written.
    dev_predictions_filename: ClassVar[str | None] = None

    @classmethod
    def dataset_defaults(cls, dataset: str | None, data_dir: Path | None) -> dict[str, Any]:
        """Settings this kind gives the dataset named (e.g. GLUE's selection metric per task), under the
        options given and any protocol's; none by default."""
        return {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            KIND_OWN_OPTIONS[cls.kind] = tuple(cls.own_options)
            KIND_CLASSES[cls.kind] = cls

    def baseline(self, name: str) -> dict[str, dict[str, Any]] | None:
        """The single-class baseline of split ``name`` (:func:`best_constant`), or ``None`` (no such
        baseline for this kind)."""
        return None

    def adopt_dev_result(self, dev: EvalResult) -> None:
        """Take what the development split's result chose (a decision threshold) for the test evaluation that
        follows: called with the kept (best) epoch's development result before the test set is scored. Nothing
        by default."""

    def predicted_classes(self, result: EvalResult) -> list[str] | None:
        """The classes a split's predictions use, one per predicted unit (``None``: not a classification)."""
        return None

    @classmethod
    def card_info(cls, labels: list[str]) -> dict[str, str]:
        """The card's ``pipeline_tag``, ``task_name`` and Hub ``tag`` for a model with ``labels`` (default: the
        kind's ``card``; a kind whose datasets are different tasks, NER's chunking, says so here)."""
        return cls.card

    @staticmethod
    def fingerprint_extras(settings: Any) -> dict[str, Any]:
        """Values this kind derives from the settings that change a trial's result (NER: the entity type of
        bare tags), added to the settings fingerprint."""
        return {}

    @classmethod
    def selection_metrics(cls) -> tuple[str, ...]:
        """The development metrics that can pick the best epoch (``--metric``): the kind's reported
        metrics and the loss."""
        return (*cls.headline_metrics, "loss")


class ClassifierTask(TaskKind):
    """What the task kinds that classify into a label list share: the label order (``labels``,
    ``label2id``, ``id2label``), taking a saved model's order, and argmax logits. A subclass sets its labels
    with :meth:`set_labels` and extends it for what it derives from them."""

    labels: list[str]

    def set_labels(self, labels: list[str]) -> None:
        self.labels = list(labels)
        self.label2id = {label: i for i, label in enumerate(self.labels)}
        self.id2label = dict(enumerate(self.labels))

    def use_labels(self, labels: list[str]) -> None:
        """Take a saved model's label order (its ``config.id2label``), before ``encode``.

        Raises:
            DownstreamError: the model's label set differs from the data's (both listed).
        """
        from downstream.errors import DownstreamError

        if set(labels) != set(self.labels):
            raise DownstreamError(f"the model's labels {sorted(labels)} do not match the data's {sorted(self.labels)}")
        self.set_labels(labels)

    def reduce_logits(self, logits, labels):
        return argmax_logits(logits, labels)
