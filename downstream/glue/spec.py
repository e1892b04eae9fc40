"""The GLUE tasks (Wang et al. 2019, https://gluebenchmark.com): names, folders, columns, labels, metrics.

One :class:`GlueSpec` per task, in :data:`GLUE_TASKS`; :func:`glue_spec` resolves a name: GLUE's own
(``cola``, ``sst-2``, ``mrpc``, ``sts-b``, ``qqp``, ``mnli``, ``qnli``, ``rte``, ``wnli``, any case, so the
folder names ``CoLA``, ``SST-2`` ... too) and the original ELECTRA code's task names (``cola``, ``sst``,
``mrpc``, ``sts``, ``qqp``, ``mnli``, ``qnli``, ``rte``: google-research/electra
``finetune/task_builder.py``). ``mnli`` is MNLI with its matched development and test sets (the original's
``dev_matched``); ``mnli-mm`` the same training set with the mismatched ones.

Columns are those of the files GLUE's ``download_glue_data.py`` writes (header names; CoLA's labelled files
have no header: source, label, original label, sentence). Labels and their order are the original's
(``classification_tasks.py``); STS-B is a regression on the 0-5 similarity score.

Metrics (GLUE's definitions, Wang et al. 2019 section 3): CoLA Matthews correlation, STS-B Pearson and
Spearman correlation, MRPC and QQP F1 of class ``1`` and accuracy, the others accuracy. ``selection``: the
metric the original ELECTRA reports and selects on (Clark et al. 2020, section 3.1: "Spearman correlation
for STS, Matthews correlation for CoLA, and accuracy for the other GLUE tasks").
"""

from __future__ import annotations

from dataclasses import dataclass

from downstream.errors import DownstreamError


@dataclass(frozen=True)
class GlueSpec:
    """One GLUE task.

    Attributes:
        name: the canonical name (``--dataset``): GLUE's, lower case.
        folder: GLUE's folder name (``CoLA``, ``SST-2``, ...), under ``<root>/glue/``.
        title: human-readable name.
        text_a, text_b: the header names of the sentence (pair) columns; ``text_b`` ``None`` for single sentences.
        label: the header name of the label column of the labelled files.
        labels: the class labels as the files write them, in the original's id order; ``()`` for regression.
        metrics: the GLUE metrics of this task, the first the one GLUE's leaderboard lists first.
        selection: the development metric that picks the best epoch by default (the original's reported one).
        submission: the GLUE server's file name of this task's test predictions, without ``.tsv``.
        test_index: the header name of the test files' example id (the submission's ``index``).
        dev_file, test_file: the development and test file names (MNLI: ``dev_matched.tsv`` ...).
        headerless: for CoLA's labelled files (no header): ``(fields, text_a column, label column)``.
        symmetric: a pair task whose pairs mean the same in either order (the original's
            ``double_unordered`` applies: MRPC, STS-B).
        score_range: regression: the ``(min, max)`` of the score.
    """

    name: str
    folder: str
    title: str
    text_a: str
    text_b: str | None
    label: str
    labels: tuple[str, ...]
    metrics: tuple[str, ...]
    selection: str
    submission: str
    test_index: str = "index"
    dev_file: str = "dev.tsv"
    test_file: str = "test.tsv"
    headerless: tuple[int, int, int] | None = None
    symmetric: bool = False
    score_range: tuple[float, float] | None = None

    @property
    def is_regression(self) -> bool:
        return not self.labels

    @property
    def is_pair(self) -> bool:
        return self.text_b is not None


_NLI2 = ("entailment", "not_entailment")

