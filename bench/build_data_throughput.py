#!/usr/bin/env python
"""Throughput and peak memory of ``build-data`` on the shared corpus; prints one JSON object.

    python bench/build_data_throughput.py --corpus ohsumed --num-processes 1
    python bench/build_data_throughput.py --corpus all --num-processes 1       # the whole shared corpus
    python bench/build_data_throughput.py --corpus all --prepare-only          # just convert it to text

``--corpus ohsumed``: ``corpus/ohsumed-single-23/ohsumed_single_23.tar.gz`` extracted (one file = one
document; 9.4 MB, 1.83 M WordPiece tokens with Bio-ELECTRA's vocabulary).

``--corpus all``: every readable text source of ``../shared/data/corpus`` (SOURCES.md sections 4 and 7)
converted once into plain-text files (one line per sentence/paragraph, blank lines between documents):
OHSUMED single-23 and first-20k-extra (one file per document: title + one sentence per line), the 1 MB
PubMed abstracts (one abstract = one line = one document), PubMedQA PQA-L (contexts + long answer per
PMID), CRAFT ``articles/txt/*.txt`` (non-empty lines), the ASReview CSVs (title + abstract, rows without
an abstract and repeated abstracts dropped), the USC PubMed CSV (abstract), and the eLife and PLOS JATS
XML articles (article title, abstract and body paragraphs and section titles; tables, figures, references
and supplementary material left out).

The build runs in a child process so that its peak RSS (``ru_maxrss``; workers reported separately) is
the build's alone. Throughput is WordPiece tokens (no special tokens) per second of the streaming build
(reading, tokenizing, packing, writing); ``setup_seconds`` (imports, tokenizer) is reported beside it,
and ``tokens_per_cpu_second`` (main process CPU time, setup included) is less sensitive to other jobs.
This machine may be shared: the load average before and after is recorded. No timed asserts.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import platform
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
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


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _write_doc(fh, lines) -> int:
    lines = [s for s in (_collapse(x) for x in lines) if s]
    if lines:
        fh.write("\n".join(lines) + "\n\n")
    return 1 if lines else 0


def _tar_text_docs(path: Path, fh, member_filter) -> int:
    n = 0
    with tarfile.open(path) as tar:
        for m in tar:
            if m.isfile() and member_filter(m.name):
                n += _write_doc(fh, tar.extractfile(m).read().decode("utf-8").splitlines())
    return n


_JATS_SKIP = {"table-wrap", "fig", "ref-list", "supplementary-material", "table", "disp-formula", "fn-group"}


def _jats_lines(root: ET.Element) -> list[str]:
    lines = []
    title = root.find(".//article-meta/title-group/article-title")
    if title is not None:
        lines.append("".join(title.itertext()))

    def walk(elem: ET.Element) -> None:
        for child in elem:
            tag = child.tag
            if tag in _JATS_SKIP:
                continue
            if tag in ("p", "title"):
                lines.append("".join(child.itertext()))
            else:
                walk(child)

    for part in root.findall(".//article-meta/abstract") + root.findall("./body"):
        walk(part)
    return lines


def _jats_docs(path: Path, fh) -> int:
    n = 0
    with tarfile.open(path) as tar:
        for m in tar:
            if m.isfile() and m.name.endswith(".xml"):
                n += _write_doc(fh, _jats_lines(ET.fromstring(tar.extractfile(m).read())))
    return n


def prepare_all(work: Path) -> Path:
    """Convert every text source of the shared corpus to plain-text files under ``work/all`` (once)."""
    out = work / "all"
    done = out / ".done.json"
    if done.is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    with open(out / "ohsumed_single_23.txt", "w") as fh:
        counts["ohsumed-single-23"] = _tar_text_docs(
            SHARED / "ohsumed-single-23/ohsumed_single_23.tar.gz", fh, lambda n: "/ohsumed_single_23/" in n
        )
    with open(out / "ohsumed_first20k_extra.txt", "w") as fh:
        counts["ohsumed-first20k-extra"] = _tar_text_docs(
            SHARED / "ohsumed-first20k-extra/ohsumed_first20k_extra.tar.gz", fh, lambda n: True
        )
    with open(out / "craft.txt", "w") as fh:
        counts["craft"] = _tar_text_docs(
            SHARED / "craft-articles/craft_articles_txt.tar.gz",
            fh,
            lambda n: n.startswith("articles/txt/") and n.endswith(".txt"),
        )
    with open(out / "pubmed_abstracts_1mb.txt", "w") as fh:
        text = (SHARED / "pubmed-abstracts-1mb/PubMedAbstract_1MB.txt").read_text(encoding="utf-8")
        counts["pubmed-abstracts-1mb"] = sum(_write_doc(fh, [line]) for line in text.splitlines())
    with open(out / "pubmedqa_pqal.txt", "w") as fh:
        data = json.loads((SHARED / "pubmedqa-pqal/ori_pqal.json").read_text(encoding="utf-8"))
        counts["pubmedqa-pqal"] = sum(
            _write_doc(fh, [*v["CONTEXTS"], v.get("LONG_ANSWER", "")]) for v in data.values()
        )
    seen: set[bytes] = set()
    n = dup = 0
    with open(out / "asreview.txt", "w") as fh:
        for path in sorted((SHARED / "asreview-sr-abstracts").rglob("*.csv")):
            with open(path, encoding="utf-8", newline="") as f:
                for row in csv.DictReader(f):
                    abstract = row.get("abstract") or row.get("abstracts") or ""
                    if not abstract.strip():
                        continue
                    key = hashlib.sha1(_collapse(abstract).encode()).digest()
                    if key in seen:
                        dup += 1
                        continue
                    seen.add(key)
                    n += _write_doc(fh, [row.get("title") or "", abstract])
    counts["asreview"] = n
    counts["asreview_duplicate_abstracts_dropped"] = dup
    with (
        open(out / "pubmed_uscbiostats.txt", "w") as fh,
        open(SHARED / "pubmed-uscbiostats-2020/pubmed.csv", newline="") as f,
    ):
        counts["pubmed-uscbiostats"] = sum(_write_doc(fh, [row["abstract"]]) for row in csv.DictReader(f))
    with open(out / "elife.txt", "w") as fh:
        counts["elife"] = _jats_docs(SHARED / "elife-articles/elife_articles_xml.tar.xz", fh)
    with open(out / "plos.txt", "w") as fh:
        counts["plos"] = _jats_docs(SHARED / "plos-starter/allofplos_starter_corpus_xml.tar.xz", fh)
    done.write_text(json.dumps(counts))
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
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
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
        "sources": json.loads((corpus / ".done.json").read_text())
        if (corpus / ".done.json").is_file()
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
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
