#!/usr/bin/env python
"""Throughput and peak memory of ``build-data`` on the shared corpus; prints one JSON object.

    python bench/build_data_throughput.py --corpus ohsumed --num-processes 1
    python bench/build_data_throughput.py --corpus all --num-processes 1       # the whole shared corpus
    python bench/build_data_throughput.py --corpus all --prepare-only          # just convert it to text
    python bench/build_data_throughput.py --corpus all --num-processes 2 --read-epoch   # + one epoch read

``--corpus ohsumed``: ``corpus/ohsumed-single-23/ohsumed_single_23.tar.gz`` extracted (one file = one
document; 9.4 MB, 1.83 M WordPiece tokens with Bio-ELECTRA's vocabulary).

``--corpus all``: every readable text source of ``../shared/data/corpus`` (SOURCES.md sections 4 and 7)
converted once into plain-text files by ``recipes/shared_corpus.py --subset all --keep-eval-overlap``
(see its docstring: abstracts, CRAFT text, eLife and PLOS JATS XML). The benchmark measures speed only,
so the few documents that overlap evaluation text are kept; pre-training recipes drop them.

The build runs in a child process so that its peak RSS (``ru_maxrss``; workers reported separately) is
the build's alone. Throughput is WordPiece tokens (no special tokens) per second of the streaming build
(reading, tokenizing, packing, writing); ``setup_seconds`` (imports, tokenizer) is reported beside it,
and ``tokens_per_cpu_second`` (main process CPU time, setup included) is less sensitive to other jobs.
This machine may be shared: the load average before and after is recorded. No timed asserts.

The output's size on disk is reported as ``bytes_per_token`` (Arrow files over stored ids, special tokens
included). ``--read-epoch`` then reads every training example once through the training data loader
(``load_pretraining_data``, the masking collator, batches of 128): ``epoch_read_seconds``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared" / "data" / "corpus"

_CHILD = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from bioelectra.data import BuildDataSettings, build_pretraining_data
s = BuildDataSettings(corpus_dir=Path({corpus!r}), vocab_file=Path({vocab!r}), output_dir=Path({out!r}),
    max_seq_length={msl}, num_processes={np}, do_lower_case={lower}, carry_overflow={carry}, overwrite=True)
cpu0 = time.process_time()
info = build_pretraining_data(s)
info["cpu_seconds"] = time.process_time() - cpu0  # setup included
info["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
info["workers_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print("BENCH_RESULT " + json.dumps(info))
"""


def prepare_all(work: Path) -> Path:
    """Every text source of the shared corpus as plain text under ``work/all`` (once), eval overlap kept."""
    sys.path.insert(0, str(REPO_ROOT / "recipes"))
    from shared_corpus import prepare

    out = work / "all"
    prepare(SHARED, out, subset="all", exclude_eval_overlap=False)
    return out


def prepare_ohsumed(work: Path) -> Path:
    out = work / "ohsumed"
    if not (out / ".done").is_file():
        out.mkdir(parents=True, exist_ok=True)
        with tarfile.open(SHARED / "ohsumed-single-23/ohsumed_single_23.tar.gz") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and "/ohsumed_single_23/" in m.name]
            tar.extractall(out, members=members, filter="data")
        (out / ".done").write_text("")
    return out


def _corpus_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))


