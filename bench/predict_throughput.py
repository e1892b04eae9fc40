#!/usr/bin/env python
"""``bioelectra predict`` on a corpus beside the ``transformers`` pipeline, in one run: speed, memory, agreement.

Corpus: the first N OHSUMED MEDLINE title + abstract documents of ``../shared/data/corpus`` (``ohsumed-single-23``
then ``ohsumed-first20k-extra``), written as JSONL (text: the title, a line break, the abstract's sentences
joined by spaces). Each measured run is a subprocess of its own, so that its peak memory is its own:

- ``predict``: :func:`downstream.predict.files.predict_files` (what ``bioelectra predict --output x.jsonl``
  runs), ``--num-workers`` 1 and 2;
- ``pipeline``: ``transformers.pipeline("token-classification", aggregation_strategy="first")`` over the SAME
  sentences (:func:`downstream.predict.sentences.split_sentences`), entity offsets shifted into the
  document, at each ``--pipeline-batch-sizes`` (the best is the one compared).

Prints one JSON object: per run ``documents_per_second`` and ``entities_per_second`` (over the whole command:
the imports of torch, transformers and our modules, model loading and worker start included, timed in the
run's process from before its first import, for both alike; the pipeline's ``*_after_load`` excludes its
imports and loading), ``seconds``, ``peak_rss_mb``
(the process tree's resident memory, sampled every 50 ms: a parent and its workers together), ``cpu_seconds``
and ``cores_busy`` (the run's CPU time, workers included, per second of wall time: what a second worker can
add is at most ``ceiling_2_workers_vs_1``, the cores over one worker's ``cores_busy``) and, per corpus
size, ``documents_differing``: documents whose entities ``(start, end, type)`` differ between ``predict``
(one worker) and the pipeline's best batch size, with a few examples. The machine, its cores and the load
average before each run are in the JSON: these CPUs are shared.

Usage: ``python bench/predict_throughput.py --model DIR [--documents 1000 10000] [--workers 1 2]
[--pipeline-batch-sizes 1 8 32] [--pipeline-max-documents 1000]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import processor_name  # noqa: E402

CORPUS = REPO.parent / "shared" / "data" / "corpus"
TARS = [CORPUS / "ohsumed-single-23" / "ohsumed_single_23.tar.gz", CORPUS / "ohsumed-first20k-extra" / "ohsumed_first20k_extra.tar.gz"]


def write_corpus(path: Path, n: int) -> int:
    """The first ``n`` OHSUMED documents as JSONL (``id``: the archive member's file name)."""
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        for archive in TARS:
            with tarfile.open(archive) as tar:
                for member in tar:
                    if written >= n:
                        return written
                    if not member.isfile():
                        continue
                    lines = tar.extractfile(member).read().decode("utf-8").splitlines()
                    if not lines:
                        continue
                    text = lines[0].strip() + "\n" + " ".join(line.strip() for line in lines[1:] if line.strip())
                    out.write(json.dumps({"id": member.name.rsplit("/", 1)[-1], "text": text}) + "\n")
                    written += 1
    return written


# --- the measured runs (each in its own process) --------------------------------------------------------------


def run_predict(args) -> dict:
    start = time.perf_counter()  # before the imports, as for the pipeline: what a user's command waits for
    from downstream.predict.files import predict_files

    summary = predict_files(args.model, [args.input], output=args.output, device="cpu", num_workers=args.workers,
                            batch_size=args.batch_size)  # fmt: skip
    return {"seconds": time.perf_counter() - start, "documents": summary.documents, "entities": summary.predictions}


def run_pipeline(args) -> dict:
    start = time.perf_counter()  # before the imports (torch, transformers' pipelines: 3-4 s here)
    import torch
    from transformers import pipeline
    from transformers.utils import logging as hf_logging

    from downstream.predict.sentences import split_sentences

    hf_logging.set_verbosity_error()
    tagger = pipeline("token-classification", model=args.model, aggregation_strategy="first", device="cpu")
    loaded = time.perf_counter()
    documents = [json.loads(line) for line in open(args.input, encoding="utf-8")]
    sentences, where = [], []
    for d, doc in enumerate(documents):
        for s, e in split_sentences(doc["text"]):
            sentences.append(doc["text"][s:e])
            where.append((d, s))
    entities = 0
    with torch.inference_mode(), open(args.output, "w", encoding="utf-8") as out:
        for (d, offset), found in zip(where, tagger(sentences, batch_size=args.batch_size), strict=True):
            for e in found:
                out.write(json.dumps({"document": documents[d]["id"], "start": int(e["start"]) + offset,
                                      "end": int(e["end"]) + offset, "type": e["entity_group"]}) + "\n")  # fmt: skip
                entities += 1
    end = time.perf_counter()
    return {"seconds": end - start, "load_seconds": loaded - start, "documents": len(documents), "entities": entities}


# --- the driver -----------------------------------------------------------------------------------------------


def tree_rss_mb(pid: int) -> float:
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0.0
    total = 0
    for p in processes:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def measure(argv: list[str], script: str | Path = __file__) -> dict:
    """Run ``script`` (default this one) with ``argv`` in a subprocess; the JSON it prints last, plus the sampled
    peak RSS of its process tree, its CPU time and the load average before it."""
    import resource

    load = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    process = subprocess.Popen([sys.executable, str(script), *argv], stdout=subprocess.PIPE, cwd=REPO,
                               env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})  # fmt: skip
    peak = [0.0]

    def sample():
        while process.poll() is None:
            peak[0] = max(peak[0], tree_rss_mb(process.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = process.communicate()
    sampler.join()
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the run and its reaped workers
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if process.returncode != 0:
        raise SystemExit(f"{argv}: exit {process.returncode}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result["documents_per_second"] = round(result["documents"] / result["seconds"], 2)
    result["entities_per_second"] = round(result["entities"] / result["seconds"], 2)
    if "load_seconds" in result:
        after = result["seconds"] - result["load_seconds"]
        result["documents_per_second_after_load"] = round(result["documents"] / after, 2)
    result["seconds"] = round(result["seconds"], 2)
    result["peak_rss_mb"] = round(peak[0], 1)
    result["cpu_seconds"] = round(cpu, 2)
    result["cores_busy"] = round(cpu / wall, 2)  # CPU seconds per wall second over the whole subprocess
    result["load_average_before"] = [round(x, 2) for x in load]
    return result


def entities_by_document(path: Path) -> dict[str, set]:
    found: dict[str, set] = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        found.setdefault(r["document"], set()).add((r["start"], r["end"], r["type"]))
    return found


def compare(ours: Path, theirs: Path, corpus: Path) -> dict:
    texts = {r["id"]: r["text"] for r in map(json.loads, open(corpus, encoding="utf-8"))}
    a, b = entities_by_document(ours), entities_by_document(theirs)
    differing = sorted(d for d in set(a) | set(b) if a.get(d, set()) != b.get(d, set()))
    examples = []
    for d in differing[:5]:
        only_ours, only_theirs = sorted(a.get(d, set()) - b.get(d, set())), sorted(b.get(d, set()) - a.get(d, set()))
        examples.append({"document": d, "predict_only": [(s, e, t, texts[d][s:e]) for s, e, t in only_ours][:3],
                         "pipeline_only": [(s, e, t, texts[d][s:e]) for s, e, t in only_theirs][:3]})  # fmt: skip
    return {"documents_differing": len(differing), "examples": examples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--documents", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--pipeline-batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--pipeline-max-documents", type=int, default=10**9, help="run the pipeline only at sizes up to this")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workdir")
    parser.add_argument("--run", choices=["predict", "pipeline"], help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        args.workers = args.workers[0]
        print(json.dumps(run_predict(args) if args.run == "predict" else run_pipeline(args)))
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="predict-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    import torch

    from downstream.predict.stream import available_cores

    report = {"machine": processor_name(), "cores": available_cores(), "torch_threads": torch.get_num_threads(),
              "model": str(args.model), "batch_size": args.batch_size, "sizes": {}}  # fmt: skip
    for n in args.documents:
        corpus = workdir / f"corpus-{n}.jsonl"
        size = {"documents": write_corpus(corpus, n)}
        for w in args.workers:
            out = workdir / f"predict-{n}-w{w}.jsonl"
            common = ["--model", str(args.model), "--input", str(corpus), "--output", str(out), "--batch-size", str(args.batch_size)]
            size[f"predict_workers_{w}"] = measure(["--run", "predict", "--workers", str(w), *common])
            print(json.dumps({n: size}), file=sys.stderr, flush=True)
        if n <= args.pipeline_max_documents:
            best = None
            for b in args.pipeline_batch_sizes:
                out = workdir / f"pipeline-{n}-b{b}.jsonl"
                run = measure(["--run", "pipeline", "--model", str(args.model), "--input", str(corpus), "--output", str(out),
                               "--batch-size", str(b)])  # fmt: skip
                size[f"pipeline_batch_{b}"] = run
                print(json.dumps({n: size}), file=sys.stderr, flush=True)
                if best is None or run["documents_per_second"] > size[f"pipeline_batch_{best}"]["documents_per_second"]:
                    best = b
            size["pipeline_best_batch_size"] = best
            if 1 in args.workers:
                size.update(compare(workdir / f"predict-{n}-w1.jsonl", workdir / f"pipeline-{n}-b{best}.jsonl", corpus))
                base = size[f"pipeline_batch_{best}"]["documents_per_second"]
                size["speedup_1_worker_vs_pipeline"] = round(size["predict_workers_1"]["documents_per_second"] / base, 2)
        if {1, 2} <= set(args.workers):
            size["speedup_2_workers_vs_1"] = round(size["predict_workers_2"]["documents_per_second"]
                                                  / size["predict_workers_1"]["documents_per_second"], 2)  # fmt: skip
            # what two workers could add at most: the cores one worker leaves idle
            size["ceiling_2_workers_vs_1"] = round(min(2, available_cores()) / size["predict_workers_1"]["cores_busy"], 2)
        report["sizes"][str(n)] = size
    sizes = [str(n) for n in args.documents]
    if len(sizes) > 1 and "predict_workers_1" in report["sizes"][sizes[0]]:
        report["peak_rss_ratio_largest_vs_smallest_1_worker"] = round(
            report["sizes"][sizes[-1]]["predict_workers_1"]["peak_rss_mb"] / report["sizes"][sizes[0]]["predict_workers_1"]["peak_rss_mb"], 3)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
