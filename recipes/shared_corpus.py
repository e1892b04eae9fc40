#!/usr/bin/env python
"""Convert the project's shared pre-training corpus (``../shared/data/corpus``) into ``build-data`` input.

Writes plain-text files, one line per sentence / paragraph and a blank line between documents (the
format of ``bioelectra pretrain build-data``), one file per source, plus ``.prepare_info.json`` with the
document counts and the exclusions. Idempotent: a finished output (``.prepare_info.json`` present with the
same options) is reused; a half-written one never is (files are written to a temporary folder, renamed at
the end).

    python recipes/shared_corpus.py --subset abstracts --output-dir corpus-text/abstracts
    python recipes/shared_corpus.py --subset all --output-dir corpus-text/all --keep-eval-overlap
    python recipes/shared_corpus.py --subset all --output-dir corpus-text/gpu     # PubMedQA left out

Subsets:

- ``abstracts``: the PubMed / MEDLINE title + abstract sources only (SOURCES.md 4a, 4b, 4c, 7d, 7e, 7f):
  OHSUMED single-23 and first-20k-extra (title + one sentence per line), the 1 MB PubMed abstracts (one
  abstract per line), PubMedQA PQA-L (context paragraphs + long answer per PMID), the ASReview CSVs
  (title + abstract; rows without an abstract and repeated abstracts dropped) and the USC PubMed CSV.
- ``all``: also the full-text sources: CRAFT ``articles/txt``, eLife and PLOS JATS XML (article title,
  abstract, body paragraphs and section titles; tables, figures, references, supplementary material left
  out), and the already-extracted plain text of SOURCES.md section 10: Evidence Inference PMC full texts,
  the three SumPubMed BMC shards (lower-cased upstream, numbers masked: pair them with an uncased
  vocabulary) and MedQuAD answers.

``--exclude NAME`` leaves a source out (repeatable). The sources in :data:`BENCHMARK_SOURCES` are left out
by default: PubMedQA PQA-L is a benchmark now (SOURCES.md 9b; ``finetune --loader yesno --dataset
pubmedqa``), so no model evaluated on it may be pre-trained on it. ``--include-benchmark-text`` keeps them,
only to rebuild bioelectra-mini's corpus as it was (it included PQA-L).

Evaluation overlap (SOURCES.md 7.0): the second-round sources were already cleaned when they were copied;
the 13 OHSUMED single-23 documents that overlap NER / RE development or test text and the 30 CRAFT
articles of its shared-task test split are dropped here unless ``--keep-eval-overlap`` is given (the
throughput benchmark keeps them; a model must never be pre-trained on them).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import shutil
import sys
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "data" / "corpus"

#: OHSUMED single-23 documents that overlap benchmark dev/test text (SOURCES.md 7.0, "Note on the
#: pre-existing corpus 4a"): ChemProt test, BC5CDR dev, JNLPBA dev and BC2GM dev/test sentences.
OHSUMED_SINGLE_23_EVAL_OVERLAP = frozenset(
    {
        "0011615", "0019116", "0010377", "0015976", "0010511", "0011477", "0012087",
        "0010187", "0019690", "0005996", "0008251", "0004433", "0006234",
    }
)  # fmt: skip
CRAFT_TEST_IDS_MEMBER = "articles/ids/craft-ids-test.txt"
#: Sources that are evaluation benchmarks now: left out unless ``include_benchmarks`` (SOURCES.md 9b).
BENCHMARK_SOURCES = ("pubmedqa-pqal",)
#: Source names (the keys of ``.prepare_info.json``'s ``documents``) of each subset, for ``--exclude``.
SUBSET_SOURCES = {
    "abstracts": (
        "ohsumed-single-23", "ohsumed-first20k-extra", "pubmed-abstracts-1mb", "pubmedqa-pqal", "asreview",
        "pubmed-uscbiostats",
    ),
    "all": (
        "ohsumed-single-23", "ohsumed-first20k-extra", "pubmed-abstracts-1mb", "pubmedqa-pqal", "asreview",
        "pubmed-uscbiostats", "craft", "elife", "plos", "evidence-inference-pmc", "sumpubmed-bmc", "medquad",
    ),
}  # fmt: skip
#: SOURCES.md section 10: gzip'd plain text already in build-data's format (a blank line between documents).
PLAIN_TEXT_SOURCES = {
    "evidence-inference-pmc": ("evidence-inference-pmc", "evidence_inference_pmc_fulltext.txt.gz"),
    "sumpubmed-bmc": ("sumpubmed-bmc", "sumpubmed_fulltext_*.txt.gz"),
    "medquad": ("medquad", "medquad_answers.txt.gz"),
}
#: The folder of the shared corpus that each source is read from. A folder that no source reads is text this
#: script does not know yet (:func:`unread_folders`): give it a reader here, the way the others were added.
SOURCE_FOLDERS = {
    "ohsumed-single-23": "ohsumed-single-23",
    "ohsumed-first20k-extra": "ohsumed-first20k-extra",
    "pubmed-abstracts-1mb": "pubmed-abstracts-1mb",
    "pubmedqa-pqal": "pubmedqa-pqal",
    "asreview": "asreview-sr-abstracts",
    "pubmed-uscbiostats": "pubmed-uscbiostats-2020",
    "craft": "craft-articles",
    "elife": "elife-articles",
    "plos": "plos-starter",
    **{name: folder for name, (folder, _) in PLAIN_TEXT_SOURCES.items()},
}
#: Each source as a model card names it (what it is, where it came from) and its terms as the source states
#: them (SOURCES.md sections 4, 7 and 10, paraphrased). A model pre-trained on the text inherits them.
SOURCE_TERMS = {
    "ohsumed-single-23": ("OHSUMED single-label subset (Hersh et al., 1994), via `yao8839836/text_gcn`",
                          "MEDLINE records (NLM terms and conditions); OHSUMED is a research test collection"),
    "ohsumed-first20k-extra": ("OHSUMED, rest of the first 20,000 documents, via `walterwang/ohsumed-classification`",
                               "as above"),
    "pubmed-abstracts-1mb": ("PubMed abstract sample (`sy-wada/blue_benchmark_with_transformers`)",
                             "NLM terms, research use"),
    "pubmedqa-pqal": ("PubMedQA PQA-L contexts and long answers (Jin et al., 2019)", "MIT"),
    "asreview": ("ASReview systematic-review datasets (`asreview/systematic-review-datasets`), repeated abstracts dropped",
                 "MEDLINE records (NLM terms); dataset licences per file (CC BY 4.0, CC0, Cohen 2006 custom open licence)"),
    "pubmed-uscbiostats": ("PubMed abstracts, five 2020 searches (`USCbiostats/data-science-data`)", "NLM terms"),
    "craft": ("CRAFT articles from the PubMed Central Open Access subset (`UCDenver-ccp/CRAFT`), without the 30 "
              "shared-task test articles",
              "each article's own notice: a Creative Commons Attribution licence for 61 of the 97, publishers' "
              "open-access notices for the rest"),
    "elife": ("eLife articles (`elifesciences/elife-articles`), JATS XML to text",
              "per article: CC BY 4.0, CC BY 3.0 or CC0 1.0"),
    "plos": ("PLOS starter corpus (`PLOS/allofplos`), JATS XML to text",
             "per article: CC BY (115), CC0 or public domain (6), one WHO article under an open-access statement"),
    "evidence-inference-pmc": ("Evidence Inference's PubMed Central full texts of randomised-trial reports "
                               "(`jayded/evidence-inference`)",
                               "each article under its own PubMed Central Open Access licence"),
    "sumpubmed-bmc": ("SumPubMed BioMed Central full texts, 3 of 15 shards (`vgupta123/sumpubmed`), lower-cased "
                      "and numbers masked upstream",
                      "MIT licence; its README asks for non-commercial academic use: research use only"),
    "medquad": ("MedQuAD answers: NIH consumer-health pages (`abachaa/MedQuAD`)", "CC BY 4.0"),
}  # fmt: skip
_JATS_SKIP = {"table-wrap", "fig", "ref-list", "supplementary-material", "table", "disp-formula", "fn-group"}


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _write_doc(fh, lines) -> int:
    """Write one document (non-empty, whitespace-collapsed lines + a blank line); 1 if written, else 0."""
    lines = [s for s in (_collapse(x) for x in lines) if s]
    if lines:
        fh.write("\n".join(lines) + "\n\n")
    return 1 if lines else 0


def _tar_text_docs(path: Path, fh, member_filter) -> tuple[int, int]:
    """Each selected tar member is one document; returns (written, skipped by the filter)."""
    written = skipped = 0
    with tarfile.open(path) as tar:
        for m in tar:
            if not m.isfile():
                continue
            keep = member_filter(m.name)
            if keep is None:
                continue
            if not keep:
                skipped += 1
                continue
            written += _write_doc(fh, tar.extractfile(m).read().decode("utf-8").splitlines())
    return written, skipped


def _jats_lines(root: ET.Element) -> list[str]:
    lines = []
    title = root.find(".//article-meta/title-group/article-title")
    if title is not None:
        lines.append("".join(title.itertext()))

    def walk(elem: ET.Element) -> None:
        for child in elem:
            if child.tag in _JATS_SKIP:
                continue
            if child.tag in ("p", "title"):
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


def _plain_text_docs(paths: list[Path], fh) -> int:
    """Copy gzip'd blank-line-separated documents, whitespace collapsed per line; returns the count."""
    n = 0
    for path in paths:
        doc: list[str] = []
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    doc.append(line)
                elif doc:
                    n += _write_doc(fh, doc)
                    doc = []
        n += _write_doc(fh, doc)
    return n


