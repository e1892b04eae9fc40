"""``downstream.threads.map_on_threads``: results in order, the pool kept, remade for a new count, every thread
of a new pool started."""

import threading

from downstream.threads import map_on_threads


def _workers(name: str) -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith(f"{name}_")}


def test_one_thread_runs_here_in_order():
    seen = []
    results, pool = map_on_threads(lambda x: seen.append(threading.get_ident()) or -x, [1, 2, 3], 1, None, "t-one")
    assert list(results) == [-1, -2, -3] and pool is None and set(seen) == {threading.get_ident()}


def test_a_new_pool_starts_all_its_threads_however_quick_the_items():
    results, pool = map_on_threads(lambda x: 2 * x, [1, 2], 3, None, "t-start")
    try:
        assert list(results) == [2, 4]
        assert len(_workers("t-start")) == 3  # two items alone start at most two
        again, kept = map_on_threads(lambda x: x + 1, list(range(10)), 3, pool, "t-start")
        assert kept is pool and list(again) == list(range(1, 11)) and len(_workers("t-start")) == 3
        other, remade = map_on_threads(str, [1, 2], 2, pool, "t-remade")
        assert remade[0] == 2 and remade[1] is not pool[1] and list(other) == ["1", "2"]
        assert len(_workers("t-remade")) == 2 and not _workers("t-start")  # the old pool shut down
        remade[1].shutdown()
    finally:
        pool[1].shutdown()
