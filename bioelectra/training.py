"""ELECTRA pre-training with the Hugging Face ``Trainer``: hyper-parameters, metrics, train, eval, export.

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
``eval_results.json`` (metrics after the last step).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import PrinterCallback, ProgressCallback, Trainer, TrainerCallback, TrainingArguments

from bioelectra.configuration import ElectraPretrainingConfig
from bioelectra.hparams import (
    DEBUG_SETTINGS,
    ORIGINAL_PRETRAINING_HPARAMS,
    RENAMED,
    SIZE_DEFAULTS,
    classify_original_hparams,
)
from bioelectra.masking import ElectraMaskingCollator
from bioelectra.modeling import ElectraPretrainingModel
from bioelectra.optimization import ElectraAdamW, decay_parameter_groups, electra_lr_scheduler

logger = logging.getLogger(__name__)

HPARAMS_FILE = "hparams.json"
#: Where the original layout keeps the examples under ``--data-dir`` (``configure_pretraining.py``'s
#: ``pretrain_tfrecords``).
ORIGINAL_DATA_SUBDIR = "pretrain_tfrecords"
EVAL_RESULTS_FILE = "eval_results.json"
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")

#: The original's metric names (``run_pretraining.py: metric_fn``); all but the losses are fractions.
METRIC_NAMES = (
    "masked_lm_accuracy",
    "masked_lm_loss",
    "sampled_masked_lm_accuracy",
    "disc_loss",
    "disc_auc",
    "disc_accuracy",
    "disc_precision",
    "disc_recall",
)

# --------------------------------------------------------------------------------------------------
# hyper-parameters
# --------------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class PretrainingHparams:
    """Every pre-training option, with the original's default (google-research/electra,
    ``configure_pretraining.py: PretrainingConfig``); ``None`` means "the size's default" (see
    :data:`SIZE_DEFAULTS`). Names are ``TrainingArguments``' where it has one, the original's otherwise.

    Args:
        mask_prob (`float`, 0.15; large 0.25): fraction of tokens masked. Original ``mask_prob``.
        gen_weight (`float`, 1.0): weight of the generator's MLM loss. Original ``gen_weight``.
        disc_weight (`float`, 50.0): weight of the discriminator's RTD loss. Original ``disc_weight``.
        temperature (`float`, 1.0): sampling temperature of the generator. Original ``temperature``.
        generator_hidden_size (`float`, None -> small 0.25, base 1/3, large 0.25): generator width as a
            fraction of the discriminator's. Original ``generator_hidden_size``.
        generator_layers (`float`, 1.0): generator depth as a fraction. Original ``generator_layers``.
        embedding_size (`int`, None -> small 128, base 768, large 1024): width of the shared embeddings.
            Original ``embedding_size``.
        disallow_correct (`bool`, False): never sample the original token. Original ``disallow_correct``.
        untied_generator_embeddings (`bool`, False): generator gets its own embeddings. Original
            ``untied_generator_embeddings``.
        untied_generator (`bool`, True): False ties all weights: the generator is the discriminator's
            encoder with its own masked-LM head (so it has the discriminator's size, and
            ``generator_hidden_size`` / ``generator_layers`` are ignored). Original ``untied_generator``;
            paper Section 3.2.
        model_hparam_overrides (`dict`, {}): ``ElectraConfig`` fields of the discriminator, e.g.
            ``{"hidden_size": 64, "num_hidden_layers": 2}``. Original ``model_hparam_overrides``.
        learning_rate (`float`, None -> small 5e-4, base/large 2e-4): peak learning rate. Original
            ``learning_rate``.
        lr_decay_power (`float`, 1.0): power of the polynomial decay. Original ``lr_decay_power``.
        weight_decay (`float`, 0.01): decoupled weight decay (not on LayerNorm and biases). Original
            ``weight_decay_rate``.
        adam_beta1 (`float`, 0.9), adam_beta2 (`float`, 0.999), adam_epsilon (`float`, 1e-6): Adam
            constants. Original ``model/optimization.py``.
        adam_bias_correction (`bool`, False): standard Adam bias correction; the original has none. On a
            CUDA device it switches to torch's fused ``AdamW`` kernel.
        max_grad_norm (`float`, 1.0): global gradient-norm clip. Original ``model/optimization.py``.
        warmup_steps (`int`, 10000): linear warmup steps, multiplied into the decay. Original
            ``num_warmup_steps``.
        max_steps (`int`, None -> small 1,000,000, base 766,000, large 400,000): optimizer steps.
            Original ``num_train_steps``.
        per_device_train_batch_size (`int`, None -> small 128, base 256, large 2048): sequences per
            device and step; the global batch is this x ``gradient_accumulation_steps`` x processes.
            Original ``train_batch_size`` (global, on one TPU host).
        per_device_eval_batch_size (`int`, 128): original ``eval_batch_size``.
        gradient_accumulation_steps (`int`, 1): micro-batches per optimizer step (Trainer's).
        max_seq_length (`int`, None -> the data's ``build_info.json``): sequence length; sets the cap on
            masked positions. Original ``max_seq_length`` (128).
        save_steps (`int`, 1000): checkpoint interval. Original ``save_checkpoints_steps``.
        save_total_limit (`int`, 5): checkpoints kept. Original ``keep_checkpoint_max``.
        eval_steps (`int`, 10000): evaluation interval during training (0: only after the last step).
            The original evaluates after training only.
        num_eval_steps (`int`, 100): batches per evaluation. Original ``num_eval_steps``.
        logging_steps (`int`, 100): loss logging interval. Original ``iterations_per_loop`` (200).
        seed (`int`, 42): seed of initialisation, data order, masking and sampling.
        precision (`str`, "auto"): "auto" (bf16 autocast on a CUDA GPU that supports it, fp32 otherwise),
            "bf16" or "fp32". The original trains in fp32 on TPUs.
        attn_implementation (`str`, "sdpa"): "sdpa" or "eager" attention.
        torch_compile (`bool`, False): ``torch.compile`` the model (GPU).
        pad_to_multiple_of (`int`, 0): pad batches to a multiple of this (8 suits GPUs); 0: no rounding.
        dataloader_num_workers (`int`, 0): data loading worker processes.
        max_train_seconds (`float`, 0.0): wall-clock budget of this process's training loop in seconds;
            at the first optimizer step past it, training stops and a checkpoint is saved (the schedule
            stays the one of ``max_steps``; a re-run resumes towards ``max_steps``). 0: no limit. Not in
            the original; for leased accelerator time.
    """

    mask_prob: float | None = None
    gen_weight: float = 1.0
    disc_weight: float = 50.0
    temperature: float = 1.0
    generator_hidden_size: float | None = None
    generator_layers: float = 1.0
    embedding_size: int | None = None
    disallow_correct: bool = False
    untied_generator_embeddings: bool = False
    untied_generator: bool = True
    model_hparam_overrides: dict[str, Any] = field(default_factory=dict)
    learning_rate: float | None = None
    lr_decay_power: float = 1.0
    weight_decay: float = 0.01
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-6
    adam_bias_correction: bool = False
    max_grad_norm: float = 1.0
    warmup_steps: int = 10000
    max_steps: int | None = None
    per_device_train_batch_size: int | None = None
    per_device_eval_batch_size: int = 128
    gradient_accumulation_steps: int = 1
    max_seq_length: int | None = None
    save_steps: int = 1000
    save_total_limit: int = 5
    eval_steps: int = 10000
    num_eval_steps: int = 100
    logging_steps: int = 100
    seed: int = 42
    precision: str = "auto"
    attn_implementation: str = "sdpa"
    torch_compile: bool = False
    pad_to_multiple_of: int = 0
    dataloader_num_workers: int = 0
    max_train_seconds: float = 0.0

    def __post_init__(self) -> None:
        checks = [
            (self.mask_prob is None or 0.0 < self.mask_prob < 1.0, "mask_prob", "a fraction in (0, 1)"),
            (self.temperature > 0, "temperature", "> 0"),
            (self.gen_weight >= 0 and self.disc_weight >= 0, "gen_weight/disc_weight", ">= 0"),
            (self.warmup_steps >= 0, "warmup_steps", ">= 0"),
            (self.max_steps is None or self.max_steps >= 1, "max_steps", ">= 1"),
            (self.learning_rate is None or self.learning_rate > 0, "learning_rate", "> 0"),
            (self.weight_decay >= 0, "weight_decay", ">= 0"),
            (self.gradient_accumulation_steps >= 1, "gradient_accumulation_steps", ">= 1"),
            (self.save_steps >= 1 and self.logging_steps >= 1, "save_steps/logging_steps", ">= 1"),
            (self.eval_steps >= 0 and self.num_eval_steps >= 1, "eval_steps/num_eval_steps", ">= 0 / >= 1"),
            (self.precision in ("auto", "bf16", "fp32"), "precision", "auto, bf16 or fp32"),
            (self.attn_implementation in ("sdpa", "eager"), "attn_implementation", "sdpa or eager"),
            (isinstance(self.model_hparam_overrides, dict), "model_hparam_overrides", "a JSON object"),
            (self.max_train_seconds >= 0, "max_train_seconds", ">= 0 (0: no limit)"),
        ]
        for ok, name, expected in checks:
            if not ok:
                raise ValueError(
                    f"hparam {name}={getattr(self, name.split('/')[0], None)!r}: expected {expected}"
                )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: The original's names accepted in ``--hparams`` for the fields renamed after ``TrainingArguments``
#: (:data:`bioelectra.hparams.RENAMED`; the per-size defaults are :data:`bioelectra.hparams.SIZE_DEFAULTS`).
HPARAM_ALIASES = RENAMED
RENAMED_FROM = {v: k for k, v in RENAMED.items()}


def parse_hparams_arg(value: str | None) -> dict[str, Any]:
    """``--hparams``: a JSON object given inline or as the path of a ``.json`` file (original style).

    Raises:
        ValueError: not valid JSON, or not an object.
    """
    if value is None or not value.strip():
        return {}
    text, where = value, "--hparams"
    if not value.lstrip().startswith("{"):
        path = Path(value)
        if not path.is_file():
            raise ValueError(f"--hparams {value!r}: neither a JSON object nor an existing file")
        text, where = path.read_text(encoding="utf-8"), str(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: invalid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object of hparams, got {type(data).__name__}")
    return data


def _type_error(name: str, value: Any, annotation: str) -> str | None:
    """A message when ``value`` does not fit the field's annotation (``int``, ``float | None``, ...)."""
    allowed = {t.strip() for t in annotation.split("|")}
    if value is None:
        return None if "None" in allowed else "a value, not null"
    checks = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
    }
    for t in allowed:
        base = t.split("[")[0]
        if base == "dict" and isinstance(value, dict):
            return None
        if base in checks and checks[base](value):
            return None
    expected = " or ".join(sorted(t.split("[")[0].replace("dict", "a JSON object") for t in allowed if t != "None"))
    return f"{expected}, got {type(value).__name__} {value!r}"


def resolve_hparams(model_size: str, overrides: Mapping[str, Any] | None = None) -> PretrainingHparams:
    """Defaults, then the size's defaults, then ``overrides``; strict like the original's ``update``.

    The original ``configure_pretraining.py`` keys are all accepted (:mod:`bioelectra.hparams`): renamed
    ones map onto their field, TensorFlow / TPU ones are reported as ignored (``hp.ignored``), and the ones
    fixed by something else here are kept for the checks of :func:`prepare_pretraining` (``hp.checks``:
    ``vocab_size``, ``do_lower_case``, ``do_train``, ``do_eval``); ``debug: true`` applies the original's
    debug sizes (:data:`bioelectra.hparams.DEBUG_SETTINGS`) to the keys not given.

    Args:
        model_size: ``small``, ``base`` or ``large``; a ``model_size`` key in ``overrides`` must agree.
        overrides: field names of :class:`PretrainingHparams` or original names, to values.

    Raises:
        ValueError: an unknown size, an unknown key (named, with the valid keys listed), a value of the
            wrong type (key named), a value out of range, or an original option this package does not
            implement (e.g. ``electric_objective: true``).
    """
    if model_size not in SIZE_DEFAULTS:
        raise ValueError(f"unknown model size {model_size!r}; expected one of {sorted(SIZE_DEFAULTS)}")
    overrides = dict(overrides or {})
    if overrides.get("debug") is True:
        overrides = {**DEBUG_SETTINGS, **overrides}
    sorted_keys = classify_original_hparams(overrides)
    fields = {f.name: f.type for f in dataclasses.fields(PretrainingHparams)}
    values: dict[str, Any] = {}
    given: list[tuple[str, str, Any]] = [
        *((RENAMED_FROM[name], name, v) for name, v in sorted_keys["renamed"].items()),
        *((k, k, v) for k, v in sorted_keys["same"].items()),
        *((k, k, v) for k, v in sorted_keys["other"].items()),
    ]
    for key, name, value in given:
        if name not in fields:
            raise ValueError(
                f"unknown hparam {key!r}; valid keys: {', '.join(sorted(fields))} "
                f"(and the original configure_pretraining.py names: {', '.join(sorted(ORIGINAL_PRETRAINING_HPARAMS))})"
            )
        if name in values:
            raise ValueError(f"hparam {name!r} given twice (as {key!r} and under another name)")
        problem = _type_error(name, value, str(fields[name]))
        if problem:
            raise ValueError(f"hparam {key!r}: expected {problem}")
        values[name] = float(value) if str(fields[name]).startswith("float") and isinstance(value, int) else value
    checks = dict(sorted_keys["checked"])
    size = checks.pop("model_size", model_size)
    if size != model_size:
        raise ValueError(f"hparam model_size={size!r} disagrees with the model size {model_size!r}")
    checks.pop("debug", None)
    hp = PretrainingHparams(**values)
    for name, default in SIZE_DEFAULTS[model_size].items():
        if getattr(hp, name) is None:
            setattr(hp, name, default)
    hp.__post_init__()
    hp.checks = checks  # not fields: checked against the data, never saved as settings
    hp.ignored = dict(sorted_keys["ignored"])
    return hp


# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------


@dataclass
class PretrainingData:
    """A ``build-data`` directory: ``examples/`` (DatasetDict), ``tokenizer/``, ``build_info.json``."""

    train: Any
    validation: Any
    tokenizer: Any
    build_info: dict[str, Any]
    path: Path


def load_pretraining_data(data_dir: str | os.PathLike) -> PretrainingData:
    """Open the pre-training examples written by ``pretrain build-data``.

    ``data_dir`` is that output, or the original layout's ``--data-dir`` that holds it as
    ``pretrain_tfrecords/`` (the original ``build_pretraining_dataset.py --output-dir
    $DATA_DIR/pretrain_tfrecords``, then ``run_pretraining.py --data-dir $DATA_DIR``).

    Raises:
        FileNotFoundError: a missing ``examples/``, ``tokenizer/`` or ``build_info.json``.
        ValueError: a missing split or column, or a tokenizer whose size disagrees with ``build_info.json``.
    """
    import datasets
    from transformers import AutoTokenizer

    data_dir = Path(data_dir)
    original = data_dir / ORIGINAL_DATA_SUBDIR
    if not (data_dir / "build_info.json").exists() and (original / "build_info.json").is_file():
        logger.info("%s: reading the examples in %s (the original layout)", data_dir, original)
        data_dir = original
    for part in ("examples", "tokenizer", "build_info.json"):
        if not (data_dir / part).exists():
            raise FileNotFoundError(
                f"{data_dir / part} not found: expected the output of `pretrain build-data`"
            )
    build_info = json.loads((data_dir / "build_info.json").read_text(encoding="utf-8"))
    for key in ("max_seq_length", "vocab_size"):
        if key not in build_info:
            raise ValueError(f"{data_dir / 'build_info.json'}: missing {key!r}")
    examples = datasets.load_from_disk(str(data_dir / "examples"))
    for split in ("train", "validation"):
        if split not in examples:
            raise ValueError(f"{data_dir / 'examples'}: no {split!r} split (found {sorted(examples)})")
        if "input_ids" not in examples[split].column_names:
            raise ValueError(f"{data_dir / 'examples'}[{split}]: no 'input_ids' column")
    tokenizer = AutoTokenizer.from_pretrained(str(data_dir / "tokenizer"))
    if len(tokenizer) != int(build_info["vocab_size"]):
        raise ValueError(
            f"{data_dir / 'tokenizer'} has {len(tokenizer)} entries but build_info.json says "
            f"vocab_size={build_info['vocab_size']}"
        )
    return PretrainingData(examples["train"], examples["validation"], tokenizer, build_info, data_dir)


def make_collator(tokenizer: Any, hparams: PretrainingHparams, **kwargs: Any) -> ElectraMaskingCollator:
    """The masking collator for resolved ``hparams`` (``mask_prob``, ``max_seq_length``, padding)."""
    return ElectraMaskingCollator.from_tokenizer(
        tokenizer,
        mask_prob=hparams.mask_prob,
        max_seq_length=hparams.max_seq_length,
        pad_to_multiple_of=hparams.pad_to_multiple_of or None,
        **kwargs,
    )


# --------------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------------


def binary_auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """Area under the ROC curve by ranks (Mann-Whitney U), ties given their average rank.

    Args:
        scores: `(n,)` real scores (higher = more likely positive).
        labels: `(n,)` 0/1 labels.

    Returns:
        The AUC in [0, 1]; ``nan`` when one class is absent. (The original uses ``tf.metrics.auc``, a
        200-threshold approximation of the same quantity.)
    """
    scores = scores.double().flatten()
    labels = labels.flatten().bool()
    n_pos = int(labels.sum())
    n_neg = labels.numel() - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, inverse, counts = torch.unique(scores, return_inverse=True, return_counts=True)  # sorted unique
    ends = torch.cumsum(counts, 0).double()  # (U,) 1-based rank of the last element of each tie group
    avg_rank = ends - (counts.double() - 1.0) / 2.0  # (U,) average 1-based rank of each tie group
    rank_sum = avg_rank[inverse][labels].sum().item()
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


@dataclass
class _MetricSums:
    """Streaming sums behind :data:`METRIC_NAMES`."""

    masked: float = 0.0
    mlm_correct: float = 0.0
    mlm_loss_sum: float = 0.0
    sampled_correct: float = 0.0
    real: float = 0.0
    disc_loss_sum: float = 0.0
    disc_correct: float = 0.0
    pred_pos: float = 0.0
    true_pos: float = 0.0
    label_pos: float = 0.0
    probs: list[torch.Tensor] = field(default_factory=list)
    labels: list[torch.Tensor] = field(default_factory=list)

    def update(self, out: Any, labels: torch.Tensor, attention_mask: torch.Tensor) -> None:
        mlm_labels = labels[out.masked_positions]  # (M,)
        gen_logits = out.gen_logits.float()  # (M, V)
        self.masked += mlm_labels.numel()
        self.mlm_correct += (gen_logits.argmax(-1) == mlm_labels).sum().item()
        self.mlm_loss_sum += torch.nn.functional.cross_entropy(gen_logits, mlm_labels, reduction="sum").item()
        self.sampled_correct += (out.sampled_ids == mlm_labels).sum().item()
        real = attention_mask.bool()  # (B, L)
        logits = out.disc_logits.float()[real]  # (T,) real tokens only
        target = out.is_replaced[real].float()  # (T,)
        preds = (logits > 0).float()  # (T,) sigmoid(logit) > 0.5
        self.real += target.numel()
        self.disc_loss_sum += torch.nn.functional.binary_cross_entropy_with_logits(
            logits, target, reduction="sum"
        ).item()
        self.disc_correct += (preds == target).sum().item()
        self.pred_pos += preds.sum().item()
        self.true_pos += (preds * target).sum().item()
        self.label_pos += target.sum().item()
        self.probs.append(torch.sigmoid(logits).cpu())
        self.labels.append(target.cpu())

    def scalars(self) -> torch.Tensor:
        return torch.tensor(
            [
                self.masked,
                self.mlm_correct,
                self.mlm_loss_sum,
                self.sampled_correct,
                self.real,
                self.disc_loss_sum,
                self.disc_correct,
                self.pred_pos,
                self.true_pos,
                self.label_pos,
            ],
            dtype=torch.float64,
        )


def _finish_metrics(s: torch.Tensor, probs: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    (
        masked,
        mlm_correct,
        mlm_loss_sum,
        sampled_correct,
        real,
        disc_loss_sum,
        disc_correct,
        pred_pos,
        tp,
        pos,
    ) = s.tolist()

    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else 0.0

    return {
        "masked_lm_accuracy": ratio(mlm_correct, masked),
        "masked_lm_loss": ratio(mlm_loss_sum, masked),
        "sampled_masked_lm_accuracy": ratio(sampled_correct, masked),
        "disc_loss": ratio(disc_loss_sum, real),
        "disc_auc": binary_auc(probs, labels),
        "disc_accuracy": ratio(disc_correct, real),
        "disc_precision": ratio(tp, pred_pos),
        "disc_recall": ratio(tp, pos),
    }


@torch.no_grad()
def pretraining_metrics(
    model: ElectraPretrainingModel,
    batches: Iterable[Mapping[str, torch.Tensor]],
    *,
    num_eval_steps: int | None = None,
    device: torch.device | str | None = None,
    autocast: contextlib.AbstractContextManager | None = None,
    accelerator: Any = None,
) -> dict[str, float]:
    """The original pre-training metrics (``run_pretraining.py: metric_fn``) over masked batches.

    - ``masked_lm_accuracy`` / ``masked_lm_loss``: the generator's argmax accuracy and mean cross-entropy
      (nats) over the masked positions;
    - ``sampled_masked_lm_accuracy``: how often the sampled token equals the original;
    - ``disc_loss``: mean binary cross-entropy over the real tokens (the original averages the per-token
      losses with zeros on padding; this counts real tokens only);
    - ``disc_auc``, ``disc_accuracy``, ``disc_precision``, ``disc_recall``: the discriminator on real tokens,
      "replaced" = positive, prediction = ``sigmoid(logit) > 0.5``; precision is 0 without positive
      predictions.

    Args:
        model: the joint model (switched to eval mode; left so).
        batches: collated batches (``input_ids``, ``attention_mask``, ``token_type_ids``, ``labels``).
        num_eval_steps: stop after this many batches (``None``: all).
        device: where to move the batches (the model's device when omitted).
        autocast: a context manager for the forward (e.g. bf16 autocast).
        accelerator: an ``accelerate.Accelerator``; sums and AUC inputs are gathered over its processes.

    Returns:
        ``{name: value}`` for :data:`METRIC_NAMES`; fractions in [0, 1], losses in nats.
    """
    model.eval()
    device = device or next(model.parameters()).device
    sums = _MetricSums()
    for step, batch in enumerate(batches):
        if num_eval_steps is not None and step >= num_eval_steps:
            break
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast or contextlib.nullcontext():
            out = model(**batch)
        sums.update(out, batch["labels"], batch["attention_mask"])
    scalars = sums.scalars()
    if accelerator is None and sums.real == 0:
        raise ValueError("no held-out tokens to evaluate: the evaluation data is empty")
    probs = torch.cat(sums.probs) if sums.probs else torch.zeros(0)
    labels = torch.cat(sums.labels) if sums.labels else torch.zeros(0)
    if accelerator is not None and accelerator.num_processes > 1:
        scalars = accelerator.reduce(scalars.to(accelerator.device), reduction="sum").cpu()
        padded = torch.stack([probs, labels]).T.to(accelerator.device)  # (T, 2)
        padded = accelerator.pad_across_processes(padded, dim=0, pad_index=-1.0)
        gathered = accelerator.gather(padded).cpu()  # (world * T_max, 2)
        gathered = gathered[gathered[:, 1] >= 0]
        probs, labels = gathered[:, 0], gathered[:, 1]
    return _finish_metrics(scalars, probs, labels)


def _json_safe(metrics: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}


# --------------------------------------------------------------------------------------------------
# the Trainer
# --------------------------------------------------------------------------------------------------


class SaveAtEndCallback(TrainerCallback):
    """Write a checkpoint at the last step even when it is not a multiple of ``save_steps`` (the original
    saves the final model), so a re-run of a finished command resumes at the end instead of redoing steps."""

    def on_step_end(self, args, state, control, **kwargs):
        if state.max_steps and state.global_step >= state.max_steps:
            control.should_save = True
        return control


class DeadlineCallback(TrainerCallback):
    """Stop training, with a checkpoint, at the first optimizer step after ``seconds`` of wall-clock time
    since the loop began (``hparams.max_train_seconds``): a run on leased time ends saved, not killed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.start: float | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        if self.start is not None and time.monotonic() - self.start >= self.seconds:
            logger.info(
                "max_train_seconds=%g reached at step %d of %d: saving and stopping",
                self.seconds,
                state.global_step,
                state.max_steps,
            )
            control.should_save = True
            control.should_training_stop = True
        return control


def make_optimizer(
    param_groups: list[dict], hparams: PretrainingHparams, *, cuda: bool
) -> torch.optim.Optimizer:
    """ELECTRA's optimizer for ``hparams``: :class:`ElectraAdamW` (no bias correction, the original), or,
    with ``adam_bias_correction`` on a CUDA device, torch's fused ``AdamW`` (the same update with bias
    correction and decoupled weight decay ``w *= 1 - lr * wd``)."""
    betas = (hparams.adam_beta1, hparams.adam_beta2)
    if hparams.adam_bias_correction and cuda:
        return torch.optim.AdamW(
            param_groups,
            lr=hparams.learning_rate,
            betas=betas,
            eps=hparams.adam_epsilon,
            weight_decay=hparams.weight_decay,
            fused=True,
        )
    return ElectraAdamW(
        param_groups,
        lr=hparams.learning_rate,
        betas=betas,
        eps=hparams.adam_epsilon,
        weight_decay=hparams.weight_decay,
        bias_correction=hparams.adam_bias_correction,
    )


class LogMetricsCallback(TrainerCallback):
    """Send the Trainer's logs (losses, learning rate, metrics) to this module's logger instead of stdout
    (replaces ``PrinterCallback``: only the CLI prints)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            shown = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in logs.items()}
            logger.info("step %d: %s", state.global_step, json.dumps(shown))


