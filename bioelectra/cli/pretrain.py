"""``bioelectra pretrain``: build-vocab, build-data, train, eval, export (also ``python pretrain.py``)."""

from __future__ import annotations

import logging
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from bioelectra.checkpoints import DEFAULT_CKPT
from bioelectra.cli.common import _fail, _setup_logging, _UserError, console, pretrain_app

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
        list[str] | None,
        typer.Option(
            help="JSON object or .json file of hparam overrides: bioelectra.training.PretrainingHparams fields "
            "or the original configure_pretraining.py names (TensorFlow/TPU ones are ignored, unknown keys "
            "are an error). Repeatable: merged in order, a later key wins (--hparams recipe.json --hparams "
            "'{\"max_steps\": 100}')."
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
    report_to: Annotated[
        str | None,
        typer.Option(
            "--report-to",
            "--report_to",
            show_default=False,
            help="Run logs (hparam report_to): tensorboard (event files in <output-dir>/tensorboard: losses, learning "
            "rate, generator / discriminator metrics; needs bioelectra[logging]), all, none or other Trainer "
            "integrations installed, comma-separated. [default: none]",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Pre-train ELECTRA (replaced token detection); a re-run resumes from the last checkpoint."""
    _setup_logging(verbose)
    logging.getLogger("transformers.trainer").setLevel(logging.INFO)
    import json

    from bioelectra.pretraining.trainer import close_process_group
    from bioelectra.training import parse_hparams_arg, run_pretraining

    out = output_dir or data_dir / "models" / model_name
    try:
        overrides = parse_hparams_arg(hparams)
        if report_to is not None:
            overrides["report_to"] = report_to
        size = model_size.value if model_size is not None else str(overrides.get("model_size", "small"))
        summary = run_pretraining(
            data_dir=data_dir, output_dir=out, model_size=size, hparams=overrides, init_from=init_from
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(summary, indent=2))
    close_process_group()


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
        list[str] | None,
        typer.Option(help="JSON overrides, e.g. '{\"num_eval_steps\": 10}'; repeatable, a later key wins."),
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

# ---- replaced-token demo and pre-training plots (demo, plot) ----


class DemoReplacement(StrEnum):
    auto = "auto"
    generator = "generator"
    random = "random"


@pretrain_app.command("demo")
def pretrain_demo(
    texts: Annotated[list[str], typer.Argument(show_default=False, help="One or more sentences (quote each).")],
    model: Annotated[
        str,
        typer.Option(
            help="A discriminator folder (e.g. an export's discriminator/), a shipped model name, an export folder "
            "(discriminator/ + generator/), a `pretrain train` output folder (its last checkpoint) or a checkpoint-N.",
        ),
    ] = DEFAULT_CKPT,
    replace_prob: Annotated[
        float, typer.Option("--replace-prob", help="Fraction of the non-special tokens the demo replaces, in (0, 1].")
    ] = 0.15,
    seed: Annotated[int, typer.Option(help="Seed of the replaced positions and the sampled tokens.")] = 42,
    replacement: Annotated[
        DemoReplacement,
        typer.Option(help="auto: sample from the generator when the model has one, else random vocabulary tokens."),
    ] = DemoReplacement.auto,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print JSON (tokens, probabilities, replaced flags, summaries) instead.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Replaced token detection on your text: the discriminator's probability that each token was replaced,
    on the text as given and after the demo replaced some tokens (with the generator when there is one)."""
    _setup_logging(verbose)
    from rich.console import Console
    from transformers.utils import logging as hf_logging

    from bioelectra.pretraining.demo import replaced_token_demo

    hf_logging.disable_progress_bar()
    try:
        result = replaced_token_demo(
            model, texts, replace_prob=replace_prob, seed=seed, replacement=replacement.value
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    if json_output:
        print(result.to_json())
        return
    _print_demo(result, Console(highlight=False, soft_wrap=True))


def _print_demo(result, out) -> None:
    """The demo as aligned token columns (seed 002's layout), wrapped to the terminal; tokens and
    probabilities above 0.5 in red and marked ``*`` (the mark stays in plain text)."""
    from rich.text import Text

    kind = "discriminator + generator" if result.has_generator else "discriminator only"
    out.print(f"model: {result.model} ({kind})")
    out.print("P = sigmoid(discriminator logit), the probability that a token was replaced; * = above 0.5")
    if result.replacement == "generator":
        how = "tokens sampled by the generator at [MASK] (temperature 1)"
    elif result.has_generator:
        how = "random vocabulary tokens (--replacement random)"
    else:
        how = "random vocabulary tokens: this model has no generator (an export folder or a pretrain train folder has one)"
    out.print(f"replacements: {how}; {result.replace_prob:g} of the non-special tokens, seed {result.seed}")

    def block(rows: list[tuple[str, list[str], list[str | None]]]) -> None:
        label_width = 2 + max(len(label) for label, _, _ in rows) + 2
        widths = [max(len(cells[i]) for _, cells, _ in rows) + 2 for i in range(len(rows[0][1]))]
        start = 0
        while start < len(widths):
            end, used = start, label_width
            while end < len(widths) and (end == start or used + widths[end] <= max(out.width, 40)):
                used += widths[end]
                end += 1
            for label, cells, styles in rows:
                line = Text(f"  {label}".ljust(label_width))
                for i in range(start, end):
                    line.append(cells[i].ljust(widths[i]), style=styles[i])
                line.rstrip()
                out.print(line)
            start = end

    for number, sentence in enumerate(result.sentences, 1):
        given, corrupted = sentence.as_given, sentence.corrupted
        out.print()
        out.print(Text(f"Sentence {number}: {sentence.text}", style="bold"))
        if given.truncated:
            out.print(f"  (cut to the model's {len(given.tokens)} positions)")
        hot = ["bold red" if p else None for p in given.predicted_replaced]
        out.print("  as given:")
        block([
            ("token", given.tokens, hot),
            ("P", [f"{p:.2f}" + ("*" if f else "") for p, f in zip(given.probabilities, given.predicted_replaced, strict=True)], hot),
        ])  # fmt: skip
        s = given.summary()
        out.print(f"  {s.num_false_alarms} of {s.num_tokens} tokens above {s.threshold:g}")
        s = corrupted.summary()
        out.print(f"  with {s.num_replaced} of {s.num_tokens} tokens replaced:")
        flagged = corrupted.predicted_replaced
        originals = [
            orig if repl else ("=" if chosen else "")
            for orig, repl, chosen in zip(corrupted.original_tokens, corrupted.is_replaced, corrupted.chosen, strict=True)
        ]
        block([
            ("token", corrupted.tokens, ["bold red" if f else ("yellow" if r else None) for f, r in zip(flagged, corrupted.is_replaced, strict=True)]),
            ("original", originals, ["dim"] * len(originals)),
            ("P", [f"{p:.2f}" + ("*" if f else "") for p, f in zip(corrupted.probabilities, flagged, strict=True)], ["bold red" if f else None for f in flagged]),
        ])  # fmt: skip
        if any(c and not r for c, r in zip(corrupted.chosen, corrupted.is_replaced, strict=True)):
            out.print("  (= picked, but the sample is the original token: not a replacement, as ELECTRA labels it)")
        auc = "n/a" if s.auc is None else f"{s.auc:.2f}"
        out.print(
            f"  found {s.num_found} of {s.num_replaced} replaced tokens at {s.threshold:g}, {s.num_false_alarms} false "
            f"alarm(s); accuracy {s.accuracy:.2f}, AUC {auc} over the {s.num_tokens} non-special tokens"
        )


@pretrain_app.command("plot")
def pretrain_plot(
    run_dir: Annotated[Path, typer.Argument(help="A `pretrain train` output folder (or one of its checkpoint-N).")],
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """PNG plots of a pre-training run into RUN_DIR/plots/: the losses (total, generator MLM, discriminator),
    the held-out masked-LM accuracy and disc_auc over steps."""
    _setup_logging(verbose)
    from bioelectra.plotting import pyplot
    from bioelectra.pretraining.plots import plot_pretraining_run

    if pyplot() is None:
        _fail(_UserError('matplotlib is not installed: pip install "bioelectra[plots]"'))
        return
    try:
        written = plot_pretraining_run(run_dir)
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    for path in written:
        print(path)


# ---- end replaced-token demo and pre-training plots ----
