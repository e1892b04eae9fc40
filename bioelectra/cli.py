"""The command line: one Typer app, installed as ``bioelectra``.

``bioelectra finetune ...``, ``bioelectra pretrain ...`` and ``bioelectra convert ...`` are also runnable
from a checkout as ``python finetune.py``, ``python pretrain.py`` and ``python convert_tf_checkpoint.py``.

This is the only module that knows about the command line: it parses options, builds a settings
object, calls one library function, prints the result and turns library errors into exit code 2.
"""

from __future__ import annotations

import json
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


DEFAULT_CKPT = "bioelectra-mini"


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
            help="Checkpoint: bioelectra-mini (the small pre-trained discriminator shipped with the package), "
            "a local save_pretrained directory, a hub id (needs a network), an original TensorFlow ELECTRA "
            "checkpoint directory, or an untrained encoder: a size preset electra-small|electra-base|electra-large "
            "or bioelectra-mini-untrained (bioelectra-mini's shape and tokenizer, random weights).",
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
    learning_rate: Annotated[
        float | None,
        typer.Option(
            "--learning-rate",
            "--learning_rate",
            "--lr",
            min=0.0,
            show_default=False,
            help="Peak learning rate (linear warmup, then linear decay). Default: 1e-3 for bioelectra-mini and "
            "bioelectra-mini-untrained (the rate of their comparison), 1e-4 (ELECTRA's fine-tuning default) otherwise.",
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", "--batch_size", min=1, help="Training batch size per device.")] = 32,
    eval_batch_size: Annotated[int, typer.Option("--eval-batch-size", "--eval_batch_size", min=1, help="Evaluation batch size per device.")] = 64,
    layerwise_lr_decay: Annotated[
        float,
        typer.Option(
            "--layerwise-lr-decay",
            "--layerwise_lr_decay",
            max=1.0,
            help="Learning-rate factor in (0, 1] per encoder layer below the task head (original ELECTRA fine-tuning: 0.8 "
            "for Small and Base); the embeddings get decay**(layers + 2). 1.0: one rate for all.",
        ),
    ] = 1.0,
    micro_batch_tokens: Annotated[
        int | None,
        typer.Option("--micro-batch-tokens", "--micro_batch_tokens", min=0, help="Run a training batch with more padded tokens than this as several forward/backward passes adding up to the same update (less memory). Default: 1024 on CPU, no splitting on a GPU; 0: never split."),
    ] = None,
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
        check_layerwise_lr_decay,
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
    if out.exists() and not out.is_dir():
        _fail(_UserError(f"--output-dir {out}: exists and is a file, not a folder"))
    try:
        check_layerwise_lr_decay(layerwise_lr_decay)  # before any checkpoint is built or converted
        model_path = _resolve_checkpoint(ckpt, out)
        if learning_rate is None:
            from bioelectra.presets import default_learning_rate

            learning_rate = default_learning_rate(ckpt)
            console.print(f"learning rate {learning_rate:g} (the default for --ckpt {ckpt}; set --learning-rate to change it)")
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
            layerwise_lr_decay=layerwise_lr_decay,
            micro_batch_tokens=micro_batch_tokens,
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


@app.command("run-finetuning")
def run_finetuning(
    data_dir: Annotated[
        Path,
        typer.Option(
            "--data-dir",
            "--data_dir",
            help="The original DATA_DIR: models/<model-name>/ (TensorFlow or save_pretrained checkpoint) and "
            "optionally finetuning_data/<task>/.",
        ),
    ],
    model_name: Annotated[
        str,
        typer.Option(
            "--model-name",
            "--model_name",
            help="The checkpoint DATA_DIR/models/<model-name>; if that folder does not exist, a --ckpt name "
            "(bioelectra-mini, electra-small, ...).",
        ),
    ],
    hparams: Annotated[
        str,
        typer.Option(
            help='The original configure_finetuning.py hparams, JSON or a .json file: "task_names" (required), '
            '"learning_rate", "num_train_epochs", "num_trials", "train_batch_size", "max_seq_length", ...'
        ),
    ],
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """The original run_finetuning.py command line: each task of task_names through finetune's trial runner,
    results also in DATA_DIR/models/<model-name>/results/<task>_results.txt (the original's format)."""
    _setup_logging(verbose)
    from bioelectra.training import parse_hparams_arg
    from downstream.errors import DownstreamError
    from downstream.original import run_original_finetuning
    from downstream.trials import FinetuneSettings, format_summary_table, run_trials

    try:
        reports = run_original_finetuning(
            data_dir,
            model_name,
            parse_hparams_arg(hparams),
            resolve_checkpoint=_resolve_checkpoint,
            run_trials=run_trials,
            settings_class=FinetuneSettings,
            log=console.print,
        )
    except (DownstreamError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    for item in reports:
        print(format_summary_table(item["report"]))
        console.print(f"[green]{item['task']}:[/] {item['results_txt']}")


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

    A shipped model (``bioelectra-mini``) resolves to its directory inside the package. A size preset or an
    untrained twin is built (randomly initialised) under ``output_dir/init-<preset>``. An original TensorFlow
    checkpoint directory is converted (discriminator) once into ``output_dir/converted-discriminator``.
    """
    from bioelectra.presets import (
        PRESETS,
        SHIPPED_MODELS,
        UNTRAINED_TWINS,
        build_preset_checkpoint,
        shipped_model_dir,
    )
    from bioelectra.tf_checkpoint import convert_tf_checkpoint, find_checkpoint, is_tf_checkpoint_dir

    if ckpt in SHIPPED_MODELS:
        return str(shipped_model_dir(ckpt))
    if ckpt in PRESETS or ckpt in UNTRAINED_TWINS:
        target = output_dir / f"init-{ckpt}"
        console.print(
            f"[bold yellow]warning:[/] --ckpt {ckpt} is an untrained preset: the encoder is randomly initialised and "
            "UNTRAINED, so scores show what the fine-tuning data alone teaches. Pass a pre-trained checkpoint for real results."
        )
        return str(build_preset_checkpoint(ckpt, target))
    path = Path(ckpt)
    if is_tf_checkpoint_dir(path):
        target = output_dir / "converted-discriminator"
        stamp = target / "conversion_report.json"
        source = str(find_checkpoint(path))
        if not (stamp.is_file() and json.loads(stamp.read_text()).get("checkpoint") == source):
            report = convert_tf_checkpoint(path, target, export="discriminator", overwrite=True)
            console.print(f"converted TF checkpoint {report.checkpoint} (step {report.step}) to {target}")
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


# --------------------------------------------------------------------------------------------------
# pretrain (commands registered on pretrain_app)
# --------------------------------------------------------------------------------------------------

# ---- pre-training data commands (build-vocab, build-data) ----


@pretrain_app.command("build-vocab")
def build_vocab(
    output_dir: Annotated[
        Path, typer.Option("--output-dir", help="Where vocab.txt and the HF tokenizer files go.")
    ],
    corpus_dir: Annotated[
        Path | None,
        typer.Option(
            "--corpus-dir", help="Corpus to train on: text files, PubMed .xml/.xml.gz, .jsonl (recursively)."
        ),
    ] = None,
    vocab_file: Annotated[
        Path | None,
        typer.Option(
            "--vocab-file",
            help="Use this existing vocab.txt instead of training (writes the HF files for it).",
        ),
    ] = None,
    vocab_size: Annotated[
        int,
        typer.Option("--vocab-size", min=6, help="Entries, special tokens included (BERT/ELECTRA: 30522)."),
    ] = 30522,
    do_lower_case: Annotated[
        bool,
        typer.Option(
            "--do-lower-case/--no-lower-case", help="Lower-case the text (Bio-ELECTRA: --no-lower-case)."
        ),
    ] = True,
    strip_accents: Annotated[
        bool,
        typer.Option(
            "--do-strip-accents/--no-strip-accents",
            help="Strip accents (only applies when lower-casing, as in the original).",
        ),
    ] = True,
    min_frequency: Annotated[
        int, typer.Option("--min-frequency", min=1, help="Minimum pair frequency for a merge.")
    ] = 2,
    blanks_separate_docs: Annotated[
        bool,
        typer.Option(
            "--blanks-separate-docs/--no-blanks-separate-docs",
            help="Blank lines end documents in text files. The original's '--blanks-separate-docs False' works "
            "too and does what it says (the original's argparse read it as True).",
        ),
    ] = True,
    text_field: Annotated[str, typer.Option("--text-field", help="JSONL field holding the text.")] = "text",
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Train a WordPiece vocabulary ([PAD] [UNK] [CLS] [SEP] [MASK] = ids 0-4); write HF tokenizer files."""
    _setup_logging(verbose)
    import json

    from bioelectra.corpus import CorpusError
    from bioelectra.vocab import save_tokenizer_files, train_wordpiece_vocab

    if (corpus_dir is None) == (vocab_file is None):
        _fail(
            _UserError(
                "give exactly one of --corpus-dir DIR (train a vocabulary) or --vocab-file FILE (reuse one)"
            )
        )
    try:
        if vocab_file is not None:
            out = save_tokenizer_files(
                vocab_file, output_dir, do_lower_case=do_lower_case, strip_accents=strip_accents
            )
            summary = {
                "vocab_file": str(out / "vocab.txt"),
                "source": str(vocab_file),
                "do_lower_case": do_lower_case,
            }
        else:
            summary = train_wordpiece_vocab(
                corpus_dir,
                output_dir,
                vocab_size=vocab_size,
                do_lower_case=do_lower_case,
                strip_accents=strip_accents,
                min_frequency=min_frequency,
                blanks_separate_docs=blanks_separate_docs,
                text_field=text_field,
                progress=sys.stderr.isatty(),
            )
    except (CorpusError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(summary, indent=2))
    console.print(f"[green]tokenizer:[/] {output_dir}")


@pretrain_app.command("build-data")
def build_data(
    corpus_dir: Annotated[
        Path,
        typer.Option(
            "--corpus-dir",
            help="Text files (one sentence per line), PubMed .xml/.xml.gz, .jsonl; recursively.",
        ),
    ],
    output_dir: Annotated[
        Path,
        typer.Option("--output-dir", help="Gets examples/ (Arrow DatasetDict), tokenizer/, build_info.json."),
    ],
    vocab_file: Annotated[
        Path | None,
        typer.Option("--vocab-file", help="WordPiece vocab.txt (default: Bio-ELECTRA's shipped vocabulary)."),
    ] = None,
    max_seq_length: Annotated[
        int, typer.Option("--max-seq-length", min=5, help="Tokens per example, [CLS]/[SEP] included.")
    ] = 128,
    num_processes: Annotated[
        int, typer.Option("--num-processes", min=1, help="Tokenizing/packing worker processes.")
    ] = 1,
    blanks_separate_docs: Annotated[
        bool,
        typer.Option(
            "--blanks-separate-docs/--no-blanks-separate-docs",
            help="Blank lines end documents in text files. The original's '--blanks-separate-docs False' works "
            "too and does what it says (the original's argparse read it as True).",
        ),
    ] = True,
    do_lower_case: Annotated[
        bool,
        typer.Option(
            "--do-lower-case/--no-lower-case",
            help="Lower-case (original default); Bio-ELECTRA used --no-lower-case.",
        ),
    ] = True,
    strip_accents: Annotated[
        bool,
        typer.Option(
            "--do-strip-accents/--no-strip-accents", help="Strip accents (only applies when lower-casing)."
        ),
    ] = True,
    seed: Annotated[
        int, typer.Option(help="Seed of the packing randomness and of the validation split.")
    ] = 42,
    eval_fraction: Annotated[
        float,
        typer.Option(
            "--eval-fraction",
            min=0.0,
            max=0.99,
            help="Fraction of documents held out as validation (>= 1 doc).",
        ),
    ] = 0.01,
    text_field: Annotated[str, typer.Option("--text-field", help="JSONL field holding the text.")] = "text",
    drop_overflow: Annotated[
        bool,
        typer.Option(
            "--drop-overflow",
            help="Drop tokens cut off an example, as the original does (default: carry them forward).",
        ),
    ] = False,
    examples_per_shard: Annotated[
        int, typer.Option("--examples-per-shard", min=1, help="Examples per Arrow shard.")
    ] = 500_000,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail on files no reader handles instead of skipping them.")
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty --output-dir.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Tokenize and pack a corpus into ELECTRA pre-training examples (as build_pretraining_dataset.py)."""
    _setup_logging(verbose)
    import json

    from bioelectra.corpus import CorpusError
    from bioelectra.data import BuildDataSettings, build_pretraining_data
    from bioelectra.presets import bio_electra_vocab_file

    settings = BuildDataSettings(
        corpus_dir=corpus_dir,
        vocab_file=vocab_file or bio_electra_vocab_file(),
        output_dir=output_dir,
        max_seq_length=max_seq_length,
        num_processes=num_processes,
        blanks_separate_docs=blanks_separate_docs,
        do_lower_case=do_lower_case,
        strip_accents=strip_accents,
        seed=seed,
        eval_fraction=eval_fraction,
        text_field=text_field,
        carry_overflow=not drop_overflow,
        examples_per_shard=examples_per_shard,
        on_unknown="error" if strict else "skip",
        overwrite=overwrite,
        progress=sys.stderr.isatty(),
    )
    try:
        info = build_pretraining_data(settings)
    except (CorpusError, FileNotFoundError, FileExistsError, ValueError, OSError) as exc:
        _fail(exc)
        return
    counts = info["counts"]
    summary = {
        "documents": counts["documents"],
        "validation_documents": counts["validation_documents"],
        "sentences": counts["sentences"],
        "examples": counts["examples"],
        "tokens": counts["tokens"],
        "tokens_lost": counts["tokens_lost"],
        "skipped_files": counts["skipped_files"],
        "tokens_per_second": round(info["tokens_per_second"]),
        "elapsed_seconds": round(info["elapsed_seconds"], 2),
    }
    print(json.dumps(summary, indent=2))
    if counts["skipped_files"]:
        console.print(
            f"[yellow]skipped {counts['skipped_files']} files with no reader[/], "
            f"e.g. {counts['skipped_examples'][:3]}"
        )
    console.print(f"[green]pre-training data:[/] {output_dir}")


# ---- end pre-training data commands ----

# ---- pre-training model commands (train, eval, export) ----


class ModelSize(StrEnum):
    """Original ELECTRA sizes (``bioelectra.presets.ELECTRA_SIZES``); used by pretrain and convert."""

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
        ModelSize | None,
        typer.Option(
            "--model-size", "--model_size", help="Original ELECTRA size (default: the hparams' model_size, else small)."
        ),
    ] = None,
    hparams: Annotated[
        str | None,
        typer.Option(
            help="JSON object or .json file of hparam overrides: bioelectra.training.PretrainingHparams fields "
            "or the original configure_pretraining.py names (TensorFlow/TPU ones are ignored, unknown keys "
            "are an error)."
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
        overrides = parse_hparams_arg(hparams)
        size = model_size.value if model_size is not None else str(overrides.get("model_size", "small"))
        summary = run_pretraining(
            data_dir=data_dir, output_dir=out, model_size=size, hparams=overrides, init_from=init_from
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
    """The original pre-training metrics of a checkpoint on the held-out (validation) examples, and each
    network's normalised attention entropy (1.0 = uniform, as at initialisation), as JSON."""
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


class ExportDtype(StrEnum):
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"


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
    dtype: Annotated[
        ExportDtype, typer.Option(help="Storage dtype of the weights (float16/bfloat16 halve the files; finetune loads them as float32).")
    ] = ExportDtype.float32,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Export HF checkpoints: discriminator/ (ElectraForPreTraining) and generator/ (ElectraForMaskedLM)."""
    _setup_logging(verbose)
    import json

    from bioelectra.training import export_checkpoint

    try:
        paths = export_checkpoint(
            model_dir=model_dir, output_dir=output_dir, checkpoint=checkpoint, dtype=dtype.value
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(paths, indent=2))
    console.print(f"[green]fine-tune with:[/] --ckpt {paths['discriminator']}")


# ---- end pre-training model commands ----


# --------------------------------------------------------------------------------------------------
# convert
# --------------------------------------------------------------------------------------------------


class Export(StrEnum):
    discriminator = "discriminator"
    generator = "generator"
    both = "both"


@app.command("convert")
def convert(
    tf_checkpoint_arg: Annotated[
        Path | None,
        typer.Argument(
            metavar="TF_CHECKPOINT",
            help="Directory with the original checkpoint (checkpoint file and/or model.ckpt-N.index + "
            ".data-*), vocab.txt and optionally config.json / hparams.json.",
            show_default=False,
        ),
    ] = None,
    tf_checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--tf-checkpoint",
            "--tf_checkpoint",
            "--tf_checkpoint_path",
            help="Same as the positional argument (--tf_checkpoint_path: transformers' old converter).",
        ),
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            "--output_dir",
            "-o",
            help="Where the transformers checkpoint goes (default <TF_CHECKPOINT>-hf).",
        ),
    ] = None,
    export: Annotated[
        Export,
        typer.Option(
            help="discriminator (ElectraForPreTraining), generator (ElectraForMaskedLM), "
            "or both (two subdirectories)."
        ),
    ] = Export.discriminator,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "--config_file",
            "--electra_config_file",
            help="Bio-ELECTRA-style or transformers config.json (default: config.json in the checkpoint dir; "
            "--config_file / --electra_config_file: the old converters' names).",
        ),
    ] = None,
    hparams: Annotated[
        str | None,
        typer.Option(
            help="The original run_pretraining.py --hparams: a JSON file or inline JSON "
            "(default: hparams.json in the checkpoint directory)."
        ),
    ] = None,
    vocab_file: Annotated[
        Path | None,
        typer.Option("--vocab-file", help="WordPiece vocabulary (default: vocab.txt in the checkpoint dir)."),
    ] = None,
    model_size: Annotated[
        ModelSize | None,
        typer.Option("--model-size", help="Original model size, checked against the tensors."),
    ] = None,
    num_attention_heads: Annotated[
        int | None,
        typer.Option(
            "--num-attention-heads",
            min=1,
            help="Discriminator heads (default: config/hparams, else hidden_size // 64 as the original).",
        ),
    ] = None,
    do_lower_case: Annotated[
        bool | None,
        typer.Option(
            "--do-lower-case/--no-lower-case",
            help="Tokenizer casing (default: hparams/config, else inferred from vocab.txt).",
            show_default=False,
        ),
    ] = None,
    pytorch_dump_path: Annotated[
        Path | None,
        typer.Option(
            "--pytorch_dump_path",
            help="transformers' old converter: the output. A file name (pytorch_model.bin) writes the "
            "save_pretrained directory beside it (pytorch_model/), as --output-dir.",
        ),
    ] = None,
    discriminator_or_generator: Annotated[
        Export | None,
        typer.Option("--discriminator_or_generator", help="transformers' old converter: the same as --export."),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output dir.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Convert an original TensorFlow ELECTRA / Bio-ELECTRA checkpoint to transformers (no TensorFlow)."""
    _setup_logging(verbose)
    from bioelectra.tf_checkpoint import TFCheckpointError, convert_tf_checkpoint

    if pytorch_dump_path is not None:
        if output_dir is not None and output_dir != pytorch_dump_path:
            _fail(_UserError("give the output once: --output-dir or --pytorch_dump_path"))
        output_dir = dump_path_directory(pytorch_dump_path)
        if output_dir != pytorch_dump_path:
            console.print(
                f"[yellow]note:[/] --pytorch_dump_path {pytorch_dump_path} names a file; the save_pretrained "
                f"directory is written beside it: {output_dir}"
            )
    if discriminator_or_generator is not None:
        export = discriminator_or_generator

    if tf_checkpoint_arg is not None and tf_checkpoint is not None and tf_checkpoint_arg != tf_checkpoint:
        _fail(_UserError("give the checkpoint directory once: as TF_CHECKPOINT or as --tf-checkpoint"))
    source = tf_checkpoint_arg or tf_checkpoint
    if source is None:
        _fail(_UserError("missing the checkpoint directory: TF_CHECKPOINT or --tf-checkpoint DIR"))
        return
    out = output_dir or source.with_name(f"{source.name}-hf")
    try:
        report = convert_tf_checkpoint(
            source,
            out,
            export=export.value,
            config=config,
            hparams=hparams,
            vocab_file=vocab_file,
            model_size=model_size.value if model_size is not None else None,
            num_attention_heads=num_attention_heads,
            do_lower_case=do_lower_case,
            overwrite=overwrite,
        )
    except (TFCheckpointError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(_format_conversion_report(report))
    if report.vocab_note:
        console.print(f"[bold yellow]note:[/] {report.vocab_note}")


#: File endings of a single weights file (what transformers' old converter wrote to --pytorch_dump_path).
_WEIGHT_FILE_SUFFIXES = (".bin", ".pt", ".pth", ".safetensors", ".ckpt")


def dump_path_directory(path: Path) -> Path:
    """The output directory for an old-style ``--pytorch_dump_path``: the path itself, or, when it names a
    weights file (``.../pytorch_model.bin``), a directory of its stem beside it (``.../pytorch_model``)."""
    if path.suffix in _WEIGHT_FILE_SUFFIXES and not path.is_dir():
        return path.with_suffix("")
    return path


def _format_conversion_report(report) -> str:
    lines = [f"checkpoint: {report.checkpoint} (step {report.step})"]
    for part, mapped in report.mapped.items():
        z = getattr(report, part)
        lines.append(
            f"{part}: {mapped} variables mapped -> {report.outputs[part]}  (hidden {z['hidden_size']}, "
            f"layers {z['num_hidden_layers']}, heads {z['num_attention_heads']}, "
            f"embedding {z['embedding_size']}, ffn {z['intermediate_size']}, vocab {z['vocab_size']}, "
            f"positions {z['max_position_embeddings']}, token types {z['type_vocab_size']})"
        )
    lines.append(
        f"ignored: {report.ignored_optimizer_slots} optimizer slots, "
        f"bookkeeping {', '.join(report.ignored_bookkeeping) or 'none'}; "
        f"not exported: {len(report.unused_model_variables)} model variables"
    )
    lines.append(
        f"dtypes read: {report.dtypes}; {report.bytes_read / 1e6:.1f} MB crc-verified; "
        f"do_lower_case={report.do_lower_case} ({report.do_lower_case_source}); {report.seconds:.1f} s"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------------------------------


def _offline_default() -> None:
    # Nothing here needs the hub unless the user names a hub id; fail fast instead of retrying for a minute.
    if os.environ.get("BIOELECTRA_ONLINE") != "1":
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
