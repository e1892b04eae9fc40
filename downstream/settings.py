"""The settings of a fine-tuning run, with all their checks (``FinetuneSettings``), and the choices that
depend only on them (selection metric, precision, micro-batches, layer-wise learning-rate decay)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bioelectra.hparams import value_type_problem
from bioelectra.reporting import check_report_to
from downstream.errors import DownstreamError
from downstream.task import KIND_CLASSES, KIND_OWN_OPTIONS

logger = logging.getLogger(__name__)

#: The largest seed (numpy's and the Trainer's seeding take 32-bit seeds).
MAX_SEED = 2**32 - 1

#: Standard deviation reported over trials: sample std (ddof=1).
STD_DDOF = 1

#: Settings that only some task kinds read. Each kind names those it reads (its ``own_options``); the
#: fingerprint leaves out the others, so changing another kind's option never invalidates finished trials.
KIND_OPTIONS = ("fold", "re_head", "iob1_policy", "dev_fraction", "dev_split_seed", "double_unordered", "linker", "train_on")


#: The QA settings' defaults (added after NER / RE runs were made: left out of fingerprints when default).
QA_DEFAULTS = {
    "doc_stride": 128, "max_query_length": 64, "max_answer_length": 30, "n_best_size": 20,
    "null_score_threshold": 0.0, "null_window_fraction": 1.0,
}  # fmt: skip


@dataclass
class FinetuneSettings:
    """Everything that defines a fine-tuning run.

    Attributes:
        task: the task kind, a key of ``downstream.kinds.TASKS`` (``ner``, ``re``, ``qa``, ``yesno``, ``glue``,
            ``similarity``, ``doc-classification``).
        dataset: registry name (optional when ``data_dir`` is given).
        data_dir: local folder with ``train``/``devel`` (or ``dev``)/``test`` files; overrides the registry.
        checkpoint: a directory or hub id ``from_pretrained`` loads.
        checkpoint_name: what the user passed as ``--ckpt`` (reported).
        output_dir: where results and trial outputs go.
        metric: development metric that picks the best epoch (``f1``, ``precision``, ``recall``,
            ``accuracy`` or ``loss``).
        greater_is_better: whether a larger ``metric`` is better.
        num_trials: number of runs, seeds ``seed .. seed + num_trials - 1``.
        num_train_epochs: epochs per trial.
        learning_rate: peak learning rate (linear warmup over ``warmup_ratio`` of the steps, then linear
            decay to 0).
        per_device_train_batch_size: training batch size per device.
        per_device_eval_batch_size: evaluation batch size per device.
        max_seq_length: sub-tokens per input, [CLS] and [SEP] included.
        seed: seed of the first trial.
        max_steps: if > 0, optimizer steps per trial (overrides ``num_train_epochs``).
        warmup_ratio: fraction of steps with linear warmup.
        weight_decay: AdamW weight decay.
        precision: ``auto`` (bf16 on a GPU that supports it, else fp32), ``fp32``, ``bf16``, ``fp16``.
        iob1_policy: ``repair`` or ``reject`` IOB1 tags (NER).
        max_train_examples: keep only the first N training sentences / examples (smoke runs).
        max_eval_examples: score only the first N development and test sentences / examples (smoke runs: the
            scores are then not comparable with published figures).
        fold: cross-validation fold to run (RE datasets with fold folders, e.g. GAD ``1`` .. ``10``).
        re_head: RE classifier head, ``electra`` (dropout + linear over [CLS]) or ``hf``
            (``ElectraClassificationHead``).
        dev_fraction: RE: fraction of train cut off as the development split when there is none.
        dev_split_seed: RE: seed of that cut (shared by all trials).
        layerwise_lr_decay: each encoder layer below the task head gets this factor of the learning rate of
            the one above it: the head ``learning_rate``, the top layer ``decay**2``, the embeddings
            ``decay**(num_hidden_layers + 2)`` (original ELECTRA fine-tuning ``layerwise_lr_decay``,
            ``model/optimization.py: _get_layer_lrs``; paper Appendix A: 0.8 for Small and Base). 1.0: one
            learning rate for all.
        micro_batch_tokens: a training batch with more (padded) tokens than this runs as several
            forward/backward passes whose gradients add up to the whole batch's: the same update (only
            dropout's random draws differ) with the activation memory of a smaller batch. ``None``:
            :data:`CPU_MICRO_BATCH_TOKENS` on CPU, no splitting on a GPU; ``0``: never split. Not part of
            the trial fingerprint.
        optimizer: ``adamw`` (the Trainer's AdamW: bias correction, epsilon 1e-8, linear warmup then a decay
            over the steps after it) or ``electra`` (the original fine-tuning optimizer,
            google-research/electra ``model/optimization.py``: ``AdamWeightDecayOptimizer`` without bias
            correction, epsilon 1e-6, weight decay not on LayerNorm and biases, polynomial decay to 0
            computed from step 0 multiplied by a linear warmup; :mod:`bioelectra.optimization`).
        dropout: hidden, attention and classifier dropout of the fine-tuned model; None keeps the
            checkpoint's own values.
        protocol: the name of the :data:`PROTOCOLS` entry the settings came from (reported; the values
            themselves are the other fields).
        entity_type: NER: the type given to bare ``B`` / ``I`` tags (``--entity-type``); ``None``: the type
            the NER kind finds from the dataset or folder name (``downstream.ner.types``), else bare tags.
        doc_stride: QA: tokens between the starts of two context windows (``run_squad.py``: 128).
        max_query_length: QA: question tokens kept (``run_squad.py``: 64).
        max_answer_length: QA: longest answer in tokens (``run_squad.py``: 30).
        n_best_size: QA: start / end candidates per window and length of the n-best list (``run_squad.py``: 20).
        null_score_threshold: QA, SQuAD 2.0 data: predict no answer when the null score exceeds the best span's
            by more than this (``run_squad.py``'s ``null_score_diff_threshold``: 0.0).
        report_to: where the Trainer logs losses, learning rate and development metrics: ``none``, ``all`` (every
            integration installed) or integration names separated by commas (``tensorboard``, ``wandb``, ...;
            :func:`bioelectra.reporting.check_report_to`). Not part of the trial fingerprint.
        null_window_fraction: QA: fraction in (0, 1] of the training windows that do not hold the answer kept
            for training (seeded by ``dev_split_seed``); 1.0 keeps all, as ``run_squad.py``. Long documents
            (COVID-QA: about 50 windows per question) are mostly such windows.
        double_unordered: GLUE's MRPC and STS-B: train on each pair in both orders (the original ELECTRA
            code's ``double_unordered``, on by default there and here: the published ELECTRA GLUE scores were
            made with it, and a paraphrase or similarity pair means the same in either order). The other
            tasks and kinds ignore it.
        linker: entity linking: the linker of ``--loader linking`` (``sparse``: TF-IDF over character n-grams,
            :mod:`downstream.linking.sparse`; ``dense``: a bi-encoder trained from the checkpoint,
            :mod:`downstream.linking.dense`). The other kinds ignore it.
        train_on: entity linking, trained linkers: the mentions the linker scored on the test set is trained on,
            ``train`` or ``train+dev`` (BioSyn's protocol for its published figures: dev chooses, then a second
            fit on train + dev is scored; :mod:`downstream.linking.run`). The other kinds ignore it.
    """

    task: str
    checkpoint: str
    output_dir: Path
    dataset: str | None = None
    data_dir: Path | None = None
    checkpoint_name: str | None = None
    metric: str = "f1"
    greater_is_better: bool = True
    num_trials: int = 1
    num_train_epochs: float = 3.0
    learning_rate: float = 1e-4
    per_device_train_batch_size: int = 32
    per_device_eval_batch_size: int = 64
    max_seq_length: int = 128
    seed: int = 42
    max_steps: int = -1
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    precision: str = "auto"
    iob1_policy: str = "repair"
    max_train_examples: int | None = None
    max_eval_examples: int | None = None
    fold: int | None = None
    re_head: str = "electra"
    dev_fraction: float = 0.1
    dev_split_seed: int = 42
    layerwise_lr_decay: float = 1.0
    micro_batch_tokens: int | None = None
    optimizer: str = "adamw"
    dropout: float | None = None
    protocol: str | None = None
    entity_type: str | None = None
    doc_stride: int = QA_DEFAULTS["doc_stride"]
    max_query_length: int = QA_DEFAULTS["max_query_length"]
    max_answer_length: int = QA_DEFAULTS["max_answer_length"]
    n_best_size: int = QA_DEFAULTS["n_best_size"]
    null_score_threshold: float = QA_DEFAULTS["null_score_threshold"]
    null_window_fraction: float = QA_DEFAULTS["null_window_fraction"]
    report_to: str = "none"
    double_unordered: bool = True
    linker: str = "sparse"
    train_on: str = "train"

    def __post_init__(self) -> None:
        """Refuse values that would finish with exit 0 and a meaningless result, or crash later.

        Raises:
            ValueError: the option named, with the value and what is expected (a number or flag of the wrong
                type: the field named, :func:`check_setting_types`).
        """
        check_setting_types(self)
        checks = [
            (math.isfinite(self.learning_rate) and self.learning_rate > 0, "--learning-rate", "a finite number > 0"),
            (
                self.max_steps > 0 or (math.isfinite(self.num_train_epochs) and self.num_train_epochs > 0),
                "--epochs",
                "a finite number > 0 (or --max-steps > 0)",
            ),
            (self.max_train_examples is None or self.max_train_examples >= 1, "--max-train-examples", "at least 1"),
            (self.max_eval_examples is None or self.max_eval_examples >= 1, "--max-eval-examples", "at least 1"),
            (0 <= self.seed and self.seed + self.num_trials - 1 <= MAX_SEED, "--seed",
             f"a whole number in [0, {MAX_SEED}] (trial i uses seed + i, which must stay in range too)"),
            (0 <= self.dev_split_seed <= MAX_SEED, "--dev-split-seed", f"a whole number in [0, {MAX_SEED}]"),
            (self.num_trials >= 1, "--trials", "at least 1"),
            (self.max_seq_length >= 8, "--max-seq-length", "at least 8"),
            (math.isfinite(self.weight_decay) and self.weight_decay >= 0, "--weight-decay", "a finite number >= 0"),
            (0.0 <= self.warmup_ratio < 1.0 or self.warmup_ratio == 1.0, "--warmup-ratio", "a fraction in [0, 1]"),
            (self.optimizer in OPTIMIZERS, "--optimizer", f"one of {', '.join(OPTIMIZERS)}"),
            (self.dropout is None or 0.0 <= self.dropout < 1.0, "--dropout", "a probability in [0, 1)"),
            (self.protocol is None or self.protocol in PROTOCOLS, "--protocol", f"one of {', '.join(PROTOCOLS)}"),
            (min(self.doc_stride, self.max_query_length, self.max_answer_length, self.n_best_size) >= 1,
             "--doc-stride", "--doc-stride, --max-query-length, --max-answer-length, --n-best-size all at least 1"),
            (0.0 < self.null_window_fraction <= 1.0, "--null-window-fraction", "a fraction in (0, 1]"),
            (math.isfinite(self.null_score_threshold), "--null-score-threshold", "a finite number"),
        ]
        values = {
            "--learning-rate": self.learning_rate,
            "--epochs": self.num_train_epochs,
            "--max-train-examples": self.max_train_examples,
            "--max-eval-examples": self.max_eval_examples,
            "--seed": self.seed,
            "--dev-split-seed": self.dev_split_seed,
            "--trials": self.num_trials,
            "--max-seq-length": self.max_seq_length,
            "--weight-decay": self.weight_decay,
            "--warmup-ratio": self.warmup_ratio,
            "--optimizer": self.optimizer,
            "--dropout": self.dropout,
            "--protocol": self.protocol,
            "--doc-stride": (self.doc_stride, self.max_query_length, self.max_answer_length, self.n_best_size),
            "--null-window-fraction": self.null_window_fraction,
            "--null-score-threshold": self.null_score_threshold,
        }
        for ok, option, expected in checks:
            if not ok:
                raise ValueError(f"{option} {values[option]!r}: expected {expected}")
        resolve_precision(self.precision)  # before any data is read: fp16 needs a GPU
        check_report_to(self.report_to)
        if self.entity_type is not None:
            try:
                check_entity_type(self.entity_type)
            except ValueError as exc:
                raise ValueError(f"--entity-type: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in data.items()}

    def fingerprint(self) -> str:
        """Hash of the settings that change a trial's result (not the trial count or output folder)."""
        data = self.to_json()
        for key in ("num_trials", "output_dir", "checkpoint", "micro_batch_tokens", "report_to"):
            data.pop(key)
        if self.task not in KIND_OWN_OPTIONS:
            raise DownstreamError(
                f"task kind {self.task!r}: its class is not defined (the table of kinds, downstream.kinds, loads them all)"
            )
        for key in KIND_OPTIONS:  # settings of other kinds: fingerprints stay
            if key not in KIND_OWN_OPTIONS[self.task]:
                data.pop(key)
        # defaults added after runs were made: leave them out, so the fingerprints of those runs stay valid
        for key, default in (("layerwise_lr_decay", 1.0), ("optimizer", "adamw"), ("dropout", None),
                             ("max_eval_examples", None), ("train_on", "train"),
                             *QA_DEFAULTS.items()):
            if key in data and data[key] == default:
                data.pop(key)
        data.pop("protocol")  # a name: the values it set are the other fields
        # the type of bare B / I tags names the saved model's labels: a run from before typed labels differs
        data.pop("entity_type")
        data.update(KIND_CLASSES[self.task].fingerprint_extras(self))
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