class StepProgressCallback(ProgressCallback):
    """The Trainer's progress bars without its printing of the logs (:class:`LogMetricsCallback` logs them)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        return None


class ElectraPretrainer(Trainer):
    """``Trainer`` for :class:`ElectraPretrainingModel`, extended only through its hooks.

    Args:
        hparams: resolved :class:`PretrainingHparams` (optimizer and schedule settings, eval sizes, seed).
        *args, **kwargs: ``Trainer``'s.
    """

    def __init__(self, *args: Any, hparams: PretrainingHparams, **kwargs: Any) -> None:
        self.hparams = hparams
        self._component_sums: dict[str, float | torch.Tensor] = {"mlm_loss": 0.0, "disc_loss": 0.0}
        self._component_count = 0
        super().__init__(*args, **kwargs)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """``gen_weight * mlm_loss + disc_weight * disc_loss`` (the model computes it); the two parts are
        kept for logging. The mean over this micro-batch: Trainer divides by the accumulation steps."""
        outputs = model(**inputs)
        # summed on the device: no host sync per step (read at logging time only)
        for key in ("mlm_loss", "disc_loss"):
            self._component_sums[key] = self._component_sums[key] + getattr(outputs, key).detach().float()
        self._component_count += 1
        return (outputs.loss, outputs) if return_outputs else outputs.loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Add the mean generator and discriminator losses since the last log to a training log."""
        if "loss" in logs and self._component_count:
            for key, total in self._component_sums.items():
                logs[key] = round(float(total) / self._component_count, 4)
            self._component_sums = {k: 0.0 for k in self._component_sums}
            self._component_count = 0
        super().log(logs, start_time)

    def create_optimizer(self, model=None) -> torch.optim.Optimizer:
        """:class:`ElectraAdamW` over two groups (weight decay / none for LayerNorm and biases)."""
        if self.optimizer is None:
            opt_model = self.model if model is None else model
            hp = self.hparams
            self.optimizer = make_optimizer(
                decay_parameter_groups(opt_model, weight_decay=hp.weight_decay),
                hp,
                cuda=next(opt_model.parameters()).is_cuda or self.args.device.type == "cuda",
            )
        return self.optimizer

    def create_scheduler(self, num_training_steps: int, optimizer: torch.optim.Optimizer | None = None):
        """ELECTRA's warmup x polynomial decay (:func:`bioelectra.optimization.electra_lr_lambda`)."""
        if self.lr_scheduler is None:
            self.lr_scheduler = electra_lr_scheduler(
                optimizer or self.optimizer,
                warmup_steps=self.hparams.warmup_steps,
                num_train_steps=num_training_steps,
                power=self.hparams.lr_decay_power,
            )
            self._created_lr_scheduler = True
        return self.lr_scheduler

    def evaluate(
        self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval"
    ) -> dict[str, float]:
        """The original pre-training metrics (:func:`pretraining_metrics`) on ``num_eval_steps`` batches.

        Masking and sampling use a generator seeded with ``hparams.seed``, inside a forked RNG, so the
        same checkpoint always gets the same metrics and the training's random stream is untouched.
        """
        dataloader = self.get_eval_dataloader(eval_dataset)
        devices = [self.args.device] if self.args.device.type == "cuda" else []
        was_training = self.model.training
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self.hparams.seed + self.args.process_index)
            if devices:
                torch.cuda.manual_seed(self.hparams.seed + self.args.process_index)
            raw = pretraining_metrics(
                self.model,
                dataloader,
                num_eval_steps=self.hparams.num_eval_steps,
                device=self.args.device,
                autocast=self.autocast_smart_context_manager(),
                accelerator=self.accelerator,
            )
        if was_training:
            self.model.train()
        metrics = {f"{metric_key_prefix}_{k}": v for k, v in raw.items()}
        metrics[f"{metric_key_prefix}_step"] = self.state.global_step
        self.log(dict(metrics))
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics


