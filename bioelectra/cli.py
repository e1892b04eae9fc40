"""The command line: one Typer app, installed as ``bioelectra``.

``bioelectra finetune ...``, ``bioelectra pretrain ...`` and ``bioelectra convert ...`` are also runnable
from a checkout as ``python finetune.py``, ``python pretrain.py`` and ``python convert_tf_checkpoint.py``.

This is the only module that knows about the command line: it parses options, builds a settings
object, calls one library function, prints the result and turns library errors into exit code 2.
"""

from __future__ import annotations

import logging
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

console = Console(stderr=True)

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


def _fail(exc: BaseException) -> None:
    console.print(f"[bold red]error:[/] {exc}")
    raise typer.Exit(code=2)


# --------------------------------------------------------------------------------------------------
# finetune
# --------------------------------------------------------------------------------------------------


class Loader(StrEnum):
    ner = "ner"
    re = "re"


class Precision(StrEnum):
    auto = "auto"
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"


class ReHead(StrEnum):
    electra = "electra"
    hf = "hf"


class Iob1Policy(StrEnum):
    repair = "repair"
    reject = "reject"


DEFAULT_CKPT = "electra-small"


@app.command("finetune")
def finetune(
    loader: Annotated[Loader, typer.Option(help="Task kind: 'ner' (token classification) or 're' (relation extraction).")] = Loader.ner,
    dataset: Annotated[
        str | None,
        typer.Option(help="Benchmark name from the registry (e.g. ncbi-disease, bc5cdr-chem, chemprot, gad)."),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", "--data_dir", help="Local folder with train.tsv, devel.tsv (or dev.tsv) and test.tsv; overrides the registry."),
    ] = None,
    ckpt: Annotated[
        str,
        typer.Option(
            help="Checkpoint: a local save_pretrained directory, a hub id (needs a network), an original "
            "TensorFlow ELECTRA checkpoint directory, or a size preset electra-small|electra-base|electra-large "
            "(randomly initialised, untrained encoder).",
        ),
    ] = DEFAULT_CKPT,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", "--output_dir", help="Where results.json, results.md and per-trial outputs go (default runs/<loader>-<dataset>)."),
    ] = None,
    metric: Annotated[str, typer.Option(help="Development-set metric that selects the best epoch (f1, precision, recall, accuracy, loss).")] = "f1",
    greater_is_better: Annotated[
        bool,
        typer.Option("--greater-is-better/--lower-is-better", "--greater_is_better/--lower_is_better", help="Whether a larger --metric is better."),
    ] = True,
    trials: Annotated[int, typer.Option(min=1, help="Number of fine-tuning runs, with seeds seed, seed+1, ...")] = 1,
    epochs: Annotated[float, typer.Option(min=0.0, help="Training epochs per trial.")] = 3.0,
    learning_rate: Annotated[float, typer.Option("--learning-rate", "--learning_rate", "--lr", help="Peak learning rate (linear warmup, then linear decay).")] = 1e-4,
    batch_size: Annotated[int, typer.Option("--batch-size", "--batch_size", min=1, help="Training batch size per device.")] = 32,
    eval_batch_size: Annotated[int, typer.Option("--eval-batch-size", "--eval_batch_size", min=1, help="Evaluation batch size per device.")] = 64,
    max_seq_length: Annotated[
        int,
        typer.Option("--max-seq-length", "--max_seq_length", min=8, help="Sub-tokens per model input, [CLS] and [SEP] included. NER: longer sentences are split into windows; RE: truncated, examples losing an entity marker counted."),
    ] = 128,
    seed: Annotated[int, typer.Option(help="Seed of the first trial; trial i uses seed + i.")] = 42,
    max_steps: Annotated[int, typer.Option("--max-steps", "--max_steps", help="If > 0, stop each trial after this many optimizer steps (overrides --epochs).")] = -1,
    warmup_ratio: Annotated[float, typer.Option("--warmup-ratio", "--warmup_ratio", min=0.0, max=1.0, help="Fraction of steps with linear warmup.")] = 0.1,
    weight_decay: Annotated[float, typer.Option("--weight-decay", "--weight_decay", min=0.0, help="AdamW weight decay (not on biases and LayerNorm).")] = 0.01,
    precision: Annotated[Precision, typer.Option(help="auto: bf16 on GPUs that support it, fp32 otherwise.")] = Precision.auto,
    iob1: Annotated[
        Iob1Policy,
        typer.Option(help="An I-x tag not preceded by B-x/I-x (IOB1 style): 'repair' it to B-x with a warning, or 'reject' the file."),
    ] = Iob1Policy.repair,
    max_train_examples: Annotated[
        int | None, typer.Option("--max-train-examples", help="Use only the first N training sentences/examples (smoke runs).")
    ] = None,
    fold: Annotated[
        int | None, typer.Option(min=1, help="RE: cross-validation fold to run (GAD: 1..10; the data folder holds 1/ 2/ ...).")
    ] = None,
    folds: Annotated[
        str | None,
        typer.Option(help="RE: 'all' runs every fold folder and reports the mean over folds; or a list like '1,2,3'."),
    ] = None,
    re_head: Annotated[
        ReHead,
        typer.Option("--re-head", "--re_head", help="RE classifier head: 'electra' (dropout + linear over [CLS], ELECTRA's) or 'hf' (ElectraClassificationHead)."),
    ] = ReHead.electra,
    dev_fraction: Annotated[
        float, typer.Option("--dev-fraction", min=0.01, max=0.5, help="RE: fraction of train cut off as the development split when there is none.")
    ] = 0.1,
    dev_split_seed: Annotated[int, typer.Option("--dev-split-seed", help="RE: seed of the development cut (shared by all trials).")] = 42,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Fine-tune a checkpoint on a biomedical benchmark, N seeded trials, and report dev/test metrics."""
    _setup_logging(verbose)
    from downstream.errors import DownstreamError
    from downstream.trials import (
        FinetuneSettings,
        format_folds_table,
        format_summary_table,
        run_folds,
        run_trials,
    )

    if dataset is None and data_dir is None:
        _fail(_UserError("give --dataset NAME (a registered benchmark) or --data-dir DIR (your own files)"))
    if loader is Loader.ner and (fold is not None or folds is not None):
        _fail(_UserError("--fold / --folds are for cross-validated relation extraction data (--loader re)"))
    if fold is not None and folds is not None:
        _fail(_UserError("give --fold K or --folds all, not both"))
    name = dataset or data_dir.name  # type: ignore[union-attr]
    out = output_dir or Path("runs") / f"{loader.value}-{name}"
    try:
        model_path = _resolve_checkpoint(ckpt, out)
        settings = FinetuneSettings(
            task=loader.value,
            dataset=dataset,
            data_dir=data_dir,
            checkpoint=model_path,
            checkpoint_name=ckpt,
            output_dir=out,
            metric=metric,
            greater_is_better=greater_is_better,
            num_trials=trials,
            num_train_epochs=epochs,
            learning_rate=learning_rate,
            per_device_train_batch_size=batch_size,
            per_device_eval_batch_size=eval_batch_size,
            max_seq_length=max_seq_length,
            seed=seed,
            max_steps=max_steps,
            warmup_ratio=warmup_ratio,
            weight_decay=weight_decay,
            precision=precision.value,
            iob1_policy=iob1.value,
            max_train_examples=max_train_examples,
            fold=fold,
            re_head=re_head.value,
            dev_fraction=dev_fraction,
            dev_split_seed=dev_split_seed,
        )
        if folds is not None:
            report = run_folds(settings, _parse_folds(folds, settings))
        else:
            report = run_trials(settings)
    except (DownstreamError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(format_folds_table(report) if folds is not None else format_summary_table(report))
    console.print(f"[green]results:[/] {out / 'results.json'}  {out / 'results.md'}")


def _parse_folds(folds: str, settings) -> list[int]:
    """``all`` -> every fold folder of the data; ``1,3,5`` -> those folds."""
    from downstream.re import list_folds
    from downstream.registry import locate_dataset_dir

    if folds.strip().lower() == "all":
        folder = settings.data_dir if settings.data_dir is not None else locate_dataset_dir(settings.dataset, task="re")
        found = list_folds(folder)
        if not found:
            raise ValueError(f"--folds all: {folder} has no fold folders (1/ 2/ ...)")
        return found
    try:
        return [int(x) for x in folds.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--folds {folds!r}: expected 'all' or a comma-separated list of fold numbers") from None


def _resolve_checkpoint(ckpt: str, output_dir: Path) -> str:
    """Turn ``--ckpt`` into something ``from_pretrained`` loads: a directory or a hub id.

    A size preset is built (randomly initialised) under ``output_dir/init-<preset>``.
    """
    from bioelectra.presets import PRESETS, build_preset_checkpoint

    if ckpt in PRESETS:
        target = output_dir / f"init-{ckpt}"
        console.print(
            f"[bold yellow]warning:[/] --ckpt {ckpt} is a size preset: the encoder is randomly initialised and "
            "UNTRAINED, so scores show what the fine-tuning data alone teaches. Pass a pre-trained checkpoint for real results."
        )
        return str(build_preset_checkpoint(ckpt, target))
    path = Path(ckpt)
    if path.is_dir():
        return str(path)
    if path.exists():
        raise ValueError(f"--ckpt {ckpt}: expected a checkpoint directory, got a file")
    if ckpt.count("/") == 1 and not ckpt.startswith((".", "/")):
        return ckpt  # a hub id: loaded (and, offline, refused quickly) by the downstream loader
    raise FileNotFoundError(
        f"--ckpt {ckpt}: no such directory, not a preset ({', '.join(PRESETS)}) and not a hub id (owner/name)"
    )


# --------------------------------------------------------------------------------------------------
# pretrain (commands registered on pretrain_app)
# --------------------------------------------------------------------------------------------------

# ---- pre-training data commands (build-vocab, build-data) ----

# ---- end pre-training data commands ----

# ---- pre-training model commands (train, eval, export) ----

# ---- end pre-training model commands ----


# --------------------------------------------------------------------------------------------------
# convert
# --------------------------------------------------------------------------------------------------


@app.command("convert")
def convert() -> None:
    """Convert an original TensorFlow ELECTRA checkpoint to Hugging Face checkpoints (not implemented yet)."""
    _fail(NotImplementedError("convert: not implemented yet"))


# --------------------------------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------------------------------


def _offline_default() -> None:
    # Nothing here needs the hub unless the user names a hub id; fail fast instead of retrying for a minute.
    if os.environ.get("BIOELECTRA_ONLINE") != "1":
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    """``bioelectra`` console script."""
    _offline_default()
    app()


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


def pretrain_main() -> None:
    """``python pretrain.py ...``: the pretrain command group."""
    _offline_default()
    pretrain_app(prog_name="pretrain.py")


def convert_main() -> None:
    """``python convert_tf_checkpoint.py ...``: the convert command alone."""
    _offline_default()
    _single("convert")(prog_name="convert_tf_checkpoint.py")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
