"""The ``predict`` command's one library call: a saved model over input files, the predictions written in
the chosen format as they are ready, resumable after a kill (:func:`predict_files`)."""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bioelectra.corpus import CorpusStats
from downstream.errors import DataFormatError, DownstreamError
from downstream.predict.formats import STDIN, read_documents
from downstream.predict.output import BratOutput, FileOutput, StreamOutput
from downstream.predict.predictor import PREDICTORS, check_model_dir
from downstream.predict.stream import PredictorSpec, available_cores, rendered_chunks
from downstream.predict.writers import FOOTERS, HEADERS, OUTPUT_FORMATS

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PredictSummary:
    """What :func:`predict_files` did.

    Attributes:
        kind: ``"ner"`` or ``"re"``.
        documents: documents (RE: sentences) predicted by this run.
        predictions: entities found (NER) or sentences classified (RE) by this run.
        output: where the predictions went (a file, a folder, or ``"stdout"``).
        skipped: documents a killed run of the same command had already written (resumed), 0 otherwise.
        predictions_name: what ``predictions`` counts (``"entities"``, ``"sentences classified"``).
        empty_articles: PubMed articles without title or abstract (no text: no document, skipped).
        num_workers: the worker processes used (``num_workers`` bounded by the cores available).
    """

    kind: str
    documents: int
    predictions: int
    output: str
    skipped: int = 0
    predictions_name: str = "predictions"
    empty_articles: int = 0
    num_workers: int = 1


def run_fingerprint(model_dir: str | Path, sources: Sequence[str | Path], **options) -> dict:
    """What makes two runs the same command for resuming: the model folder and its weights' size and time,
    each input's path, size and modification time, and the options that change the output."""
    def stat(path: Path) -> list:
        try:
            info = path.stat()
        except OSError:
            return [str(path), None, None]
        return [str(path), info.st_size, info.st_mtime_ns]

    model = Path(model_dir).resolve()
    weights = sorted(model.glob("*.safetensors")) or sorted(model.glob("*.bin"))
    inputs = [[STDIN] if str(s) == STDIN else stat(Path(s).resolve()) for s in sources or [STDIN]]
    return {"model": str(model), "weights": [stat(w)[1:] for w in weights], "inputs": inputs, **options}


def check_output_not_input(output: str | Path | None, sources: Sequence[str | Path]) -> None:
    """Refuse an ``output`` that is one of ``sources`` (or resolves to one: a link, another spelling of the
    path): the predictions would replace the text they are made from.

    Raises:
        DownstreamError: ``output`` names an input (both named).
    """
    if output is None:
        return
    target = Path(output)
    for source in sources:
        if str(source) == STDIN:
            continue
        path = Path(source)
        same = target.resolve() == path.resolve()
        if not same and target.exists() and path.exists():
            same = os.path.samefile(target, path)
        if same:
            raise DownstreamError(f"--output {output}: it is an input of this command ({source}); the predictions "
                                  "would replace it: give another --output")  # fmt: skip


def bounded_workers(num_workers: int, cores: int) -> int:
    """``num_workers`` at most ``cores`` (each worker runs at least one forward pass on a core of its own,
    :func:`~downstream.predict.stream.worker_threads`), warning when it was more."""
    if num_workers <= cores:
        return num_workers
    logger.warning("--num-workers %d: this process may use %d CPU core(s); running %d worker(s)", num_workers, cores, cores)
    return cores


def _skip_written(documents, skipped: int, sink, sources: Sequence[str | Path]) -> None:
    """Consume the first ``skipped`` of ``documents``, those a killed run of this command wrote to ``sink``.

    Raises:
        DataFormatError: the inputs have fewer documents than that.
    """
    seen = 0
    for document in itertools.islice(documents, skipped):
        sink.note_skipped(document)
        seen += 1
    if seen < skipped:
        raise DataFormatError(f"{', '.join(map(str, sources)) or STDIN}: {seen} documents, fewer than the {skipped} "
                              "the partial output of this command holds; delete it to start again")  # fmt: skip


def _output_for(output_format: str, output: str | Path | None, stdout: TextIO | None, fingerprint: dict, overwrite: bool):
    header = HEADERS[output_format]() if output_format in HEADERS else ""
    footer = FOOTERS.get(output_format, "")
    if output_format == "brat":
        if output is None:
            raise DownstreamError("--format brat writes a .txt and a .ann file per document: give --output DIR")
        return BratOutput(output, fingerprint=fingerprint, overwrite=overwrite)
    if output is not None:
        return FileOutput(output, header=header, footer=footer, fingerprint=fingerprint, overwrite=overwrite)
    if stdout is None:
        raise DownstreamError(f"--format {output_format}: give --output PATH or a stream to write to")
    return StreamOutput(stdout, header=header, footer=footer)


