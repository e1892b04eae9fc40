"""ELECTRA pre-training with the Hugging Face ``Trainer``: hyper-parameters, metrics, train, eval, export.

Modules: ``settings`` (hyper-parameters), ``inputs`` (examples, collator), ``metrics``, ``trainer`` (the
Trainer and its callbacks), ``checkpoints`` (models, checkpoints, export), ``jobs`` (train, eval).

The training loop is the Trainer's. ELECTRA's specifics enter through its hooks:

- ``compute_loss``: the joint RTD loss of :class:`bioelectra.modeling.ElectraPretrainingModel` (the
  generator and discriminator losses are logged beside it);
- ``create_optimizer`` / ``create_scheduler``: :mod:`bioelectra.optimization` (no Adam bias correction,
  warmup multiplied into the polynomial decay);
- ``evaluate``: the original pre-training metrics (``run_pretraining.py: metric_fn``) on held-out examples;
- callbacks: a checkpoint is always written at the last step, so a re-run resumes or finishes cleanly.

Layout of an output directory (``--output-dir``, default ``<data-dir>/models/<model-name>`` as the
original's ``<data-dir>/models/<model-name>``): ``checkpoint-N/`` (the joint model via ``save_pretrained``,
tokenizer files, optimizer / scheduler / RNG state), ``hparams.json`` (resolved) and
``eval_results.json`` (metrics after the last step); with ``torch_compile``, ``first_compiled_step.json``
(the first compiled step's seconds and how torch's compile caches served it).
"""

from bioelectra.compile_records import FIRST_COMPILED_STEP_FILE  # noqa: F401
from bioelectra.pretraining.callbacks import (  # noqa: F401
    LOG_HISTORY_FILE,
    DeadlineCallback,
    LogMetricsCallback,
    SaveAtEndCallback,
    StepProgressCallback,
    TimeFittedScheduleCallback,
    read_log_history,
)
from bioelectra.pretraining.checkpoints import (  # noqa: F401
    CHECKPOINT_FILES,
    CHECKPOINT_RE,
    EXPORT_DTYPES,
    INCOMPLETE_DIR,
    build_model,
    checkpoint_problem,
    export_checkpoint,
    find_checkpoint,
    load_pretraining_model,
    set_aside_incomplete_checkpoints,
    write_vocab_txt,
)
from bioelectra.pretraining.inputs import (  # noqa: F401
    ORIGINAL_DATA_SUBDIR,
    PretrainingData,
    load_pretraining_data,
    make_collator,
)
from bioelectra.pretraining.jobs import (  # noqa: F401
    EVAL_RESULTS_FILE,
    evaluate_checkpoint,
    prepare_pretraining,
    run_pretraining,
)
from bioelectra.pretraining.metrics import (  # noqa: F401
    METRIC_NAMES,
    binary_auc,
    pretraining_metrics,
)
from bioelectra.pretraining.settings import (  # noqa: F401
    HPARAM_ALIASES,
    HPARAMS_FILE,
    RENAMED_FROM,
    PretrainingHparams,
    parse_hparams_arg,
    resolve_hparams,
)
from bioelectra.pretraining.trainer import (  # noqa: F401
    ElectraPretrainer,
    make_optimizer,
    training_arguments,
)

__all__ = [
    "CHECKPOINT_FILES",
    "CHECKPOINT_RE",
    "EXPORT_DTYPES",
    "INCOMPLETE_DIR",
    "build_model",
    "checkpoint_problem",
    "export_checkpoint",
    "find_checkpoint",
    "load_pretraining_model",
    "set_aside_incomplete_checkpoints",
    "write_vocab_txt",
    "ORIGINAL_DATA_SUBDIR",
    "PretrainingData",
    "load_pretraining_data",
    "make_collator",
    "EVAL_RESULTS_FILE",
    "FIRST_COMPILED_STEP_FILE",
    "evaluate_checkpoint",
    "prepare_pretraining",
    "run_pretraining",
    "METRIC_NAMES",
    "binary_auc",
    "pretraining_metrics",
    "HPARAM_ALIASES",
    "HPARAMS_FILE",
    "RENAMED_FROM",
    "PretrainingHparams",
    "parse_hparams_arg",
    "resolve_hparams",
    "DeadlineCallback",
    "TimeFittedScheduleCallback",
    "ElectraPretrainer",
    "LOG_HISTORY_FILE",
    "LogMetricsCallback",
    "SaveAtEndCallback",
    "StepProgressCallback",
    "read_log_history",
    "make_optimizer",
    "training_arguments",
]
