"""What is recorded of ``torch.compile``'s caches, and how it reads, without torch: the counter names, the file a
compiled ``pretrain train`` writes after its first step, and the one rendering of "how many graphs a cache served"
used by the run's log line, the bench's Markdown (``bench/pretrain_report.py``) and the campaign's report. The
counting itself (torch's counters) is :func:`bioelectra.pretraining.compile_cache.compile_cache_counts`.
"""

from __future__ import annotations

from collections.abc import Mapping

#: torch's own counters of its compile caches (``torch._dynamo.utils.counters``, the same names in torch 2.11 and
#: 2.13), by group, each as (hit, miss, bypass): inductor's graph cache (a hit loads a compiled graph's code and
#: kernels instead of generating them) and AOT autograd's (a hit skips tracing the forward and backward graphs; a
#: bypass is a graph it refuses to cache). A hit comes from a carried cache or from the machine's own cache
#: directories.
CACHE_COUNTERS: dict[str, tuple[str, str, str]] = {
    "inductor": ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass"),
    "aot_autograd": ("autograd_cache_hit", "autograd_cache_miss", "autograd_cache_bypass"),
}

#: How each group of :data:`CACHE_COUNTERS` is named to a reader.
CACHE_LABELS: dict[str, str] = {"inductor": "inductor", "aot_autograd": "AOT autograd"}

#: What ``pretrain train`` with ``torch_compile`` writes into its output directory after its first compiled step
#: (:meth:`bioelectra.pretraining.trainer.ElectraPretrainer.training_step`): the step's seconds, the carried
#: cache and whether it loaded, and the counts of :data:`CACHE_COUNTERS` over the step. Each run of the
#: directory (a resume compiles again) replaces it.
FIRST_COMPILED_STEP_FILE = "first_compiled_step.json"


def cache_served(counts: Mapping[str, int] | None, group: str) -> str:
    """``"3 of 5"``: of the graphs counted in ``counts`` (counter name -> graphs) under ``group`` of
    :data:`CACHE_COUNTERS`, how many a cache served; those it refused are named (``"3 of 5 (1 refused)"``); ``-``
    for no counts (a report from before they were recorded).

    Raises:
        KeyError: ``group`` is not one of :data:`CACHE_COUNTERS`.
    """
    names = CACHE_COUNTERS[group]
    if not counts:
        return "-"
    served, anew, refused = (int(counts.get(name, 0)) for name in names)
    return f"{served} of {served + anew + refused}" + (f" ({refused} refused)" if refused else "")


def describe_cache_counts(counts: Mapping[str, int] | None) -> str:
    """Every group of ``counts`` in a phrase: ``"graphs from a cache: inductor 4 of 4, AOT autograd 1 of 2
    (1 refused)"``."""
    return "graphs from a cache: " + ", ".join(f"{CACHE_LABELS[g]} {cache_served(counts, g)}" for g in CACHE_COUNTERS)
