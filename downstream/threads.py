"""Work spread over Python threads, for work that lets go of the GIL (torch's kernels): one definition for
``predict``'s forward passes and a dense linker's batches of mentions."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence


def map_on_threads(function: Callable, items: Sequence, threads: int, pool: tuple | None, name: str) -> tuple[Iterator, tuple | None]:
    """``function`` of each of ``items``, in order, lazily: in this thread, or on ``threads`` Python threads that
    run ahead (for work that lets go of the GIL: torch's kernels). ``pool`` is the caller's ``(threads,
    ThreadPoolExecutor)`` from a previous call, or None; the pool to keep is returned with the results, made anew
    (threads named ``name``) when the count changed. Used by
    :meth:`downstream.predict.base.Predictor._map_batches` and a dense linker's
    :meth:`~downstream.linking.dense.DenseEncoder.embed`.

    A new pool starts all its threads before any item runs. ``ThreadPoolExecutor`` starts a thread at a submission
    only when none is idle, and a thread counts as idle for good once it has finished an item: had the first item
    finished before the second was submitted (a small batch, a busy machine), the pool would have kept one thread
    for every later call."""
    if threads <= 1 or len(items) <= 1:
        return map(function, items), pool
    if pool is None or pool[0] != threads:
        import threading
        from concurrent.futures import ThreadPoolExecutor

        if pool is not None:
            pool[1].shutdown()
        pool = (threads, ThreadPoolExecutor(threads, thread_name_prefix=name))
        started = threading.Barrier(threads)  # no thread is idle until every one has been started
        for future in [pool[1].submit(started.wait) for _ in range(threads)]:
            future.result()
    return pool[1].map(function, items), pool
