"""MRQA shared-task files in the QA kind, SQuAD 1.1 / 2.0 told apart by the file, and MRQA's scoring (SQuAD's
normalisation, max over a question's ``answers``) on hand-made fixtures."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import FIXTURES

from downstream.errors import DataFormatError
from downstream.qa.data import read_squad_file
from downstream.qa.metrics import squad_metrics
from downstream.qa.mrqa import read_mrqa_file, read_qa_file
from downstream.qa.task import QaTask, find_qa_files

MRQA = FIXTURES / "mrqa-tiny"


def test_read_mrqa_fixture_header_skipped_inclusive_spans():
    split = read_mrqa_file(MRQA / "train.jsonl")
    assert [e.id for e in split.examples] == ["q1", "q2", "q3", "q4", "q5", "q6", "q7"] and not split.version_2
    london = split.examples[0]
    assert london.answers == [("London", 31)] and london.context[31:37] == "London"  # char_spans [[31, 36]]: end inclusive
    assert split.examples[1].gold_texts == ["the North Sea", "North Sea"]  # scored on the question's "answers"
    assert split.examples[1].answers == [("the North Sea", 50)]  # trained on the detected span
    assert len(split.document_ids) == 4  # one document per context line
    assert len(read_mrqa_file(MRQA / "dev.jsonl").questions()) == 3


def test_mrqa_gz_and_dispatch_by_name(tmp_path):
    gz = tmp_path / "dev.jsonl.gz"
    gz.write_bytes(gzip.compress((MRQA / "dev.jsonl").read_bytes()))
    assert [e.id for e in read_qa_file(gz).examples] == ["q101", "q102", "q103"]
    squad = tmp_path / "dev.json"
    squad.write_text(json.dumps({"data": [{"paragraphs": [{"context": "ab cd", "qas": [
        {"id": "x", "question": "?", "answers": [{"text": "cd", "answer_start": 3}]}]}]}]}))  # fmt: skip
    assert read_qa_file(squad).examples[0].answers == [("cd", 3)]


def _line(**qa) -> str:
    return json.dumps({"context": "The cat sat.", "qas": [qa]})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"context": "The cat sat.", "qas": [', r"bad.jsonl:2: not valid JSON .*expected one MRQA object per line"),
        (_line(question="Who?", detected_answers=[{"text": "cat", "char_spans": [[4, 6]]}]), r"bad.jsonl: line 2: qas\[0\]: missing field 'qid'"),
        (_line(qid="a", question="Who?", detected_answers=[{"text": "cat", "char_spans": [[4, 12]]}]),
         r"line 2: qas\[0\].detected_answers\[0\].char_spans\[0\]: expected \[start, end\] with 0 <= start <= end < 12"),
        (_line(qid="a", question="Who?", detected_answers=[]), r"line 2: qas\[0\].detected_answers: empty"),
        (_line(qid="a", question="Who?", detected_answers=[{"text": "cat", "char_spans": [4, 6]}]), r"char_spans\[0\]: expected \[start, end\]"),
    ],
)
def test_bad_mrqa_lines_name_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"header": {"dataset": "x", "split": "dev"}}\n' + line + "\n")
    with pytest.raises(DataFormatError, match=message):
        read_mrqa_file(path)


def test_mrqa_without_questions_or_with_a_duplicate_qid(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text('{"header": {"dataset": "x"}}\n')
    with pytest.raises(DataFormatError, match="no questions found"):
        read_mrqa_file(path)
    qa = {"qid": "a", "question": "Who?", "detected_answers": [{"text": "cat", "char_spans": [[4, 6]]}]}
    path.write_text(_line(**qa) + "\n" + _line(**qa) + "\n")
    with pytest.raises(DataFormatError, match="line 2: qas\\[0\\]: duplicate qid 'a' \\(first at line 1: qas\\[0\\]\\)"):
        read_mrqa_file(path)


@pytest.mark.parametrize(
    ("version", "impossible", "expected"),
    [("1.1", False, False), ("v2.0", False, True), (None, True, True), (None, False, False)],
)
def test_squad_version_by_the_file(tmp_path, version, impossible, expected):
    """SQuAD 2.0 when the file's ``version`` says so or any question is ``is_impossible`` (the original's
    ``squad`` task is 2.0 by name; here the file decides, so a 1.1 file under that name is scored as 1.1)."""
    qas = [{"id": "a", "question": "Who?", "answers": [{"text": "cat", "answer_start": 4}]}]
    if impossible:
        qas.append({"id": "b", "question": "Why?", "answers": [], "is_impossible": True})
    root = {"data": [{"title": "t", "paragraphs": [{"context": "The cat sat.", "qas": qas}]}]}
    if version:
        root["version"] = version
    (tmp_path / "dev.json").write_text(json.dumps(root))
    assert read_squad_file(tmp_path / "dev.json").version_2 is expected


def test_mrqa_scoring_as_the_official_script():
    """``mrqa_official_eval.py``: SQuAD's normalisation, max over the question's answers, mean over questions.
    q101 "Black Sea" vs ["the Black Sea", "Black Sea"]: EM 1, F1 1; q102 "Budapest" vs ["Vienna"]: 0, 0;
    q103 "in 1850" vs ["1850"]: EM 0, F1 2PR/(P+R) with P 1/2, R 1 = 2/3. Means: EM 1/3, F1 5/9."""
    split = read_mrqa_file(MRQA / "dev.jsonl")
    m = squad_metrics(split.gold(), {"q101": "Black Sea", "q102": "Budapest", "q103": "in 1850"})
    assert m["exact_match"] == pytest.approx(1 / 3) and m["f1"] == pytest.approx(5 / 9) and m["num_questions"] == 3


def test_mrqa_folder_in_the_qa_kind(wordpiece_tokenizer):
    files = find_qa_files(MRQA)
    assert files["train"].name == "train.jsonl" and files["dev"] == files["test"] == MRQA / "dev.jsonl"
    task = QaTask(files, doc_stride=16, max_query_length=16)
    assert "test is the dev file dev.jsonl" in task.counts()["test"]["note"]
    task.encode(wordpiece_tokenizer, max_seq_length=64)
    assert len(task.dataset("train")) >= 7 and len(task.dataset("test")) == len(task.dataset("dev"))