# --------------------------------------------------------------------------------------------------
# model building, checkpoints
# --------------------------------------------------------------------------------------------------


def build_model(
    model_size: str, hparams: PretrainingHparams, *, vocab_size: int, pad_token_id: int
) -> ElectraPretrainingModel:
    """A freshly initialised joint model of ``model_size`` with ``hparams``' model options."""
    config = ElectraPretrainingConfig.from_size(
        model_size,
        vocab_size=vocab_size,
        pad_token_id=pad_token_id,
        embedding_size=hparams.embedding_size,
        generator_hidden_size=hparams.generator_hidden_size,
        generator_layers=hparams.generator_layers,
        model_overrides=hparams.model_hparam_overrides,
        **_objective_kwargs(hparams),
    )
    config._attn_implementation = hparams.attn_implementation
    return ElectraPretrainingModel(config)


def _objective_kwargs(hparams: PretrainingHparams) -> dict[str, Any]:
    return {
        "mask_prob": hparams.mask_prob,
        "gen_weight": hparams.gen_weight,
        "disc_weight": hparams.disc_weight,
        "sampling_temperature": hparams.temperature,
        "disallow_correct": hparams.disallow_correct,
        "untied_generator_embeddings": hparams.untied_generator_embeddings,
        "untied_generator": hparams.untied_generator,
    }