GLUE_TASKS: dict[str, GlueSpec] = {
    spec.name: spec
    for spec in (
        GlueSpec("cola", "CoLA", "Corpus of Linguistic Acceptability (CoLA)", "sentence", None, "label", ("0", "1"),
                 ("mcc",), "mcc", "CoLA", headerless=(4, 3, 1)),
        GlueSpec("sst-2", "SST-2", "Stanford Sentiment Treebank (SST-2)", "sentence", None, "label", ("0", "1"),
                 ("accuracy",), "accuracy", "SST-2"),
        GlueSpec("mrpc", "MRPC", "Microsoft Research Paraphrase Corpus (MRPC)", "#1 String", "#2 String", "Quality",
                 ("0", "1"), ("f1", "accuracy"), "accuracy", "MRPC", symmetric=True),
        GlueSpec("sts-b", "STS-B", "Semantic Textual Similarity Benchmark (STS-B)", "sentence1", "sentence2", "score",
                 (), ("pearson", "spearman"), "spearman", "STS-B", symmetric=True, score_range=(0.0, 5.0)),
        GlueSpec("qqp", "QQP", "Quora Question Pairs (QQP)", "question1", "question2", "is_duplicate", ("0", "1"),
                 ("f1", "accuracy"), "accuracy", "QQP", test_index="id"),
        GlueSpec("mnli", "MNLI", "Multi-Genre NLI (MNLI), matched", "sentence1", "sentence2", "gold_label",
                 ("contradiction", "entailment", "neutral"), ("accuracy",), "accuracy", "MNLI-m",
                 dev_file="dev_matched.tsv", test_file="test_matched.tsv"),
        GlueSpec("mnli-mm", "MNLI", "Multi-Genre NLI (MNLI), mismatched", "sentence1", "sentence2", "gold_label",
                 ("contradiction", "entailment", "neutral"), ("accuracy",), "accuracy", "MNLI-mm",
                 dev_file="dev_mismatched.tsv", test_file="test_mismatched.tsv"),
        GlueSpec("qnli", "QNLI", "Question NLI (QNLI)", "question", "sentence", "label", _NLI2, ("accuracy",),
                 "accuracy", "QNLI"),
        GlueSpec("rte", "RTE", "Recognizing Textual Entailment (RTE)", "sentence1", "sentence2", "label", _NLI2,
                 ("accuracy",), "accuracy", "RTE"),
        GlueSpec("wnli", "WNLI", "Winograd NLI (WNLI)", "sentence1", "sentence2", "label", ("0", "1"), ("accuracy",),
                 "accuracy", "WNLI"),
    )
}  # fmt: skip

#: Other names of the tasks: the original ELECTRA code's (``sst``, ``sts``), GLUE's without the hyphen.
ALIASES = {"sst": "sst-2", "sst2": "sst-2", "sts": "sts-b", "stsb": "sts-b", "mnli-m": "mnli", "mnli_m": "mnli",
           "mnli_mm": "mnli-mm"}  # fmt: skip

#: The original ELECTRA code's GLUE task names (``finetune/task_builder.py``), for ``run_finetuning.py``.
ORIGINAL_GLUE_NAMES = ("cola", "sst", "mrpc", "sts", "qqp", "mnli", "qnli", "rte")

#: Where GLUE is found now (its original download script's links have moved).
GLUE_SOURCES = (
    "GLUE's tasks page https://gluebenchmark.com/tasks (the files in GLUE's TSV layout, as its download "
    "script download_glue_data.py wrote them), or the Hugging Face hub dataset nyu-mll/glue "
    "(https://huggingface.co/datasets/nyu-mll/glue; Parquet files, to be written out as GLUE's TSVs)"
)


def glue_spec(name: str) -> GlueSpec:
    """The task named ``name`` (GLUE's name, its folder name or the original ELECTRA code's, any case).

    Raises:
        DownstreamError: an unknown name (the known ones listed).
    """
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in GLUE_TASKS:
        known = ", ".join([*GLUE_TASKS, *ALIASES])
        raise DownstreamError(f"unknown GLUE task {name!r}; expected one of {known}")
    return GLUE_TASKS[key]


def is_glue_name(name: str | None) -> bool:
    """Whether ``name`` names a GLUE task (see :func:`glue_spec`)."""
    if not name:
        return False
    key = name.strip().lower()
    return ALIASES.get(key, key) in GLUE_TASKS
