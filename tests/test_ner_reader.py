"""Readers of the NER formats, their errors, IOB1 repair and the label set."""

import gzip
import logging

import pytest
from conftest import FIXTURES, write_lines

from downstream.errors import DataFormatError
from downstream.ner.data import build_label_list, parse_tag, read_ner_file


def test_biobert_tsv(tmp_path):
    split = read_ner_file(FIXTURES / "ner-tiny" / "train.tsv")
    assert len(split.sentences) == 4
    assert split.sentences[0].words == ("Familial", "adenomatous", "polyposis", "is", "rare", ".")
    assert split.sentences[0].tags == ("B", "I", "I", "O", "O", "O")
    assert split.sentences[1].line == 8
    assert split.num_words == 21
    assert split.num_entities == 4
    assert split.num_repairs == 0


def test_typed_iob2_several_types(tmp_path):
    path = write_lines(
        tmp_path / "typed.tsv",
        ["Aspirin\tB-Chemical", "causes\tO", "Reye\tB-Disease", "syndrome\tI-Disease", "", "x\tO"],
    )
    split = read_ner_file(path)
    assert [s.tags for s in split.sentences] == [("B-Chemical", "O", "B-Disease", "I-Disease"), ("O",)]
    assert build_label_list([split]) == ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]


def test_conll_several_columns_token_first_tag_last(tmp_path):
    path = write_lines(tmp_path / "c.conll", ["IL-2\tNN\tB-NP\tB-protein", "gene\tNN\tI-NP\tI-protein", "expression\tNN\tI-NP\tO"])
    split = read_ner_file(path)
    assert split.sentences[0].words == ("IL-2", "gene", "expression")
    assert split.sentences[0].tags == ("B-protein", "I-protein", "O")


def test_docstart_crlf_and_missing_final_blank_line(tmp_path):
    lines = ["-DOCSTART-\tO", "", "Cancer\tB", "risk\tO", "", "-DOCSTART-\tO", "", "Gout\tB", "flares\tO"]
    path = write_lines(tmp_path / "crlf.tsv", lines, newline="\r\n", final_newline=False)
    split = read_ner_file(path)
    assert [s.words for s in split.sentences] == [("Cancer", "risk"), ("Gout", "flares")]
    assert [s.tags for s in split.sentences] == [("B", "O"), ("B", "O")]
    assert not any(w.endswith("\r") or t.endswith("\r") for s in split.sentences for w, t in zip(s.words, s.tags, strict=False))
    assert split.num_documents == 2


def test_gzip_file_reads_the_same(tmp_path):
    plain = FIXTURES / "ner-tiny" / "test.tsv"
    packed = tmp_path / "test.tsv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_ner_file(packed).sentences == read_ner_file(plain).sentences