#: The types a value-typed setting may have (its annotation's parts): the settings checked by type.
_VALUE_TYPES = frozenset({"int", "float", "bool", "None"})


def setting_type_problem(name: str, value: Any) -> str | None:
    """What is wrong with ``value`` for the number or flag setting ``name`` of :class:`FinetuneSettings`
    (``"float, got str 'two'"``), ``None`` when it fits or the setting is not a number or flag (those are
    checked by value). :func:`bioelectra.hparams.value_type_problem` on the field's annotation."""
    annotation = SETTING_TYPES.get(name)
    return None if annotation is None else value_type_problem(value, annotation)


def check_setting_types(settings: FinetuneSettings) -> None:
    """Every number and flag of ``settings`` of the type its field says (a str ``"32"`` from a JSON file is
    not a batch size).

    Raises:
        ValueError: the field, the value and the type expected.
    """
    for name in SETTING_TYPES:
        value = getattr(settings, name)
        problem = setting_type_problem(name, value)
        if problem:
            raise ValueError(f"{name} {value!r}: expected {problem}")


def resolve_precision(precision: str) -> dict[str, bool]:
    """TrainingArguments precision flags: ``auto`` is bf16 where the GPU supports it, fp32 on CPU.

    Raises:
        DownstreamError: unknown value, or fp16 requested without a GPU.
    """
    import torch

    cuda = torch.cuda.is_available()
    if precision == "auto":
        return {"bf16": bool(cuda and torch.cuda.is_bf16_supported()), "fp16": False}
    if precision == "fp32":
        return {"bf16": False, "fp16": False}
    if precision == "bf16":
        return {"bf16": True, "fp16": False}
    if precision == "fp16":
        if not cuda:
            raise DownstreamError("--precision fp16: needs a CUDA GPU, and none is visible (use fp32 or bf16 on a CPU)")
        return {"bf16": False, "fp16": True}
    raise DownstreamError(f"unknown precision {precision!r}; expected auto, fp32, bf16 or fp16")


