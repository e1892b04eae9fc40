"""The ``predict`` command's one library call: a saved model over input files, the predictions written in
the chosen format (:func:`predict_files`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bioelectra.textio import atomic_open
from downstream.errors import DownstreamError
from downstream.predict.formats import (
    OUTPUT_FORMATS,
    read_documents,
    write_brat,
)
from downstream.predict.predictor import PREDICTORS, check_model_dir, load_predictor


@dataclass(frozen=True)
class PredictSummary:
    """What :func:`predict_files` did.

    Attributes:
        kind: ``"ner"`` or ``"re"``.
        documents: documents (RE: sentences) read.
        predictions: entities found (NER) or sentences classified (RE).
        output: where the predictions went (a file, a folder, or ``"stdout"``).
    """

    kind: str
    documents: int
    predictions: int
    output: str


def predict_files(
    model_dir: str | Path,
    sources: Sequence[str | Path],
    *,
    output_format: str = "jsonl",
    output: str | Path | None = None,
    stdout: TextIO | None = None,
    input_format: str = "auto",
    text_field: str = "text",
    id_field: str = "id",
    document_per_file: bool = False,
    max_seq_length: int = 512,
    batch_size: int = 32,
    device: str = "auto",
    progress: Callable[[int], None] | None = None,
) -> PredictSummary:
    """Run a saved model over input files and write its predictions (``bioelectra predict``).

    Args:
        model_dir: the fine-tuned model folder.
        sources: input files, ``"-"`` (or none) for standard input; formats in :mod:`downstream.predict.formats`.
        output_format: ``jsonl`` (NER: one line per entity; RE: one per sentence), ``conll`` or ``brat`` (NER).
        output: a file (jsonl, conll; written atomically) or a folder (brat); None writes to ``stdout``.
        stdout: where output goes when ``output`` is None.
        input_format, text_field, id_field, document_per_file: see :func:`~downstream.predict.formats.read_documents`.
        max_seq_length, batch_size, device: see :func:`load_predictor`.
        progress: called with the number of documents finished, chunk by chunk.

    Raises:
        DownstreamError: a bad model folder, an output format the model kind cannot write (conll or brat with
            a RE model), brat without ``output``, PubMed XML or ``document_per_file`` with a RE model.
        DataFormatError: bad input (see :func:`~downstream.predict.formats.read_documents`).
    """
    if output_format not in OUTPUT_FORMATS:
        raise DownstreamError(f"--format {output_format!r}: expected one of {', '.join(OUTPUT_FORMATS)}")
    kind = check_model_dir(model_dir)
    PREDICTORS[kind].check_request(model_dir, output_format=output_format, sources=sources, input_format=input_format,
                                   document_per_file=document_per_file)  # fmt: skip
    if output_format == "brat" and output is None:
        raise DownstreamError("--format brat writes a .txt and a .ann file per document: give --output DIR")
    if output is None and stdout is None:
        raise DownstreamError(f"--format {output_format}: give --output PATH or a stream to write to")
    predictor = load_predictor(model_dir, device=device, max_seq_length=max_seq_length, batch_size=batch_size)
    documents = read_documents(sources, input_format=input_format, text_field=text_field, id_field=id_field,
                               document_per_file=document_per_file)  # fmt: skip
    counts = {"documents": 0, "predictions": 0}

    def counted(items: Iterable, size: Callable[[object], int]):
        for item in items:
            counts["documents"] += 1
            counts["predictions"] += size(item)
            yield item

    predictions = counted(predictor.predict(documents, progress=progress), predictor.count)
    if output_format == "brat":
        write_brat(output, predictions)  # type: ignore[arg-type]
    else:
        writer = predictor.writer(output_format)
        with atomic_open(output) if output is not None else nullcontext(stdout) as handle:
            writer(handle, predictions)
    return PredictSummary(kind, counts["documents"], counts["predictions"], "stdout" if output is None else str(output))