@pytest.mark.parametrize(
    ("lines", "line_no", "fragment"),
    [
        (["ok\tO", "no-tab-here"], 2, "expected 'token<TAB>tag'"),
        (["ok\tO", "\tB"], 2, "empty token"),
        (["ok\tO", "word\tX-Disease"], 2, "is not O, B, I"),
        (["word\tO-Disease"], 1, "is not O, B, I"),
        (["word\tb"], 1, "is not O, B, I"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, lines, line_no, fragment):
    path = write_lines(tmp_path / "bad.tsv", lines)
    with pytest.raises(DataFormatError) as info:
        read_ner_file(path)
    message = str(info.value)
    assert f"{path}:{line_no}:" in message
    assert fragment in message


def test_empty_split_is_an_error(tmp_path):
    path = write_lines(tmp_path / "empty.tsv", ["", "-DOCSTART-\tO", ""])
    with pytest.raises(DataFormatError, match="no sentences"):
        read_ner_file(path)


def test_iob1_is_repaired_and_counted(tmp_path, caplog):
    # I after O, I at sentence start, I after a different type: three repairs; I-x after B-x is fine.
    lines = ["a\tO", "b\tI-Disease", "c\tI-Disease", "", "d\tI", "e\tO", "", "f\tB-Chemical", "g\tI-Disease"]
    path = write_lines(tmp_path / "iob1.tsv", lines)
    with caplog.at_level(logging.WARNING):
        split = read_ner_file(path)
    assert [s.tags for s in split.sentences] == [
        ("O", "B-Disease", "I-Disease"),
        ("B", "O"),
        ("B-Chemical", "B-Disease"),
    ]
    assert split.num_repairs == 3
    assert "repaired 3 IOB1 tags" in caplog.text


def test_iob1_rejected_with_flag(tmp_path):
    path = write_lines(tmp_path / "iob1.tsv", ["a\tO", "b\tI-Disease"])
    with pytest.raises(DataFormatError, match=r"iob1\.tsv:2: 'I-Disease' after 'O' is IOB1"):
        read_ner_file(path, iob1_policy="reject")


def test_label_list_is_union_over_splits_in_stable_order(tmp_path):
    a = read_ner_file(write_lines(tmp_path / "a.tsv", ["x\tB-Gene", "y\tO"]))
    b = read_ner_file(write_lines(tmp_path / "b.tsv", ["x\tB-Chemical", "y\tI-Chemical"]))
    assert build_label_list([a, b]) == build_label_list([b, a]) == ["O", "B-Chemical", "I-Chemical", "B-Gene", "I-Gene"]
    untyped = read_ner_file(FIXTURES / "ner-tiny" / "train.tsv")
    assert build_label_list([untyped]) == ["O", "B", "I"]


def test_parse_tag():
    assert parse_tag("O") == ("O", None)
    assert parse_tag("B") == ("B", None)
    assert parse_tag("I-cell_line") == ("I", "cell_line")
    with pytest.raises(ValueError):
        parse_tag("S-Gene")


def test_bare_tags_get_the_entity_type_and_keep_their_spans(tmp_path):
    path = tmp_path / "bare.tsv"
    path.write_text("Duchenne\tB\nmuscular\tI\ndystrophy\tI\nand\tO\ncancer\tB\n\nrare\tO\nI\tI\n\n")
    bare = read_ner_file(path)
    typed = read_ner_file(path, entity_type="Disease")
    assert typed.sentences[0].tags == ("B-Disease", "I-Disease", "I-Disease", "O", "B-Disease")
    # the IOB1 repair acts on the typed tag, as on the bare one
    assert bare.sentences[1].tags == ("O", "B") and typed.sentences[1].tags == ("O", "B-Disease")
    assert typed.num_repairs == bare.num_repairs == 1
    from seqeval.metrics.sequence_labeling import get_entities

    spans = [(s, e) for _, s, e in get_entities([list(t.tags) for t in bare.sentences])]
    assert spans == [(s, e) for _, s, e in get_entities([list(t.tags) for t in typed.sentences])]
    assert build_label_list([typed]) == ["O", "B-Disease", "I-Disease"]


def test_typed_tags_are_read_as_they_are_and_bad_types_refused(tmp_path):
    path = tmp_path / "typed.tsv"
    path.write_text("aspirin\tB-Chemical\nand\tO\ngout\tB\n\n")
    assert read_ner_file(path, entity_type="Disease").sentences[0].tags == ("B-Chemical", "O", "B-Disease")
    for bad in ("", "two words", "-x"):
        with pytest.raises(ValueError, match="entity type"):
            read_ner_file(path, entity_type=bad)


def test_registry_types_and_a_saved_models_labels_decide_the_tags():
    from downstream.ner.task import NerTask
    from downstream.registry import get_spec
    from downstream.settings import FinetuneSettings

    assert get_spec("ncbi-disease").tag_entity_type() == "Disease"
    assert get_spec("bc5cdr-chem").tag_entity_type() == "Chemical"
    assert get_spec("bc2gm").tag_entity_type() == "Gene"
    assert get_spec("s800").tag_entity_type() == "Species"
    assert get_spec("jnlpba").tag_entity_type() == "bio-entity"
    from downstream.ner.types import entity_type_of

    settings = FinetuneSettings(task="ner", checkpoint="x", output_dir="o", dataset="ncbi-disease")
    assert entity_type_of(settings)[0] == "Disease"
    assert entity_type_of(FinetuneSettings(task="ner", checkpoint="x", output_dir="o", data_dir="d"))[0] is None
    assert entity_type_of(FinetuneSettings(task="ner", checkpoint="x", output_dir="o", data_dir="d", entity_type="Gene"))[0] == "Gene"
    # the labels are part of the fingerprint: a run from before typed labels is not reused
    untyped = FinetuneSettings(task="ner", checkpoint="x", output_dir="o", dataset="ncbi-disease", entity_type="Other")
    assert untyped.fingerprint() != settings.fingerprint()

    task = NerTask(NerTask.locate_files(settings), **NerTask.options(settings))
    assert task.labels == ["O", "B-Disease", "I-Disease"]
    entities = task.splits["test"].num_entities
    task.use_labels(["O", "B", "I"])  # a model saved with bare labels: the same entities, bare
    assert task.labels == ["O", "B", "I"] and task.splits["test"].num_entities == entities
    task.use_labels(["O", "I-Disease", "B-Disease"])  # and back, in the model's order
    assert task.labels == ["O", "I-Disease", "B-Disease"]
    with pytest.raises(Exception, match="do not match"):
        task.use_labels(["O", "B-Gene", "I-Gene", "B-Chemical", "I-Chemical"])


def test_iob2_chunks_equal_seqeval_default_mode_on_every_short_sequence():
    """The chunker predict and the error analysis use is the metrics' (seqeval's default mode, conlleval's
    rules): equal to seqeval's own on all 19,607 sequences of 1 to 5 tags over two types and the bare tags."""
    import itertools

    from seqeval.metrics.sequence_labeling import get_entities

    from downstream.ner.data import iob2_chunks

    alphabet = ["O", "B-A", "I-A", "B-B", "I-B", "B", "I"]
    checked = 0
    for n in range(1, 6):
        for tags in itertools.product(alphabet, repeat=n):
            ours = [("_" if kind is None else kind, first, end - 1) for kind, first, end in iob2_chunks(tags)]
            assert ours == get_entities(list(tags)), tags
            checked += 1
    assert checked == 19_607
    assert iob2_chunks(["I-A", "I-A", "B-A", "I-B", "O", "B", "I"]) == [("A", 0, 2), ("A", 2, 3), ("B", 3, 4), (None, 5, 7)]
    with pytest.raises(ValueError, match="S-A"):
        iob2_chunks(["O", "S-A"])