def load_pretraining_model(path: str | os.PathLike, **config_overrides: Any) -> ElectraPretrainingModel:
    """Load a joint model from an ``ElectraPretrainingModel`` save directory, or from a directory holding
    ``discriminator/`` + ``generator/`` ``save_pretrained`` folders (what :func:`export_checkpoint` and the
    TF converter's ``--export both`` write).

    Args:
        path: the directory.
        **config_overrides: objective settings (``disc_weight``, ``mask_prob`` ...) to set on the result.

    Raises:
        FileNotFoundError: neither layout is found.
        ValueError: ``untied_generator_embeddings`` or ``untied_generator`` differs from a saved joint
            model's.
    """
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    path = Path(path)
    config_file = path / "config.json"
    if (
        config_file.is_file()
        and json.loads(config_file.read_text())["model_type"] == ElectraPretrainingConfig.model_type
    ):
        model = ElectraPretrainingModel.from_pretrained(str(path))
        for layout in ("untied_generator_embeddings", "untied_generator"):
            saved = getattr(model.config, layout)
            wanted = config_overrides.pop(layout, saved)
            if wanted != saved:
                raise ValueError(
                    f"{path}: saved with {layout}={saved}; cannot continue with {wanted} (the weight "
                    "sharing is fixed by the checkpoint)"
                )
        for key, value in config_overrides.items():
            setattr(model.config, key, value)
        return model
    if (path / "discriminator").is_dir() and (path / "generator").is_dir():
        discriminator = ElectraForPreTraining.from_pretrained(str(path / "discriminator"))
        generator = ElectraForMaskedLM.from_pretrained(str(path / "generator"))
        return ElectraPretrainingModel.from_pair(discriminator, generator, **config_overrides)
    raise FileNotFoundError(
        f"{path}: expected an ElectraPretrainingModel save directory (config.json with model_type "
        f"{ElectraPretrainingConfig.model_type!r}) or discriminator/ + generator/ save_pretrained folders"
    )


