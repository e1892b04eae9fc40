"""The original ``run_finetuning.py`` command line (google-research/electra, as Bio-ELECTRA used it).

``run_finetuning.py --data-dir DATA_DIR --model-name NAME --hparams '{"task_names": [...], ...}'`` runs each
task of ``task_names`` through this package's trial runner:

- the checkpoint is ``DATA_DIR/models/NAME`` (a TensorFlow or a ``save_pretrained`` directory); when that
  folder holds no checkpoint (it does not exist, or holds only the ``results/`` and ``finetuning_models/`` of
  earlier runs), ``NAME`` is read as ``finetune --ckpt`` reads it (a shipped model, a size preset, a hub id),
  so the same command run again reads the same checkpoint and reuses its finished trials;
- a task's data is ``DATA_DIR/finetuning_data/<task>/`` when that folder exists, else the registered
  benchmark of that name; a task name that a task kind claims (its ``original_task_names``: GLUE's ``cola``,
  ``sst``, ``mrpc``, ``sts``, ``qqp``, ``mnli``, ``qnli``, ``rte``) runs that kind, reading that folder in
  the original's layout (``train.tsv`` / ``dev.tsv``; no test file needed), else the kind's own location; the original's ``chunk`` (CoNLL-2000,
  ``train.txt`` / ``dev.txt``: the NER kind), ``squad`` / ``squadv1`` (``train.json`` / ``dev.json``) and MRQA
  names (``newsqa``, ``naturalqs``, ``triviaqa``, ``searchqa`` and the shared task's other sets: ``train.jsonl``
  / ``dev.jsonl``; the QA kind) are known by name (:data:`ORIGINAL_TASK_KINDS`), with the original's
  single-task defaults (:func:`original_task_defaults`) and, for QA, its ``doc_stride`` / ``max_query_length``
  / ``max_answer_length`` / ``n_best_size``; their dev file is the test split too (the original scores dev);
- the original's fine-tuning hyper-parameters (``configure_finetuning.py``, ``FinetuningConfig``) map onto
  ``finetune``'s settings, with the original's defaults for the keys not given (``finetune``'s ``electra``
  protocol: learning rate 1e-4, layer-wise decay 0.8, 3 epochs, warmup 0.1, batch 32, the original
  optimizer, dropout 0.1; large: 5e-5 and 0.9); ``do_train: false`` with ``do_eval: true`` scores the
  fine-tuned ``init_checkpoint`` without training (``bioelectra evaluate``); TensorFlow / TPU settings,
  file locations and question-answering settings are accepted and reported as ignored; unknown keys are
  an error, as in the original's ``FinetuningConfig.update``;
- ``double_unordered`` (MRPC, STS-B: training pairs in both orders) is on unless the hparams turn it off, as
  in the original; a GLUE task selects its best epoch by the metric the original reports (CoLA mcc, STS
  spearman, the others accuracy);
- results go to ``DATA_DIR/models/NAME/results/<task>_results.txt`` in the original's format (one line per
  trial with the development-set metrics in percent, e.g. precision, recall and F1, or GLUE's mcc / pearson
  and spearman / accuracy, as the original evaluates on ``dev``), beside this package's ``results.json`` /
  ``results.md`` under the output folder.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bioelectra.hparams import value_type_problem
from bioelectra.textio import atomic_write_text
from downstream.kinds import TASKS, task_class
from downstream.settings import PROTOCOLS, setting_type_problem
from downstream.task import TaskKind

#: The types of the keys read here that are not ``FinetuneSettings`` fields (``configure_finetuning.py``).
OTHER_TYPES: dict[str, str] = {"do_train": "bool", "do_eval": "bool", "model_size": "str", "init_checkpoint": "str | None"}

#: ``FinetuningConfig``'s keys that map onto ``FinetuneSettings`` fields.
MAPPED: dict[str, str] = {
    "learning_rate": "learning_rate",
    "layerwise_lr_decay": "layerwise_lr_decay",
    "num_train_epochs": "num_train_epochs",
    "warmup_proportion": "warmup_ratio",
    "weight_decay_rate": "weight_decay",
    "max_seq_length": "max_seq_length",
    "train_batch_size": "per_device_train_batch_size",
    "eval_batch_size": "per_device_eval_batch_size",
    "num_trials": "num_trials",
    "double_unordered": "double_unordered",
}
#: The original's defaults of the mapped keys: the ``electra`` protocol (``configure_finetuning.py``), which
#: also sets the original optimizer and dropout 0.1.
ORIGINAL_DEFAULTS_FROM = "electra"
LARGE_DEFAULTS: dict[str, Any] = {"learning_rate": 5e-5, "layerwise_lr_decay": 0.9}
#: Keys with no meaning here (TensorFlow / TPU, file locations, model shape fixed by the checkpoint,
#: outputs this package writes anyway, question answering): accepted and reported.
IGNORED: frozenset[str] = frozenset(
    """model_name data_dir debug log_examples keep_all_models model_hparam_overrides embedding_size vocab_size
    do_lower_case save_checkpoints_steps iterations_per_loop use_tfrecords_if_existing write_test_outputs
    n_writes_test predict_batch_size max_query_length doc_stride n_best_size
    max_answer_length answerable_classifier answerable_uses_start_logits answerable_weight joint_prediction
    beam_size qa_na_threshold use_tpu num_tpu_cores tpu_job_name tpu_name tpu_zone gcp_project raw_data_dir
    vocab_file init_checkpoint model_dir results_txt results_pkl qa_eval_file qa_preds_file qa_na_file
    preprocessed_data_dir test_predictions""".split()
)
#: Keys implemented with one value only here.
ONLY: dict[str, Any] = {"do_eval": True}
#: ``do_train: false`` (with ``do_eval: true``) scores ``init_checkpoint``, a fine-tuned model, without training.
OTHER: frozenset[str] = frozenset({"task_names", "model_size", "do_train", "init_checkpoint"})
SIZES = ("small", "base", "large")
#: The original's task names of CoNLL-2000 chunking and SQuAD / MRQA (``finetune/task_builder.py``; ``squad`` is
#: 1.1 or 2.0 by its file here, ``squadv1`` the same) and the MRQA shared task's other sets, with their kind:
#: read from ``finetuning_data/<task>/`` (``train.txt`` / ``dev.txt``; ``train.json`` / ``dev.json``;
#: ``train.jsonl`` / ``dev.jsonl``, ``.gz`` accepted), ``chunk`` else from the registered dataset.
ORIGINAL_TASK_KINDS: dict[str, str] = {
    "chunk": "ner",
    **dict.fromkeys(("squad", "squadv1", "newsqa", "naturalqs", "triviaqa", "searchqa", "hotpotqa", "bioasq", "drop",
                     "duorc", "race", "relationextraction", "textbookqa"), "qa"),
}  # fmt: skip
#: Question answering keys of ``FinetuningConfig`` that map onto ``finetune``'s (same names) for QA tasks.
QA_MAPPED = ("doc_stride", "max_query_length", "max_answer_length", "n_best_size")


def original_task_defaults(task: str) -> dict[str, Any]:
    """``configure_finetuning.py``'s single-task defaults of the QA and chunking tasks (``"squad"`` or ``"qa"`` in
    the name: 512 sub-tokens, 2 epochs; ``chunk``: 256 sub-tokens), for the keys ``--hparams`` does not give.
    Each task here is a model of its own, so each gets them (the original applies them to a one-task run)."""
    if "squad" in task or "qa" in task:
        return {"max_seq_length": 512, "num_train_epochs": 2.0}
    return {"max_seq_length": 256} if task == "chunk" else {}


@dataclasses.dataclass
class OriginalRun:
    """One task of a ``run_finetuning.py`` command, resolved: what to run and where results go."""

    task: str
    kind: str  # a task kind of downstream.kinds (ner, re, qa, glue ...)
    dataset: str | None
    data_dir: Path | None
    settings: dict[str, Any]
    output_dir: Path
    results_txt: Path


def parse_original_hparams(hparams: Mapping[str, Any], *, where: str = "--hparams") -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """``(task_names, finetune settings, ignored keys)`` of an original ``--hparams`` mapping.

    Raises:
        ValueError: no ``task_names`` (the original requires it), an unknown key, a value of the wrong type
            (key, value and the type expected named), a key this package implements with one value only given
            another (``do_train: false``), a bad ``model_size``.
    """
    unknown = sorted(set(hparams) - set(MAPPED) - IGNORED - set(ONLY) - OTHER)
    if unknown:
        valid = sorted(set(MAPPED) | IGNORED | set(ONLY) | OTHER)
        raise ValueError(f"{where}: unknown hparam(s) {unknown} (not in the original configure_finetuning.py: {', '.join(valid)})")
    for key, value in hparams.items():
        if key in MAPPED or key in QA_MAPPED:
            problem = setting_type_problem(MAPPED.get(key, key), value)
        else:
            problem = value_type_problem(value, OTHER_TYPES[key]) if key in OTHER_TYPES else None
        if problem:
            raise ValueError(f"{where}: hparam {key!r}: expected {problem}")
    for key, value in ONLY.items():
        if key in hparams and hparams[key] != value:
            raise ValueError(f"{where}: {key}={hparams[key]!r} is not supported here (only {key}={value!r})")
    tasks = hparams.get("task_names")
    if isinstance(tasks, str):
        tasks = [tasks]
    if not tasks or not isinstance(tasks, list) or not all(isinstance(t, str) and t for t in tasks):
        raise ValueError(f'{where}: "task_names" must be a non-empty list of task names, e.g. ["ncbi-disease"]')
    size = hparams.get("model_size", "small")
    if size not in SIZES:
        raise ValueError(f"{where}: model_size={size!r}; expected one of {', '.join(SIZES)}")
    settings = dict(PROTOCOLS[ORIGINAL_DEFAULTS_FROM]["settings"])
    settings.update({MAPPED[k]: v for k, v in LARGE_DEFAULTS.items()} if size == "large" else {})
    settings.update({MAPPED[k]: v for k, v in hparams.items() if k in MAPPED})
    ignored = {k: v for k, v in hparams.items() if k in IGNORED}
    return list(tasks), settings, ignored


def plan_original_runs(
    data_dir: Path, model_name: str, hparams: Mapping[str, Any], *, output_root: Path | None = None
) -> tuple[list[OriginalRun], dict[str, Any]]:
    """One :class:`OriginalRun` per task, in ``task_names`` order, and the ignored keys.

    Raises:
        ValueError: bad hparams (:func:`parse_original_hparams`), or a task that is neither a folder of
            ``DATA_DIR/finetuning_data`` nor a registered benchmark.
    """
    from downstream.dataset_specs import DATASETS

    tasks, settings, ignored = parse_original_hparams(hparams)
    output_root = output_root or data_dir / "models" / model_name  # the original's model_dir: results apart in it
    runs = []
    for task in tasks:
        folder = data_dir / "finetuning_data" / task
        spec = DATASETS.get(task)
        claimed = original_task_kind(task)
        if not folder.is_dir() and spec is None and task in ORIGINAL_TASK_KINDS:
            expected = "train.json and dev.json" if "squad" in task else "train.jsonl and dev.jsonl (.gz accepted)"
            raise ValueError(f"task {task!r}: no folder {folder} (expected {expected} there, as the original reads them)")
        if not folder.is_dir() and spec is None and claimed is None:
            raise ValueError(
                f"task {task!r}: no folder {folder} and not a registered benchmark "
                f"({', '.join(sorted(DATASETS))}) nor an original task name ({', '.join(original_task_names())})"
            )
        kind = claimed or ORIGINAL_TASK_KINDS.get(task) or (spec.task if spec is not None else _guess_kind(folder))
        run_settings = {
            **task_class(kind).dataset_defaults(task, folder if folder.is_dir() else None),
            **settings,
            **_original_task_settings(task, kind, hparams),
        }
        runs.append(
            OriginalRun(
                task=task,
                kind=kind,
                dataset=task if claimed or not folder.is_dir() else None,
                data_dir=folder if folder.is_dir() else None,
                settings=run_settings,
                output_dir=output_root / "finetuning_models" / f"{task}_model",
                results_txt=output_root / "results" / f"{task}_results.txt",
            )
        )
    if any(set(QA_MAPPED) & set(task_class(run.kind).exclusive_options) for run in runs):
        ignored = {k: v for k, v in ignored.items() if k not in QA_MAPPED}
    return runs, ignored


def holds_checkpoint(model_dir: Path) -> bool:
    """Whether ``model_dir`` (the original's ``DATA_DIR/models/NAME``) holds a checkpoint: a
    ``save_pretrained`` folder's ``config.json`` or a TensorFlow checkpoint. The original keeps fine-tuning's
    results apart in that folder (``results/``, ``finetuning_models/``), so a folder with only those is not
    one."""
    from bioelectra.tf import is_tf_checkpoint_dir

    return (model_dir / "config.json").is_file() or is_tf_checkpoint_dir(model_dir)


def original_task_kind(task: str) -> str | None:
    """The task kind that claims the original task name ``task`` (its ``original_task_names``), or ``None``.
    A kind that runs more of the original's tasks (chunking, SQuAD / MRQA) lists their names there."""

    return next((kind for kind, cls in TASKS.items() if task in getattr(cls, "original_task_names", ())), None)


def original_task_names() -> list[str]:
    """Every original task name a task kind claims (see :func:`original_task_kind`)."""

    return [name for cls in TASKS.values() for name in getattr(cls, "original_task_names", ())]


def _original_task_settings(task: str, kind: str, hparams: Mapping[str, Any]) -> dict[str, Any]:
    """A task's own settings: the original's single-task defaults (:func:`original_task_defaults`) where
    ``hparams`` does not set the key, and the QA keys ``hparams`` gives where the kind takes them (its
    ``exclusive_options``: question answering)."""
    defaults = {MAPPED[k]: v for k, v in original_task_defaults(task).items() if k not in hparams}
    own = task_class(kind).exclusive_options
    return {**defaults, **{k: hparams[k] for k in QA_MAPPED if k in hparams and k in own}}


def _guess_kind(folder: Path) -> str:
    """A task folder not in the registry: NER when its train file is one token per line with a tab."""
    from downstream.registry import find_split_files

    train = find_split_files(folder).get("train")
    if train is None:
        raise ValueError(f"{folder}: no train file (train.tsv)")
    from bioelectra.textio import iter_lines

    lines = [line.rstrip("\r\n") for _, line in zip(range(50), iter_lines(train), strict=False)]
    tokens = [line.split("\t") for line in lines if line.strip()]
    return "ner" if tokens and all(len(t) >= 2 and " " not in t[0] for t in tokens) else "re"


#: The original's results keys printed as they are, not in percent (its ``RegressionScorer``'s mse).
RAW_RESULT_KEYS = frozenset({"mse"})
#: The results keys of a kind that does not name its own (``original_result_keys``).
DEFAULT_RESULT_KEYS = TaskKind.original_result_keys


def original_results_lines(task: str, report: Mapping[str, Any], keys: tuple[str, ...] = DEFAULT_RESULT_KEYS) -> list[str]:
    """One line per trial as the original writes them: ``task: precision: 83.54 - recall: 86.54 - f1: 85.01 -
    loss: 0.32`` (development set, percent, two decimals; ``keys``: the task kind's ``original_result_keys``,
    those the task's dev metrics have; GLUE: ``cola: mcc: 56.80 - loss: 0.51``)."""
    lines = []
    for trial in report.get("trials", []):
        dev = trial.get("dev") or {}
        parts = []
        for key in keys:
            if isinstance(dev.get(key), int | float) and not isinstance(dev.get(key), bool):
                parts.append(f"{key}: {(1 if key in RAW_RESULT_KEYS else 100) * dev[key]:.2f}")
        if isinstance(dev.get("loss"), int | float):
            parts.append(f"loss: {dev['loss']:.2f}")
        lines.append(f"{task}: " + " - ".join(parts))
    return lines


def run_original_finetuning(
    data_dir: Path,
    model_name: str,
    hparams: Mapping[str, Any],
    *,
    resolve_checkpoint: Callable[[str, Path], str],
    run_trials: Callable[[Any], dict],
    settings_class: type,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Run every task of a ``run_finetuning.py`` command one after another; returns their reports.

    ``resolve_checkpoint`` turns a checkpoint name or folder into a loadable directory (``finetune
    --ckpt``'s rules); ``run_trials`` / ``settings_class`` are the trial runner and its settings.

    Raises:
        ValueError, FileNotFoundError: bad hparams, task or checkpoint (see :func:`plan_original_runs`).
    """
    runs, ignored = plan_original_runs(data_dir, model_name, hparams)
    if ignored:
        log(f"original hparams with no meaning here, ignored: {', '.join(sorted(ignored))}")
    if hparams.get("do_train", True) is False:
        return _evaluate_original(runs, hparams, settings_class=settings_class, log=log)
    model_dir = data_dir / "models" / model_name
    ckpt = str(model_dir) if holds_checkpoint(model_dir) else model_name
    if ckpt == model_name:
        what = "holds no checkpoint (no config.json, no TensorFlow checkpoint)" if model_dir.is_dir() else "does not exist"
        log(f"{model_dir} {what}: reading --model-name {model_name!r} as finetune --ckpt does")
    reports = []
    for run in runs:
        checkpoint = resolve_checkpoint(ckpt, run.output_dir)
        settings = settings_class(
            task=run.kind,
            dataset=run.dataset,
            data_dir=run.data_dir,
            checkpoint=checkpoint,
            checkpoint_name=ckpt,
            output_dir=run.output_dir,
            **run.settings,
        )
        log(f"task {run.task} ({run.kind}): {json.dumps(run.settings)} -> {run.output_dir}")
        report = run_trials(settings)
        run.results_txt.parent.mkdir(parents=True, exist_ok=True)
        lines = original_results_lines(run.task, report, task_class(run.kind).original_result_keys)
        atomic_write_text(run.results_txt, "".join(line + "\n" for line in lines))
        reports.append({"task": run.task, "report": report, "results_txt": str(run.results_txt)})
    return reports


def _evaluate_original(runs: list[OriginalRun], hparams: Mapping[str, Any], *, settings_class: type, log) -> list[dict]:
    """The original's ``do_train: false, do_eval: true``: score the fine-tuned ``init_checkpoint`` on each
    task (:func:`downstream.trial.evaluate.evaluate_model`), results in the original's file as well.

    Raises:
        ValueError: no ``init_checkpoint``, or it is not a folder.
    """
    from downstream.trial.evaluate import evaluate_model

    model = hparams.get("init_checkpoint")
    if not model or not Path(model).is_dir():
        raise ValueError(
            f'--hparams: do_train=false evaluates "init_checkpoint", a fine-tuned model folder; got {model!r}'
        )
    reports = []
    for run in runs:
        settings = settings_class(
            task=run.kind, dataset=run.dataset, data_dir=run.data_dir, checkpoint=str(model), checkpoint_name=str(model),
            output_dir=run.output_dir.with_name(f"{run.task}_evaluation"), max_seq_length=run.settings["max_seq_length"],
            per_device_eval_batch_size=run.settings["per_device_eval_batch_size"],
        )  # fmt: skip
        log(f"task {run.task} ({run.kind}): evaluating {model} (do_train false) -> {settings.output_dir}")
        report = evaluate_model(settings)
        line = original_results_lines(run.task, {"trials": [{"dev": report["dev"]}]}, task_class(run.kind).original_result_keys)
        atomic_write_text(run.results_txt, "".join(x + "\n" for x in line))
        reports.append({"task": run.task, "report": report, "results_txt": str(run.results_txt)})
    return reports
