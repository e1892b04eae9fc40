"""``bioelectra predict``: a saved fine-tuned model on raw text (entities with offsets, relation labels)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from bioelectra.cli.common import _fail, _setup_logging, app, console, predicting_progress


class InputFormat(StrEnum):
    auto = "auto"
    text = "text"
    jsonl = "jsonl"
    pubmed_xml = "pubmed-xml"
    tsv = "tsv"


class OutputFormat(StrEnum):
    jsonl = "jsonl"
    conll = "conll"
    brat = "brat"
    pubtator = "pubtator"
    bioc = "bioc"


class Device(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


@app.command("predict")
def predict(
    model: Annotated[Path, typer.Option(help="A fine-tuned save_pretrained folder, e.g. a trial's model/ (NER: token classification; RE: sequence classification).")],
    files: Annotated[list[str] | None, typer.Argument(show_default=False, help="Input files (.gz accepted); - or none reads standard input.")] = None,
    input_format: Annotated[InputFormat, typer.Option("--input-format", help="auto: by extension (.jsonl, .xml PubMed, .tsv relation TSV, else text).")] = InputFormat.auto,
    text_field: Annotated[str, typer.Option("--text-field", help="JSONL: the field with the text.")] = "text",
    id_field: Annotated[str, typer.Option("--id-field", help="JSONL: the field with the document id (records without one: <file>:<line>).")] = "id",
    document_per_file: Annotated[bool, typer.Option("--document-per-file", help="Plain text: each file is one document (default: one per line).")] = False,
    output_format: Annotated[OutputFormat, typer.Option("--format", help="jsonl (one entity, or one RE sentence, per line); NER also: conll (word<TAB>tag), brat (.txt + .ann per document), pubtator (PMID|t|, PMID|a|, one tab-separated line per entity), bioc (BioC XML).")] = OutputFormat.jsonl,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Output file or folder (brat) [default: standard output]; never one of the inputs. Written as it goes; a killed run started again with the same command resumes after the last document written.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --output file, and discard a partial run of another command there (a partial run of this command still resumes).")] = False,
    max_seq_length: Annotated[int, typer.Option("--max-seq-length", "--max_seq_length", min=8, help="Sub-tokens per model input, capped by the model's positions; longer sentences are windowed.")] = 512,
    batch_size: Annotated[int, typer.Option("--batch-size", "--batch_size", min=1, help="Model inputs per forward pass (fewer for inputs over 128 sub-tokens: at most batch-size x 128 sub-tokens).")] = 32,
    device: Annotated[Device, typer.Option(help="auto: CUDA when available (weights in bfloat16 there).")] = Device.auto,
    linker: Annotated[Path | None, typer.Option(help="A saved entity linker (a linking trial's linker/ folder, finetune --loader linking): entities of its type get a concept id and name with the score (jsonl fields, PubTator's sixth column, BioC's identifier infon).")] = None,
    num_workers: Annotated[int, typer.Option("--num-workers", min=1, help="CPU worker processes, each running cores/N forward passes at once (one torch thread each); 1 predicts in this process; at most the cores this process may use.")] = 1,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Predict with a saved fine-tuned model on raw text: entities with character offsets (NER) or a
    relation label with probabilities per sentence (RE)."""
    _setup_logging(verbose)
    from transformers.utils import logging as hf_logging

    from downstream.errors import DownstreamError
    from downstream.predict.files import predict_files

    hf_logging.disable_progress_bar()  # the weight loading bar: the documents' bar is enough

    progress, task = predicting_progress("documents")
    try:
        with progress:
            summary = predict_files(
                model, files or [], output_format=output_format.value, output=output, stdout=sys.stdout,
                input_format=input_format.value, text_field=text_field, id_field=id_field,
                document_per_file=document_per_file, max_seq_length=max_seq_length, batch_size=batch_size,
                device=device.value, num_workers=num_workers, progress=lambda n: progress.advance(task, n),
                overwrite=overwrite, linker_dir=linker,
            )  # fmt: skip
    except (DownstreamError, ValueError, OSError) as exc:
        _fail(exc)
        return
    if summary.skipped:
        console.print(f"resumed: skipped the {summary.skipped} documents a killed run of this command had written")
    console.print(f"[green]{summary.documents} documents, {summary.predictions} {summary.predictions_name}:[/] {summary.output}")
    if summary.empty_articles:
        n = summary.empty_articles
        console.print(f"{n} PubMed article{'' if n == 1 else 's'} without title or abstract: no text to predict on, skipped")
