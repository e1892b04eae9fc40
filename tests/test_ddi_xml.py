"""DDI 2013 XML -> sentence-level pair examples, on a hand-made miniature and on the real corpus."""

import zipfile

import pytest
from conftest import make_ddi_zip

from downstream.errors import DataFormatError
from downstream.relation.data import read_re_file
from downstream.relation.ddi import (
    build_ddi_tsvs,
    ddi_examples_from_xml,
    ddi_pair_sentence,
    parse_char_offset,
    read_ddi_zip,
)


def test_char_offsets_are_inclusive_and_may_be_discontinuous():
    assert parse_char_offset("0-6", where="x") == [(0, 7)]
    assert parse_char_offset("0-3;27-35", where="x") == [(0, 4), (27, 36)]
    with pytest.raises(DataFormatError, match="bad charOffset"):
        parse_char_offset("7", where="doc.xml")


def test_pair_sentence_replaces_only_the_targets():
    text = "Aspirin increases the effect of warfarin and heparin."
    assert ddi_pair_sentence(text, (32, 40), (0, 7)) == ("@DRUG$ increases the effect of @DRUG$ and heparin.", False)
    assert ddi_pair_sentence("Synthetic steroidal estrogen x", (0, 28), (0, 19)) == ("@DRUG-DRUG$ x", True)


def test_miniature_corpus(tmp_path):
    splits, stats = read_ddi_zip(make_ddi_zip(tmp_path))
    train = {e.index: e for e in splits["train"].examples}
    test = splits["test"].examples
    assert (stats.documents, stats.pairs) == (3, 14)  # the DrugNER-task test document is not read
    assert stats.untyped_true_pairs == ["DDI-DrugBank.d1.s3.p0"]
    assert len(train) == 10 and len(test) == 3
    assert train["DDI-DrugBank.d1.s0.p0"].sentence == "@DRUG$ increases the effect of @DRUG$ and heparin."
    assert train["DDI-DrugBank.d1.s0.p0"].label == "DDI-effect"
    assert train["DDI-DrugBank.d1.s0.p1"].label == "DDI-false"
    assert train["DDI-DrugBank.d1.s0.p2"].label == "DDI-mechanism"
    # discontinuous "Loop ... diuretics": its first range only
    assert train["DDI-DrugBank.d1.s1.p0"].sentence == "@DRUG$ and @DRUG$ interact with lithium."
    assert train["DDI-DrugBank.d1.s1.p1"].sentence == "@DRUG$ and potassium-sparing diuretics interact with @DRUG$."
    assert (train["DDI-DrugBank.d1.s1.p1"].label, train["DDI-DrugBank.d1.s1.p2"].label) == ("DDI-advise", "DDI-int")
    assert stats.discontinuous_mentions == 2
    # nested mentions
    assert train["DDI-DrugBank.d1.s2.p0"].sentence == '@DRUG-DRUG$ lowers "free" levothyroxine.'
    assert stats.overlapping_pairs == 1
    assert train["DDI-MedLine.d2.s0.p0"].sentence == "@DRUG$ raised @DRUG$ exposure."
    assert [e.label for e in test] == ["DDI-advise", "DDI-advise", "DDI-false"]
    assert test[2].sentence == "Avoid combining cimetidine with @DRUG$ or @DRUG$."
    assert splits["train"].label_counts() == {
        "DDI-advise": 1, "DDI-effect": 2, "DDI-false": 4, "DDI-int": 1, "DDI-mechanism": 2,
    }


def test_built_tsvs_are_cached_and_read_back(tmp_path):
    zip_path = make_ddi_zip(tmp_path / "data")
    files, stats = build_ddi_tsvs(zip_path, tmp_path / "cache")
    assert stats["untyped_true_pairs"] == ["DDI-DrugBank.d1.s3.p0"]
    train = read_re_file(files["train"])
    assert train.header and len(train.examples) == 10 and train.examples[0].index == "DDI-DrugBank.d1.s0.p0"
    mtime = files["train"].stat().st_mtime_ns
    again, _ = build_ddi_tsvs(zip_path, tmp_path / "cache")
    assert again == files and files["train"].stat().st_mtime_ns == mtime


def test_malformed_xml_and_unknown_entity_are_errors(tmp_path):
    with pytest.raises(DataFormatError, match="bad.xml: not well-formed XML"):
        ddi_examples_from_xml(b"<document><sentence>", source="bad.xml")
    xml = b'<document id="d"><sentence id="d.s0" text="a b"><entity id="d.s0.e0" charOffset="0-0" type="drug" text="a"/>' \
          b'<pair id="d.s0.p0" e1="d.s0.e0" e2="d.s0.e9" ddi="false"/></sentence></document>'
    with pytest.raises(DataFormatError, match="pair d.s0.p0 names unknown entity 'd.s0.e9'"):
        ddi_examples_from_xml(xml, source="x.xml")
    not_zip = tmp_path / "DDICorpus-2013.zip"
    not_zip.write_bytes(b"nope")
    with pytest.raises(DataFormatError, match="not a zip file"):
        read_ddi_zip(not_zip)
    empty = tmp_path / "empty.zip"
    zipfile.ZipFile(empty, "w").close()
    with pytest.raises(DataFormatError, match="no pairs under DDICorpus/Train/"):
        read_ddi_zip(empty)


@pytest.mark.shared_data
def test_real_corpus_counts(shared_data):
    """Pair counts of ../shared/data/SOURCES.md 3e (DrugBank + MedLine), minus the one untyped true pair."""
    splits, stats = read_ddi_zip(shared_data / "re" / "ddi" / "DDICorpus-2013.zip")
    assert splits["train"].label_counts() == {
        "DDI-advise": 826, "DDI-effect": 1687, "DDI-false": 23771, "DDI-int": 188, "DDI-mechanism": 1319,
    }
    assert splits["test"].label_counts() == {
        "DDI-advise": 221, "DDI-effect": 360, "DDI-false": 4737, "DDI-int": 96, "DDI-mechanism": 302,
    }
    assert stats.untyped_true_pairs == ["DDI-DrugBank.d236.s29.p0"]
    assert (stats.overlapping_pairs, stats.pairs) == (2, 33508)
    assert all(e.sentence.count("@DRUG$") == 2 or "@DRUG-DRUG$" in e.sentence for e in splits["train"].examples)
