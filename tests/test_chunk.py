"""CoNLL-2000 chunking (a dataset of the NER kind): the three-column reader, dev read from the test file,
conlleval's phrase-level F1 on a hand-counted case, ``--dataset chunk``, and a tiny end-to-end fine-tuning."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DataFormatError, DatasetUnavailableError
from downstream.ner.conll2000 import (
    find_chunk_files,
    find_tagging_files,
    is_conll2000_file,
    read_conll2000_file,
    read_tagging_file,
)
from downstream.ner.metrics import ner_metrics

CHUNK = FIXTURES / "chunk-tiny"
runner = CliRunner()


def test_read_conll2000_fixture():
    split = read_conll2000_file(CHUNK / "train.txt")
    assert len(split.sentences) == 10 and split.num_words == 67
    first = split.sentences[0]
    assert first.words == ("The", "cat", "sat", "on", "the", "mat", ".")
    assert first.tags == ("B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "I-NP", "O") and first.line == 1
    assert split.sentences[1].line == 9  # the line of the sentence's first token, after the blank line
    assert is_conll2000_file(CHUNK / "train.txt")
    assert not is_conll2000_file(FIXTURES / "ner-tiny" / "train.tsv")  # BioBERT TSV goes to the NER reader
    assert read_tagging_file(CHUNK / "test.txt").sentences[0].tags[-2:] == ("B-NP", "O")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("cat NN", r"bad.txt:2: expected 'word POS chunk-tag' \(3 space-separated columns, CoNLL-2000\), got 2 column"),
        ("cat NN B-NP extra", r"bad.txt:2: expected 'word POS chunk-tag'.*got 4 column"),
        ("cat  B-NP", r"bad.txt:2: expected 'word POS chunk-tag'"),  # an empty POS column (two spaces)
        ("cat NN B-XP", r"bad.txt:2: unknown chunk tag 'B-XP'; expected O, B-<type> or I-<type> with <type> one of ADJP"),
        ("cat NN NP", r"bad.txt:2: unknown chunk tag 'NP'"),
        ("cat NN I-VP", r"bad.txt:2: 'I-VP' after 'B-NP' does not continue a VP chunk \(expected IOB2 tags\)"),
    ],
)
def test_bad_lines_name_file_line_and_expectation(tmp_path, line, message):
    path = tmp_path / "bad.txt"
    path.write_text(f"The DT B-NP\n{line}\n\n")
    with pytest.raises(DataFormatError, match=message):
        read_conll2000_file(path)


def test_empty_file_and_i_tag_at_sentence_start(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(DataFormatError, match="no sentences found"):
        read_conll2000_file(tmp_path / "empty.txt")
    (tmp_path / "start.txt").write_text("cat NN I-NP\n")
    with pytest.raises(DataFormatError, match="start.txt:1: 'I-NP' at the start of a sentence"):
        read_conll2000_file(tmp_path / "start.txt")


def test_dev_is_the_test_file_and_the_other_way_round(tmp_path):
    files, notes = find_chunk_files(CHUNK)
    assert files["dev"] == files["test"] == CHUNK / "test.txt" and "dev is the test file test.txt" in notes["dev"]
    original = tmp_path / "chunk"  # the original ELECTRA layout: train.txt and dev.txt (the test set)
    original.mkdir()
    shutil.copy(CHUNK / "train.txt", original / "train.txt")
    shutil.copy(CHUNK / "test.txt", original / "dev.txt")
    files = find_tagging_files(original)
    assert files["test"] == files["dev"] == original / "dev.txt"
    (original / "dev.txt").unlink()
    with pytest.raises(DatasetUnavailableError, match="no test.txt nor dev.txt.*clips.uantwerpen.be"):
        find_tagging_files(original)
    assert find_chunk_files(FIXTURES / "ner-tiny") is None  # not CoNLL-2000: the NER finder's rules


def test_conlleval_phrase_f1_by_hand():
    """Phrases counted by hand, as conlleval counts them (a phrase is right when its type, start and end are):

    A gold: NP(0-1) VP(2) PP(3) NP(4)          = 4;  pred NP(0-1) VP(2) NP(3) NP(4)   = 4, right 3 (NP(3) has the wrong type)
    B gold: NP(0) VP(1-2) ADJP(3)              = 3;  pred NP(0) VP(1) VP(2) ADJP(3)   = 4, right 2 (VP split in two)
    C gold: NP(0-1)                            = 1;  pred I-NP I-NP: conlleval starts a phrase at I-NP = 1, right 1
    Total gold 8, predicted 9, right 6: precision 6/9, recall 6/8, F1 2*6/(9+8) = 12/17.
    Per type: NP gold 4 / pred 5 / right 4; VP 2 / 3 / 1; PP 1 / 0 / 0; ADJP 1 / 1 / 1.
    Tags right: A 5 of 6, B 4 of 5, C 2 of 3: accuracy 11/14.
    """
    gold = [["B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "O"], ["B-NP", "B-VP", "I-VP", "B-ADJP", "O"], ["B-NP", "I-NP", "O"]]
    pred = [["B-NP", "I-NP", "B-VP", "B-NP", "B-NP", "O"], ["B-NP", "B-VP", "B-VP", "B-ADJP", "O"], ["I-NP", "I-NP", "O"]]
    m = ner_metrics(gold, pred)
    assert m["num_gold_entities"] == 8 and m["num_predicted_entities"] == 9
    assert m["precision"] == pytest.approx(6 / 9) and m["recall"] == pytest.approx(6 / 8)
    assert m["f1"] == pytest.approx(12 / 17) and m["accuracy"] == pytest.approx(11 / 14)
    per_type = m["per_type"]
    assert per_type["NP"]["precision"] == pytest.approx(4 / 5) and per_type["NP"]["recall"] == 1.0
    assert per_type["NP"]["f1"] == pytest.approx(8 / 9) and per_type["NP"]["support"] == 4
    assert per_type["VP"]["f1"] == pytest.approx(2 / 5) and per_type["VP"]["support"] == 2
    assert per_type["PP"]["f1"] == 0.0 and per_type["PP"]["support"] == 1
    assert per_type["ADJP"]["f1"] == 1.0
    assert "conlleval" in m["mode"]


def test_dataset_chunk_is_never_downloaded_and_says_where_to_get_it(tmp_path, monkeypatch, tiny_checkpoint):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # not refused for being offline: never downloaded at all
    result = runner.invoke(app, ["finetune", "--dataset", "chunk", "--ckpt", str(tiny_checkpoint), "--output-dir", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    assert "dataset 'chunk'" in output and "train.txt, test.txt" in output and "--data-dir" in output
    assert "clips.uantwerpen.be/conll2000" in output and "nltk" in output.lower()


def test_finetune_chunking_end_to_end(tmp_path, monkeypatch, tiny_checkpoint):
    """``finetune --dataset chunk`` from the cache: a few steps on the tiny model; dev is the test file, said so."""
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    shutil.copytree(CHUNK, tmp_path / "cache" / "datasets" / "chunk")
    out = tmp_path / "run"
    result = runner.invoke(app, ["finetune", "--dataset", "chunk", "--ckpt", str(tiny_checkpoint), "--output-dir", str(out),
                                 "--max-steps", "3", "--batch-size", "4", "--max-seq-length", "32", "--trials", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output[-3000:]
    report = json.loads((out / "results.json").read_text())
    assert report["f1_name"].startswith("phrase-level F1")
    assert "the same file, test.txt" in report["split"]["dev"] and "dev scores are test scores" in report["split"]["dev"]
    assert report["counts"]["dev"]["file"] == report["counts"]["test"]["file"]
    assert {"NP", "VP", "PP"} <= set(report["trials"][0]["test"]["per_type"])  # scored per chunk type
    markdown = (out / "results.md").read_text()
    assert "- Split: dev and test are the same file" in markdown
    assert markdown.startswith("# chunk: Chunking fine-tuning, 1 trial(s)") and "NER" not in markdown.splitlines()[0]
    card = (out / "trial-0" / "model" / "README.md").read_text()
    assert "IOB2 chunk tags of CoNLL-2000" in card
    assert ": chunking fine-tuned from" in card and "name: \"Chunking\"" in card and "named-entity" not in card.lower()


def test_real_conll2000_counts(shared_data):
    folder = shared_data / "chunk" / "conll2000"
    if not (folder / "train.txt").is_file():
        pytest.skip(f"CoNLL-2000 not found at {folder} (see SOURCES.md section 11; not shipped)")
    files = find_tagging_files(folder)
    train, test = read_conll2000_file(files["train"]), read_conll2000_file(files["test"])
    assert (len(train.sentences), train.num_words) == (8936, 211727)  # the shared task's figures
    assert (len(test.sentences), test.num_words) == (2012, 47377)
    assert files["dev"] == files["test"]
