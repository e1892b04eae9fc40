"""The pre-training hyper-parameters: ``PretrainingHparams`` with the original's defaults, and their
resolution from ``--hparams`` (strict, typed, the original names accepted: :mod:`bioelectra.hparams`)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bioelectra.hparams import (
    DEBUG_SETTINGS,
    ORIGINAL_PRETRAINING_HPARAMS,
    RENAMED,
    SIZE_DEFAULTS,
    classify_original_hparams,
    load_json_object,
    value_type_problem,
)
from bioelectra.pretraining.compile_options import inductor_options
from bioelectra.pretraining.step import COMPILE_SCOPES, TRAIN_STEP_MODES

logger = logging.getLogger(__name__)


HPARAMS_FILE = "hparams.json"


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
        train_batch_size (`int`, None -> small 128, base 256, large 2048): the global batch, sequences per
            optimizer step over all processes and accumulation steps, as the original's
            ``train_batch_size``: the same value trains the same model on 1 or 64 processes.
        per_device_train_batch_size (`int`, None -> derived): sequences per device and micro-step,
            ``train_batch_size / (processes x gradient_accumulation_steps)``. Given alone (the Trainer's
            meaning), the global batch is derived from it instead; given with ``train_batch_size``, it caps
            the per-device batch and the accumulation steps make up the rest (on more processes than the
            cap needs, each gets ``train_batch_size / processes`` without accumulation).
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
        torch_compile (`bool`, False): ``torch.compile`` the model (GPU). The training step compiles as one
            graph; ``pad_to_multiple_of`` = ``max_seq_length`` gives every batch one shape, so it compiles once.
            With ``train_step`` ``whole`` or ``captured``: the whole step's forward pass and update, each with
            ``fullgraph=True``.
        train_step (`str`, "auto"): how a training step runs (:mod:`bioelectra.pretraining.step`):
            ``trainer``, the Trainer's own (forward, ``backward``, clip and ``optimizer.step()`` one kernel at
            a time from Python); ``whole``, the same arithmetic as one function of ours, without host
            synchronisation (compiled with ``torch_compile``); ``captured``, the whole step recorded once as a
            CUDA graph and replayed (on a CUDA device; elsewhere it runs as ``whole``); ``auto``, ``captured``
            on one CUDA device without gradient accumulation and ``trainer`` otherwise (``hparams.json``
            records the mode chosen). ``whole`` and ``captured`` pad every batch to ``max_seq_length`` and need
            one process without gradient accumulation. Not in the original.
        compile_scope (`str`, "step"): with ``torch_compile`` and ``train_step`` ``whole`` or ``captured``,
            what compiles (:data:`bioelectra.pretraining.step.COMPILE_SCOPES`): ``step``, the whole forward
            pass as one graph and the update as another; ``forward``, that forward graph alone, the update
            eager (the update's graph is most of ``step``'s compile time); ``layers``, each transformer layer
            on its own, the identical layers compiled once, and the embeddings and the generator's and the
            discriminator's heads each as one graph, the rest eager (a 12-layer model compiles about as fast as
            a 1-layer one). Not in the original.
        fuse_qkv (`bool`, False): compute each self-attention's query, key and value projections as one
            matrix multiplication (:func:`bioelectra.fused_attention.fuse_qkv_projections`): the same parameters
            and checkpoints, the same arithmetic up to float rounding, fewer and larger kernels in the step.
            Not in the original.
        bf16_weight_copies (`bool`, False): with bf16 autocast and ``train_step`` ``whole`` or ``captured``, the
            forward pass reads bf16 copies of the linear layers' weights and biases that the update writes, in
            place of autocast's cast of each at every step (:class:`bioelectra.pretraining.step.WholeTrainingStep`):
            the same arithmetic, some 300 fewer cast kernels each way in ELECTRA-Small's step, 2 bytes per
            parameter more memory. Not in the original.
        compile_mode (`str`, "default"): ``torch.compile``'s mode for the compiled step
            (:data:`bioelectra.pretraining.compile_options.COMPILE_MODES`): ``max-autotune-no-cudagraphs``
            autotunes inductor's kernels, matrix products with their pointwise epilogues among them (longer to
            compile; a carried ``compile_cache`` holds the choices); ``reduce-overhead`` and ``max-autotune``
            add inductor's CUDA graphs, refused with ``train_step`` ``captured`` on CUDA (the step is one CUDA
            graph already). With ``train_step`` ``trainer``, the Trainer's ``torch_compile_mode``. Not in the
            original.
        compile_options (`dict`, {}): inductor's options on top of the mode's (``torch._inductor.config`` keys,
            e.g. ``{"combo_kernels": true}``), for the whole step (``train_step`` ``whole`` or ``captured``);
            an unknown key or a value of the wrong type is an error before any work. Not in the original.
        compile_cache (`str`, ""): a file of ``torch.compile``'s cache artifacts: loaded before the first
            compilation when it exists, written after the first compiled step, so a later run on the same
            software and device compiles from it. "": none.
        pad_to_multiple_of (`int`, 0): pad batches to a multiple of this (8 suits GPUs); 0: no rounding.
        dataloader_num_workers (`int`, 0): data loading worker processes.
        report_to (`str`, "none"): the Trainer's run-log integrations: ``none``, ``tensorboard`` (event files
            in ``<output-dir>/tensorboard``: losses, learning rate, the generator / discriminator metrics),
            ``all`` or other names, comma-separated (:func:`bioelectra.reporting.check_report_to`).
        max_train_seconds (`float`, 0.0): wall-clock budget of this process's training loop in seconds;
            at the first optimizer step past it, training stops and a checkpoint is saved (the schedule
            stays the one of ``max_steps``; a re-run resumes towards ``max_steps``). 0: no limit. Not in
            the original; for leased accelerator time.
        fit_schedule_to_time (`bool`, False): fit the learning-rate schedule to ``max_train_seconds``
            instead of ``max_steps``: the speed is measured during the run and the schedule's length (where
            the learning rate reaches 0 and training ends, saved) is set to the steps that the rest of the
            budget holds, refitted as the run goes; ``max_steps`` becomes an upper bound, and a warmup
            longer than a quarter of the fitted run is shortened to that quarter (the peak kept).
            Needs ``max_train_seconds``. Not in the original
            (:class:`bioelectra.pretraining.callbacks.TimeFittedScheduleCallback`).
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
    train_batch_size: int | None = None
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
    train_step: str = "auto"
    compile_scope: str = "step"
    fuse_qkv: bool = False
    bf16_weight_copies: bool = False
    compile_mode: str = "default"
    compile_options: dict[str, Any] = field(default_factory=dict)
    compile_cache: str = ""
    pad_to_multiple_of: int = 0
    dataloader_num_workers: int = 0
    max_train_seconds: float = 0.0
    fit_schedule_to_time: bool = False
    report_to: str = "none"

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
            (self.train_step in TRAIN_STEP_MODES, "train_step", " or ".join(TRAIN_STEP_MODES)),
            (self.compile_scope in COMPILE_SCOPES, "compile_scope", "one of " + ", ".join(COMPILE_SCOPES)),
            (isinstance(self.model_hparam_overrides, dict), "model_hparam_overrides", "a JSON object"),
            (self.max_train_seconds >= 0, "max_train_seconds", ">= 0 (0: no limit)"),
            (not self.fit_schedule_to_time or self.max_train_seconds > 0, "fit_schedule_to_time",
             "false unless max_train_seconds > 0 (the budget the schedule is fitted to)"),
        ]
        for ok, name, expected in checks:
            if not ok:
                raise ValueError(
                    f"hparam {name}={getattr(self, name.split('/')[0], None)!r}: expected {expected}"
                )
        if self.compile_mode != "default" or self.compile_options:
            inductor_options(self.compile_mode, self.compile_options)  # raises ValueError naming the hparam
        from bioelectra.reporting import check_report_to

        check_report_to(self.report_to)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: The original's names accepted in ``--hparams`` for the fields renamed after ``TrainingArguments``
#: (:data:`bioelectra.hparams.RENAMED`; the per-size defaults are :data:`bioelectra.hparams.SIZE_DEFAULTS`).
HPARAM_ALIASES = RENAMED


RENAMED_FROM = {v: k for k, v in RENAMED.items()}


def parse_hparams_arg(value: str | Sequence[str] | None) -> dict[str, Any]:
    """``--hparams``: a JSON object given inline or as the path of a ``.json`` file (original style);
    :func:`bioelectra.hparams.load_json_object`. Several (``--hparams recipe.json --hparams
    '{"max_steps": 100}'``) are merged in order, key by key: a later value wins (a nested object such as
    ``model_hparam_overrides`` is replaced whole, not merged), and the keys it overrides are logged.

    Raises:
        ValueError: not valid JSON, not an object, or neither JSON nor an existing file.
    """
    values = [value] if value is None or isinstance(value, str) else list(value)
    merged: dict[str, Any] = {}
    for item in values:
        data, source = load_json_object(item, what="--hparams")
        overridden = sorted(key for key in data if key in merged and merged[key] != data[key])
        if overridden:
            logger.info("%s overrides the earlier %s", source, ", ".join(overridden))
        merged.update(data)
    return merged


def world_size() -> int:
    """Processes of this run: ``WORLD_SIZE`` as ``torchrun`` / ``accelerate launch`` set it, else 1."""
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def sharded_training_request(training_args: Mapping[str, Any] | None = None) -> str | None:
    """What asks for sharded training (FSDP or DeepSpeed ZeRO), named, or None.

    ``accelerate launch --use_fsdp`` / ``--use_deepspeed`` and accelerate configs with ``distributed_type:
    FSDP`` / ``DEEPSPEED`` set ``ACCELERATE_USE_FSDP`` / ``ACCELERATE_USE_DEEPSPEED`` to true in each
    process; ``training_args`` are extra ``TrainingArguments`` (``fsdp``, ``deepspeed``).
    """
    for variable in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED"):
        if os.environ.get(variable, "false").strip().lower() in ("true", "1", "yes"):
            return f"{variable}={os.environ[variable]} (accelerate launch --use_{variable.split('_')[-1].lower()} or a config)"
    for key in ("fsdp", "deepspeed"):
        if (training_args or {}).get(key):
            return f"TrainingArguments {key}={training_args[key]!r}"
    return None


def split_global_batch(hp: PretrainingHparams, world: int) -> None:
    """Fill ``train_batch_size`` (global), ``per_device_train_batch_size`` and
    ``gradient_accumulation_steps`` so that per-device x accumulation x ``world`` = global.

    Raises:
        ValueError: a global batch that does not divide, or values that disagree (the numbers named).
    """
    accum = hp.gradient_accumulation_steps
    if hp.train_batch_size is None:  # per-device given alone: the Trainer's meaning
        hp.train_batch_size = hp.per_device_train_batch_size * accum * world
        return
    if hp.per_device_train_batch_size is None:
        per_device, rest = divmod(hp.train_batch_size, world * accum)
        if rest or per_device < 1:
            raise ValueError(
                f"hparam train_batch_size={hp.train_batch_size} (the global batch) does not divide into "
                f"{world} process(es) x {accum} accumulation step(s)"
            )
        hp.per_device_train_batch_size = per_device
        return
    if hp.per_device_train_batch_size * accum * world == hp.train_batch_size:
        return
    if accum == 1 and hp.train_batch_size % (hp.per_device_train_batch_size * world) == 0:
        hp.gradient_accumulation_steps = hp.train_batch_size // (hp.per_device_train_batch_size * world)
        return  # the per-device batch is a cap: accumulation makes up the global batch
    if accum == 1 and hp.per_device_train_batch_size * world > hp.train_batch_size and hp.train_batch_size % world == 0:
        hp.per_device_train_batch_size = hp.train_batch_size // world
        return  # more processes than the cap needs: each gets its share of the global batch, under the cap
    raise ValueError(
        f"hparams train_batch_size={hp.train_batch_size} (global) and per_device_train_batch_size="
        f"{hp.per_device_train_batch_size} x gradient_accumulation_steps={accum} x {world} process(es) disagree"
    )


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
        problem = value_type_problem(value, str(fields[name]))
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
        if getattr(hp, name) is None and name != "train_batch_size":
            setattr(hp, name, default)
    if hp.train_batch_size is None and hp.per_device_train_batch_size is None:
        hp.train_batch_size = SIZE_DEFAULTS[model_size]["train_batch_size"]
    split_global_batch(hp, world_size())
    hp.__post_init__()
    hp.checks = checks  # not fields: checked against the data, never saved as settings
    hp.ignored = dict(sorted_keys["ignored"])
    return hp
