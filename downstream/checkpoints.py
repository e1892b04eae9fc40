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
