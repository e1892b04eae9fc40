"""Models and checkpoints of pre-training: building or loading the joint model, finding the newest
complete ``checkpoint-N`` (setting aside half-written ones), and exporting HF checkpoints."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import torch

from bioelectra.configuration import ElectraPretrainingConfig
from bioelectra.masking import max_predictions_per_seq
from bioelectra.modeling import ElectraPretrainingModel
from bioelectra.pretraining.settings import PretrainingHparams

logger = logging.getLogger(__name__)


CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


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
    """The model's objective settings from resolved ``hparams``; ``max_predictions_per_seq`` is the masking
    collator's cap (None while ``max_seq_length`` is unresolved)."""
    cap = None if hparams.max_seq_length is None else max_predictions_per_seq(hparams.mask_prob, hparams.max_seq_length)
    return {
        "max_predictions_per_seq": cap,
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

    The weights are loaded in float32 whatever dtype they were saved in (a float16 or bfloat16 export, a
    shipped model): training keeps float32 parameters (mixed precision computes in bf16 under autocast),
    and transformers 5 would otherwise keep the saved dtype.

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
        model = ElectraPretrainingModel.from_pretrained(str(path), dtype=torch.float32)
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
        discriminator = ElectraForPreTraining.from_pretrained(str(path / "discriminator"), dtype=torch.float32)
        generator = ElectraForMaskedLM.from_pretrained(str(path / "generator"), dtype=torch.float32)
        return ElectraPretrainingModel.from_pair(discriminator, generator, **config_overrides)
    raise FileNotFoundError(
        f"{path}: expected an ElectraPretrainingModel save directory (config.json with model_type "
        f"{ElectraPretrainingConfig.model_type!r}) or discriminator/ + generator/ save_pretrained folders"
    )


def discriminator_alone(path: str | os.PathLike) -> Path | None:
    """The discriminator folder of ``--init-from`` weights that hold no generator, else None: a
    ``save_pretrained`` ``ElectraForPreTraining`` folder (a shipped model, a converted discriminator), or an
    export's ``discriminator/`` without ``generator/``."""
    path = Path(path)
    for folder in (path, path / "discriminator"):
        config = folder / "config.json"
        if folder is not path and (path / "generator").is_dir():
            return None
        if config.is_file() and "ElectraForPreTraining" in (json.loads(config.read_text()).get("architectures") or []):
            return folder
    return None


def load_discriminator_into(model: ElectraPretrainingModel, folder: str | os.PathLike) -> None:
    """Load a discriminator's weights (any dtype, as float32) into the joint ``model``, whose generator keeps its
    initialisation. The generator's shared embeddings are the discriminator's (the model's ties), so it starts
    from the trained embeddings; its own layers start anew. Continuing a model whose generator was not kept
    (the original's ``run_pretraining.py`` needs both: ELECTRA never saved them apart).

    Raises:
        ValueError: the discriminator's shape differs from ``model``'s (the tensors named).
    """
    from transformers import ElectraForPreTraining

    discriminator = ElectraForPreTraining.from_pretrained(str(folder), dtype=torch.float32)
    ours = model.discriminator.state_dict()
    theirs = discriminator.state_dict()
    wrong = sorted(k for k in theirs if k in ours and ours[k].shape != theirs[k].shape)
    missing = sorted(k for k in ours if k not in theirs and not k.endswith(("position_ids", "token_type_ids")))
    unexpected = sorted(k for k in theirs if k not in ours)
    if wrong or missing or unexpected:
        shown = ", ".join(f"{k} {tuple(theirs[k].shape)} vs {tuple(ours[k].shape)}" for k in wrong[:4])
        raise ValueError(
            f"--init-from {folder}: the discriminator does not fit the model of these hparams (shapes differ: "
            f"{shown or 'none'}; missing: {missing[:4] or 'none'}; unexpected: {unexpected[:4] or 'none'}); "
            "give the hparams it was trained with"
        )
    model.discriminator.load_state_dict(theirs, strict=False)
    model.tie_weights()


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
