"""The models of the replaced-token demo (:mod:`bioelectra.pretraining.demo`): :class:`DemoModel` (a
discriminator, the generator when there is one, their tokenizer) and :func:`load_demo_model`, which reads one
from a discriminator folder, a shipped model or preset name, an export folder, a ``pretrain train`` output
folder or one of its ``checkpoint-N`` folders.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

_TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json")


@dataclass
class DemoModel:
    """A discriminator, the generator when there is one, and their tokenizer, in eval mode.

    Args:
        discriminator: the ``ElectraForPreTraining``.
        generator: the ``ElectraForMaskedLM``, or ``None`` (a discriminator folder, a shipped model).
        tokenizer: the WordPiece tokenizer of both.
        source: the folder the weights came from (a checkpoint's, for a ``pretrain train`` folder).
        layout: ``"discriminator"``, ``"export"`` (discriminator/ + generator/) or ``"pretraining"``
            (a joint ``ElectraPretrainingModel`` checkpoint).
    """

    discriminator: Any
    generator: Any | None
    tokenizer: Any
    source: str
    layout: str


# ---- loading --------------------------------------------------------------------------------------------


def load_demo_model(model: str | os.PathLike, *, device: str | torch.device = "cpu") -> DemoModel:
    """Load the discriminator (and the generator, when there is one) named by ``model``, in float32, eval mode.

    Args:
        model: a shipped model or preset name (``bioelectra-mini``, ``electra-small``, ...), or a folder: a
            discriminator ``save_pretrained`` folder, an export folder (``discriminator/`` + ``generator/``), a
            ``pretrain train`` output folder (its newest complete ``checkpoint-N``), a ``checkpoint-N`` folder
            or any ``ElectraPretrainingModel`` save, or an original TensorFlow checkpoint folder (its
            discriminator, converted).
        device: where the models go.

    Raises:
        FileNotFoundError: no such folder or name; no tokenizer files beside the weights; every checkpoint of a
            run incomplete.
        ValueError: a file, or a folder without a discriminator (a generator folder, a fine-tuned model, an
            unrelated folder); a generator whose vocabulary differs from the discriminator's.
    """
    from bioelectra.checkpoints import resolve_checkpoint
    from bioelectra.presets import PRESETS, SHIPPED_MODELS, UNTRAINED_TWINS, shipped_model_dir
    from bioelectra.tf import is_tf_checkpoint_dir

    name = os.fspath(model)
    if name in SHIPPED_MODELS:
        loaded = _load_folder(shipped_model_dir(name))
    elif name in PRESETS or name in UNTRAINED_TWINS or is_tf_checkpoint_dir(name):
        # built (presets) or converted (TF) into a temporary folder, loaded, then removed
        with tempfile.TemporaryDirectory(prefix="bioelectra-demo-") as tmp:
            loaded = _load_folder(Path(resolve_checkpoint(name, Path(tmp))))
            loaded.source = name
    else:
        path = Path(name)
        if not path.exists():
            raise FileNotFoundError(
                f"model {name!r}: no such folder, and not a shipped model ({', '.join(SHIPPED_MODELS)}) or a preset "
                f"({', '.join([*PRESETS, *UNTRAINED_TWINS])})"
            )
        if not path.is_dir():
            raise ValueError(f"model {name!r} is a file; expected a folder holding a discriminator")
        loaded = _load_folder(path)
    loaded.discriminator.to(device)
    if loaded.generator is not None:
        loaded.generator.to(device)
    return loaded


def _load_folder(path: Path) -> DemoModel:
    """The layouts of :func:`load_demo_model`'s folders, in order of precedence."""
    from bioelectra.configuration import ElectraPretrainingConfig
    from bioelectra.pretraining.checkpoints import _checkpoint_dirs, find_checkpoint, load_pretraining_model

    model_type = _model_type(path)
    if _checkpoint_dirs(path) or model_type == ElectraPretrainingConfig.model_type:
        ckpt = find_checkpoint(path)
        joint = load_pretraining_model(ckpt).float().eval()
        tokenizer = _load_tokenizer([ckpt, path, ckpt.parent], what=str(ckpt))
        return DemoModel(joint.discriminator, joint.generator, tokenizer, str(ckpt), "pretraining")
    if (path / "discriminator").is_dir():
        discriminator = _load_discriminator(path / "discriminator")
        generator = None
        if (path / "generator").is_dir():
            generator = _load_generator(path / "generator", discriminator.config.vocab_size)
        tokenizer = _load_tokenizer([path / "discriminator", path / "generator", path], what=str(path))
        return DemoModel(
            discriminator, generator, tokenizer, str(path), "export" if generator else "discriminator"
        )
    if model_type is None:
        raise ValueError(
            f"{path}: no discriminator here (no config.json, no discriminator/ folder, no checkpoint-N folders); "
            "expected a discriminator save_pretrained folder, an export folder (discriminator/ + generator/) "
            "or a `pretrain train` output folder"
        )
    discriminator = _load_discriminator(path)
    return DemoModel(discriminator, None, _load_tokenizer([path], what=str(path)), str(path), "discriminator")


def _model_type(path: Path) -> str | None:
    config = path / "config.json"
    if not config.is_file():
        return None
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("model_type")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{config}: not a readable JSON config ({exc})") from exc


def _architectures(path: Path) -> list[str]:
    return list(json.loads((path / "config.json").read_text(encoding="utf-8")).get("architectures") or [])


def _load_discriminator(path: Path):
    """``ElectraForPreTraining`` from ``path``, refusing folders without its replaced-token head.

    Raises:
        ValueError: no config.json, another model type, another architecture (a generator, a fine-tuned
            classifier), or weights without the ``discriminator_predictions`` head.
    """
    from transformers import ElectraForPreTraining

    model_type = _model_type(path)
    if model_type is None:
        raise ValueError(f"{path}: no config.json; expected an ElectraForPreTraining save_pretrained folder")
    if model_type != "electra":
        raise ValueError(
            f"{path}: model_type {model_type!r}; expected an ELECTRA discriminator (model_type 'electra')"
        )
    architectures = _architectures(path)
    if architectures and "ElectraForPreTraining" not in architectures:
        raise ValueError(
            f"{path}: holds {', '.join(architectures)}, not a discriminator (ElectraForPreTraining): no replaced "
            "token detection head to run (a generator/ folder or a fine-tuned model?)"
        )
    model, info = ElectraForPreTraining.from_pretrained(
        str(path), output_loading_info=True, dtype=torch.float32
    )
    head = sorted(k for k in info["missing_keys"] if k.startswith("discriminator_predictions."))
    if head:
        raise ValueError(
            f"{path}: the weights lack the discriminator's head ({', '.join(head)}): not a discriminator"
        )
    return model.eval()


def _load_generator(path: Path, vocab_size: int):
    """``ElectraForMaskedLM`` from an export's ``generator/`` folder.

    Raises:
        ValueError: not a masked-LM save, or another vocabulary size than the discriminator's.
    """
    from transformers import ElectraForMaskedLM

    if _model_type(path) != "electra" or (
        _architectures(path) and "ElectraForMaskedLM" not in _architectures(path)
    ):
        raise ValueError(
            f"{path}: not an ElectraForMaskedLM save_pretrained folder (the generator expected here)"
        )
    model, info = ElectraForMaskedLM.from_pretrained(str(path), output_loading_info=True, dtype=torch.float32)
    head = sorted(k for k in info["missing_keys"] if k.startswith("generator_predictions."))
    if head:
        raise ValueError(f"{path}: the weights lack the generator's masked-LM head ({', '.join(head)})")
    if model.config.vocab_size != vocab_size:
        raise ValueError(
            f"{path}: generator vocabulary of {model.config.vocab_size} entries, the discriminator's has {vocab_size}"
        )
    return model.eval()


def _load_tokenizer(folders: Sequence[Path], *, what: str):
    from transformers import AutoTokenizer

    seen: list[str] = []
    for folder in folders:
        if str(folder) in seen:
            continue
        seen.append(str(folder))
        if any((folder / f).is_file() for f in _TOKENIZER_FILES):
            return AutoTokenizer.from_pretrained(str(folder))
    raise FileNotFoundError(
        f"{what}: no tokenizer files ({' / '.join(_TOKENIZER_FILES)}) in {', '.join(seen)}; save the tokenizer "
        "beside the weights (pretrain train and export do)"
    )
