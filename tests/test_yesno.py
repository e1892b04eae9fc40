"""Yes/no QA: PubMedQA and BioASQ readers, PubMedQA's official split, pooled snippets, macro-F1 by hand, and
finetune --loader yesno end to end."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DataFormatError, DatasetUnavailableError
from downstream.yesno.data import (
    cut_by_question,
    find_yesno_files,
    pubmedqa_split,
    read_bioasq_yesno_file,
    read_golden_yesno,
    read_pubmedqa_file,
)
from downstream.yesno.metrics import classification_metrics
from downstream.yesno.task import YesNoTask

runner = CliRunner()


def pubmedqa_records(n: int, seed: int = 0) -> dict:
    """``n`` PubMedQA-style records: answers cycle yes, yes, no, maybe (so every answer is present)."""
    answers = ["yes", "yes", "no", "maybe"]
    return {
        str(10_000 + i): {
            "QUESTION": f"Does drug {i} reduce the risk of stroke?",
            "CONTEXTS": [f"We studied drug {i} in {20 + i} patients.", f"The risk fell by {i % 7} percent."],
            "LABELS": ["METHODS", "RESULTS"],
            "final_decision": answers[(i + seed) % 4],
            "LONG_ANSWER": "Not read.",
        }
        for i in range(n)
    }


def write(path: Path, payload) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_read_pubmedqa_keeps_file_order_and_names_bad_records(tmp_path):
    split = read_pubmedqa_file(write(tmp_path / "ori_pqal.json", pubmedqa_records(5)))
    assert [e.id for e in split.examples] == ["10000", "10001", "10002", "10003", "10004"]
    first = split.examples[0]
    assert first.context == "We studied drug 0 in 20 patients. The risk fell by 0 percent." and first.label == "yes"
    assert "Not read" not in first.context  # the long answer (the conclusion) is not the passage
    bad = pubmedqa_records(2)
    bad["10001"]["final_decision"] = "perhaps"
    with pytest.raises(DataFormatError, match=r"\['10001'\]\.final_decision: expected the answer yes, no or maybe"):
        read_pubmedqa_file(write(tmp_path / "bad.json", bad))
    bad = pubmedqa_records(2)
    bad["10000"]["CONTEXTS"] = "one string"
    with pytest.raises(DataFormatError, match=r"\['10000'\]\.CONTEXTS: expected a list"):
        read_pubmedqa_file(write(tmp_path / "bad2.json", bad))
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(DataFormatError, match="broken.json:1:2: not valid JSON"):
        read_pubmedqa_file(tmp_path / "broken.json")


def test_pubmedqa_split_halves_then_ten_folds_balanced_by_answer(tmp_path):
    split = read_pubmedqa_file(write(tmp_path / "ori_pqal.json", pubmedqa_records(200)))
    parts = pubmedqa_split(split)
    ids = {name: [e.id for e in part.examples] for name, part in parts.items()}
    assert (len(ids["train"]), len(ids["dev"]), len(ids["test"])) == (90, 10, 100)  # 450 / 50 / 500 at 1,000
    assert not (set(ids["train"]) & set(ids["dev"]) or set(ids["train"]) & set(ids["test"]) or set(ids["dev"]) & set(ids["test"]))
    labels = Counter(e.label for e in split.examples)
    test = Counter(e.label for e in parts["test"].examples)
    assert all(abs(test[k] - labels[k] / 2) <= 1 for k in labels)  # each answer split in half
    assert pubmedqa_split(split) == parts  # deterministic
    assert {e.id for e in pubmedqa_split(split, fold=3)["test"].examples} == set(ids["test"])  # the test half never moves
    assert [e.id for e in pubmedqa_split(split, fold=3)["dev"].examples] != ids["dev"]
    with pytest.raises(ValueError, match="expected 0..9"):
        pubmedqa_split(split, fold=10)
    small = read_pubmedqa_file(write(tmp_path / "small.json", pubmedqa_records(60)))
    with pytest.raises(ValueError, match="small.json: 30 questions are too few for PubMedQA's split into 10 balanced parts"):
        pubmedqa_split(small)


def test_pubmedqa_official_split_on_the_real_file(shared_data):
    """The split reproduces pubmedqa/pubmedqa's: its data/test_ground_truth.json lists these 500 PMIDs (checked
    against that file once; the hash pins them), with BLURB's fold 0 as 450 / 50."""
    split = read_pubmedqa_file(shared_data / "corpus" / "pubmedqa-pqal" / "ori_pqal.json")
    parts = pubmedqa_split(split)
    assert {n: p.label_counts() for n, p in parts.items()} == {
        "train": {"yes": 249, "no": 152, "maybe": 49},
        "dev": {"yes": 27, "no": 17, "maybe": 6},
        "test": {"yes": 276, "no": 169, "maybe": 55},
    }
    test_ids = json.dumps(sorted(e.id for e in parts["test"].examples))
    assert hashlib.sha256(test_ids.encode()).hexdigest() == "4c7c872dd09af673564d523d6e9dcb2a4beb75642dcde52edd1ffbe165dd8399"
    assert [e.id for e in parts["dev"].examples][:3] == ["15879722", "12607666", "17593459"]