#: The settings that make a run a limited (smoke) run, each with its command-line option: a run with any of
#: them set is not a result comparable with published figures, and every file it writes says so.
LIMIT_OPTIONS: dict[str, str] = {
    "max_steps": "--max-steps", "max_train_examples": "--max-train-examples", "max_eval_examples": "--max-eval-examples",
}  # fmt: skip


def run_limits(settings: FinetuneSettings) -> dict[str, int]:
    """The limits ``settings`` set (:data:`LIMIT_OPTIONS`: ``max_steps`` > 0, ``max_train_examples`` /
    ``max_eval_examples`` given), by field name; empty for a full run."""
    values = {name: getattr(settings, name) for name in LIMIT_OPTIONS}
    return {name: v for name, v in values.items() if v is not None and not (name == "max_steps" and v <= 0)}


#: The number and flag fields of :class:`FinetuneSettings` -> their annotation (``"int | None"``).
SETTING_TYPES: dict[str, str] = {
    f.name: str(f.type) for f in dataclasses.fields(FinetuneSettings) if {t.strip() for t in str(f.type).split("|")} <= _VALUE_TYPES
}

#: ``--optimizer`` choices (see :class:`FinetuneSettings`).
OPTIMIZERS = ("adamw", "electra")

#: Named fine-tuning protocols (``--protocol``): the settings each sets, and where they come from. Options
#: given explicitly override them.
PROTOCOLS: dict[str, dict] = {
    "electra": {
        "source": "google-research/electra configure_finetuning.py defaults (and model/optimization.py)",
        "settings": {
            "learning_rate": 1e-4,
            "layerwise_lr_decay": 0.8,
            "num_train_epochs": 3.0,
            "warmup_ratio": 0.1,
            "weight_decay": 0.01,
            "max_seq_length": 128,
            "per_device_train_batch_size": 32,
            "per_device_eval_batch_size": 32,
            "num_trials": 1,
            "optimizer": "electra",
            "dropout": 0.1,
        },
    },
    "bio-electra": {
        "source": "Bio-ELECTRA's fine-tuning command (README of SciCrunch/bio_electra; seed 000): "
        "run_finetuning.py with learning_rate 3e-4, num_train_epochs 10, num_trials 10, batch 32, max_seq_length 128, "
        "over the original's defaults",
        "settings": {
            "learning_rate": 3e-4,
            "layerwise_lr_decay": 0.8,
            "num_train_epochs": 10.0,
            "warmup_ratio": 0.1,
            "weight_decay": 0.01,
            "max_seq_length": 128,
            "per_device_train_batch_size": 32,
            "per_device_eval_batch_size": 32,
            "num_trials": 10,
            "optimizer": "electra",
            "dropout": 0.1,
        },
    },
    "default": {
        "source": "this project's finetune defaults (AdamW, linear schedule, warmup 0.1, 3 epochs, batch 32, "
        "sequence length 128; a shipped model's own learning rate, bioelectra.presets.SHIPPED_MODEL_LEARNING_RATES, "
        "else 1e-4)",
        "settings": {},
    },
    "blurb": {
        "source": "BLURB-style settings per dataset, from LinkBERT's BLURB fine-tuning commands for BioLinkBERT-base "
        "(michiyasunaga/LinkBERT @210bc47, src/run_examples_blurb_biolinkbert-base.sh; Hugging Face AdamW without "
        "weight decay, last epoch evaluated there where finetune keeps the best development epoch; a warmup of "
        "100 steps there is 0.1 of the steps here). Third-party: the BLURB paper's own settings (Gu et al. 2021) "
        "could not be read here. Datasets outside BLURB get the common settings only",
        "settings": {"optimizer": "adamw", "weight_decay": 0.0, "layerwise_lr_decay": 1.0, "warmup_ratio": 0.0},
        "per_dataset": {
            "ncbi-disease": {"per_device_train_batch_size": 32, "learning_rate": 5e-5, "warmup_ratio": 0.1, "num_train_epochs": 20.0, "max_seq_length": 512},
            "bc2gm": {"per_device_train_batch_size": 32, "learning_rate": 6e-5, "warmup_ratio": 0.1, "num_train_epochs": 50.0, "max_seq_length": 512},
            "bc5cdr-chem": {"per_device_train_batch_size": 32, "learning_rate": 5e-5, "warmup_ratio": 0.1, "num_train_epochs": 20.0, "max_seq_length": 512},
            "bc5cdr-disease": {"per_device_train_batch_size": 16, "learning_rate": 5e-5, "warmup_ratio": 0.1, "num_train_epochs": 8.0, "max_seq_length": 512},
            "jnlpba": {"per_device_train_batch_size": 16, "learning_rate": 1e-5, "warmup_ratio": 0.1, "num_train_epochs": 5.0, "max_seq_length": 512},
            "chemprot": {"per_device_train_batch_size": 32, "learning_rate": 3e-5, "num_train_epochs": 10.0, "max_seq_length": 256},
            "ddi": {"per_device_train_batch_size": 32, "learning_rate": 2e-5, "num_train_epochs": 5.0, "max_seq_length": 256},
            "gad": {"per_device_train_batch_size": 32, "learning_rate": 3e-5, "num_train_epochs": 10.0, "max_seq_length": 256},
            "pubmedqa": {"per_device_train_batch_size": 16, "learning_rate": 2e-5, "warmup_ratio": 0.1, "num_train_epochs": 30.0, "max_seq_length": 512},
            "bioasq-yesno": {"per_device_train_batch_size": 16, "learning_rate": 2e-5, "warmup_ratio": 0.1, "num_train_epochs": 20.0, "max_seq_length": 512},
            "biosses": {"per_device_train_batch_size": 16, "learning_rate": 1e-5, "num_train_epochs": 30.0, "max_seq_length": 512},
            "hoc": {"per_device_train_batch_size": 32, "learning_rate": 4e-5, "num_train_epochs": 40.0, "max_seq_length": 512},
            # BLURB's own files of the same sets, and EBM PICO (the script's ebmnlp_hf)
            "jnlpba-blurb": {"per_device_train_batch_size": 16, "learning_rate": 1e-5, "warmup_ratio": 0.1, "num_train_epochs": 5.0, "max_seq_length": 512},
            "gad-blurb": {"per_device_train_batch_size": 32, "learning_rate": 3e-5, "num_train_epochs": 10.0, "max_seq_length": 256},
            "bioasq-blurb": {"per_device_train_batch_size": 16, "learning_rate": 2e-5, "warmup_ratio": 0.1, "num_train_epochs": 20.0, "max_seq_length": 512},
            "ebm-pico": {"per_device_train_batch_size": 32, "learning_rate": 5e-5, "num_train_epochs": 1.0, "max_seq_length": 512},
        },
    },
}  # fmt: skip


