"""``torch.compile``'s cache artifacts carried from one machine to the next: a run or a bench that compiled
before loads them (``torch.compiler.load_cache_artifacts``) and compiles from them, and writes this process's
(``torch.compiler.save_cache_artifacts``). The whole training step (:mod:`bioelectra.pretraining.step`) is what
compiles; docs/results/pretraining-findings.md ("Compiling the whole step on the CPU") has what a carried cache
saves.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import torch

from bioelectra.compile_records import CACHE_COUNTERS

logger = logging.getLogger(__name__)


def compile_cache_counts(since: Mapping[str, int] | None = None) -> dict[str, int]:
    """This process's :data:`~bioelectra.compile_records.CACHE_COUNTERS` (graphs, counted from the process's
    start), less ``since`` (an earlier return of this function): how the compilations in between were served."""
    from torch._dynamo.utils import counters

    now = {name: int(counters[group][name]) for group, names in CACHE_COUNTERS.items() for name in names}
    return {name: count - (since or {}).get(name, 0) for name, count in now.items()}


def load_compile_cache(path: str | os.PathLike | None) -> bool:
    """Load ``torch.compile``'s cache artifacts written by :func:`save_compile_cache` (a fresh machine then
    compiles from what an earlier one compiled: ``torch.compiler.load_cache_artifacts``). Call it before the
    first compilation. Returns whether something was loaded; a missing file is no error (the first run), an
    unreadable one is logged and skipped (the run compiles as without it)."""
    if not path or not Path(path).is_file():
        return False
    try:
        info = torch.compiler.load_cache_artifacts(Path(path).read_bytes())
    except Exception as exc:  # noqa: BLE001 - a stale cache (another torch, another device) must not stop a run
        logger.warning("compile cache %s not loaded (%s: %s): compiling from scratch", path, type(exc).__name__, exc)
        return False
    if info is None:  # torch logs why (a corrupt file, another version) and loads nothing
        logger.warning("compile cache %s not loaded (unreadable artifacts): compiling from scratch", path)
        return False
    logger.info("compile cache loaded from %s (%s)", path, _artifact_summary(info))
    return True


def save_compile_cache(path: str | os.PathLike | None) -> int:
    """Write the artifacts of every compilation of this process (``torch.compiler.save_cache_artifacts``) to
    ``path``, atomically. Returns the bytes written (0: nothing compiled, or no path)."""
    if not path:
        return 0
    saved = torch.compiler.save_cache_artifacts()
    if saved is None:
        return 0
    artifacts, info = saved
    from bioelectra.textio import atomic_open

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path, "wb") as handle:
        handle.write(artifacts)
    logger.info("compile cache saved to %s: %d bytes (%s)", path, len(artifacts), _artifact_summary(info))
    return len(artifacts)


def _artifact_summary(info) -> str:
    """``CacheInfo``'s artifact counts by kind, for the log."""
    names = getattr(info, "artifacts", None)
    if not isinstance(names, Mapping):
        return "no details"
    return ", ".join(f"{kind}: {len(items)}" for kind, items in names.items() if items) or "empty"
