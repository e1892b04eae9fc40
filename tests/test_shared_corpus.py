"""recipes/shared_corpus.py on the real shared corpus: counts, eval-overlap exclusions, atomic output."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "recipes"))
import shared_corpus  # noqa: E402


@pytest.mark.shared_data
def test_abstracts_subset_drops_the_eval_overlapping_documents(shared_data, tmp_path):
    out = tmp_path / "abstracts"
    info = shared_corpus.prepare(shared_data / "corpus", out, subset="abstracts")
    docs = info["documents"]
    # SOURCES.md: 7,400 OHSUMED single-23 documents, 13 of them overlapping dev/test text (section 7.0)
    assert docs["ohsumed-single-23"] == 7400 - 13
    assert info["excluded_for_eval_overlap"] == {"ohsumed-single-23": 13}
    assert docs["ohsumed-first20k-extra"] == 6523 and "pubmedqa-pqal" not in docs  # a benchmark: left out
    assert info["left_out"] == ["pubmedqa-pqal"] and "pubmedqa_pqal.txt" not in {p.name for p in out.iterdir()}
    assert docs["pubmed-abstracts-1mb"] == 725 and docs["pubmed-uscbiostats"] == 3240
    text = (out / "ohsumed_single_23.txt").read_text()
    assert text.count("\n\n") == docs["ohsumed-single-23"]  # one blank line after each document
    assert "craft.txt" not in {p.name for p in out.iterdir()}  # full text only in --subset all
    assert json.loads((out / ".prepare_info.json").read_text()) == info
    assert not (tmp_path / "abstracts.tmp").exists()
    # the same options again reuse the finished output; keeping the overlap rebuilds it
    assert shared_corpus.prepare(shared_data / "corpus", out, subset="abstracts") == info
    kept = shared_corpus.prepare(shared_data / "corpus", out, subset="abstracts", exclude_eval_overlap=False)
    assert kept["documents"]["ohsumed-single-23"] == 7400 and kept["excluded_for_eval_overlap"] == {"ohsumed-single-23": 0}
    # bioelectra-mini's corpus, as it was built: with the PubMedQA abstracts
    mini = shared_corpus.prepare(shared_data / "corpus", out, subset="abstracts", include_benchmarks=True)
    assert mini["documents"]["pubmedqa-pqal"] == 1000 and mini["left_out"] == []


def test_missing_corpus_and_unknown_subset_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="shared corpus folder is missing"):
        shared_corpus.prepare(tmp_path / "nope", tmp_path / "out")
    with pytest.raises(ValueError, match="expected 'abstracts' or 'all'"):
        shared_corpus.prepare(tmp_path, tmp_path / "out", subset="everything")


@pytest.mark.shared_data
def test_craft_test_split_is_read_from_the_archive(shared_data):
    ids = shared_corpus._craft_test_ids(shared_data / "corpus" / "craft-articles" / "craft_articles_txt.tar.gz")
    assert len(ids) == 30 and all(i.isdigit() for i in ids)  # SOURCES.md 7c: 60 / 7 / 30 PMIDs


def test_exclude_names_must_be_sources_of_the_subset(tmp_path):
    with pytest.raises(ValueError, match="--exclude craft: not a source of subset 'abstracts'"):
        shared_corpus.prepare(tmp_path, tmp_path / "out", subset="abstracts", exclude=["craft"])


@pytest.mark.shared_data
@pytest.mark.slow
def test_all_subset_with_the_section_10_text_and_without_pubmedqa(shared_data, tmp_path):
    """The pre-training text of recipes/bioelectra-small: everything but PubMedQA (a benchmark now)."""
    out = tmp_path / "gpu"
    info = shared_corpus.prepare(shared_data / "corpus", out, subset="all", exclude=["pubmedqa-pqal"])
    docs = info["documents"]
    # SOURCES.md section 10: 4,469 Evidence Inference articles, 6,000 SumPubMed articles, 5,483 MedQuAD pages
    assert (docs["evidence-inference-pmc"], docs["sumpubmed-bmc"], docs["medquad"]) == (4469, 6000, 5483)
    assert "pubmedqa-pqal" not in docs and not (out / "pubmedqa_pqal.txt").exists()
    assert info["left_out"] == ["pubmedqa-pqal"] and info["options"]["exclude"] == ["pubmedqa-pqal"]
    assert docs["ohsumed-single-23"] == 7400 - 13 and info["excluded_for_eval_overlap"]["craft-test"] == 30
    text = (out / "medquad.txt").read_text()
    assert text.count("\n\n") == docs["medquad"] and "\n\n\n" not in text


def test_a_corpus_folder_no_source_reads_is_named(tmp_path):
    """New text in ../shared/data/corpus must not be left out silently (issue 14: all of the corpus)."""
    assert set(shared_corpus.SUBSET_SOURCES["all"]) == set(shared_corpus.SOURCE_FOLDERS) == set(shared_corpus.SOURCE_TERMS)
    for folder in shared_corpus.SOURCE_FOLDERS.values():
        (tmp_path / folder).mkdir(exist_ok=True)
    (tmp_path / "SOURCES.md").write_text("a file, not a source")
    assert shared_corpus.unread_folders(tmp_path) == []
    (tmp_path / "pmc-oa-2026").mkdir()
    assert shared_corpus.unread_folders(tmp_path) == ["pmc-oa-2026"]


@pytest.mark.shared_data
def test_every_folder_of_the_shared_corpus_has_a_reader(shared_data):
    assert shared_corpus.unread_folders(shared_data / "corpus") == []