#: What a Trainer checkpoint must hold to be resumed from (``Trainer._save_checkpoint`` writes the weights,
#: then optimizer and scheduler, then ``trainer_state.json`` last): a kill mid-save leaves some missing.
CHECKPOINT_FILES = ("config.json", "trainer_state.json", "optimizer.pt", "scheduler.pt")
#: Where ``pretrain train`` moves checkpoints it cannot resume from (never deleted).
INCOMPLETE_DIR = "incomplete-checkpoints"


def checkpoint_problem(path: str | os.PathLike) -> str | None:
    """Why the Trainer checkpoint ``path`` cannot be resumed from, or None when it is complete: every file
    of :data:`CHECKPOINT_FILES` and the weights are there, ``trainer_state.json`` parses with a
    ``global_step``, the safetensors header and the torch zip archives (optimizer, scheduler) are whole."""
    import zipfile

    path = Path(path)
    missing = [f for f in CHECKPOINT_FILES if not (path / f).is_file()]
    weights = [f for f in ("model.safetensors", "model.safetensors.index.json") if (path / f).is_file()]
    if not weights:
        missing.append("model.safetensors")
    if missing:
        return f"missing {', '.join(missing)}"
    try:
        state = json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
        int(state["global_step"])
    except (ValueError, KeyError, TypeError) as exc:
        return f"trainer_state.json unreadable ({type(exc).__name__})"
    if weights[0] == "model.safetensors":
        from safetensors import safe_open

        try:
            with safe_open(str(path / "model.safetensors"), "pt") as f:
                f.keys()
        except Exception as exc:  # noqa: BLE001 - any failure means the file is damaged
            return f"model.safetensors unreadable ({exc})"
    for name in ("optimizer.pt", "scheduler.pt"):
        try:
            with zipfile.ZipFile(path / name) as archive:
                archive.namelist()
        except (zipfile.BadZipFile, OSError) as exc:
            return f"{name} truncated or damaged ({exc})"
    return None


