"""The command line: one Typer app, installed as ``bioelectra``, one module per command group.

``bioelectra finetune / run-finetuning / pretrain / convert`` are also runnable from a checkout as
``python finetune.py``, ``python run_finetuning.py``, ``python pretrain.py`` and
``python convert_tf_checkpoint.py``.

This package is the only place that knows about the command line: each command parses its options, builds
a settings object, calls one library function, prints the result and turns library errors into exit code 2.
It is the top floor: it imports the ``bioelectra`` library and ``downstream``; neither imports it.
"""

from __future__ import annotations

import typer

from bioelectra.checkpoints import DEFAULT_CKPT, resolve_checkpoint
from bioelectra.cli import benchmark, convert, evaluate, finetune, predict, pretrain  # noqa: F401 - registers the commands
from bioelectra.cli.common import (
    ORIGINAL_VALUE_FLAGS,
    _offline_default,
    _original_args,
    app,
    console,
    normalize_original_flags,
    pretrain_app,
)
from bioelectra.cli.convert import dump_path_directory

#: The former private name, kept for callers of ``bioelectra.cli._resolve_checkpoint``.
_resolve_checkpoint = resolve_checkpoint


def main() -> None:
    """``bioelectra`` console script."""
    _offline_default()
    app(args=_original_args())


def _single(command_name: str) -> typer.Typer:
    sub = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    for info in app.registered_commands:
        if info.name == command_name:
            sub.registered_commands.append(info)
    return sub


def finetune_main() -> None:
    """``python finetune.py ...``: the finetune command alone."""
    _offline_default()
    _single("finetune")(prog_name="finetune.py")


def run_finetuning_main() -> None:
    """``python run_finetuning.py ...``: the original fine-tuning command line."""
    _offline_default()
    _single("run-finetuning")(prog_name="run_finetuning.py")


def pretrain_main() -> None:
    """``python pretrain.py ...``: the pretrain command group."""
    _offline_default()
    pretrain_app(args=_original_args(), prog_name="pretrain.py")


def convert_main() -> None:
    """``python convert_tf_checkpoint.py ...``: the convert command alone."""
    _offline_default()
    _single("convert")(prog_name="convert_tf_checkpoint.py")


__all__ = [
    "DEFAULT_CKPT", "ORIGINAL_VALUE_FLAGS", "app", "console", "convert_main", "dump_path_directory", "finetune_main",
    "main", "normalize_original_flags", "pretrain_app", "pretrain_main", "resolve_checkpoint", "run_finetuning_main",
]  # fmt: skip
