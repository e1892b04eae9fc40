"""``bioelectra convert``: original TensorFlow ELECTRA / Bio-ELECTRA checkpoints to transformers
(also ``python convert_tf_checkpoint.py``, with the old transformers converter's flags)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from bioelectra.cli.common import _fail, _setup_logging, _UserError, app, console
from bioelectra.cli.pretrain import ModelSize


class Export(StrEnum):
    discriminator = "discriminator"
    generator = "generator"
    both = "both"


#: The options of ``convert`` (their declarations, so the command's signature stays one line each).
_ConvertTfCheckpointArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="TF_CHECKPOINT",
        help="Directory with the original checkpoint (checkpoint file and/or model.ckpt-N.index + "
        ".data-*), vocab.txt and optionally config.json / hparams.json.",
        show_default=False,
    ),
]
_ConvertTfCheckpoint = Annotated[
    Path | None,
    typer.Option(
        "--tf-checkpoint",
        "--tf_checkpoint",
        "--tf_checkpoint_path",
        help="Same as the positional argument (--tf_checkpoint_path: transformers' old converter).",
    ),
]
_ConvertOutputDir = Annotated[
    Path | None,
    typer.Option(
        "--output-dir",
        "--output_dir",
        "-o",
        help="Where the transformers checkpoint goes (default <TF_CHECKPOINT>-hf).",
    ),
]
_ConvertExport = Annotated[
    Export,
    typer.Option(
        help="discriminator (ElectraForPreTraining), generator (ElectraForMaskedLM), "
        "or both (two subdirectories)."
    ),
]
_ConvertConfig = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "--config_file",
        "--electra_config_file",
        help="Bio-ELECTRA-style or transformers config.json (default: config.json in the checkpoint dir; "
        "--config_file / --electra_config_file: the old converters' names).",
    ),
]
_ConvertHparams = Annotated[
    str | None,
    typer.Option(
        help="The original run_pretraining.py --hparams: a JSON file or inline JSON "
        "(default: hparams.json in the checkpoint directory)."
    ),
]
_ConvertVocabFile = Annotated[
    Path | None,
    typer.Option("--vocab-file", help="WordPiece vocabulary (default: vocab.txt in the checkpoint dir)."),
]
_ConvertModelSize = Annotated[
    ModelSize | None,
    typer.Option("--model-size", help="Original model size, checked against the tensors."),
]
_ConvertNumAttentionHeads = Annotated[
    int | None,
    typer.Option(
        "--num-attention-heads",
        min=1,
        help="Discriminator heads (default: config/hparams, else hidden_size // 64 as the original).",
    ),
]
_ConvertDoLowerCase = Annotated[
    bool | None,
    typer.Option(
        "--do-lower-case/--no-lower-case",
        help="Tokenizer casing (default: hparams/config, else inferred from vocab.txt).",
        show_default=False,
    ),
]
_ConvertPytorchDumpPath = Annotated[
    Path | None,
    typer.Option(
        "--pytorch_dump_path",
        help="transformers' old converter: the output. A file name (pytorch_model.bin) writes the "
        "save_pretrained directory beside it (pytorch_model/), as --output-dir.",
    ),
]
_ConvertDiscriminatorOrGenerator = Annotated[
    Export | None,
    typer.Option("--discriminator_or_generator", help="transformers' old converter: the same as --export."),
]
_ConvertOverwrite = Annotated[bool, typer.Option("--overwrite", help="Replace an existing output dir.")]
_ConvertVerbose = Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")]


@app.command("convert")
def convert(
    tf_checkpoint_arg: _ConvertTfCheckpointArg = None,
    tf_checkpoint: _ConvertTfCheckpoint = None,
    output_dir: _ConvertOutputDir = None,
    export: _ConvertExport = Export.discriminator,
    config: _ConvertConfig = None,
    hparams: _ConvertHparams = None,
    vocab_file: _ConvertVocabFile = None,
    model_size: _ConvertModelSize = None,
    num_attention_heads: _ConvertNumAttentionHeads = None,
    do_lower_case: _ConvertDoLowerCase = None,
    pytorch_dump_path: _ConvertPytorchDumpPath = None,
    discriminator_or_generator: _ConvertDiscriminatorOrGenerator = None,
    overwrite: _ConvertOverwrite = False,
    verbose: _ConvertVerbose = False,
) -> None:
    """Convert an original TensorFlow ELECTRA / Bio-ELECTRA checkpoint to transformers (no TensorFlow)."""
    _setup_logging(verbose)
    from bioelectra.tf import TFCheckpointError, convert_tf_checkpoint

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
