#!/usr/bin/env python
"""What entity linking adds to ``bioelectra predict``: one corpus predicted without and with ``--linker``.

The same NER model, documents, device, workers and batch size both ways; the only difference is the linker.
Corpus: the first ``--documents`` OHSUMED title + abstract documents of ``../shared/data/corpus`` as
``bench/predict_throughput.py`` writes them, or ``--corpus FILE`` (JSONL with ``id`` and ``text``). Each run
is the whole command (:func:`downstream.predict.files.predict_files` writing JSONL) in a process of its own,
timed from before its first import, by ``predict_throughput.measure`` (seconds, peak RSS, CPU seconds, load
average before), with the seconds the cyclic garbage collector took in it (``gc_seconds``, ``gc_collections``:
every collection from before the imports on); with ``--repeats R`` the two alternate R times and the medians are reported.

With one worker the run with the linker also times, in its process, the linker's parts: ``load_seconds``
(reading the linker and its saved TF-IDF, or fitting the TF-IDF for a linker saved without it),
``link_seconds`` (everything inside :meth:`~downstream.linking.predict.EntityLinker.link_many`, chunk by
chunk), and within it
``abbreviations_seconds`` (:func:`~downstream.linking.preprocess.find_abbreviations`), ``search_seconds``
(the linker's ``search``), of which ``tfidf_transform_seconds`` (the mentions' TF-IDF vectors),
``mention_embedding_seconds`` (a dense linker's encoder on the mentions; 0 for a sparse linker) and
``product_and_top1_seconds`` (the rest: scores and the best name); ``preparation_seconds`` is what is left
(abbreviations resolved, normalisation, the entities' new fields). Worker processes (``--workers`` > 1) are
not timed inside.

Prints one JSON object (``--out``: also written there): ``date``, ``finished_at`` (UTC), ``device``, ``versions``, the settings,
``runs`` (each run's ``measure`` result), ``documents``, ``entities`` (the same both ways, or the script
stops), ``entities_linked`` (with a concept id), ``seconds_without_linker`` / ``seconds_with_linker``,
``seconds_per_document_*``, ``overhead_percent`` (``100 * (with - without) / without``), and with one worker
``linking`` (the parts above, ``searched_mentions`` (distinct mentions searched), ``looked_up_mentions``
(distinct mentions that are dictionary names, linked without a search), ``link_seconds_per_document``,
``link_percent_of_without``: ``100 * link_seconds / seconds_without_linker``) and
``overhead_percent_after_load`` (the linker's load taken out of the run with it). With one worker each run with
the linker also writes the distinct mentions its linker searched, as prepared, a JSON list beside its output in
the work folder (``with_linker-<i>-searched.json``): ``bench/hybrid_search.py --texts`` searches them again.

Usage: ``python bench/predict_linking.py --model NER_DIR --linker LINKER_DIR [--documents 500 | --corpus FILE]
[--workers 1] [--batch-size 32] [--repeats 1] [--out FILE]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import cpu_device_name, device_name  # noqa: E402
from predict_throughput import entities_by_document, measure, write_corpus  # noqa: E402

#: The packages whose versions the report names.
PACKAGES = ("torch", "transformers", "numpy", "scipy", "scikit-learn")

#: The parts of ``linking`` timed in the run's process (module docstring).
PARTS = ("load_seconds", "link_seconds", "abbreviations_seconds", "search_seconds", "tfidf_transform_seconds",
         "mention_embedding_seconds")


# --- the measured run (in its own process) --------------------------------------------------------------------


def _timed(function, times: dict, key: str, count: str | None = None):
    """``function`` adding the seconds of each call to ``times[key]`` (and its first argument's length to
    ``times[count]``)."""

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            times[key] += time.perf_counter() - start
            if count is not None:
                times[count] += len(args[0])

    return wrapper


def time_linker_parts(searched: list[str] | None = None) -> dict:
    """Time the linker's parts (module docstring) in this process from now on: the returned dict's figures grow
    as the linker is loaded and runs; ``searched`` (when given) gets each mention the linker searches."""
    import downstream.linking.predict as linking

    times = dict.fromkeys(PARTS, 0.0) | {"searched_mentions": 0, "new_mentions": 0}
    best_names = linking.EntityLinker.best_names

    def counted_best_names(self, texts):
        times["new_mentions"] += len({t for t in texts if t not in self.cache})  # looked up or searched
        return best_names(self, texts)

    linking.EntityLinker.best_names = counted_best_names
    linking.find_abbreviations = _timed(linking.find_abbreviations, times, "abbreviations_seconds")
    linking.EntityLinker.link_many = _timed(linking.EntityLinker.link_many, times, "link_seconds")
    load = linking.EntityLinker.__init__

    def timed_load(self, directory) -> None:
        start = time.perf_counter()
        load(self, directory)
        times["load_seconds"] += time.perf_counter() - start
        sparse = getattr(self.linker, "sparse", self.linker)  # a dense linker's sparse half, or the sparse linker
        if getattr(sparse, "vectorizer", None) is not None:
            sparse.vectorizer.transform = _timed(sparse.vectorizer.transform, times, "tfidf_transform_seconds")
        encoder = getattr(self.linker, "encoder", None)  # a dense linker's
        if encoder is not None:
            encoder.embed = _timed(encoder.embed, times, "mention_embedding_seconds")
        search = _timed(self.linker.search, times, "search_seconds", "searched_mentions")
        self.linker.search = search if searched is None else (lambda texts, k: searched.extend(texts) or search(texts, k))

    linking.EntityLinker.__init__ = timed_load
    return times


def time_collections() -> dict:
    """Time the cyclic garbage collector's collections in this process from now on (``gc.callbacks``): the
    returned dict's ``gc_seconds`` and ``gc_collections`` grow with each."""
    import gc

    times = {"gc_seconds": 0.0, "gc_collections": 0}
    started = []

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            times["gc_seconds"] += time.perf_counter() - started.pop()
            times["gc_collections"] += 1

    gc.callbacks.append(callback)
    return times


