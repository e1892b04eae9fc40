"""The entity-linking task kind (``--loader linking``): gold disease or chemical mentions to their MeSH / OMIM
concept ids, accuracy@1 and @5 as BioSyn scores them (``downstream.task.Task``).

A linking run has no classifier to fine-tune with the Trainer: the kind runs its own trials
(:meth:`LinkingTask.run_trials`, which ``downstream.trial.runner.run_trials`` hands the run to), and the
Trainer-facing members of the interface refuse with a clear error. Reading, preprocessing and scoring:
:mod:`downstream.linking.run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from downstream.errors import DownstreamError
from downstream.task import TaskKind

#: The linkers ``--linker`` names.
LINKERS = ("sparse", "dense", "biosyn")

#: What a trained linker scored on the test set is trained on (``--train-on``): the training mentions, or the
#: training and development mentions after the development set has chosen (BioSyn's README: "we use
#: development (dev) set to search the hyperparameters, and train on traindev (train+dev) set to report the
#: final performance"; :func:`downstream.linking.run.run_dense`).
TRAIN_ON = ("train", "train+dev")

_NOT_TRAINER = "the linking kind runs its own trials (downstream.linking.run), not through the Trainer"


class LinkingTask(TaskKind):
    """Entity linking of gold mentions (module docstring).

    Args:
        files: the benchmark's files (:func:`downstream.linking.spec.locate`).
        dataset: the benchmark's name.
    """

    kind = "linking"
    headline_metrics = ("accuracy_at_1", "accuracy_at_5")
    report_metrics = ("accuracy_at_1", "accuracy_at_5")
    trial_metrics = ("accuracy_at_1", "accuracy_at_5")
    table_metrics = ("accuracy_at_1", "accuracy_at_5")
    #: The dense linker's training (:mod:`downstream.linking.dense`): SapBERT trains BERT-base at 2e-5, batch 512
    #: pairs, one epoch; a small encoder takes ELECTRA-Small's fine-tuning rate (Clark et al. 2020: 3e-4 for
    #: Small, here 1e-4 as a contrastive objective moves further) and a batch a CPU holds.
    default_settings: ClassVar[dict[str, Any]] = {
        "metric": "accuracy_at_1", "num_trials": 1, "learning_rate": 1e-4, "per_device_train_batch_size": 128,
        "num_train_epochs": 1.0,
    }  # fmt: skip
    count_columns = (("queries", "queries"), ("dropped", "dropped"))
    size_key = "queries"
    predictions_filename = "test_predictions.tsv"
    own_options = ("linker", "train_on")
    exclusive_options: ClassVar[dict[str, str]] = {
        "linker": "--linker is an option of --loader linking", "train_on": "--train-on is an option of --loader linking",
    }  # fmt: skip
    card: ClassVar[dict[str, str]] = {"pipeline_tag": "feature-extraction", "task_name": "Entity linking", "tag": "entity-linking"}
    suite: ClassVar[str] = "linking"
    benchmark_metrics: ClassVar[tuple[tuple[str, str], ...]] = (("accuracy_at_1", "accuracy@1"),)
    card_metrics: ClassVar[tuple[str, ...]] = ("accuracy_at_1", "accuracy_at_5")
    card_table_metrics: ClassVar[tuple[str, ...]] = ("accuracy_at_1", "accuracy_at_5")
    original_result_keys: ClassVar[tuple[str, ...]] = ("accuracy_at_1", "accuracy_at_5")

    labels: list[str]
    f1_name = "accuracy@1"
    metric_mode = "accuracy@k on gold mentions (BioSyn)"
    model_class_name = "AutoModel"

    def __init__(self, files: dict[str, Path], *, dataset: str) -> None:
        self.files = files
        self.dataset_name = dataset
        self.labels = []

    @classmethod
    def selection_metrics(cls) -> tuple[str, ...]:
        """``--metric``: accuracy@1 or @5 (no loss: the sparse linker has none)."""
        return cls.headline_metrics

    @classmethod
    def locate_files(cls, settings) -> dict[str, Path]:
        from downstream.linking.spec import data_root, linking_spec, locate

        return locate(linking_spec(settings.dataset), data_root(settings.data_dir))

    @classmethod
    def options(cls, settings) -> dict[str, Any]:
        return {"dataset": settings.dataset}

    @classmethod
    def run_trials(cls, settings, *, summarize) -> dict[str, Any]:
        """The run of ``settings`` (``--linker sparse``: one deterministic trial; ``dense``: ``num_trials`` seeded
        trainings from ``settings.checkpoint``) and its reports.

        Args:
            settings: the run's :class:`downstream.settings.FinetuneSettings`.
            summarize: the summary over trials (``downstream.trial.reports.summarize``).

        Returns:
            The content of ``results.json``.

        Raises:
            DownstreamError: an unknown linker or dataset, missing or bad files, an output path that is a file.
        """
        from downstream.linking.report import write_linking_reports
        from downstream.linking.run import load_linking_data, run_dense, run_sparse

        if settings.linker not in LINKERS:
            raise DownstreamError(f"--linker {settings.linker!r}: expected one of {', '.join(LINKERS)}")
        if settings.train_on not in TRAIN_ON:
            raise DownstreamError(f"--train-on {settings.train_on!r}: expected one of {', '.join(TRAIN_ON)}")
        if settings.linker == "sparse" and settings.train_on != "train":
            raise DownstreamError("--train-on: the sparse linker is not trained (its n-gram range is chosen on dev); "
                                  "give it with --linker dense or biosyn")  # fmt: skip
        if settings.dataset is None:
            raise DownstreamError("--loader linking needs --dataset NAME (and --data-dir DIR with its files, if not cached)")
        output_dir = Path(settings.output_dir)
        if output_dir.exists() and not output_dir.is_dir():
            raise DownstreamError(f"--output-dir {output_dir}: exists and is a file, not a folder")
        data = load_linking_data(settings.dataset, settings.data_dir, max_eval_examples=settings.max_eval_examples)
        output_dir.mkdir(parents=True, exist_ok=True)
        records = run_sparse(settings, data) if settings.linker == "sparse" else run_dense(settings, data)
        return write_linking_reports(settings, data.spec, data.counts, records, summarize=summarize)

    def counts(self) -> dict[str, dict[str, Any]]:
        return {split: {"file": str(path)} for split, path in self.files.items()}

    def use_labels(self, labels: list[str]) -> None:
        raise DownstreamError(_NOT_TRAINER)

    def encode(self, tokenizer, *, max_seq_length: int) -> None:
        raise DownstreamError(_NOT_TRAINER)

    def dataset(self, name: str) -> Any:
        raise DownstreamError(_NOT_TRAINER)

    def evaluator(self, name: str) -> Any:
        raise DownstreamError(_NOT_TRAINER)

    def data_collator(self, tokenizer, *, pad_to_multiple_of: int | None = None) -> Any:
        raise DownstreamError(_NOT_TRAINER)

    def build_model(self, checkpoint: str, **config_overrides) -> Any:
        raise DownstreamError(_NOT_TRAINER)

    def reduce_logits(self, logits, labels) -> Any:
        raise DownstreamError(_NOT_TRAINER)

    @staticmethod
    def card_sections(settings: Any, labels: list[str], f1_name: str) -> tuple[str, str, str, str]:
        usage = "```bash\nbioelectra finetune --loader linking --dataset ncbi-disease --data-dir DATA --linker sparse\n```"
        limits = "- Links gold mentions; mentions whose concept the dictionary lacks are dropped from the score."
        return usage, "", limits, "Accuracy@1 and @5 on gold mentions (%), BioSyn's way"

    def analysis(self, results, info) -> tuple[str, str] | None:
        return None

    def write_predictions(self, path: Path, name: str, result) -> None:
        raise DownstreamError(_NOT_TRAINER)

    @staticmethod
    def fingerprint_extras(settings: Any) -> dict[str, Any]:
        """A trained linker's pairs per training mention (:data:`downstream.linking.dense.MENTION_REPEATS`) and, for
        the dense linker, the sparse scores and weights its development set chooses among
        (:data:`downstream.linking.run.SPARSE_NGRAM_RANGES`, :data:`downstream.linking.dense.SPARSE_WEIGHTS`),
        and the preprocessing's version (:data:`downstream.linking.preprocess.PREPROCESSING_VERSION`): trials made
        otherwise are trained again."""
        if settings.linker == "sparse":
            return {}
        from downstream.linking.dense import MENTION_REPEATS, SPARSE_WEIGHTS
        from downstream.linking.preprocess import PREPROCESSING_VERSION
        from downstream.linking.run import SPARSE_NGRAM_RANGES

        extras: dict[str, Any] = {"mention_repeats": MENTION_REPEATS, "preprocessing": PREPROCESSING_VERSION}
        if settings.linker == "dense":
            extras["dev_grid"] = {"ngram_ranges": [list(r) for r in SPARSE_NGRAM_RANGES], "sparse_weights": list(SPARSE_WEIGHTS)}
        return extras

    def report_extras(self, settings: Any) -> dict[str, Any]:
        return {"linker": settings.linker, "train_on": settings.train_on}

    @staticmethod
    def markdown_extras(report: dict[str, Any]) -> list[str]:
        return []
