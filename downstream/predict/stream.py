"""A predictor streamed over a corpus (``bioelectra predict``): documents read lazily, gathered into chunks,
predicted and rendered in this process or in ``num_workers`` worker processes, and handed back chunk by
chunk in input order (:func:`rendered_chunks`). At most ``2 x num_workers`` chunks are in flight, so memory
does not grow with the corpus.

Workers are CPU processes (``spawn``), each loading the model once and running :func:`worker_threads`
forward passes at once, one torch thread each (:func:`share_cores`), so that workers x threads <= the cores
this process may use; one worker is this process, on all of them. A worker
renders its own output text, so only documents go out and text comes back.
"""

from __future__ import annotations

import gc
import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from downstream.predict.base import chunked
from downstream.predict.formats import Document


@dataclass(frozen=True)
class PredictorSpec:
    """What a worker needs to load the predictor (:func:`downstream.predict.predictor.load_predictor`)."""

    model_dir: str
    device: str = "cpu"
    max_seq_length: int = 512
    batch_size: int = 32
    linker_dir: str | None = None

    def load(self):
        from downstream.predict.predictor import load_predictor

        return load_predictor(self.model_dir, device=self.device, max_seq_length=self.max_seq_length, batch_size=self.batch_size)

    def load_linker(self):
        """The entity linker of ``linker_dir`` (:class:`downstream.linking.predict.EntityLinker`), or None."""
        if self.linker_dir is None:
            return None
        from downstream.linking.predict import EntityLinker

        return EntityLinker(self.linker_dir)


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def worker_threads(num_workers: int, cores: int | None = None) -> int:
    """``torch`` threads per worker: ``cores // num_workers``, at least 1."""
    return max(1, (cores or available_cores()) // max(1, num_workers))


def share_cores(predictor, threads: int, linker=None) -> None:
    """Give a CPU ``predictor`` ``threads`` cores as that many forward passes at once, each on one torch thread
    (``torch.set_num_threads(1)``, :attr:`~downstream.predict.base.Predictor.forward_threads`); on CUDA nothing
    changes. Why: on the 2-core machine one process with two torch threads spent 1.20x the CPU time of two
    processes of one thread each on the same 10,000 abstracts (464.9 against 385.9 CPU seconds,
    ``bench/results/predict-2core-cpu-2026-11-28-before-threads.json``): the model's operations are small for
    two threads to share, and a core idles while the other runs this process's Python (words, windows,
    entities). Two forward passes at once, in threads that release the GIL inside torch's kernels, keep both
    cores on whole matrix products. A dense ``linker``'s encoder (:class:`~downstream.linking.predict.EntityLinker`)
    is given as many threads for its batches of mentions, which would otherwise run on one core."""
    import torch

    if predictor.device.type != "cpu":
        return
    torch.set_num_threads(1)
    predictor.forward_threads = max(1, threads)
    if linker is not None:
        linker.threads = max(1, threads)


def render_chunk(predictor, chunk: list[Document], output_format: str, linker=None) -> list[tuple[str, int]]:
    """``(text, predictions)`` per document of ``chunk``: its output in ``output_format`` and its count
    (entities, or 1 for a classified sentence); with ``linker``, entities are linked first, the whole chunk's
    at once (:meth:`~downstream.linking.predict.EntityLinker.link_many`)."""
    predictions = predictor.predict(chunk)
    if linker is not None:
        predictions = linker.link_many(list(predictions))
    return [(predictor.render(p, output_format), predictor.count(p)) for p in predictions]


#: glibc's ``M_MMAP_THRESHOLD`` for a predicting process: blocks of at least this many bytes are mapped when
#: allocated and unmapped when freed (:func:`limit_heap_growth`).
MMAP_THRESHOLD_BYTES = 4 << 20

M_MMAP_THRESHOLD = -3  # mallopt's parameter number in glibc's malloc.h


def limit_heap_growth(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes (``mallopt(M_MMAP_THRESHOLD, threshold)``), so that
    the large tensors of a forward pass go back to the system when freed. Returns False where there is no
    glibc (macOS, Windows, musl: nothing is changed).

    Why: batches sorted by length give each forward pass tensors of another shape. glibc raises its mmap
    threshold to the largest block freed (up to 32 MB) and keeps such blocks in its heap for reuse, so the
    resident memory of ``predict`` crept up with the corpus: 751 MB after 1,000 OHSUMED abstracts, 1,053 MB
    after 10,000 (``bench/results/predict-2core-cpu-2026-11-27-*.json``), and 404 to 1,291 MB over 1,500
    forward passes of random shapes. A fixed threshold also turns glibc's dynamic adjustment off. 4 MB from
    3,000 abstracts, one worker (2-core CPU): peak RSS 913-1,005 MB without a fixed
    threshold, 703 / 698 / 721 / 1,080 MB at 256 KB / 1 MB / 4 MB / 16 MB, at 27% / 22% / 15% / 14% fewer
    documents per second than the faster of the two unfixed runs (mapping and zeroing pages costs time)."""
    import ctypes
    import ctypes.util

    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, int(threshold)))


def freeze_heap() -> bool:
    """Move every object alive now (the modules, the model, a linker) out of the cyclic garbage collector's
    sight (``gc.freeze()``) when nothing froze the heap before; returns whether it did (then ``gc.unfreeze()``
    when done).

    Why: predicting allocates a stream of objects, each of Python's full collections then walked the 388,000
    objects alive once a model and a dense linker are loaded (0.37 s a collection), and a linker's work adds
    collections. Over 2,000 OHSUMED abstracts (2-core AMD EPYC, one worker, ``gc.callbacks`` timing every
    collection of the run, imports included), the collector took 1.34-1.74 s without a linker and 2.54-2.63 s
    with NCBI-disease's dense linker; frozen after loading, 0.85-0.96 s and 1.03-1.12 s. Objects made while
    predicting are collected as before."""
    if gc.get_freeze_count():
        return False
    gc.freeze()
    return True


_WORKER_PREDICTOR = None
_WORKER_LINKER = None


def _start_worker(spec: PredictorSpec, threads: int) -> None:
    limit_heap_growth()
    global _WORKER_PREDICTOR, _WORKER_LINKER
    _WORKER_PREDICTOR = spec.load()
    _WORKER_LINKER = spec.load_linker()
    share_cores(_WORKER_PREDICTOR, threads, _WORKER_LINKER)
    freeze_heap()  # for the worker's life


def _work(chunk: list[Document], output_format: str) -> list[tuple[str, int]]:
    return render_chunk(_WORKER_PREDICTOR, chunk, output_format, _WORKER_LINKER)


def rendered_chunks(
    spec: PredictorSpec,
    documents: Iterable[Document],
    *,
    output_format: str,
    num_workers: int = 1,
    chunk_documents: int = 256,
    predictor=None,
    linker=None,
) -> Iterator[tuple[list[Document], list[tuple[str, int]]]]:
    """``(chunk, [(text, count), ...])`` for consecutive chunks of ``documents``, in input order.

    Args:
        spec: how to load the model (in each worker).
        documents: read lazily; consumed only as chunks are handed out.
        output_format: the format each prediction is rendered in (:mod:`downstream.predict.writers`).
        num_workers: 1 predicts in this process (with ``predictor`` if given, else ``spec.load()``); more
            starts that many worker processes.
        chunk_documents: documents per chunk (the unit of work, of writing and of resuming).
        linker: in this process, the entity linker (else ``spec.load_linker()``); workers load their own.
    """
    limit_heap_growth()  # this process's (the predictor, or the workers' results and the documents)
    if num_workers <= 1:
        import torch

        predictor = predictor if predictor is not None else spec.load()
        linker = linker if linker is not None else spec.load_linker()
        threads, forward_threads = torch.get_num_threads(), predictor.forward_threads
        linker_threads = linker.threads if linker is not None else None
        share_cores(predictor, worker_threads(1), linker)
        frozen = freeze_heap()
        try:
            for chunk in chunked(documents, chunk_documents):
                yield chunk, render_chunk(predictor, chunk, output_format, linker)
        finally:  # the caller's torch threads and collector, for whatever it runs next
            if frozen:
                gc.unfreeze()
            torch.set_num_threads(threads)
            predictor.forward_threads = forward_threads
            if linker is not None:
                linker.threads = linker_threads
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=num_workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(spec, worker_threads(num_workers)))  # fmt: skip
    pending: deque = deque()
    try:
        for chunk in chunked(documents, chunk_documents):
            pending.append((chunk, pool.submit(_work, chunk, output_format)))
            if len(pending) >= 2 * num_workers:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