def run_predict(args) -> dict:
    start = time.perf_counter()  # before the imports: what a user's command waits for
    collections = time_collections()
    searched: list[str] = []
    times = time_linker_parts(searched) if args.linker and args.workers == 1 else None
    from downstream.predict.files import predict_files

    summary = predict_files(args.model, [args.input], output=args.output, device=args.device, num_workers=args.workers,
                            batch_size=args.batch_size, linker_dir=args.linker)  # fmt: skip
    result = {"seconds": time.perf_counter() - start, "documents": summary.documents, "entities": summary.predictions,
              **collections}  # fmt: skip
    if times is not None:
        result["linking"] = times
        write_report(searched, searched_path(Path(args.output)))  # the mentions searched, for bench/hybrid_search.py
    return result


def searched_path(output: Path) -> Path:
    """Where a run with the linker writes the distinct mentions it searched: beside its output."""
    return output.with_name(f"{output.stem}-searched.json")


# --- the driver -----------------------------------------------------------------------------------------------


def versions() -> dict:
    """Python's and :data:`PACKAGES`' versions (from the installed distributions: nothing is imported)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def device(option: str) -> str:
    """The machine ``--device`` runs on, named as every report under ``bench/`` names it."""
    if option == "cpu":
        return cpu_device_name()
    import torch

    return device_name(torch.device("cuda" if option == "cuda" or torch.cuda.is_available() else "cpu"))


def linked_entities(path: Path) -> int:
    """Entities with a concept id in a JSONL output of ``predict``."""
    with open(path, encoding="utf-8") as handle:
        return sum(1 for line in handle if json.loads(line).get("concept_id"))


def linking_split(runs: list[dict], documents: int, seconds_without: float) -> dict:
    """The linker's parts (module docstring), medians over ``runs``, with what is derived from them."""
    counts = ("searched_mentions", "new_mentions")
    parts = {key: statistics.median(r["linking"][key] for r in runs) for key in (*PARTS, *counts)}
    rounded = {key: round(value, 6) for key, value in parts.items() if key not in counts}
    search, link = parts["search_seconds"], parts["link_seconds"]
    return {
        **rounded, "searched_mentions": int(parts["searched_mentions"]),
        "looked_up_mentions": int(parts["new_mentions"] - parts["searched_mentions"]),
        "product_and_top1_seconds": round(search - parts["tfidf_transform_seconds"] - parts["mention_embedding_seconds"], 6),
        "preparation_seconds": round(link - search - parts["abbreviations_seconds"], 6),
        "link_seconds_per_document": round(link / documents, 6),
        "link_percent_of_without": round(100 * link / seconds_without, 2),
    }  # fmt: skip


