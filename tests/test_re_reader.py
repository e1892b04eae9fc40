"""Relation extraction readers: the TSV forms, file layouts, the seeded dev cut, labels, and the real files."""

import pytest
from conftest import FIXTURES, write_lines

from downstream.errors import DataFormatError, DatasetUnavailableError
from downstream.relation.data import (
    build_re_label_list,
    cut_dev_split,
    find_re_files,
    list_folds,
    read_re_file,
)
from downstream.relation.ddi import ddi_document_of


def test_bio_electra_chemprot_form():
    split = read_re_file(FIXTURES / "re-chemprot" / "train.tsv")
    assert split.header and len(split.examples) == 24
    first = split.examples[0]
    assert first.sentence.startswith("BC6ENTC increased") and first.label == "CPR:3"
    assert (first.index, first.line) == ("0", 2)  # no index column: the example number; line after the header
    assert any('"control"' in e.sentence for e in split.examples)  # quotes are ordinary characters
    assert set(split.label_counts()) == {"CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "False"}


def test_blurb_form_keeps_the_index_column():
    split = read_re_file(FIXTURES / "re-blurb" / "test.tsv")
    assert split.header and [e.index for e in split.examples[:2]] == ["200", "201"]
    assert split.examples[0].sentence == "@CHEMICAL$ inhibits @GENE$ ." and split.examples[0].label == "CPR:4"


def test_gad_forms_headerless_train_empty_dev_header_test():
    train = read_re_file(FIXTURES / "re-gad" / "1" / "train.tsv")
    assert not train.header and len(train.examples) == 20 and train.examples[0].line == 1
    assert train.examples[0].sentence.startswith('The "null" @GENE$')
    assert read_re_file(FIXTURES / "re-gad" / "1" / "test.tsv").header
    with pytest.raises(DataFormatError, match=r"dev.tsv: empty split"):
        read_re_file(FIXTURES / "re-gad" / "1" / "dev.tsv")
    assert read_re_file(FIXTURES / "re-gad" / "1" / "dev.tsv", allow_empty=True).examples == []


def test_crlf_and_gzip(tmp_path):
    import gzip

    path = write_lines(tmp_path / "t.tsv", ["index\tsentence\tlabel", "7\t@GENE$ and @DISEASE$\t1"], newline="\r\n")
    assert read_re_file(path).examples[0].label == "1"
    gz = tmp_path / "t.tsv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert read_re_file(gz).examples[0].index == "7"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["index\tsentence\tlabel", "0\ta @GENE$\t1", "1\tb @GENE$ 1"], r"bad.tsv:3: expected 'index<TAB>sentence<TAB>label' \(3 tab-separated columns\), got 2 column\(s\)"),
        (["a @GENE$\t1", "b\t@GENE$\t0"], r"bad.tsv:2: expected 'sentence<TAB>label' \(2 tab-separated columns\), got 3"),
        (["a @GENE$\t1", "", "b @GENE$\t0"], r"bad.tsv:2: .* got a blank line"),
        (["sentence\tlabel", "a @GENE$\t"], r"bad.tsv:2: empty label"),
        (["just one column"], r"bad.tsv:1: expected 'sentence<TAB>label' or"),
        (["sentence\tlabel"], r"bad.tsv: empty split"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, lines, message):
    path = write_lines(tmp_path / "bad.tsv", lines)
    with pytest.raises(DataFormatError, match=message):
        read_re_file(path)


def test_find_files_plain_folds_and_errors(tmp_path):
    files = find_re_files(FIXTURES / "re-chemprot")
    assert {k: v.name for k, v in files.items()} == {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    assert list_folds(FIXTURES / "re-gad") == [1, 2]
    with pytest.raises(DatasetUnavailableError, match="--fold K or run all with --folds all"):
        find_re_files(FIXTURES / "re-gad")
    assert find_re_files(FIXTURES / "re-gad", fold=2)["train"].parent.name == "2"
    with pytest.raises(DatasetUnavailableError, match="no fold 3"):
        find_re_files(FIXTURES / "re-gad", fold=3)
    with pytest.raises(DatasetUnavailableError, match="expected train.tsv and test.tsv"):
        find_re_files(tmp_path)
    (tmp_path / "DDICorpus-2013.zip").write_bytes(b"")
    assert find_re_files(tmp_path) == {"ddi_zip": tmp_path / "DDICorpus-2013.zip"}


def test_dev_cut_is_seeded_sized_and_keeps_groups_together():
    examples = read_re_file(FIXTURES / "re-gad" / "1" / "train.tsv").examples
    train, dev = cut_dev_split(examples, fraction=0.2, seed=42)
    assert len(dev) == 4 and len(train) == 16
    assert cut_dev_split(examples, fraction=0.2, seed=42) == (train, dev)
    assert cut_dev_split(examples, fraction=0.2, seed=7)[1] != dev
    assert [e.line for e in train] == sorted(e.line for e in train)  # file order kept
    # grouped (DDI documents): a group is never split
    from downstream.relation.data import ReExample

    grouped = [ReExample("s", "DDI-false", f"DDI-DrugBank.d{d}.s0.p{i}", 0) for d in range(5) for i in range(d + 1)]
    train, dev = cut_dev_split(grouped, fraction=0.2, seed=1, group_of=lambda e: ddi_document_of(e.index))
    dev_docs = {ddi_document_of(e.index) for e in dev}
    assert dev_docs and not dev_docs & {ddi_document_of(e.index) for e in train}
    with pytest.raises(ValueError, match="fraction"):
        cut_dev_split(examples, fraction=1.5, seed=0)


def test_label_list_puts_the_negative_first():
    chem = read_re_file(FIXTURES / "re-chemprot" / "train.tsv")
    assert build_re_label_list([chem]) == ["False", "CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]
    gad = read_re_file(FIXTURES / "re-gad" / "1" / "train.tsv")
    assert build_re_label_list([gad]) == ["0", "1"]


def test_unknown_test_label_is_an_error_with_file_and_line(tmp_path):
    from downstream.relation.task import ReTask

    for name in ("train.tsv", "dev.tsv"):
        (tmp_path / name).write_bytes((FIXTURES / "re-blurb" / name).read_bytes())
    write_lines(tmp_path / "test.tsv", ["index\tsentence\tlabel", "0\t@CHEMICAL$ x @GENE$\tCPR:4", "1\t@CHEMICAL$ y @GENE$\tCPR:5"])
    with pytest.raises(DataFormatError, match=r"test.tsv:3: label 'CPR:5' not among"):
        ReTask(find_re_files(tmp_path))


@pytest.mark.shared_data
def test_real_files_counts(shared_data):
    """The counts of ../shared/data/SOURCES.md section 3."""
    re_dir = shared_data / "re"
    chem = {s: read_re_file(re_dir / "chemprot" / f"{s}.tsv") for s in ("train", "dev", "test")}
    assert {s: len(v.examples) for s, v in chem.items()} == {"train": 16521, "dev": 10361, "test": 14396}
    assert chem["train"].label_counts() == {"CPR:3": 761, "CPR:4": 2251, "CPR:5": 172, "CPR:6": 235, "CPR:9": 713, "False": 12389}
    assert chem["test"].label_counts() == {"CPR:3": 664, "CPR:4": 1658, "CPR:5": 183, "CPR:6": 292, "CPR:9": 644, "False": 10955}
    assert list_folds(re_dir / "gad") == list(range(1, 11))
    for fold, (n_train, n_test) in {1: (4796, 534), 5: (4797, 533), 10: (4798, 532)}.items():
        files = find_re_files(re_dir / "gad", fold=fold)
        assert len(read_re_file(files["train"]).examples) == n_train
        assert len(read_re_file(files["test"]).examples) == n_test
        assert read_re_file(files["dev"], allow_empty=True).examples == []
    assert read_re_file(re_dir / "gad" / "1" / "train.tsv").label_counts() == {"0": 2276, "1": 2520}
