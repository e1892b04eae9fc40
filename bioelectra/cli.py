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
from enum import Enum
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


class Loader(str, Enum):
    ner = "ner"
    re = "re"


class Precision(str, Enum):
    auto = "auto"
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"


class Iob1Policy(str, Enum):
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
        typer.Option("--max-seq-length", "--max_seq_length", min=8, help="Sub-tokens per model input, [CLS] and [SEP] included; longer sentences are split into windows."),
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
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Fine-tune a checkpoint on a biomedical benchmark, N seeded trials, and report dev/test metrics."""
    _setup_logging(verbose)
    from downstream.errors import DownstreamError
    from downstream.trials import FinetuneSettings, format_summary_table, run_trials

    if dataset is None and data_dir is None:
        _fail(_UserError("give --dataset NAME (a registered benchmark) or --data-dir DIR (your own files)"))
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
        )
        report = run_trials(settings)
    except (DownstreamError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(format_summary_table(report))
    console.print(f"[green]results:[/] {out / 'results.json'}  {out / 'results.md'}")


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


class ModelSize(str, Enum):  # noqa: UP042 - same style as the other option enums of this module
    small = "small"
    base = "base"
    large = "large"


@pretrain_app.command("train")
def pretrain_train(
    data_dir: Annotated[
        Path, typer.Option("--data-dir", "--data_dir", help="Output of `pretrain build-data`.")
    ],
    model_name: Annotated[
        str,
        typer.Option("--model-name", "--model_name", help="Run name: output in <data-dir>/models/<name>."),
    ] = "bioelectra",
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            "--output_dir",
            help="Checkpoints, hparams.json, eval_results.json (overrides the name rule).",
        ),
    ] = None,
    model_size: Annotated[
        ModelSize, typer.Option("--model-size", "--model_size", help="Original ELECTRA size.")
    ] = ModelSize.small,
    hparams: Annotated[
        str | None,
        typer.Option(
            help="JSON object or .json file of hparam overrides (unknown keys are an error); "
            "see bioelectra.training.PretrainingHparams."
        ),
    ] = None,
    init_from: Annotated[
        Path | None,
        typer.Option(
            "--init-from",
            "--init_from",
            help="Continue pre-training from a joint-model dir or a discriminator/ + generator/ dir.",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Pre-train ELECTRA (replaced token detection); a re-run resumes from the last checkpoint."""
    _setup_logging(verbose)
    logging.getLogger("transformers.trainer").setLevel(logging.INFO)
    import json

    from bioelectra.training import parse_hparams_arg, run_pretraining

    out = output_dir or data_dir / "models" / model_name
    try:
        summary = run_pretraining(
            data_dir=data_dir,
            output_dir=out,
            model_size=model_size.value,
            hparams=parse_hparams_arg(hparams),
            init_from=init_from,
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(summary, indent=2))


@pretrain_app.command("eval")
def pretrain_eval(
    model_dir: Annotated[
        Path, typer.Option("--model-dir", "--model_dir", help="A `pretrain train` output directory.")
    ],
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", "--data_dir", help="Data (default: the one in <model-dir>/hparams.json)."),
    ] = None,
    checkpoint: Annotated[
        int | None, typer.Option(help="Step N of checkpoint-N (default: the newest).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option(help="Metrics JSON (default: <model-dir>/eval_checkpoint-N.json).")
    ] = None,
    hparams: Annotated[
        str | None, typer.Option(help="JSON overrides, e.g. '{\"num_eval_steps\": 10}'.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """The original pre-training metrics of a checkpoint on the held-out (validation) examples, as JSON."""
    _setup_logging(verbose)
    import json

    from bioelectra.training import evaluate_checkpoint, parse_hparams_arg

    try:
        result = evaluate_checkpoint(
            model_dir=model_dir,
            data_dir=data_dir,
            checkpoint=checkpoint,
            output_file=output,
            hparams=parse_hparams_arg(hparams),
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(result, indent=2))


@pretrain_app.command("export")
def pretrain_export(
    model_dir: Annotated[
        Path, typer.Option("--model-dir", "--model_dir", help="A `pretrain train` output directory.")
    ],
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "--output_dir", help="Writes discriminator/ and generator/ here.")
    ],
    checkpoint: Annotated[
        int | None, typer.Option(help="Step N of checkpoint-N (default: the newest).")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Export HF checkpoints: discriminator/ (ElectraForPreTraining) and generator/ (ElectraForMaskedLM)."""
    _setup_logging(verbose)
    import json

    from bioelectra.training import export_checkpoint

    try:
        paths = export_checkpoint(model_dir=model_dir, output_dir=output_dir, checkpoint=checkpoint)
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(paths, indent=2))
    console.print(f"[green]fine-tune with:[/] --ckpt {paths['discriminator']}")


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