def protocol_values(name: str, dataset: str | None = None) -> dict:
    """The settings protocol ``name`` sets: its common ones, then those it gives ``dataset`` (``blurb``).

    Raises:
        ValueError: an unknown protocol name.
    """
    if name not in PROTOCOLS:
        raise ValueError(f"--protocol {name!r}: expected one of {', '.join(PROTOCOLS)}")
    protocol = PROTOCOLS[name]
    per_dataset = protocol.get("per_dataset", {})
    if per_dataset and (dataset or "").lower() not in per_dataset:
        logger.warning("protocol %s gives no settings for %s (its datasets: %s): its common settings only",
                       name, dataset or "this data", ", ".join(per_dataset))  # fmt: skip
    return {**protocol["settings"], **per_dataset.get((dataset or "").lower(), {})}


def protocol_settings(name: str | None, given: dict, dataset: str | None = None) -> dict:
    """``given`` (the options the user set) over protocol ``name``'s settings for ``dataset``
    (:func:`protocol_values`); ``given`` alone for None. ``default`` is this project's defaults (no values).

    Raises:
        ValueError: an unknown protocol name.
    """
    if name is None:
        return dict(given)
    return {**protocol_values(name, dataset), **given, "protocol": name}


#: Development metrics that can pick the best epoch (``--metric``): NER, RE and yes/no QA report f1,
#: precision, recall, accuracy; extractive QA f1, exact_match and the BioASQ measures; GLUE mcc (CoLA),
#: pearson and spearman (STS-B) besides accuracy and f1; all report the loss.
SELECTION_METRICS = ("f1", "precision", "recall", "accuracy", "loss", "exact_match", "strict_accuracy", "lenient_accuracy", "mrr",
                     "mcc", "pearson", "spearman")  # fmt: skip