def _craft_test_ids(path: Path) -> set[str]:
    with tarfile.open(path) as tar:
        text = tar.extractfile(CRAFT_TEST_IDS_MEMBER).read().decode("utf-8")
    return {line.strip() for line in text.splitlines() if line.strip()}


def unread_folders(corpus: Path) -> list[str]:
    """The folders of ``corpus`` that no source of :data:`SOURCE_FOLDERS` reads (new text), sorted."""
    known = set(SOURCE_FOLDERS.values())
    return sorted(p.name for p in corpus.iterdir() if p.is_dir() and p.name not in known)


def _source_writers(
    corpus: Path, counts: dict[str, int], excluded: dict[str, int], *, exclude_eval_overlap: bool
) -> dict[str, tuple[str, Callable]]:
    """Source name -> (the text file written, the function writing its documents to an open file), in the
    order of :data:`SUBSET_SOURCES`; each writer records its documents in ``counts`` and the ones it drops
    for overlap with evaluation text in ``excluded``."""

    def ohsumed_single(name: str):
        if "/ohsumed_single_23/" not in name:
            return None
        return not (exclude_eval_overlap and name.rsplit("/", 1)[-1] in OHSUMED_SINGLE_23_EVAL_OVERLAP)

    def write_ohsumed_single(fh) -> None:
        counts["ohsumed-single-23"], excluded["ohsumed-single-23"] = _tar_text_docs(
            corpus / SOURCE_FOLDERS["ohsumed-single-23"] / "ohsumed_single_23.tar.gz", fh, ohsumed_single
        )

    def write_ohsumed_extra(fh) -> None:
        counts["ohsumed-first20k-extra"], _ = _tar_text_docs(
            corpus / SOURCE_FOLDERS["ohsumed-first20k-extra"] / "ohsumed_first20k_extra.tar.gz", fh, lambda n: True
        )

    def write_pubmed_1mb(fh) -> None:
        text = (corpus / SOURCE_FOLDERS["pubmed-abstracts-1mb"] / "PubMedAbstract_1MB.txt").read_text(encoding="utf-8")
        counts["pubmed-abstracts-1mb"] = sum(_write_doc(fh, [line]) for line in text.splitlines())

    def write_pubmedqa(fh) -> None:
        data = json.loads((corpus / SOURCE_FOLDERS["pubmedqa-pqal"] / "ori_pqal.json").read_text(encoding="utf-8"))
        counts["pubmedqa-pqal"] = sum(
            _write_doc(fh, [*v["CONTEXTS"], v.get("LONG_ANSWER", "")]) for v in data.values()
        )

    def write_asreview(fh) -> None:
        seen: set[bytes] = set()
        n = dup = 0
        for path in sorted((corpus / SOURCE_FOLDERS["asreview"]).rglob("*.csv")):
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

    def write_usc(fh) -> None:
        with open(corpus / SOURCE_FOLDERS["pubmed-uscbiostats"] / "pubmed.csv", encoding="utf-8", newline="") as f:
            counts["pubmed-uscbiostats"] = sum(_write_doc(fh, [row["abstract"]]) for row in csv.DictReader(f))

    def write_craft(fh) -> None:
        craft = corpus / SOURCE_FOLDERS["craft"] / "craft_articles_txt.tar.gz"
        test_ids = _craft_test_ids(craft) if exclude_eval_overlap else set()

        def craft_member(name: str):
            if not (name.startswith("articles/txt/") and name.endswith(".txt")):
                return None
            return name.rsplit("/", 1)[-1][: -len(".txt")] not in test_ids

        counts["craft"], excluded["craft-test"] = _tar_text_docs(craft, fh, craft_member)

    def write_jats(name: str, archive: str):
        def write(fh) -> None:
            counts[name] = _jats_docs(corpus / SOURCE_FOLDERS[name] / archive, fh)

        return write

    def write_plain(name: str):
        folder, pattern = PLAIN_TEXT_SOURCES[name]

        def write(fh) -> None:
            paths = sorted((corpus / folder).glob(pattern))
            if not paths:
                raise FileNotFoundError(f"{corpus / folder}: no {pattern} (see ../shared/data/SOURCES.md section 10)")
            counts[name] = _plain_text_docs(paths, fh)

        return write

    return {  # source name -> (file written, writer); the order of SUBSET_SOURCES
        "ohsumed-single-23": ("ohsumed_single_23.txt", write_ohsumed_single),
        "ohsumed-first20k-extra": ("ohsumed_first20k_extra.txt", write_ohsumed_extra),
        "pubmed-abstracts-1mb": ("pubmed_abstracts_1mb.txt", write_pubmed_1mb),
        "pubmedqa-pqal": ("pubmedqa_pqal.txt", write_pubmedqa),
        "asreview": ("asreview.txt", write_asreview),
        "pubmed-uscbiostats": ("pubmed_uscbiostats.txt", write_usc),
        "craft": ("craft.txt", write_craft),
        "elife": ("elife.txt", write_jats("elife", "elife_articles_xml.tar.xz")),
        "plos": ("plos.txt", write_jats("plos", "allofplos_starter_corpus_xml.tar.xz")),
        **{name: (name.replace("-", "_") + ".txt", write_plain(name)) for name in PLAIN_TEXT_SOURCES},
    }