def _checkpoint_dirs(model_dir: Path) -> list[tuple[int, Path]]:
    return sorted(
        (int(m.group(1)), p) for p in model_dir.glob("checkpoint-*") if (m := CHECKPOINT_RE.match(p.name)) and p.is_dir()
    )


def set_aside_incomplete_checkpoints(model_dir: str | os.PathLike) -> list[str]:
    """Move every checkpoint that :func:`checkpoint_problem` rejects into ``model_dir/incomplete-checkpoints/``
    (renamed, never deleted) and log why; returns one line per checkpoint moved. Only the main process
    (``RANK`` 0 or unset) moves; other ranks only skip them."""
    model_dir = Path(model_dir)
    moved = []
    main = os.environ.get("RANK", "0") == "0"
    for _, path in _checkpoint_dirs(model_dir):
        problem = checkpoint_problem(path)
        if problem is None:
            continue
        line = f"{path.name}: {problem}"
        if main:
            target = model_dir / INCOMPLETE_DIR / path.name
            k = 1
            while target.exists():
                target = model_dir / INCOMPLETE_DIR / f"{path.name}.{k}"
                k += 1
            target.parent.mkdir(exist_ok=True)
            path.rename(target)
            line += f" (moved to {target})"
        logger.warning("skipping incomplete checkpoint %s", line)
        moved.append(line)
    return moved


def find_checkpoint(model_dir: str | os.PathLike, step: int | None = None) -> Path:
    """``model_dir/checkpoint-<step>``, the newest complete checkpoint when ``step`` is None (incomplete ones,
    left by a kill during a save, are skipped with a warning), or ``model_dir`` itself when it is a model
    save directory.

    Raises:
        FileNotFoundError: no such checkpoint.
        ValueError: the checkpoint asked for by ``step`` is incomplete (what is wrong named).
    """
    model_dir = Path(model_dir)
    found = _checkpoint_dirs(model_dir)
    steps = [s for s, _ in found]
    if step is not None:
        if step not in steps:
            raise FileNotFoundError(f"{model_dir}: no checkpoint-{step} (found steps {steps})")
        path = model_dir / f"checkpoint-{step}"
        if not (path / "config.json").is_file() or not any(
            (path / f).is_file() for f in ("model.safetensors", "model.safetensors.index.json")
        ):
            raise ValueError(f"{path}: incomplete checkpoint ({checkpoint_problem(path)})")
        return path
    for _, path in reversed(found):
        problem = checkpoint_problem(path)
        if problem is None:
            return path
        logger.warning("skipping incomplete checkpoint %s: %s", path, problem)
    if steps:
        raise FileNotFoundError(f"{model_dir}: every checkpoint is incomplete (steps {steps}); nothing to use")
    if (model_dir / "config.json").is_file():
        return model_dir
    raise FileNotFoundError(f"{model_dir}: no checkpoint-N directories and no config.json")


def _checkpoint_step(checkpoint: str | os.PathLike) -> int:
    """``global_step`` recorded in a Trainer checkpoint's ``trainer_state.json`` (0 when absent)."""
    state_file = Path(checkpoint) / "trainer_state.json"
    if not state_file.is_file():
        return 0
    return int(json.loads(state_file.read_text()).get("global_step", 0))


def _last_checkpoint(output_dir: Path) -> str | None:
    set_aside_incomplete_checkpoints(output_dir)
    try:
        found = find_checkpoint(output_dir)
    except FileNotFoundError:
        return None
    return str(found) if found != output_dir else None


# --------------------------------------------------------------------------------------------------
# the three jobs
# --------------------------------------------------------------------------------------------------


def _use_bf16(precision: str) -> bool:
    cuda = torch.cuda.is_available()
    if precision == "bf16":
        return True
    return precision == "auto" and cuda and torch.cuda.is_bf16_supported()


def training_arguments(output_dir: Path, hparams: PretrainingHparams, **extra: Any) -> TrainingArguments:
    """``TrainingArguments`` for resolved ``hparams``. The learning-rate schedule and optimizer are
    ELECTRA's (set in :class:`ElectraPretrainer`); ``warmup_steps`` here stays 0 on purpose."""
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=hparams.max_steps,
        per_device_train_batch_size=hparams.per_device_train_batch_size,
        per_device_eval_batch_size=hparams.per_device_eval_batch_size,
        gradient_accumulation_steps=hparams.gradient_accumulation_steps,
        learning_rate=hparams.learning_rate,
        weight_decay=hparams.weight_decay,
        adam_beta1=hparams.adam_beta1,
        adam_beta2=hparams.adam_beta2,
        adam_epsilon=hparams.adam_epsilon,
        max_grad_norm=hparams.max_grad_norm,
        logging_steps=hparams.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=hparams.save_steps,
        save_total_limit=hparams.save_total_limit,
        eval_strategy="steps" if hparams.eval_steps > 0 else "no",
        eval_steps=hparams.eval_steps if hparams.eval_steps > 0 else None,
        seed=hparams.seed,
        bf16=_use_bf16(hparams.precision),
        use_cpu=not torch.cuda.is_available(),
        torch_compile=hparams.torch_compile,
        dataloader_num_workers=hparams.dataloader_num_workers,
        remove_unused_columns=False,
        report_to="none",
        ddp_find_unused_parameters=False,
        disable_tqdm=False,
    )
    kwargs.update(extra)
    return TrainingArguments(**kwargs)