def _linker_option(linker_dir: str | Path | None, predictor_class, model_dir) -> dict:
    """``--linker``'s part of the run's fingerprint (``{}`` without one).

    Raises:
        DownstreamError: a linker with a model that finds no entities (not NER).
    """
    if linker_dir is None:
        return {}
    if predictor_class.predictions_name != "entities":
        raise DownstreamError(f"--linker links entities: --model {model_dir} is a {predictor_class.description} model, not NER")
    return {"linker": str(Path(linker_dir).resolve())}


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
    num_workers: int = 1,
    chunk_documents: int | None = None,
    progress: Callable[[int], None] | None = None,
    overwrite: bool = False,
    linker_dir: str | Path | None = None,
) -> PredictSummary:
    """Run a saved model over input files and write its predictions as they are ready (``bioelectra predict``).

    A run writing to ``output`` that is killed resumes when started again with the same command: it skips
    the documents already written (:mod:`downstream.predict.output`) and says how many in ``skipped``. An
    ``output`` that is an input is refused before anything is read; an existing ``output`` is replaced only
    with ``overwrite``; a run that fails before writing a document leaves no file behind.

    Args:
        model_dir: the fine-tuned model folder.
        sources: input files, ``"-"`` (or none) for standard input; formats in :mod:`downstream.predict.formats`.
        output_format: one of :data:`~downstream.predict.writers.OUTPUT_FORMATS` (RE: ``jsonl`` only).
        output: a file (written as ``.<name>.partial``, renamed when complete) or a folder (brat); None
            writes to ``stdout``.
        stdout: where output goes when ``output`` is None.
        input_format, text_field, id_field, document_per_file: see :func:`~downstream.predict.formats.read_documents`.
        max_seq_length, batch_size, device: see :func:`~downstream.predict.predictor.load_predictor`.
        num_workers: CPU worker processes (:mod:`downstream.predict.stream`); 1 predicts in this process; more
            than the cores this process may use (:func:`~downstream.predict.stream.available_cores`) runs that
            many, with a warning.
        chunk_documents: documents per chunk (the unit of batching by length, of writing and of resuming);
            default the kind's (``chunk_documents`` / ``chunk_sentences`` of its predictor).
        progress: called with the number of documents finished (skipped ones first), chunk by chunk.
        overwrite: replace an existing ``output`` file and discard a partial run of another command (a
            partial run of this same command is still resumed).
        linker_dir: a saved entity linker that links the entities of its type (:mod:`downstream.linking.predict`).

    Raises:
        DownstreamError: a bad model folder, an output format the model kind cannot write, brat without
            ``output``, PubMed XML or ``document_per_file`` with a RE model, ``num_workers`` < 1 or more than
            one with CUDA, an ``output`` that is an input, an existing ``output`` file or a partial output of
            another command without ``overwrite``, an output folder that cannot be written, a linker with a
            model that is not NER or a folder that is not a saved linker.
        DataFormatError: bad input (see :func:`~downstream.predict.formats.read_documents`).
    """
    if output_format not in OUTPUT_FORMATS:
        raise DownstreamError(f"--format {output_format!r}: expected one of {', '.join(OUTPUT_FORMATS)}")
    if num_workers < 1:
        raise DownstreamError(f"--num-workers {num_workers}: expected at least 1")
    check_output_not_input(output, sources)
    kind = check_model_dir(model_dir, PREDICTORS)
    predictor_class = PREDICTORS[kind]
    predictor_class.check_request(model_dir, output_format=output_format, sources=sources, input_format=input_format,
                                  document_per_file=document_per_file)  # fmt: skip
    fingerprint = run_fingerprint(model_dir, sources, input_format=input_format, text_field=text_field, id_field=id_field,
                                  document_per_file=document_per_file, output_format=output_format,
                                  max_seq_length=max_seq_length, **_linker_option(linker_dir, predictor_class, model_dir))  # fmt: skip
    spec = PredictorSpec(str(model_dir), device=device, max_seq_length=max_seq_length, batch_size=batch_size,
                         linker_dir=None if linker_dir is None else str(linker_dir))  # fmt: skip
    linker = spec.load_linker()  # a bad linker folder fails before any output is started
    sink = _output_for(output_format, output, stdout, fingerprint, overwrite)
    predictor = spec.load()  # in this process too: a bad folder fails here, with its message, before any work
    if num_workers > 1 and predictor.device.type != "cuda":
        num_workers = bounded_workers(num_workers, available_cores())
    if num_workers > 1:
        if predictor.device.type == "cuda":
            raise DownstreamError(f"--num-workers {num_workers}: worker processes are for the CPU; one process drives the GPU")
        predictor = linker = None  # each worker loads its own: this process's copies were only the checks
    chunk = chunk_documents or getattr(predictor_class, "chunk_documents", None) or getattr(predictor_class, "chunk_sentences", 256)
    skipped = sink.start()
    counts = {"documents": 0, "predictions": 0}
    stats = CorpusStats()
    try:
        documents = read_documents(sources, input_format=input_format, text_field=text_field, id_field=id_field,
                                   document_per_file=document_per_file, stats=stats)  # fmt: skip
        _skip_written(documents, skipped, sink, sources)
        if progress is not None and skipped:
            progress(skipped)
        for done, rendered in rendered_chunks(spec, documents, output_format=output_format, num_workers=num_workers,
                                              chunk_documents=chunk, predictor=predictor, linker=linker):  # fmt: skip
            sink.write(done, [text for text, _ in rendered])
            counts["documents"] += len(done)
            counts["predictions"] += sum(n for _, n in rendered)
            if progress is not None:
                progress(len(done))
        sink.finish()
    finally:
        sink.close()
    where = "stdout" if output is None else str(output)
    return PredictSummary(kind, counts["documents"], counts["predictions"], where, skipped, predictor_class.predictions_name,
                          stats.empty_records, num_workers)  # fmt: skip