def prepare(
    corpus: Path,
    out: Path,
    *,
    subset: str = "abstracts",
    exclude_eval_overlap: bool = True,
    exclude: tuple[str, ...] | list[str] = (),
    include_benchmarks: bool = False,
) -> dict:
    """Write the plain-text corpus under ``out``; returns the summary also saved as ``.prepare_info.json``.

    Args:
        exclude: source names of :data:`SUBSET_SOURCES` to leave out.
        include_benchmarks: keep the :data:`BENCHMARK_SOURCES` (left out by default).

    Raises:
        FileNotFoundError: ``corpus`` (or one of its sources) is missing.
        ValueError: an unknown ``subset``, or an ``exclude`` name that is not a source of the subset.
    """
    if subset not in SUBSET_SOURCES:
        raise ValueError(f"subset {subset!r}: expected 'abstracts' or 'all'")
    unknown = sorted(set(exclude) - set(SUBSET_SOURCES[subset]))
    if unknown:
        raise ValueError(
            f"--exclude {', '.join(unknown)}: not a source of subset {subset!r} "
            f"(expected one of {', '.join(SUBSET_SOURCES[subset])})"
        )
    if not corpus.is_dir():
        raise FileNotFoundError(f"{corpus}: the shared corpus folder is missing (see ../shared/data/SOURCES.md)")
    skip = set(exclude)
    if not include_benchmarks:
        skip |= set(BENCHMARK_SOURCES) & set(SUBSET_SOURCES[subset])
    options = {"subset": subset, "exclude_eval_overlap": exclude_eval_overlap}
    if skip:  # absent when empty, so earlier outputs are still reused
        options["exclude"] = sorted(skip)
    info_file = out / ".prepare_info.json"
    if info_file.is_file() and json.loads(info_file.read_text()).get("options") == options:
        return json.loads(info_file.read_text())
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    counts: dict[str, int] = {}
    excluded: dict[str, int] = {}

    writers = _source_writers(corpus, counts, excluded, exclude_eval_overlap=exclude_eval_overlap)
    for name in SUBSET_SOURCES[subset]:
        if name in skip:
            continue
        file_name, write = writers[name]
        with open(tmp / file_name, "w", encoding="utf-8") as fh:
            write(fh)
    info = {
        "options": options,
        "documents": counts,
        "left_out": sorted(skip),
        "excluded_for_eval_overlap": excluded,
        "bytes": sum(p.stat().st_size for p in tmp.glob("*.txt")),
    }
    (tmp / ".prepare_info.json").write_text(json.dumps(info, indent=2) + "\n")
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return info


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the shared corpus folder")
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--subset", choices=sorted(SUBSET_SOURCES), default="abstracts")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="SOURCE",
        help="leave this source out (repeatable), e.g. pubmedqa-pqal; the names are SUBSET_SOURCES'",
    )
    parser.add_argument(
        "--include-benchmark-text",
        action="store_true",
        help=f"keep {', '.join(BENCHMARK_SOURCES)} (benchmarks now; only to rebuild bioelectra-mini's corpus)",
    )
    parser.add_argument(
        "--keep-eval-overlap",
        action="store_true",
        help="keep the 13 OHSUMED documents overlapping benchmark dev/test text and the CRAFT test articles",
    )
    args = parser.parse_args(argv)
    try:
        info = prepare(
            args.corpus,
            args.output_dir,
            subset=args.subset,
            exclude_eval_overlap=not args.keep_eval_overlap,
            exclude=args.exclude,
            include_benchmarks=args.include_benchmark_text,
        )
    except (FileNotFoundError, ValueError) as exc:
        sys.exit(f"error: {exc}")
    print(json.dumps(info, indent=2))
    for folder in unread_folders(args.corpus):
        print(f"warning: {args.corpus / folder}: no source reads this folder (add one to SOURCE_FOLDERS)", file=sys.stderr)


if __name__ == "__main__":
    main()