def report(args, corpus: Path, workdir: Path) -> dict:
    """Run the corpus without and with the linker (``args.repeats`` times each, alternating); the report."""
    card = json.loads((Path(args.linker) / "linker.json").read_text(encoding="utf-8"))
    common = ["--model", str(args.model), "--input", str(corpus), "--device", args.device, "--workers", str(args.workers),
              "--batch-size", str(args.batch_size)]  # fmt: skip
    runs: dict[str, list[dict]] = {"without_linker": [], "with_linker": []}
    for repeat in range(args.repeats):
        for way, extra in (("without_linker", []), ("with_linker", ["--linker", str(args.linker)])):
            out = workdir / f"{way}-{repeat}.jsonl"
            runs[way].append(measure(["--run", "--output", str(out), *common, *extra], script=__file__))
            runs[way][-1]["entities_linked"] = linked_entities(out)
            print(json.dumps({way: runs[way][-1]}), file=sys.stderr, flush=True)
    first = runs["without_linker"][0]
    counts = {(r["documents"], r["entities"]) for way_runs in runs.values() for r in way_runs}
    found = [entities_by_document(workdir / f"{way}-0.jsonl") for way in runs]  # (document, start, end, type)
    if len(counts) > 1 or found[0] != found[1]:
        raise SystemExit(f"{corpus}: the runs without and with the linker found different entities; nothing to compare")
    documents = first["documents"]
    without = statistics.median(r["seconds"] for r in runs["without_linker"])
    with_linker = statistics.median(r["seconds"] for r in runs["with_linker"])
    result = {
        "benchmark": "predict_linking", "date": datetime.date.today().isoformat(),
        "finished_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "device": device(args.device),
        "versions": versions(),
        "model": str(args.model),
        "linker": {"dir": str(args.linker), **{k: card.get(k) for k in ("linker", "entity_type", "ngram_range", "num_names")}},
        "corpus": str(args.corpus) if args.corpus else f"OHSUMED, the first {args.documents} documents",
        "workers": args.workers, "batch_size": args.batch_size, "repeats": args.repeats, "runs": runs,
        "documents": documents, "entities": first["entities"],
        "entities_linked": runs["with_linker"][0]["entities_linked"],
        "seconds_without_linker": round(without, 2), "seconds_with_linker": round(with_linker, 2),
        "seconds_per_document_without_linker": round(without / documents, 5),
        "seconds_per_document_with_linker": round(with_linker / documents, 5),
        "overhead_percent": round(100 * (with_linker - without) / without, 2),
    }  # fmt: skip
    if args.workers == 1:
        result["linking"] = linking_split(runs["with_linker"], documents, without)
        load = result["linking"]["load_seconds"]
        result["overhead_percent_after_load"] = round(100 * (with_linker - load - without) / without, 2)
    return result


def write_report(result: dict, out: Path | None) -> None:
    """``result`` as JSON at ``out`` (nothing when None), through a temporary name."""
    if out is None:
        return
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out)


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a fine-tuned NER model folder")
    parser.add_argument("--linker", help="a saved linker folder (a linking trial's linker/); required")
    parser.add_argument("--documents", type=int, default=500, help="the first N OHSUMED documents (without --corpus)")
    parser.add_argument("--corpus", type=Path, help="a JSONL corpus (id, text) instead of OHSUMED")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--repeats", type=int, default=1, help="runs each way, alternating; medians reported")
    parser.add_argument("--workdir", type=Path, help="where the corpus and the outputs go (default a temporary folder)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        print(json.dumps(run_predict(args)))
        return None
    for flag, value in (("--documents", args.documents), ("--workers", args.workers), ("--batch-size", args.batch_size),
                        ("--repeats", args.repeats)):  # fmt: skip
        if value < 1:
            parser.error(f"{flag} {value}: expected at least 1")
    if args.linker is None or not (Path(args.linker) / "linker.json").is_file():
        parser.error(f"--linker {args.linker}: no linker.json (expected a linking trial's linker/ folder)")
    if args.corpus is not None and not args.corpus.is_file():
        parser.error(f"--corpus {args.corpus}: no such file")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="predict-linking-"))
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = args.corpus
    if corpus is None:
        corpus = workdir / f"corpus-{args.documents}.jsonl"
        write_corpus(corpus, args.documents)
    result = report(args, corpus, workdir)
    write_report(result, args.out)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
