"""What every command module shares: the Typer apps, the console, logging set-up, error exit, and the
rewriting of the original scripts' boolean flag values."""

from __future__ import annotations

import logging
import os
import sys
from typing import Annotated

import typer
from rich.console import Console

# soft_wrap: a message is never broken into lines by the console (a log file or a pipe is 80 columns to rich,
# and a path broken in two cannot be copied or searched for); the terminal wraps what is too long
console = Console(stderr=True, soft_wrap=True)

app = typer.Typer(
    name="bioelectra",
    help="Biomedical ELECTRA: pre-training with replaced token detection, fine-tuning on BioNLP benchmarks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
pretrain_app = typer.Typer(
    name="pretrain",
    help="ELECTRA pre-training: build-vocab, build-data, train, eval, export.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(pretrain_app, name="pretrain")


#: The options that make a run small, the same in ``finetune``, ``benchmark`` (training and scoring) and
#: ``evaluate`` (scoring only): a smoke run of any kind takes a minute. Their ranges are checked with the
#: settings (``FinetuneSettings``), before any data is read.
MaxStepsOption = Annotated[
    int, typer.Option("--max-steps", "--max_steps", help="If > 0, stop each trial after this many optimizer steps (overrides --epochs).")
]
MaxTrainExamplesOption = Annotated[
    int | None, typer.Option("--max-train-examples", help="Use only the first N training sentences/examples (smoke runs).")
]
MaxEvalExamplesOption = Annotated[
    int | None,
    typer.Option(
        "--max-eval-examples",
        help="Score only the first N development and test sentences/examples (QA, yes/no: questions); smoke "
        "runs, the scores are then not comparable with published figures.",
    ),
]
#: The seed options' range (numpy and the Trainer take 32-bit seeds); the settings check it again.
SeedOption = Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Seed of the first trial; trial i uses seed + i.")]


class _UserError(Exception):
    """Raised inside the CLI for a bad option combination (exit code 2)."""


def _setup_logging(verbose: bool) -> None:
    from rich.logging import RichHandler

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(message)s",
        handlers=[RichHandler(console=console, show_path=False, rich_tracebacks=False)],
        force=True,
    )
    # transformers and datasets are chatty at INFO; keep their warnings.
    for name in ("transformers", "datasets", "accelerate", "urllib3", "filelock", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _no_transformers_bars() -> None:
    """No tqdm bars of transformers' own (weight loading, shard writing) between the log lines and the
    commands' rich progress display."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def predicting_progress(unit: str):
    """A transient "predicting N <unit>" bar on the console (stderr) and its task, which ``advance(task, n)``
    moves: ``predict``'s documents, ``evaluate --linker``'s abstracts."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(TextColumn("predicting"), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
                        TimeElapsedColumn(), console=console, transient=True)  # fmt: skip
    return progress, progress.add_task("predict", total=None)


def _fail(exc: BaseException) -> None:
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(str(exc))}")  # a message's [brackets] shown, not read as markup
    raise typer.Exit(code=2)


def _offline_default() -> None:
    # No usage telemetry, and no tokenizers thread pools fighting the Trainer's data loading. The hub itself
    # stays reachable for users who name a hub id; offline (HF_HUB_OFFLINE=1) a hub id fails fast with a
    # message (downstream.checkpoints.load_tokenizer, downstream.registry).
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


#: Flags that the original scripts take with a value (argparse ``type=bool``) and this CLI as an on/off
#: pair: ``--blanks-separate-docs False`` (build_pretraining_dataset.py) becomes ``--no-blanks-separate-docs``.
ORIGINAL_VALUE_FLAGS: dict[str, tuple[str, str]] = {
    "--blanks-separate-docs": ("--blanks-separate-docs", "--no-blanks-separate-docs"),
}
_TRUE_WORDS = frozenset({"true", "1", "yes", "y", "t"})
_FALSE_WORDS = frozenset({"false", "0", "no", "n", "f"})


def normalize_original_flags(args: list[str]) -> list[str]:
    """Rewrite the original scripts' ``--flag True|False`` (and ``--flag=False``) into this CLI's on/off
    flags, doing what the words say. (The original's argparse ``type=bool`` read any non-empty word,
    ``False`` included, as True.) Other arguments pass through unchanged.

    Raises:
        _UserError: ``--flag=WORD`` with a word that is neither true nor false.
    """
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in ORIGINAL_VALUE_FLAGS:
            on, off = ORIGINAL_VALUE_FLAGS[name]
            if not eq and i + 1 < len(args) and args[i + 1].lower() in _TRUE_WORDS | _FALSE_WORDS:
                value, i = args[i + 1], i + 1
            elif not eq:
                value = "true"
            if value.lower() not in _TRUE_WORDS | _FALSE_WORDS:
                raise _UserError(f"{name}={value!r}: expected True or False")
            arg = on if value.lower() in _TRUE_WORDS else off
        out.append(arg)
        i += 1
    return out


def _original_args() -> list[str]:
    try:
        return normalize_original_flags(sys.argv[1:])
    except _UserError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        raise SystemExit(2) from None
