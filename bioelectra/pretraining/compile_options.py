"""What ``torch.compile`` is told when it compiles the whole training step: a mode and inductor's options
(hparams ``compile_mode`` and ``compile_options``), merged into one dict of inductor options and checked before
any work.

Why: ``max-autotune`` is worth having where it pays. Inductor's autotuning benchmarks Triton templates for
every matrix product and can fuse the pointwise work after one into it (the bias, GELU, the residual add): fewer
and larger kernels, at a cost in compile time that a carried compile cache pays once. torch's
``mode="max-autotune"`` also turns on inductor's own CUDA graphs (``triton.cudagraphs``), which cannot run inside
the graph that ``train_step: captured`` records by hand, so the captured step takes
``max-autotune-no-cudagraphs`` (the same autotuning without them). ``compile_options`` sets single options on top
(``{"combo_kernels": true}``: independent small kernels launched as one; ``{"coordinate_descent_tuning": false}``).

A mode is a name for a set of options: ``torch._inductor.list_mode_options(mode)``, e.g. ``max-autotune-no-cudagraphs``
is ``{"max_autotune": True, "coordinate_descent_tuning": True}`` in torch 2.11-2.13. ``torch.compile`` refuses a
mode and options together, so the step passes the merged dict as ``options``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

#: torch.compile's modes (its ``mode`` argument), each a set of inductor options.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

#: The inductor option that wraps compiled graphs in inductor's own CUDA graphs (modes ``reduce-overhead`` and
#: ``max-autotune``); refused where the step is captured as one CUDA graph of ours.
CUDAGRAPHS_OPTION = "triton.cudagraphs"


def inductor_options(
    mode: str = "default", options: Mapping[str, Any] | None = None, *, capture: bool = False
) -> dict[str, Any]:
    """The inductor options of ``mode`` with ``options`` over them (a key of ``options`` wins), checked as
    ``torch.compile`` checks them, with errors that name the hparam.

    Args:
        mode: one of :data:`COMPILE_MODES` (hparam ``compile_mode``).
        options: inductor configuration keys (``torch._inductor.config``; ``-`` may stand for ``_``) and values
            (hparam ``compile_options``), or None.
        capture: the step is recorded as one CUDA graph by hand (``train_step: captured`` on CUDA).

    Returns:
        a dict for ``torch.compile(options=...)``; empty for the default mode without options.

    Raises:
        ValueError: an unknown mode; an option inductor does not have (close names suggested) or of the wrong
            type; inductor's CUDA graphs (``triton.cudagraphs``, modes ``reduce-overhead`` / ``max-autotune``)
            with ``capture``.
    """
    if mode not in COMPILE_MODES:
        raise ValueError(f"hparam compile_mode={mode!r}: expected one of {', '.join(COMPILE_MODES)}")
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"hparam compile_options={options!r}: expected a JSON object of inductor options")
    import torch._inductor
    from torch._inductor import config

    merged = dict(torch._inductor.list_mode_options(mode)) if mode != "default" else {}
    known = config.get_config_copy()
    for key, value in (options or {}).items():
        name = str(key).replace("-", "_")
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ValueError(f"hparam compile_options: {key!r} is not an option of torch's inductor{hint}")
        expected = known[name]
        if isinstance(expected, (bool, int, float, str)) and not _same_kind(value, expected):
            raise ValueError(
                f"hparam compile_options: {key!r} is {value!r}; inductor's {name} takes a "
                f"{type(expected).__name__} (now {expected!r})"
            )
        merged[name] = float(value) if isinstance(expected, float) else value  # torch's own check wants a float
    if capture and merged.get(CUDAGRAPHS_OPTION):
        raise ValueError(
            f"hparam compile_mode={mode!r} / compile_options turn on inductor's CUDA graphs ({CUDAGRAPHS_OPTION}), "
            "which cannot run inside the training step captured as one CUDA graph (train_step captured): use "
            "compile_mode 'max-autotune-no-cudagraphs' (the same autotuning), or train_step 'whole'"
        )
    return merged


def _same_kind(value: Any, expected: Any) -> bool:
    """Whether ``value`` may stand where inductor's option has ``expected``: the same type, an int where a float
    is expected. A bool is not taken for a number here (torch's own ``isinstance`` check would take ``true`` for
    an int option), nor a number for a bool (torch refuses that too)."""
    if isinstance(expected, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(expected, bool)
    if isinstance(expected, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(expected))