def check_metric(metric: str, allowed: tuple[str, ...] = SELECTION_METRICS, kind: str | None = None) -> None:
    """Refuse an unknown ``--metric`` before any training (the Trainer would only fail after an epoch).

    Args:
        metric: the ``--metric`` value (``eval_`` prefix allowed).
        allowed: the metrics the run's task kind reports (``selection_metrics()`` of its class).
        kind: the task kind, named in the message.

    Raises:
        DownstreamError: ``metric`` is not one of ``allowed``.
    """
    if metric.removeprefix("eval_") not in allowed:
        of = f" for --loader {kind}" if kind else ""
        raise DownstreamError(f"--metric {metric!r}: expected one of {', '.join(allowed)}{of}")


def metric_key(metric: str) -> str:
    return metric if metric.startswith("eval_") else f"eval_{metric}"


#: Default ``micro_batch_tokens`` on CPU: 1,024 padded tokens (8 rows of 128) per forward pass. At
#: ELECTRA-small's shape a 32 x 128 batch keeps about 1 GB of activations (with dropout masks) for the backward
#: pass. Measured peak RSS over the 320 longest NCBI-disease training sentences (10 steps of 32 x 128):
#: 2,280 MB whole, 1,717 MB with 2,048-token passes, 1,270 MB with 1,024-token passes.
CPU_MICRO_BATCH_TOKENS = 1024


def resolve_micro_batch_tokens(value: int | None, *, cuda: bool) -> int:
    """``micro_batch_tokens`` to use: ``None`` -> :data:`CPU_MICRO_BATCH_TOKENS` on CPU, 0 on a GPU.

    Raises:
        ValueError: a negative value.
    """
    if value is None:
        return 0 if cuda else CPU_MICRO_BATCH_TOKENS
    if value < 0:
        raise ValueError(f"micro_batch_tokens={value}: expected >= 0 (0 = never split)")
    return value


def check_layerwise_lr_decay(decay: float) -> None:
    """Raises ``ValueError`` unless ``decay`` is a factor in (0, 1]."""
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"layerwise_lr_decay={decay}: expected a factor in (0, 1]")


def check_entity_type(entity_type: str) -> str:
    """``entity_type`` if it can be a tag's type (non-empty, no whitespace, not starting with ``-``).

    Raises:
        ValueError: otherwise, with the value.
    """
    if not entity_type or entity_type != entity_type.strip() or any(c.isspace() for c in entity_type) or entity_type[0] == "-":
        raise ValueError(f"entity type {entity_type!r}: expected a name without whitespace, like Disease or Chemical")
    return entity_type
