"""The three jobs of ``pretrain``: train (or resume, or evaluate only), evaluate a checkpoint, and the
preparation they share."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from transformers import PrinterCallback, ProgressCallback, TrainerCallback

from bioelectra.diagnostics import pretraining_attention_report
from bioelectra.fused_attention import fuse_qkv_projections
from bioelectra.hparams import (
    RENAMED,
)
from bioelectra.modeling import ElectraPretrainingModel
from bioelectra.pretraining.callbacks import (
    LOG_HISTORY_FILE,
    DeadlineCallback,
    LogMetricsCallback,
    RankSeedCallback,
    SaveAtEndCallback,
    StepProgressCallback,
    TimeFittedScheduleCallback,
)
from bioelectra.pretraining.checkpoints import (
    CHECKPOINT_RE,
    _checkpoint_step,
    _last_checkpoint,
    _objective_kwargs,
    build_model,
    discriminator_alone,
    find_checkpoint,
    load_discriminator_into,
    load_pretraining_model,
)
from bioelectra.pretraining.compile_options import inductor_options
from bioelectra.pretraining.inputs import PretrainingData, load_pretraining_data, make_collator
from bioelectra.pretraining.metrics import _json_safe, pretraining_metrics
from bioelectra.pretraining.settings import (
    HPARAMS_FILE,
    PretrainingHparams,
    resolve_hparams,
    sharded_training_request,
    world_size,
)
from bioelectra.pretraining.step import resolve_train_step
from bioelectra.pretraining.trainer import ElectraPretrainer, training_arguments, uses_bf16
from bioelectra.reporting import tensorboard_dir

logger = logging.getLogger(__name__)


EVAL_RESULTS_FILE = "eval_results.json"


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
        output_dir: checkpoints, ``hparams.json``, ``eval_results.json`` and the logs as JSON lines
            (``log_history.jsonl``, :data:`LOG_HISTORY_FILE`) go here.
        model_size: ``small``, ``base`` or ``large`` (ignored for the architecture with ``init_from``).
        hparams: overrides of :class:`PretrainingHparams` (strict), or resolved hparams.
        init_from: start from these weights (see :func:`load_pretraining_model`) instead of a random
            initialisation; the optimizer and schedule start afresh. Ignored when resuming. A discriminator
            alone (a shipped model: :func:`discriminator_alone`) is loaded into a model built from the hparams,
            its generator's own layers freshly initialised (:func:`load_discriminator_into`).
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
    planned = _planned_steps(resume, trainer.args.max_steps, hp) if resume else trainer.args.max_steps
    if resume and done >= planned:
        # Trainer would run one more step past max_steps on a finished run: evaluate only.
        logger.info("%s is at step %d of %d: training already finished", resume, done, planned)
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
        metrics = _final_evaluation(trainer)
        summary["eval"] = _json_safe({k.removeprefix("eval_"): v for k, v in metrics.items()})
        if trainer.args.process_index == 0:
            (output_dir / EVAL_RESULTS_FILE).write_text(json.dumps(summary["eval"], indent=2) + "\n")
    if trainer.args.process_index == 0:  # PNGs into output_dir/plots/; never raises (no matplotlib: skipped)
        from bioelectra.pretraining.plots import plot_after_training

        plot_after_training(output_dir)
    return summary


def _planned_steps(checkpoint: Path, max_steps: int, hp: PretrainingHparams) -> int:
    """The steps the run of ``checkpoint`` was to make: ``max_steps``, or with ``fit_schedule_to_time`` the
    length its schedule was fitted to, which the checkpoint's ``trainer_state.json`` records (a run that
    reached it is finished; one stopped before it, by its deadline or a kill, goes on)."""
    if not hp.fit_schedule_to_time:
        return max_steps
    try:
        recorded = json.loads((Path(checkpoint) / "trainer_state.json").read_text()).get("max_steps")
    except (OSError, ValueError):
        recorded = None
    return min(int(recorded), max_steps) if isinstance(recorded, int) and recorded > 0 else max_steps


def _final_evaluation(trainer) -> dict[str, Any]:
    """The metrics after the last step: those the Trainer computed at that step when its ``eval_steps``
    schedule landed there (evaluating again would print and cost the same numbers twice), else a new
    evaluation (the same seeded masking, so the same numbers either way)."""
    step = trainer.state.global_step
    for record in reversed(trainer.state.log_history):
        if record.get("eval_step") == step and "eval_disc_auc" in record:
            return {k: v for k, v in record.items() if k.startswith("eval_")}
    return trainer.evaluate()


def _check_init_from_vocab(init_from: Path, tokenizer) -> None:
    """The ``vocab.txt`` saved with ``--init-from`` weights (beside them, or in ``discriminator/``) must be the
    data's, entry for entry: two vocabularies of one size (say, build-vocab run twice) map ids to different
    words, and the weights would be continued on the wrong tokens. Weights saved without a ``vocab.txt``
    are checked by size only.

    Raises:
        ValueError: the first id where the two differ, both words named.
    """
    saved = next((f for f in (init_from / "vocab.txt", init_from / "discriminator" / "vocab.txt") if f.is_file()), None)
    if saved is None:
        return
    words = saved.read_text(encoding="utf-8").splitlines()
    data_words = [w for w, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])]
    for i, (a, b) in enumerate(zip(words, data_words, strict=False)):
        if a != b:
            raise ValueError(
                f"--init-from {init_from}: its vocabulary ({saved}) differs from the data's tokenizer at id {i} "
                f"({a!r} against {b!r}): build the data with --vocab-file {saved}"
            )


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


def _check_train_step(hp: PretrainingHparams) -> None:
    """``train_step`` ``whole`` / ``captured``: one process, no accumulation, and (compiled or captured) every
    batch padded to ``max_seq_length``, one shape for the whole run.

    ``auto`` is made concrete first (:func:`~bioelectra.pretraining.step.resolve_train_step`) and logged.

    Raises:
        ValueError: several processes or gradient accumulation steps (the whole step neither all-reduces nor
            accumulates gradients).
    """
    if hp.train_step == "auto":
        hp.train_step, why = resolve_train_step(
            "auto", cuda=torch.cuda.is_available(), processes=world_size(),
            accumulation_steps=hp.gradient_accumulation_steps,
        )  # fmt: skip
        logger.info("train_step auto: %s (%s)", hp.train_step, why)
    if hp.train_step == "trainer":
        given = (("compile_scope", hp.torch_compile and hp.compile_scope != "step"),
                 ("compile_options", hp.torch_compile and bool(hp.compile_options)), ("bf16_weight_copies", hp.bf16_weight_copies))  # fmt: skip
        if ignored := [name for name, set_ in given if set_]:
            logger.warning("%s: the whole step's (train_step whole or captured), not the Trainer's step's (which "
                           "compiles the whole model with compile_mode alone)", " and ".join(ignored))  # fmt: skip
        return
    if hp.torch_compile and hp.train_step == "captured" and torch.cuda.is_available():  # checked without capture
        inductor_options(hp.compile_mode, hp.compile_options, capture=True)  # when read: inductor's CUDA graphs refused
    if world_size() > 1 or hp.gradient_accumulation_steps > 1:
        raise ValueError(
            f"hparam train_step={hp.train_step!r} runs on one process without gradient accumulation; this run has "
            f"{world_size()} process(es) and gradient_accumulation_steps={hp.gradient_accumulation_steps} "
            "(use train_step 'trainer', or a per-device batch of the whole train_batch_size)"
        )
    if (hp.train_step == "captured" or hp.torch_compile) and hp.pad_to_multiple_of != hp.max_seq_length:
        logger.info(
            "train_step=%s: every batch padded to max_seq_length=%d (pad_to_multiple_of was %d), one shape to %s",
            hp.train_step, hp.max_seq_length, hp.pad_to_multiple_of,
            "capture" if hp.train_step == "captured" else "compile",
        )  # fmt: skip
        hp.pad_to_multiple_of = hp.max_seq_length


def _hparams_record(
    hp: PretrainingHparams,
    *,
    model_size: str,
    data_dir: str | os.PathLike,
    init_from: str | os.PathLike | None,
    resume: str | None,
    hp_file: Path,
) -> dict[str, Any]:
    """The ``hparams.json`` record of a run; on a resume, logs how it differs from the one already written
    (a changed split of the same global batch over processes is reported as such, not as a change)."""
    record = {"model_size": model_size, "data_dir": str(Path(data_dir).resolve()), **hp.to_dict()}
    ignored = getattr(hp, "ignored", {})
    if ignored:
        logger.info("original hparams with no meaning here (TensorFlow / TPU / file locations), ignored: %s", ", ".join(sorted(ignored)))
        record["ignored_original_hparams"] = ignored
    if init_from is not None:
        record["init_from"] = str(Path(init_from).resolve())
    record["world_size"] = world_size()  # the global batch's split: per-device x accumulation x processes
    if resume and hp_file.is_file():
        previous = json.loads(hp_file.read_text())
        split_keys = {"world_size", "per_device_train_batch_size", "gradient_accumulation_steps"}
        if previous.get("world_size", 1) != record["world_size"] and previous.get("train_batch_size") == record["train_batch_size"]:
            logger.info(
                "resuming %s on %d process(es) instead of %d: the same global batch %d, now %d per device x %d "
                "accumulation step(s)", resume, record["world_size"], previous.get("world_size", 1),
                record["train_batch_size"], hp.per_device_train_batch_size, hp.gradient_accumulation_steps,
            )  # fmt: skip
        else:
            split_keys = set()
        changed = sorted(
            k for k in set(previous) | set(record) if previous.get(k) != record.get(k) and k not in split_keys
        )
        if changed:
            logger.warning("resuming %s with changed hparams: %s", resume, changed)
    return record


def _initial_model(
    model_size: str,
    hp: PretrainingHparams,
    data: PretrainingData,
    *,
    init_from: str | os.PathLike | None,
    resume: str | None,
    output_dir: Path,
) -> ElectraPretrainingModel:
    """The model a run starts from: built from the hparams, or ``--init-from`` (a discriminator alone, or a
    whole pre-training checkpoint), or, when ``output_dir`` holds checkpoints, the architecture of the one
    resumed (weights are then restored by the Trainer)."""
    if init_from is not None and resume is not None:
        logger.warning("%s holds checkpoints: resuming from %s, --init-from ignored", output_dir, resume)
        # the architecture came from --init-from, not from the hparams: take it from the checkpoint
        model = load_pretraining_model(resume, **_objective_kwargs(hp))
        model.config._attn_implementation = hp.attn_implementation
        return model
    alone = discriminator_alone(init_from) if init_from is not None else None
    if init_from is not None and alone is None:  # a whole pre-training checkpoint or export
        model = load_pretraining_model(init_from, **_objective_kwargs(hp))
        model.config._attn_implementation = hp.attn_implementation
        if model.config.discriminator_config.vocab_size != len(data.tokenizer):
            raise ValueError(
                f"--init-from {init_from}: vocabulary of {model.config.discriminator_config.vocab_size} "
                f"entries, the data's tokenizer has {len(data.tokenizer)}"
            )
    else:
        model = build_model(
            model_size, hp, vocab_size=len(data.tokenizer), pad_token_id=data.tokenizer.pad_token_id
        )
    if alone is not None:  # a shipped model, or an export whose generator was not kept
        load_discriminator_into(model, alone)  # another shape (the vocabulary's size included): ValueError
        logger.info(
            "--init-from %s: a discriminator alone; the generator's own layers start from their initialisation",
            init_from,
        )
    if init_from is not None:
        _check_init_from_vocab(Path(init_from), data.tokenizer)
    return model


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

    sharded = sharded_training_request(training_args_overrides)
    if sharded is not None:
        raise ValueError(
            f"{sharded}: sharded training (FSDP / DeepSpeed ZeRO) is not supported by pretrain train. The "
            "generator and discriminator share one embedding module and the generator's output layer is its "
            "word embedding matrix; sharding keeps that only under some wrapping policies, untested here. Plain "
            "data parallelism fits up to ELECTRA-Large (weights, gradients and Adam state: about 7 GB per "
            "GPU): launch with --multi_gpu (accelerate config distributed_type: MULTI_GPU); see docs/guides/distributed.md"
        )
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
    _check_train_step(hp)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    resume = _last_checkpoint(output_dir)
    hp_file = output_dir / HPARAMS_FILE
    record = _hparams_record(
        hp, model_size=model_size, data_dir=data_dir, init_from=init_from, resume=resume, hp_file=hp_file
    )
    set_seed(hp.seed)  # before building the model
    model = _initial_model(model_size, hp, data, init_from=init_from, resume=resume, output_dir=output_dir)
    if hp.fuse_qkv:
        logger.info("fuse_qkv: query, key and value as one projection in %d attention layers", fuse_qkv_projections(model))
    eval_dataset = data.validation
    if len(eval_dataset) == 0:
        logger.warning("%s: empty validation split; no pre-training metrics will be computed", data_dir)
        eval_dataset = None
        hp.eval_steps = 0
    args = training_arguments(output_dir, hp, **dict(training_args_overrides or {}))
    if args.dataloader_drop_last and len(data.train) < args.train_batch_size * args.world_size:
        args.dataloader_drop_last = False  # fewer examples than one batch: the partial batch is all there is
    if args.process_index == 0:
        hp_file.write_text(json.dumps(record, indent=2) + "\n")
    with tensorboard_dir(output_dir / "tensorboard"):  # read when the Trainer makes its callbacks
        trainer = ElectraPretrainer(
            model=model,
            args=args,
            train_dataset=data.train,
            eval_dataset=eval_dataset,
            data_collator=make_collator(data.tokenizer, hp),
            processing_class=data.tokenizer,
            callbacks=[
                SaveAtEndCallback(),
                RankSeedCallback(),
                *([DeadlineCallback(hp.max_train_seconds)] if hp.max_train_seconds > 0 else []),
                *([TimeFittedScheduleCallback(hp.max_train_seconds)] if hp.fit_schedule_to_time else []),
                *callbacks,
            ],
            hparams=hp,
        )
    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(StepProgressCallback())
    trainer.add_callback(LogMetricsCallback(output_dir / LOG_HISTORY_FILE))
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
    for key in ("world_size", "train_batch_size", "per_device_train_batch_size", "gradient_accumulation_steps"):
        recorded.pop(key, None)  # the training batch's split; evaluation runs in one process
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
    collator = make_collator(data.tokenizer, hp, generator=torch.Generator().manual_seed(hp.seed))
    model.config.max_predictions_per_seq = collator.max_predictions_per_seq  # this evaluation's masking
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    loader = torch.utils.data.DataLoader(
        data.validation, batch_size=hp.per_device_eval_batch_size, shuffle=False, collate_fn=collator
    )
    autocast = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if device.type == "cuda" and uses_bf16(hp.precision)
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


def _attention_report(model: ElectraPretrainingModel, data: PretrainingData, hp: PretrainingHparams, device) -> dict:
    """Normalised attention entropy (:mod:`bioelectra.diagnostics`) of both encoders on the first
    :data:`bioelectra.diagnostics.ATTENTION_PROBE_EXAMPLES` validation examples, unmasked (what fine-tuning shows them)."""
    return pretraining_attention_report(model, data.validation, make_collator(data.tokenizer, hp).pad, device)