def run_pretraining(
    *,
    data_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    model_size: str = "small",
    hparams: Mapping[str, Any] | PretrainingHparams | None = None,
    init_from: str | os.PathLike | None = None,
    training_args_overrides: Mapping[str, Any] | None = None,
    callbacks: Iterable[TrainerCallback] = (),
) -> dict[str, Any]:
    """Pre-train (or continue pre-training) ELECTRA on a ``build-data`` directory.

    Running it again with the same ``output_dir`` resumes from the newest ``checkpoint-N`` (model,
    optimizer, scheduler and RNG state), as the original ``run_pretraining.py`` does. After the last step
    the pre-training metrics are computed and written to ``output_dir/eval_results.json``.

    Args:
        data_dir: a ``build-data`` directory (``examples/``, ``tokenizer/``, ``build_info.json``).
        output_dir: checkpoints, ``hparams.json`` and ``eval_results.json`` go here.
        model_size: ``small``, ``base`` or ``large`` (ignored for the architecture with ``init_from``).
        hparams: overrides of :class:`PretrainingHparams` (strict), or resolved hparams.
        init_from: start from these weights (see :func:`load_pretraining_model`) instead of a random
            initialisation; the optimizer and schedule start afresh. Ignored when resuming.
        training_args_overrides: extra ``TrainingArguments`` (tests, launchers).
        callbacks: extra ``TrainerCallback`` objects.

    Returns:
        ``{"global_step", "train_loss", "eval": {metric: value}, "output_dir"}``.

    Raises:
        FileNotFoundError, ValueError: bad data directory, hparams or ``init_from``.
    """
    hp = hparams if isinstance(hparams, PretrainingHparams) else resolve_hparams(model_size, hparams)
    checks = getattr(hp, "checks", {})
    if checks.get("do_train") is False:  # the original's evaluation-only run (do_train false, do_eval true)
        if not checks.get("do_eval", False):
            raise ValueError("hparams do_train=false and do_eval=false: nothing to do")
        _check_against_data(hp, load_pretraining_data(data_dir), data_dir)
        given = dict(hparams) if isinstance(hparams, Mapping) else {}
        wanted = {RENAMED.get(k, k): v for k, v in given.items()}
        overrides = {k: wanted[k] for k in ("num_eval_steps", "per_device_eval_batch_size") if k in wanted}
        result = evaluate_checkpoint(model_dir=output_dir, data_dir=data_dir, hparams=overrides)
        return {"global_step": result["step"], "train_loss": None, "eval": result["metrics"], "output_dir": str(output_dir)}
    trainer, resume = prepare_pretraining(
        data_dir=data_dir,
        output_dir=output_dir,
        model_size=model_size,
        hparams=hp,
        init_from=init_from,
        training_args_overrides=training_args_overrides,
        callbacks=callbacks,
    )
    done = _checkpoint_step(resume) if resume else 0
    if resume and done >= trainer.args.max_steps:
        # Trainer would run one more step past max_steps on a finished run: evaluate only.
        logger.info("%s is at step %d of %d: training already finished", resume, done, trainer.args.max_steps)
        finished = ElectraPretrainingModel.from_pretrained(resume)
        trainer.model.load_state_dict(finished.state_dict())
        trainer.state.global_step = done
        train_loss = None
    else:
        if resume:
            logger.info("resuming from %s", resume)
        train_loss = trainer.train(resume_from_checkpoint=resume).training_loss
    output_dir = Path(output_dir)
    summary: dict[str, Any] = {
        "global_step": trainer.state.global_step,
        "train_loss": train_loss,
        "eval": None,
        "output_dir": str(output_dir),
    }
    if trainer.eval_dataset is not None:
        metrics = trainer.evaluate()
        summary["eval"] = _json_safe({k.removeprefix("eval_"): v for k, v in metrics.items()})
        if trainer.args.process_index == 0:
            (output_dir / EVAL_RESULTS_FILE).write_text(json.dumps(summary["eval"], indent=2) + "\n")
    return summary


def _check_against_data(hp: PretrainingHparams, data: PretrainingData, data_dir) -> None:
    """The original keys fixed by the data here (``hp.checks``) must agree with it.

    Raises:
        ValueError: ``vocab_size`` differs from the data's tokenizer, or ``do_lower_case`` from the casing
            ``build-data`` used (both named, with the file that says so).
    """
    checks = getattr(hp, "checks", {})
    where = Path(data_dir) / "build_info.json"
    if "vocab_size" in checks and checks["vocab_size"] != len(data.tokenizer):
        raise ValueError(
            f"hparam vocab_size={checks['vocab_size']!r}, but the data's tokenizer ({Path(data_dir) / 'tokenizer'}) "
            f"has {len(data.tokenizer)} entries: build the data with the vocabulary the model should have"
        )
    built_lower = data.build_info.get("do_lower_case")
    if "do_lower_case" in checks and built_lower is not None and bool(checks["do_lower_case"]) != bool(built_lower):
        raise ValueError(
            f"hparam do_lower_case={checks['do_lower_case']!r}, but {where} says the examples were built with "
            f"do_lower_case={built_lower!r}: casing is fixed by build-data"
        )


def prepare_pretraining(
    *,
    data_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    model_size: str = "small",
    hparams: Mapping[str, Any] | PretrainingHparams | None = None,
    init_from: str | os.PathLike | None = None,
    training_args_overrides: Mapping[str, Any] | None = None,
    callbacks: Iterable[TrainerCallback] = (),
) -> tuple[ElectraPretrainer, str | None]:
    """Everything :func:`run_pretraining` does before ``trainer.train``: resolve the hparams, open the data,
    build (or load) the model, write ``hparams.json``, and find the checkpoint to resume from.

    Returns:
        ``(trainer, checkpoint_to_resume_or_None)``; arguments and errors as :func:`run_pretraining`.
    """
    from transformers import set_seed

    hp = hparams if isinstance(hparams, PretrainingHparams) else resolve_hparams(model_size, hparams)
    data = load_pretraining_data(data_dir)
    data_len = int(data.build_info["max_seq_length"])
    if hp.max_seq_length is None:
        hp.max_seq_length = data_len
    elif hp.max_seq_length < data_len:
        raise ValueError(
            f"hparam max_seq_length={hp.max_seq_length} is below the data's max_seq_length={data_len} "
            f"({Path(data_dir) / 'build_info.json'}): examples may be longer"
        )
    _check_against_data(hp, data, data_dir)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    resume = _last_checkpoint(output_dir)
    record = {"model_size": model_size, "data_dir": str(Path(data_dir).resolve()), **hp.to_dict()}
    ignored = getattr(hp, "ignored", {})
    if ignored:
        logger.info("original hparams with no meaning here (TensorFlow / TPU / file locations), ignored: %s", ", ".join(sorted(ignored)))
        record["ignored_original_hparams"] = ignored
    if init_from is not None:
        record["init_from"] = str(Path(init_from).resolve())
    hp_file = output_dir / HPARAMS_FILE
    if resume and hp_file.is_file():
        previous = json.loads(hp_file.read_text())
        changed = sorted(k for k in set(previous) | set(record) if previous.get(k) != record.get(k))
        if changed:
            logger.warning("resuming %s with changed hparams: %s", resume, changed)
    set_seed(hp.seed)  # before building the model
    if init_from is not None and resume is None:
        model = load_pretraining_model(init_from, **_objective_kwargs(hp))
        model.config._attn_implementation = hp.attn_implementation
        if model.config.discriminator_config.vocab_size != len(data.tokenizer):
            raise ValueError(
                f"--init-from {init_from}: vocabulary of {model.config.discriminator_config.vocab_size} "
                f"entries, the data's tokenizer has {len(data.tokenizer)}"
            )
    else:
        if init_from is not None:
            logger.warning("%s holds checkpoints: resuming from %s, --init-from ignored", output_dir, resume)
        model = build_model(
            model_size, hp, vocab_size=len(data.tokenizer), pad_token_id=data.tokenizer.pad_token_id
        )
    eval_dataset = data.validation
    if len(eval_dataset) == 0:
        logger.warning("%s: empty validation split; no pre-training metrics will be computed", data_dir)
        eval_dataset = None
        hp.eval_steps = 0
    args = training_arguments(output_dir, hp, **dict(training_args_overrides or {}))
    if args.process_index == 0:
        hp_file.write_text(json.dumps(record, indent=2) + "\n")
    trainer = ElectraPretrainer(
        model=model,
        args=args,
        train_dataset=data.train,
        eval_dataset=eval_dataset,
        data_collator=make_collator(data.tokenizer, hp),
        processing_class=data.tokenizer,
        callbacks=[
            SaveAtEndCallback(),
            *([DeadlineCallback(hp.max_train_seconds)] if hp.max_train_seconds > 0 else []),
            *callbacks,
        ],
        hparams=hp,
    )
    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(StepProgressCallback())
    trainer.add_callback(LogMetricsCallback())
    return trainer, resume


