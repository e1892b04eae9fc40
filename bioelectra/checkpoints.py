"""Checkpoint resolution: what a ``--ckpt`` value names (a shipped model, a size preset, an untrained twin,
an original TensorFlow checkpoint, a ``save_pretrained`` folder, a hub id) and the fine-tuning learning
rate that goes with it. Every command that takes ``--ckpt`` (finetune, run-finetuning, and the ones to come)
calls :func:`resolve_checkpoint`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from bioelectra.presets import default_learning_rate

logger = logging.getLogger(__name__)

#: ``finetune --ckpt`` when none is given: the best shipped model on NCBI-disease test F1 with the README's
#: command (bioelectra-small 80.20 against bioelectra-mini's 47.60; a model becomes the default with a lead
#: of ten points or more: the README's Results).
DEFAULT_CKPT = "bioelectra-small"

__all__ = ["DEFAULT_CKPT", "default_learning_rate", "resolve_checkpoint"]


def resolve_checkpoint(ckpt: str, output_dir: Path) -> str:
    """Turn a ``--ckpt`` value into something ``from_pretrained`` loads: a directory or a hub id.

    A shipped model (``bioelectra-mini``) resolves to its directory inside the package. A size preset or an
    untrained twin is built (randomly initialised) under ``output_dir/init-<preset>``. An original TensorFlow
    checkpoint directory is converted (discriminator) once into ``output_dir/converted-discriminator``.

    Raises:
        FileNotFoundError: an unknown name or a missing folder (the valid names listed).
        ValueError: a file where a folder is expected.
        TFCheckpointError: a TensorFlow checkpoint that does not convert.
    """
    from bioelectra.presets import (
        PRESETS,
        SHIPPED_MODELS,
        UNTRAINED_TWINS,
        build_preset_checkpoint,
        shipped_model_dir,
    )
    from bioelectra.tf import convert_tf_checkpoint, find_checkpoint, is_tf_checkpoint_dir

    if ckpt in SHIPPED_MODELS:
        return str(shipped_model_dir(ckpt))
    if ckpt in PRESETS or ckpt in UNTRAINED_TWINS:
        target = output_dir / f"init-{ckpt}"
        logger.warning(
            "--ckpt %s is an untrained preset: the encoder is randomly initialised and UNTRAINED, so scores show "
            "what the fine-tuning data alone teaches. Pass a pre-trained checkpoint for real results.",
            ckpt,
        )
        return str(build_preset_checkpoint(ckpt, target))
    path = Path(ckpt)
    if is_tf_checkpoint_dir(path):
        target = output_dir / "converted-discriminator"
        stamp = target / "conversion_report.json"
        source = str(find_checkpoint(path))
        if not (stamp.is_file() and json.loads(stamp.read_text()).get("checkpoint") == source):
            report = convert_tf_checkpoint(path, target, export="discriminator", overwrite=True)
            logger.info("converted TF checkpoint %s (step %s) to %s", report.checkpoint, report.step, target)
        return str(target)
    if path.is_dir():
        return str(path)
    if path.exists():
        raise ValueError(f"--ckpt {ckpt}: expected a checkpoint directory, got a file")
    if ckpt.count("/") == 1 and not ckpt.startswith((".", "/")):
        return ckpt  # a hub id: loaded (and, offline, refused quickly) by the downstream loader
    raise FileNotFoundError(
        f"--ckpt {ckpt}: no such directory, not a shipped model ({', '.join(SHIPPED_MODELS)}), not a preset "
        f"({', '.join([*PRESETS, *UNTRAINED_TWINS])}) and not a hub id (owner/name)"
    )