def _machine() -> dict:
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    from machine import processor_name

    return {
        "cpu": processor_name(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=["ohsumed", "all"], default="ohsumed")
    parser.add_argument("--corpus-dir", type=Path, help="Benchmark this directory instead.")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bioelectra-bench"))
    parser.add_argument("--vocab-file", type=Path, default=None, help="Default: Bio-ELECTRA's vocabulary.")
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--do-lower-case", action="store_true", help="Default: cased, as Bio-ELECTRA.")
    parser.add_argument("--drop-overflow", action="store_true", help="Drop cut tokens as the original does.")
    parser.add_argument("--prepare-only", action="store_true", help="Only convert the corpus.")
    parser.add_argument("--read-epoch", action="store_true", help="Also time one epoch through the data loader.")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO_ROOT))
    from bioelectra.presets import bio_electra_vocab_file

    vocab = args.vocab_file or bio_electra_vocab_file()
    t0 = time.perf_counter()
    if args.corpus_dir:
        corpus = args.corpus_dir
    elif args.corpus == "ohsumed":
        corpus = prepare_ohsumed(args.work_dir)
    else:
        corpus = prepare_all(args.work_dir)
    prepare_seconds = time.perf_counter() - t0
    if args.prepare_only:
        print(json.dumps({"corpus_dir": str(corpus), "corpus_bytes": _corpus_bytes(corpus)}))
        return
    out = args.work_dir / f"out-{args.corpus}-{args.num_processes}"
    code = _CHILD.format(
        repo=str(REPO_ROOT),
        corpus=str(corpus),
        vocab=str(vocab),
        out=str(out),
        msl=args.max_seq_length,
        np=args.num_processes,
        lower=args.do_lower_case,
        carry=not args.drop_overflow,
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    load_before = os.getloadavg()
    t1 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO_ROOT
    )
    wall = time.perf_counter() - t1
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(proc.returncode)
    info = json.loads(
        next(line for line in proc.stdout.splitlines() if line.startswith("BENCH_RESULT "))[13:]
    )
    counts = info["counts"]
    result = {
        "corpus": str(args.corpus_dir or args.corpus),
        "corpus_dir": str(corpus),
        "corpus_bytes": _corpus_bytes(corpus),
        "sources": json.loads((corpus / ".prepare_info.json").read_text())["documents"]
        if (corpus / ".prepare_info.json").is_file()
        else None,
        "num_processes": args.num_processes,
        "max_seq_length": args.max_seq_length,
        "do_lower_case": args.do_lower_case,
        "carry_overflow": not args.drop_overflow,
        "documents": counts["documents"],
        "sentences": counts["sentences"],
        "tokens": counts["tokens"],
        "tokens_lost": counts["tokens_lost"],
        "tokens_lost_fraction": counts["tokens_lost"] / max(counts["tokens"], 1),
        "examples": sum(counts["examples"].values()),
        "tokens_per_second": info["tokens_per_second"],
        "elapsed_seconds": info["elapsed_seconds"],
        "setup_seconds": info["setup_seconds"],
        "cpu_seconds": info["cpu_seconds"],
        "tokens_per_cpu_second": counts["tokens"] / info["cpu_seconds"],
        "child_wall_seconds": wall,
        "prepare_seconds": prepare_seconds,
        "peak_rss_mb": info["peak_rss_mb"],
        "workers_peak_rss_mb": info["workers_peak_rss_mb"] if args.num_processes > 1 else None,
        "load_average_before_after": [load_before[0], os.getloadavg()[0]],
        "machine": _machine(),
        "format_version": info.get("format_version", 1),
        "input_ids_dtype": info.get("input_ids_dtype", "int32"),
        "bytes_on_disk": sum(f.stat().st_size for f in (out / "examples").rglob("*.arrow")),
        "bytes_per_token": info.get("bytes_per_token"),
    }
    if args.read_epoch:
        result.update(read_epoch(out))
    print(json.dumps(result, indent=2))


def read_epoch(data_dir: Path, batch_size: int = 128) -> dict:
    """Seconds to read every training example once through the training data loader."""
    import torch

    from bioelectra.pretraining import load_pretraining_data, make_collator, resolve_hparams

    data = load_pretraining_data(data_dir)
    hp = resolve_hparams("small", {"max_seq_length": int(data.build_info["max_seq_length"])})
    loader = torch.utils.data.DataLoader(data.train, batch_size=batch_size, collate_fn=make_collator(data.tokenizer, hp))
    start = time.perf_counter()
    batches = sum(1 for _ in loader)
    seconds = time.perf_counter() - start
    return {"epoch_read_seconds": round(seconds, 1), "epoch_batches": batches,
            "epoch_examples_per_second": round(len(data.train) / seconds, 1)}  # fmt: skip


if __name__ == "__main__":
    main()
