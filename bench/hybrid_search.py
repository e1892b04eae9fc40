#!/usr/bin/env python
"""The dense linker's search with and without pruning: every name scored against
:meth:`~downstream.linking.sparse.SparseLinker.hybrid_search`, on a saved dense linker and the gold test
mentions of its dataset (their prepared parts, each once, as evaluation links them), or ``--texts FILE``: a JSON
list of prepared mentions, such as those ``predict`` searched over a corpus (``bench/predict_linking.py`` writes
them), where mentions far from every name make the bound work harder.

The mentions are embedded and their dense block (``(texts, num_names)``, as ``HybridLinker.search`` makes it)
computed once, untimed; what is timed is the rest of the search, :data:`~downstream.linking.sparse.CHUNK` texts
at a time: ``dense += weight * sparse`` over every name and the top k (``full``), against ``hybrid_search``
(``pruned``) for each common-n-gram fraction of ``--fractions``, each number of principal directions of the
common parts' bound of ``--ranks`` (:data:`~downstream.linking.sparse.COMMON_RANK`; 0: Cauchy-Schwarz on the whole
common part) and each k of ``--k``. Both must find the same
names and score bits, or the script stops. Reported per case: ms a text (the median of ``--repeats``), the
names scored exactly per pruned text (mean, max), the texts pruned and those that fell back to every name.
``by_postings`` times each text alone both ways (every text pruned, at the linker's fraction), grouped by how many
names its n-grams have: the cost model behind :data:`~downstream.linking.sparse.PRUNE_POSTINGS`.

Prints one JSON object (``--out``: also written there) with ``date``, ``device``, ``versions``, the linker, the
mentions and the cases.

Usage: ``python bench/hybrid_search.py --linker LINKER_DIR [--data-dir ../shared/data/linking] [--mentions 1000] [--texts FILE]
[--fractions 0.02,0.05,0.1,0.2] [--ranks 0,8,16,32,64] [--k 1,5] [--repeats 3] [--out FILE]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import cpu_device_name  # noqa: E402
from predict_linking import versions, write_report  # noqa: E402

#: Bands of a text's n-grams' names (summed) for ``by_postings``.
POSTINGS_BANDS = (0, 100_000, 200_000, 400_000, 800_000, None)


def full_search(sparse, blocks, k: int, weight: float) -> list:
    """Every name scored (``HybridLinker.scores``), the top ``k`` of each block."""
    from downstream.linking.metrics import top_k

    found = []
    for dense, vectors in blocks:
        scores = dense.copy()
        scores += weight * sparse.vector_scores(vectors)
        found.append(top_k(scores, k))
    return found


def timed(function, repeats: int) -> tuple[float, object]:
    """The median seconds of ``repeats`` calls of ``function`` and its last result."""
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def pruning_counts(sparse, blocks, k: int, weight: float) -> dict:
    """How the pruned search went (``hybrid_search``'s ``stats``): texts pruned, fallbacks, names scored exactly
    per pruned text."""
    stats: dict = {}
    for dense, vectors in blocks:
        sparse.hybrid_search(vectors, k, dense=dense, weight=weight, stats=stats)
    scored = stats.get("scored", [])
    return {"pruned": stats.get("pruned", 0), "fell_back": stats.get("fell_back", 0),
            "scored_mean": round(float(np.mean(scored)), 1) if scored else None, "scored_max": max(scored, default=None)}


def by_postings(sparse, blocks, weight: float, repeats: int) -> list[dict]:
    """Each text alone, every name scored against pruned (forced), ms by band of its n-grams' names."""
    import downstream.linking.sparse as module

    rows = []
    saved = module.PRUNE_POSTINGS, module.PRUNE_POSTINGS_PER_NAME
    module.PRUNE_POSTINGS, module.PRUNE_POSTINGS_PER_NAME = -1, 0
    try:
        for dense, vectors in blocks:
            for row in range(vectors.shape[0]):
                one, block = vectors[row], dense[row : row + 1]
                postings = int(sparse.postings[one.indices].sum())
                full, _ = timed(lambda one=one, block=block: full_search(sparse, [(block, one)], 1, weight), repeats)
                pruned, _ = timed(lambda one=one, block=block: sparse.hybrid_search(one, 1, dense=block, weight=weight), repeats)
                rows.append((postings, full, pruned))
    finally:
        module.PRUNE_POSTINGS, module.PRUNE_POSTINGS_PER_NAME = saved
    bands = []
    for low, high in zip(POSTINGS_BANDS, POSTINGS_BANDS[1:], strict=False):
        inside = [r for r in rows if r[0] >= low and (high is None or r[0] < high)]
        if inside:
            bands.append({"postings_from": low, "postings_below": high, "texts": len(inside),
                          "full_ms_per_text": round(1e3 * statistics.mean(r[1] for r in inside), 3),
                          "pruned_ms_per_text": round(1e3 * statistics.mean(r[2] for r in inside), 3)})  # fmt: skip
    return bands


def _numbers(parser, flag: str, text: str, kind, expected: str, valid) -> list:
    """A comma-separated option as a list of ``kind``; a clear error (the flag, the value, what was expected)
    for anything else."""
    try:
        values = [kind(part) for part in text.split(",")]
    except ValueError:
        values = None
    if not values or not all(valid(v) for v in values):
        parser.error(f"{flag} {text}: expected comma-separated {expected}")
    return values


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--linker", required=True, help="a saved dense linker folder (a linking trial's linker/)")
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data" / "linking")
    parser.add_argument("--mentions", type=int, default=1000, help="at most this many distinct mentions")
    parser.add_argument("--texts", type=Path, help="a JSON list of prepared mentions searched instead of the test "
                        "mentions (what bench/predict_linking.py writes: the mentions predict searched)")
    parser.add_argument("--fractions", default="0.02,0.05,0.1,0.2", help="common n-grams' fractions of the names")
    parser.add_argument("--ranks", default="0,8,16,32,64", help="principal directions of the common parts' bound")
    parser.add_argument("--k", default="1,5", help="the k's searched")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    fractions = _numbers(parser, "--fractions", args.fractions, float, "fractions in (0, 1]", lambda f: 0 < f <= 1)
    ranks = _numbers(parser, "--ranks", args.ranks, int, "numbers of directions, at least 0", lambda r: r >= 0)
    ks = _numbers(parser, "--k", args.k, int, "k's of at least 1", lambda k: k >= 1)
    if not (Path(args.linker) / "linker.json").is_file():
        parser.error(f"--linker {args.linker}: no linker.json (expected a linking trial's linker/ folder)")

    import downstream.linking.sparse as module
    from downstream.linking.run import load_linking_data
    from downstream.linking.saved import load_linker

    linker, _, card = load_linker(args.linker)
    if card.get("linker") != "dense" or linker.sparse is None or not linker.sparse_weight:
        parser.error(f"--linker {args.linker}: expected a dense linker with a sparse score beside it")
    if args.texts is None:
        data = load_linking_data(card["dataset"], args.data_dir)
        texts = list(dict.fromkeys(part for query in data.queries["test"] for part in query.parts))[: args.mentions]
    else:
        try:
            texts = json.loads(args.texts.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            parser.error(f"--texts {args.texts}: unreadable ({exc})")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            parser.error(f"--texts {args.texts}: expected a non-empty JSON list of non-empty strings")
        texts = list(dict.fromkeys(texts))[: args.mentions]
    sparse, weight = linker.sparse, linker.sparse_weight
    embeddings = linker.encoder.embed(texts)
    blocks = [(embeddings[i : i + module.CHUNK] @ linker.name_embeddings.T, sparse.vectorizer.transform(texts[i : i + module.CHUNK]))
              for i in range(0, len(texts), module.CHUNK)]  # fmt: skip

    cases = []
    default_fraction, default_rank = module.COMMON_POSTINGS_FRACTION, module.COMMON_RANK
    for k in ks:
        full_seconds, expected = timed(lambda k=k: full_search(sparse, blocks, k, weight), args.repeats)
        cases.append({"search": "full", "k": k, "ms_per_text": round(1e3 * full_seconds / len(texts), 3)})
        for fraction in fractions:
            for rank in ranks:
                module.COMMON_POSTINGS_FRACTION, module.COMMON_RANK = fraction, rank
                sparse._index(sparse.name_vectors)
                seconds, found = timed(lambda k=k: [sparse.hybrid_search(v, k, dense=d, weight=weight) for d, v in blocks], args.repeats)
                for (a, b), (c, d) in zip(found, expected, strict=True):
                    if not (np.array_equal(a, c) and np.array_equal(b, d)):
                        raise SystemExit(f"the pruned search at fraction {fraction}, rank {rank}, k {k} found other names or "
                                         "scores than the full one")  # fmt: skip
                cases.append({"search": "pruned", "k": k, "common_postings_fraction": fraction, "common_rank": rank,
                              "common_ngrams": int(sparse.common.sum()), "ms_per_text": round(1e3 * seconds / len(texts), 3),
                              **pruning_counts(sparse, blocks, k, weight)})  # fmt: skip
    module.COMMON_POSTINGS_FRACTION, module.COMMON_RANK = default_fraction, default_rank
    sparse._index(sparse.name_vectors)
    result = {
        "benchmark": "hybrid_search", "date": datetime.date.today().isoformat(),
        "finished_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "device": cpu_device_name(),
        "versions": versions(),
        "linker": {"dir": str(args.linker), "dataset": card["dataset"], "ngram_range": list(sparse.ngram_range),
                   "sparse_weight": weight, "num_names": int(sparse.name_vectors.shape[0]),
                   "num_ngrams": int(sparse.name_vectors.shape[1])},
        "mentions": len(texts), "texts": str(args.texts) if args.texts else "test", "mean_postings_per_text": round(float(np.mean([sparse.postings[v.indices[v.indptr[r]:v.indptr[r + 1]]].sum()
                                                                               for _, v in blocks for r in range(v.shape[0])])), 1),
        "constants": {"PRUNE_POSTINGS": module.PRUNE_POSTINGS, "PRUNE_POSTINGS_PER_NAME": module.PRUNE_POSTINGS_PER_NAME,
                      "SEEDS": module.SEEDS, "MAX_EXACT": module.MAX_EXACT, "COMMON_POSTINGS_FRACTION": default_fraction,
                      "COMMON_RANK": default_rank},
        "repeats": args.repeats, "cases": cases, "by_postings": by_postings(sparse, blocks, weight, 1),
    }  # fmt: skip
    write_report(result, args.out)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