def evaluate_checkpoint(
    *,
    model_dir: str | os.PathLike,
    data_dir: str | os.PathLike | None = None,
    checkpoint: int | None = None,
    output_file: str | os.PathLike | None = None,
    hparams: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The pre-training metrics of a checkpoint on the validation split (single process).

    Args:
        model_dir: a ``train`` output directory (or a model save directory).
        data_dir: the data; defaults to the one recorded in ``model_dir/hparams.json``.
        checkpoint: step of ``checkpoint-N``; the newest when omitted.
        output_file: JSON written here (default ``<model_dir>/eval_checkpoint-<N>.json``).
        hparams: overrides of the recorded hparams (e.g. ``num_eval_steps``, ``per_device_eval_batch_size``).

    Returns:
        ``{"checkpoint", "step", "metrics": {...}, "output_file"}``.

    Raises:
        FileNotFoundError, ValueError: missing checkpoint/data, unknown hparams.
    """
    model_dir = Path(model_dir)
    ckpt = find_checkpoint(model_dir, checkpoint)
    recorded: dict[str, Any] = {}
    if (model_dir / HPARAMS_FILE).is_file():
        recorded = json.loads((model_dir / HPARAMS_FILE).read_text())
    model_size = recorded.pop("model_size", "small")
    recorded_data = recorded.pop("data_dir", None)
    recorded.pop("init_from", None)
    recorded.pop("ignored_original_hparams", None)
    hp = resolve_hparams(model_size, {**recorded, **dict(hparams or {})})
    data_dir = data_dir or recorded_data
    if data_dir is None:
        raise ValueError(f"{model_dir}: no hparams.json naming the data; pass the data directory")
    data = load_pretraining_data(data_dir)
    if hp.max_seq_length is None:
        hp.max_seq_length = int(data.build_info["max_seq_length"])
    if len(data.validation) == 0:
        raise ValueError(f"{data_dir}: the validation split is empty; nothing to evaluate")
    model = ElectraPretrainingModel.from_pretrained(str(ckpt))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    gen = torch.Generator().manual_seed(hp.seed)
    loader = torch.utils.data.DataLoader(
        data.validation,
        batch_size=hp.per_device_eval_batch_size,
        shuffle=False,
        collate_fn=make_collator(data.tokenizer, hp, generator=gen),
    )
    autocast = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if device.type == "cuda" and _use_bf16(hp.precision)
        else None
    )
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(hp.seed)
        metrics = pretraining_metrics(
            model, loader, num_eval_steps=hp.num_eval_steps, device=device, autocast=autocast
        )
    m = CHECKPOINT_RE.match(ckpt.name)
    step = int(m.group(1)) if m else None
    out = Path(output_file) if output_file else model_dir / f"eval_{ckpt.name if m else 'model'}.json"
    result = {
        "checkpoint": str(ckpt),
        "step": step,
        "metrics": _json_safe(metrics),
        "attention_entropy": _attention_report(model, data, hp, device),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    result["output_file"] = str(out)
    return result


#: Clean (unmasked) validation examples whose attention entropy ``pretrain eval`` reports.
ATTENTION_PROBE_EXAMPLES = 32


def _attention_report(model: ElectraPretrainingModel, data: PretrainingData, hp: PretrainingHparams, device) -> dict:
    """Normalised attention entropy (:mod:`bioelectra.diagnostics`) of both encoders on the first
    :data:`ATTENTION_PROBE_EXAMPLES` validation examples, unmasked (what fine-tuning shows them)."""
    from bioelectra.diagnostics import attention_entropy, summarize_attention_entropy

    examples = [data.validation[i] for i in range(min(ATTENTION_PROBE_EXAMPLES, len(data.validation)))]
    batch = make_collator(data.tokenizer, hp).pad(examples)
    batch = {k: v.to(device) for k, v in batch.items()}
    return {
        name: summarize_attention_entropy(attention_entropy(part.electra, **batch))
        for name, part in (("discriminator", model.discriminator), ("generator", model.generator))
    }


def write_vocab_txt(tokenizer: Any, path: str | os.PathLike) -> None:
    """Write the WordPiece ``vocab.txt`` (one token per line, in id order) that the original ELECTRA and
    BERT tooling read; transformers 5's fast tokenizers save only ``tokenizer.json``.

    Raises:
        ValueError: the ids are not exactly 0..n-1.
    """
    vocab = tokenizer.get_vocab()
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise ValueError(f"tokenizer ids are not contiguous 0..{len(by_id) - 1}: cannot write {path}")
    Path(path).write_text("".join(f"{token}\n" for token, _ in by_id), encoding="utf-8")


#: ``export --dtype`` choices: the dtype the weights are stored in.
EXPORT_DTYPES = ("float32", "float16", "bfloat16")


def export_checkpoint(
    *,
    model_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    checkpoint: int | None = None,
    dtype: str = "float32",
) -> dict[str, str]:
    """Write ``output_dir/discriminator`` (``ElectraForPreTraining``) and ``output_dir/generator``
    (``ElectraForMaskedLM``) ``save_pretrained`` folders with tokenizer files.

    The discriminator folder loads with ``AutoModelForTokenClassification`` / ``finetune --ckpt``.

    Args:
        model_dir: a ``pretrain train`` output folder (its last checkpoint is used) or a checkpoint folder.
        output_dir: where the two folders go.
        checkpoint: the step of the checkpoint to export (default: the last).
        dtype: storage dtype of the weights, one of :data:`EXPORT_DTYPES`; ``float16`` / ``bfloat16`` halve
            the files (``finetune`` loads them back into float32).

    Raises:
        FileNotFoundError: no checkpoint, or no tokenizer files in it or beside it.
        ValueError: an unknown ``dtype``.
    """
    import torch
    from transformers import AutoTokenizer

    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"dtype {dtype!r}: expected one of {list(EXPORT_DTYPES)}")

    ckpt = find_checkpoint(model_dir, checkpoint)
    model = load_pretraining_model(ckpt)
    tokenizer_dir = next(
        (
            d
            for d in (ckpt, Path(model_dir))
            if (d / "tokenizer_config.json").is_file() or (d / "vocab.txt").is_file()
        ),
        None,
    )
    if tokenizer_dir is None:
        raise FileNotFoundError(f"{ckpt}: no tokenizer files (tokenizer_config.json / vocab.txt) to export")
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    discriminator, generator = model.split()
    output_dir = Path(output_dir)
    paths = {}
    for name, part in (("discriminator", discriminator), ("generator", generator)):
        target = output_dir / name
        part.to(getattr(torch, dtype))
        part.config.dtype = dtype
        part.save_pretrained(str(target))
        tokenizer.save_pretrained(str(target))
        write_vocab_txt(tokenizer, target / "vocab.txt")
        paths[name] = str(target)
    (output_dir / "export_info.json").write_text(json.dumps({"source": str(ckpt), "dtype": dtype}, indent=2) + "\n")
    return paths
