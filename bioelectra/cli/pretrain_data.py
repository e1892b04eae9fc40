"""``bioelectra pretrain build-vocab`` and ``build-data``: the pre-training data commands (the vocabulary,
then packed examples), registered on the ``pretrain`` group before its model commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from bioelectra.cli.common import _fail, _setup_logging, _UserError, console, pretrain_app


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


#: The options of ``build_data`` (their declarations, so the command's signature stays one line each).
_BuildDataCorpusDir = Annotated[
    Path,
    typer.Option(
        "--corpus-dir",
        help="Text files (one sentence per line), PubMed .xml/.xml.gz, .jsonl; recursively.",
    ),
]
_BuildDataOutputDir = Annotated[
    Path,
    typer.Option("--output-dir", help="Gets examples/ (Arrow DatasetDict), tokenizer/, build_info.json."),
]
_BuildDataVocabFile = Annotated[
    Path | None,
    typer.Option("--vocab-file", help="WordPiece vocab.txt (default: Bio-ELECTRA's shipped vocabulary)."),
]
_BuildDataMaxSeqLength = Annotated[
    int, typer.Option("--max-seq-length", min=5, help="Tokens per example, [CLS]/[SEP] included.")
]
_BuildDataNumProcesses = Annotated[
    int, typer.Option("--num-processes", min=1, help="Tokenizing/packing worker processes.")
]
_BuildDataBlanksSeparateDocs = Annotated[
    bool,
    typer.Option(
        "--blanks-separate-docs/--no-blanks-separate-docs",
        help="Blank lines end documents in text files. The original's '--blanks-separate-docs False' works "
        "too and does what it says (the original's argparse read it as True).",
    ),
]
_BuildDataDoLowerCase = Annotated[
    bool,
    typer.Option(
        "--do-lower-case/--no-lower-case",
        help="Lower-case (original default); Bio-ELECTRA used --no-lower-case.",
    ),
]
_BuildDataStripAccents = Annotated[
    bool,
    typer.Option(
        "--do-strip-accents/--no-strip-accents", help="Strip accents (only applies when lower-casing)."
    ),
]
_BuildDataSeed = Annotated[
    int, typer.Option(help="Seed of the packing randomness and of the validation split.")
]
_BuildDataEvalFraction = Annotated[
    float,
    typer.Option(
        "--eval-fraction",
        min=0.0,
        max=0.99,
        help="Fraction of documents held out as validation (>= 1 doc).",
    ),
]
_BuildDataTextField = Annotated[str, typer.Option("--text-field", help="JSONL field holding the text.")]
_BuildDataDropOverflow = Annotated[
    bool,
    typer.Option(
        "--drop-overflow",
        help="Drop tokens cut off an example, as the original does (default: carry them forward).",
    ),
]
_BuildDataExamplesPerShard = Annotated[
    int, typer.Option("--examples-per-shard", min=1, help="Examples per Arrow shard.")
]
_BuildDataStrict = Annotated[
    bool, typer.Option("--strict", help="Fail on files no reader handles instead of skipping them.")
]
_BuildDataOverwrite = Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty --output-dir.")]
_BuildDataVerbose = Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")]


@pretrain_app.command("build-data")
def build_data(
    corpus_dir: _BuildDataCorpusDir,
    output_dir: _BuildDataOutputDir,
    vocab_file: _BuildDataVocabFile = None,
    max_seq_length: _BuildDataMaxSeqLength = 128,
    num_processes: _BuildDataNumProcesses = 1,
    blanks_separate_docs: _BuildDataBlanksSeparateDocs = True,
    do_lower_case: _BuildDataDoLowerCase = True,
    strip_accents: _BuildDataStripAccents = True,
    seed: _BuildDataSeed = 42,
    eval_fraction: _BuildDataEvalFraction = 0.01,
    text_field: _BuildDataTextField = "text",
    drop_overflow: _BuildDataDropOverflow = False,
    examples_per_shard: _BuildDataExamplesPerShard = 500_000,
    strict: _BuildDataStrict = False,
    overwrite: _BuildDataOverwrite = False,
    verbose: _BuildDataVerbose = False,
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
