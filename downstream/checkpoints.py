"""Loading fine-tuning checkpoints: a local ``save_pretrained`` directory or a hub id (online users)."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from downstream.errors import DownstreamError
from downstream.registry import offline_mode


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' load report (expected: a new head replaces the pre-training head)."""
    from transformers.utils import logging as hf_logging

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(previous)
        logging.getLogger("transformers").setLevel(logging.WARNING)


def load_tokenizer(checkpoint: str):
    """The checkpoint's fast tokenizer.

    Raises:
        DownstreamError: no tokenizer files, a slow-only tokenizer, or a hub id while offline (the
            message says what to do).
    """
    from transformers import AutoTokenizer

    is_local = Path(checkpoint).is_dir()
    if is_local:
        check_checkpoint_dir(Path(checkpoint))
    if not is_local and offline_mode():
        raise DownstreamError(
            f"--ckpt {checkpoint}: looks like a hub id, but the hub is unreachable in offline mode "
            "(HF_HUB_OFFLINE=1). Download it on a machine with a network (e.g. `huggingface-cli download "
            f"{checkpoint} --local-dir DIR`) and pass --ckpt DIR."
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    except (OSError, ValueError) as exc:
        raise DownstreamError(f"--ckpt {checkpoint}: cannot load a tokenizer ({exc})") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise DownstreamError(f"--ckpt {checkpoint}: {type(tokenizer).__name__} is not a fast tokenizer (word alignment needs one)")
    return tokenizer


#: Files any of which a ``save_pretrained`` tokenizer folder holds.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt")


def check_checkpoint_dir(folder: Path) -> None:
    """A local ``--ckpt`` folder must be a ``save_pretrained`` directory: ``config.json`` and tokenizer files.

    Raises:
        DownstreamError: what is missing, named (instead of transformers' guesses about sentencepiece).
    """
    missing = []
    if not (folder / "config.json").is_file():
        missing.append("config.json")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        missing.append(f"tokenizer files ({', '.join(TOKENIZER_FILES)})")
    if missing:
        raise DownstreamError(
            f"--ckpt {folder}: not a save_pretrained checkpoint folder: no {' and no '.join(missing)}"
        )


def check_max_seq_length(checkpoint: str, max_seq_length: int) -> None:
    """``--max-seq-length`` must fit the model's position embeddings (checked before any training).

    Raises:
        DownstreamError: it does not (both numbers named).
    """
    config_file = Path(checkpoint) / "config.json"
    if not config_file.is_file():
        return  # a hub id: checked by the model itself
    import json

    positions = json.loads(config_file.read_text(encoding="utf-8")).get("max_position_embeddings")
    if isinstance(positions, int) and max_seq_length > positions:
        raise DownstreamError(
            f"--max-seq-length {max_seq_length}: the model {checkpoint} has {positions} position embeddings; "
            f"use --max-seq-length {positions} or less"
        )