def bioasq_yesno(folder: Path) -> dict[str, Path]:
    def paragraph(qid: str, context: str, answer: str | None) -> dict:
        qa = {"id": qid, "question": f"is {qid.split('_')[0]} true?"}
        if answer is not None:
            qa.update(answers=answer, is_impossible=answer != "yes")
        return {"context": context, "qas": [qa]}

    train = [paragraph(f"t{i}_{s:03d}", f"snippet {s} of {i}", "yes" if i % 2 else "no") for i in range(10) for s in range(2)]
    test = [paragraph("a_001", "first", None), paragraph("a_002", "second", None), paragraph("b_001", "only", None)]
    golden = {"questions": [{"id": "a", "type": "yesno", "exact_answer": "yes"}, {"id": "b", "type": "yesno", "exact_answer": "no"},
                            {"id": "c", "type": "factoid", "exact_answer": [["x"]]}]}  # fmt: skip
    return {
        "train": write(folder / "BioASQ-train-yesno-7b.json", {"data": [{"paragraphs": train}]}),
        "test": write(folder / "BioASQ-test-yesno-7b.json", {"data": [{"paragraphs": test}]}),
        "golden": write(folder / "7B_golden.json", golden),
    }


def test_bioasq_yesno_reader_golden_answers_and_layout(tmp_path):
    files = bioasq_yesno(tmp_path)
    assert find_yesno_files(tmp_path) == files
    golden = read_golden_yesno(files["golden"])
    assert golden == {"a": "yes", "b": "no"}
    test = read_bioasq_yesno_file(files["test"], golden)
    assert [(e.id, e.question_id, e.label) for e in test.examples] == [("a_001", "a", "yes"), ("a_002", "a", "yes"), ("b_001", "b", "no")]
    assert test.question_labels() == {"a": "yes", "b": "no"}
    with pytest.raises(DataFormatError, match="'a' has no answer in the file nor in the golden file"):
        read_bioasq_yesno_file(files["test"], {})
    train, dev = cut_by_question(read_bioasq_yesno_file(files["train"]), 0.2, seed=1)
    assert len(dev.question_labels()) == 2 and not set(dev.question_labels()) & set(train.question_labels())
    write(tmp_path / "two" / "a.json", {})
    write(tmp_path / "two" / "b.json", {})
    with pytest.raises(DatasetUnavailableError, match="expected train.json .* found a.json, b.json"):
        find_yesno_files(tmp_path / "two")


def test_snippets_of_a_question_are_averaged(tmp_path):
    task = YesNoTask(bioasq_yesno(tmp_path))
    assert task.labels == ["yes", "no"]
    evaluator = task.evaluator("test")
    # snippet a_001 says no (0.6), a_002 says yes strongly (0.9): the mean says yes; b says no
    logits = np.log(np.array([[0.4, 0.6], [0.9, 0.1], [0.2, 0.8]]))
    scalars = evaluator(type("P", (), {"predictions": logits, "label_ids": None})())
    rows = evaluator.last.predictions
    assert [(r["question_id"], r["predicted"], r["examples"]) for r in rows] == [("a", "yes", 2), ("b", "no", 1)]
    assert rows[0]["probabilities"]["yes"] == pytest.approx(0.65)
    assert scalars["accuracy"] == 1.0 and scalars["f1"] == 1.0


def test_macro_f1_by_hand():
    gold = ["yes", "yes", "yes", "no", "no", "maybe"]
    predicted = ["yes", "yes", "no", "no", "yes", "no"]
    m = classification_metrics(gold, predicted, labels=["yes", "no", "maybe"])
    # yes: P 2/3 R 2/3 F1 2/3; no: P 1/3 R 1/2 F1 0.4; maybe: P 0 R 0 F1 0
    assert m["accuracy"] == pytest.approx(3 / 6)
    assert m["f1"] == pytest.approx((2 / 3 + 0.4 + 0) / 3)
    assert m["precision"] == pytest.approx((2 / 3 + 1 / 3 + 0) / 3) and m["recall"] == pytest.approx((2 / 3 + 1 / 2 + 0) / 3)
    assert m["confusion"]["maybe"]["no"] == 1 and m["per_class"]["no"]["support"] == 2


@pytest.mark.slow
def test_finetune_yesno_end_to_end(tmp_path, tiny_checkpoint):
    data = tmp_path / "pubmedqa"
    write(data / "ori_pqal.json", pubmedqa_records(200))
    out = tmp_path / "run"
    result = runner.invoke(app, ["finetune", "--loader", "yesno", "--data-dir", str(data), "--ckpt", str(tiny_checkpoint),
                                 "--max-seq-length", "64", "--trials", "2", "--max-steps", "3", "--batch-size", "8",
                                 "--learning-rate", "1e-3", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "acc, macro-F1 (%)" in result.output
    report = json.loads((out / "results.json").read_text())
    assert report["task"] == "yesno" and report["labels"] == ["yes", "no", "maybe"]
    assert {s: report["counts"][s]["questions"] for s in ("train", "dev", "test")} == {"train": 90, "dev": 10, "test": 100}
    assert "official split" in report["split"]["test"] and report["summary"]["test"]["accuracy"]["n"] == 2
    rows = (out / "trial-0" / "test_predictions.tsv").read_text().splitlines()
    assert rows[0] == "question_id\tgold\tpredicted\tp_yes\tp_no\tp_maybe" and len(rows) == 101
    report_txt = (out / "trial-0" / "classification_report.txt").read_text()
    assert "macro average" in report_txt and "confusion matrix" in report_txt
    assert (out / "trial-0" / "errors.txt").read_text().startswith("wrong answers per (gold -> predicted):")
    card = (out / "trial-0" / "model" / "README.md").read_text()
    assert "Yes/no question answering" in card and "text_pair" in card
    from transformers import AutoTokenizer

    from downstream.classification import ElectraForRelationClassification

    model = ElectraForRelationClassification.from_pretrained(out / "trial-0" / "model")
    tokenizer = AutoTokenizer.from_pretrained(out / "trial-0" / "model")
    logits = model(**tokenizer("Does it work?", "We found it did.", return_tensors="pt")).logits
    assert logits.shape == (1, 3) and model.config.id2label[0] == "yes"
