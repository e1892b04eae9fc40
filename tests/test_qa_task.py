"""The extractive QA task kind behind the trial runner: file layouts, windows kept for training, the evaluator
on hand-made logits, BioASQ golden answers and pooling by question, and finetune / evaluate end to end."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DataFormatError, DatasetUnavailableError
from downstream.qa.data import (
    QaExample,
    QaSplit,
    read_golden_factoid,
    read_squad_file,
)
from downstream.qa.spans import (
    NbestAnswer,
    QaPrediction,
    pool_by_question,
)
from downstream.qa.task import QaTask, find_qa_files, qa_metrics

runner = CliRunner()
WORDS = "protein kinase binds receptor cells tumor gene expression mice dose therapy virus infection lung".split()


def squad(articles: list[dict], version: str = "1.1") -> dict:
    return {"version": version, "data": articles}


def article(doc: str, context: str, qas: list[tuple[str, str, str]]) -> dict:
    """A one-paragraph article whose answers are located by their first occurrence in ``context``."""
    return {"title": doc, "paragraphs": [{"context": context, "document_id": doc, "qas": [
        {"id": qid, "question": question, "answers": [{"text": answer, "answer_start": context.index(answer)}]}
        for qid, question, answer in qas
    ]}]}  # fmt: skip


def synthetic_articles(num_docs: int, questions_per_doc: int, seed: int = 0, words: int = 60) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for d in range(num_docs):
        context = " ".join(rng.choice(WORDS) for _ in range(words)) + f" the answer is marker{d} here ."
        qas = [(f"d{d}q{q}", f"what is the answer {q}?", f"marker{d}") for q in range(questions_per_doc)]
        out.append(article(f"doc{d}", context, qas))
    return out


def write(path: Path, payload) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- layouts


def test_find_qa_files_layouts(tmp_path):
    one = write(tmp_path / "one" / "covid.json", squad(synthetic_articles(3, 1)))
    assert find_qa_files(tmp_path / "one") == {"all": one}
    for name in ("train.json", "dev.json", "test.json"):
        write(tmp_path / "three" / name, squad(synthetic_articles(2, 1)))
    assert set(find_qa_files(tmp_path / "three")) == {"train", "dev", "test"}
    write(tmp_path / "two" / "train.json", squad(synthetic_articles(2, 1)))
    with pytest.raises(DatasetUnavailableError, match="not both train.json and test.json"):
        find_qa_files(tmp_path / "two")
    write(tmp_path / "two" / "test.json.gz", {})  # only the name matters here
    assert set(find_qa_files(tmp_path / "two")) == {"train", "test"}
    write(tmp_path / "many" / "a.json", {})
    write(tmp_path / "many" / "b.json", {})
    with pytest.raises(DatasetUnavailableError, match="found 2 JSON files: a.json, b.json"):
        find_qa_files(tmp_path / "many")
    with pytest.raises(DatasetUnavailableError, match="not found"):
        find_qa_files(tmp_path / "nope")


def test_single_file_is_split_by_document_and_train_windows_are_sampled(tmp_path, wordpiece_tokenizer):
    path = write(tmp_path / "all" / "qa.json", squad(synthetic_articles(20, 2, words=120)))
    task = QaTask(find_qa_files(tmp_path / "all"), doc_stride=16, null_window_fraction=0.5, dev_split_seed=3)
    docs = {name: {e.document_id for e in split.examples} for name, split in task.splits.items()}
    assert not (docs["train"] & docs["dev"] or docs["train"] & docs["test"] or docs["dev"] & docs["test"])
    assert sum(len(s.examples) for s in task.splits.values()) == 40
    task.encode(wordpiece_tokenizer, max_seq_length=48)
    train = task.features["train"]
    positive = [i for i in range(len(train)) if train.start_positions[i] != 0]
    null = [i for i in range(len(train)) if train.start_positions[i] == 0]
    assert positive and null
    assert set(positive) <= set(task.train_windows)  # every window holding the answer is trained on
    kept_null = [i for i in task.train_windows if i in set(null)]
    assert len(kept_null) == round(0.5 * len(null))
    assert len(task.dataset("train")) == len(task.train_windows)
    assert len(task.dataset("dev")) == len(task.features["dev"])  # evaluation reads every window
    again = QaTask(find_qa_files(tmp_path / "all"), doc_stride=16, null_window_fraction=0.5, dev_split_seed=3)
    again.encode(wordpiece_tokenizer, max_seq_length=48)
    assert again.train_windows == task.train_windows  # seeded
    counts = task.counts()
    assert counts["source"]["questions_in_file"] == 40 and counts["source"]["relocated_answers"] == 0
    assert counts["train"]["training_windows"] == len(task.train_windows) and "split by document" in counts["dev"]["note"]
    row = task.dataset("train")[0]
    assert {"input_ids", "attention_mask", "start_positions", "end_positions"} <= set(row)
    assert path.is_file()


def test_bad_null_window_fraction_is_refused(tmp_path):
    write(tmp_path / "all" / "qa.json", squad(synthetic_articles(6, 1)))
    with pytest.raises(ValueError, match="null-window-fraction"):
        QaTask(find_qa_files(tmp_path / "all"), null_window_fraction=0.0)


def test_evaluator_turns_logits_into_answers(tmp_path, wordpiece_tokenizer):
    for name in ("train", "dev", "test"):
        write(tmp_path / "d" / f"{name}.json", squad(synthetic_articles(3, 1, seed=len(name))))
    task = QaTask(find_qa_files(tmp_path / "d"))
    task.encode(wordpiece_tokenizer, max_seq_length=128)
    features = task.features["test"]
    width = max(len(ids) for ids in features.input_ids)
    start = np.full((len(features), width), -100.0)
    end = np.full((len(features), width), -100.0)
    for w in range(len(features)):  # the gold span gets the highest logits
        start[w, features.start_positions[w]] = 5.0
        end[w, features.end_positions[w]] = 5.0
    evaluator = task.evaluator("test")
    scalars = evaluator(type("P", (), {"predictions": (start, end), "label_ids": None})())
    assert scalars["exact_match"] == 1.0 and scalars["f1"] == 1.0 and scalars["strict_accuracy"] == 1.0
    assert {p.text for p in evaluator.last.predictions.values()} == {e.answers[0][0] for e in task.splits["test"].examples}
    task.write_predictions(tmp_path / "predictions.json", "test", evaluator.last)
    written = json.loads((tmp_path / "predictions.json").read_text())
    assert written == {q: p.text for q, p in evaluator.last.predictions.items()}
    nbest = json.loads((tmp_path / "nbest_predictions.json").read_text())
    assert all(entries[0]["text"] == written[q] for q, entries in nbest.items())
    with pytest.raises(Exception, match="start and end logits"):
        evaluator(type("P", (), {"predictions": start, "label_ids": None})())


# ------------------------------------------------------------------------------------ BioASQ, pooled


def bioasq_files(folder: Path) -> dict[str, Path]:
    """BioBERT's BioASQ layout: training snippets with answers, test snippets without, golden answers."""
    train = [article(f"t{i}", f"gene number{i} causes disease number{i} in cells .", [(f"q{i:03d}_00{s}", f"what gene {i}?", f"number{i}")])
             for i in range(6) for s in range(2)]  # fmt: skip
    test = {"version": "BioASQ8b", "data": [{"title": "BioASQ8b", "paragraphs": [
        {"context": "BRCA1 and TP53 are mutated .", "qas": [{"id": "x1_001", "question": "which gene?", "answers": []}]},
        {"context": "Often brca1 ( BRCA1 ) is named .", "qas": [{"id": "x1_002", "question": "which gene?", "answers": []}]},
    ]}]}  # fmt: skip
    golden = {"questions": [
        {"id": "x1", "type": "factoid", "exact_answer": [["BRCA1", "breast cancer 1"]]},
        {"id": "y9", "type": "yesno", "exact_answer": "yes"},
    ]}  # fmt: skip
    return {
        "train": write(folder / "BioASQ-train-factoid-7b.json", squad(train)),
        "test": write(folder / "BioASQ-test-factoid-7b.json", test),
        "golden": write(folder / "7B_golden.json", golden),
    }


def test_golden_answers_fill_the_test_file_and_questions_are_pooled(tmp_path):
    files = bioasq_files(tmp_path)
    golden = read_golden_factoid(files["golden"])
    assert golden == {"x1": ["BRCA1", "breast cancer 1"]}  # yes/no questions are not factoid answers
    test = read_squad_file(files["test"], golden=golden)
    assert test.pooled and [e.question_id for e in test.examples] == ["x1", "x1"]
    assert test.gold() == {"x1": ["BRCA1", "breast cancer 1"]} and test.examples[0].answers[0][1] == -1
    with pytest.raises(DataFormatError, match="no answer in the file nor in the golden answers"):
        read_squad_file(files["test"], golden={})
    task = QaTask(files)
    assert {e.question_id for e in task.splits["dev"].examples}.isdisjoint({e.question_id for e in task.splits["train"].examples})
    assert "of its questions" in task.split_notes["dev"]


def test_pooling_merges_snippets_as_biobert_does():
    examples = [QaExample("x1_001", "q", "c", [("BRCA1", -1)], question_id="x1"),
                QaExample("x1_002", "q", "c", [("BRCA1", -1)], question_id="x1")]  # fmt: skip
    split = QaSplit(Path("t.json"), examples, pooled=True)
    predictions = {
        "x1_001": QaPrediction("TP53", 0, [NbestAnswer("TP53", 0, 2.0, 0.5), NbestAnswer("brca1.", 5, 1.0, 0.3), NbestAnswer("", -1, 0, 0.2)]),
        "x1_002": QaPrediction("(BRCA1)", 9, [NbestAnswer("(BRCA1)", 9, 3.0, 0.4), NbestAnswer("x" * 101, 0, 2.0, 0.6)]),
    }  # fmt: skip
    pooled = pool_by_question(split, predictions)
    # "brca1." and "(BRCA1)" clean to one answer, 0.3 + 0.4 = 0.7 beats TP53's 0.5; the empty and the
    # 101-character answers are dropped; the first spelling is kept
    assert [(c.text, round(c.probability, 6)) for c in pooled["x1"].nbest] == [("brca1", 0.7), ("TP53", 0.5)]
    metrics = qa_metrics(split, pooled)
    assert metrics["exact_match"] == 1.0 and metrics["strict_accuracy"] == 1.0 and metrics["mrr"] == 1.0


def test_pooled_evaluator_scores_each_question_once(tmp_path, wordpiece_tokenizer):
    task = QaTask(bioasq_files(tmp_path))
    task.encode(wordpiece_tokenizer, max_seq_length=64)
    features = task.features["test"]
    width = max(len(ids) for ids in features.input_ids)
    start, end = np.zeros((len(features), width)), np.zeros((len(features), width))
    examples = task.splits["test"].examples
    for w in range(len(features)):  # point both snippets at their first "brca1", whatever its case
        context = examples[features.example_index[w]].context
        at = context.lower().index("brca1")
        offsets = features.offset_mapping[w]
        start[w, next(i for i, o in enumerate(offsets) if o is not None and o[0] == at)] = 9.0
        end[w, next(i for i, o in enumerate(offsets) if o is not None and o[1] == at + 5)] = 9.0
    evaluator = task.evaluator("test")
    evaluator(type("P", (), {"predictions": (start, end), "label_ids": None})())
    assert list(evaluator.last.predictions) == ["x1"]
    assert evaluator.last.metrics["num_questions"] == 1 and evaluator.last.metrics["exact_match"] == 1.0


# ------------------------------------------------------------------------------------------ end to end


@pytest.mark.slow
def test_finetune_qa_end_to_end_and_evaluate_reproduces_it(tmp_path, tiny_checkpoint):
    data = tmp_path / "data"
    write(data / "covid.json", squad(synthetic_articles(20, 2, words=40)))
    out = tmp_path / "run"
    common = ["--ckpt", str(tiny_checkpoint), "--max-seq-length", "64", "--doc-stride", "24"]
    result = runner.invoke(app, ["finetune", "--loader", "qa", "--data-dir", str(data), *common, "--trials", "1",
                                 "--max-steps", "4", "--batch-size", "8", "--learning-rate", "1e-3", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "EM, token F1 (%)" in result.output and "test EM" in result.output
    report = json.loads((out / "results.json").read_text())
    assert report["task"] == "qa" and set(report["summary"]["test"]) == {"exact_match", "f1", "strict_accuracy", "lenient_accuracy", "mrr"}
    assert report["qa_settings"]["doc_stride"] == 24 and report["settings"]["max_seq_length"] == 64
    trial = report["trials"][0]
    predictions = json.loads((out / "trial-0" / "predictions.json").read_text())
    assert len(predictions) == report["counts"]["test"]["questions"] == trial["test"]["num_questions"]
    for name in ("classification_report.txt", "errors.txt", "nbest_predictions.json", "model/README.md"):
        assert (out / "trial-0" / name).is_file(), name
    card = (out / "trial-0" / "model" / "README.md").read_text()
    assert 'pipeline_tag: "question-answering"' in card and '--doc-stride 24' in card
    assert "| dev EM | dev F1 |" in (out / "results.md").read_text()

    evaluated = tmp_path / "eval"
    result = runner.invoke(app, ["evaluate", "--model", str(out / "trial-0" / "model"), "--data-dir", str(data),
                                 "--max-seq-length", "64", "--doc-stride", "24", "--output-dir", str(evaluated)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    again = json.loads((evaluated / "results.json").read_text())
    assert again["task"] == "qa"  # from the model's architecture
    assert again["test"]["exact_match"] == pytest.approx(trial["test"]["exact_match"])
    assert again["test"]["f1"] == pytest.approx(trial["test"]["f1"])


def test_qa_options_are_refused_for_other_loaders(tmp_path):
    result = runner.invoke(app, ["finetune", "--loader", "ner", "--dataset", "ncbi-disease", "--doc-stride", "64",
                                 "--output-dir", str(tmp_path / "x")])  # fmt: skip
    assert result.exit_code == 2 and "--doc-stride is for question answering (--loader qa)" in result.output


# ------------------------------------------------------------------------------------------- registry


def test_qa_datasets_are_registered_with_sources(tmp_path, monkeypatch):
    from downstream import dataset_specs, registry

    assert set(dataset_specs.QA_DATASETS) == {"covid-qa", "bioasq-factoid"}
    assert set(dataset_specs.YESNO_DATASETS) == {"pubmedqa", "bioasq-yesno"}
    for name in ("bioasq-factoid", "bioasq-yesno"):
        spec = registry.get_spec(name)
        assert spec.archive_url == dataset_specs.BIOBERT_ARCHIVE_URL and spec.archive_member == "datasets/QA/BioASQ"
        assert set(spec.split_files) == {"train", "test", "golden"}
    for name in ("covid-qa", "pubmedqa"):
        spec = registry.get_spec(name)
        (file_name, url), = spec.files.items()
        assert url.startswith("https://raw.githubusercontent.com/") and len(spec.sha256[file_name]) == 64
    with pytest.raises(Exception, match="is a QA benchmark, not NER"):
        registry.get_spec("covid-qa", task="ner")
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetUnavailableError, match="BioASQ-train-factoid-7b.json, BioASQ-test-factoid-7b.json, 7B_golden.json"):
        registry.locate_dataset_dir("bioasq-factoid", task="qa")
    with pytest.raises(DatasetUnavailableError, match="offline mode"):
        registry.locate_dataset_dir("pubmedqa", task="yesno")
    cached = tmp_path / "datasets" / "bioasq-factoid"  # a cache with one file missing names it
    bioasq_files(cached)
    (cached / "7B_golden.json").unlink()
    settings = type("S", (), {"data_dir": None, "dataset": "bioasq-factoid"})
    with pytest.raises(DatasetUnavailableError, match="missing 7B_golden.json"):
        QaTask.locate_files(settings)
    bioasq_files(cached)
    assert set(QaTask.locate_files(settings)) == {"train", "test", "golden"}


def test_registered_sources_are_the_shared_files(shared_data):
    import hashlib

    from downstream import registry

    for name, path in (("covid-qa", shared_data / "qa" / "covid-qa" / "200423_covidQA.json"),
                       ("pubmedqa", shared_data / "corpus" / "pubmedqa-pqal" / "ori_pqal.json")):  # fmt: skip
        (expected,) = registry.get_spec(name).sha256.values()
        assert hashlib.sha256(path.read_bytes()).hexdigest() == expected


def test_covid_qa_split_and_answer_fixes_on_the_real_file(shared_data, wordpiece_tokenizer):
    task = QaTask(find_qa_files(shared_data / "qa" / "covid-qa"))
    counts = task.counts()
    assert counts["source"]["questions_in_file"] == 1380 and counts["source"]["relocated_answers"] == 234
    assert counts["source"]["dropped_questions"] == 0
    sizes = {name: len(split.examples) for name, split in task.splits.items()}
    assert sum(sizes.values()) == 1380 and abs(sizes["test"] - 138) <= 60 and abs(sizes["dev"] - 138) <= 60
    docs = {name: set(split.document_ids) for name, split in task.splits.items()}
    assert not (docs["train"] & docs["test"] or docs["train"] & docs["dev"] or docs["dev"] & docs["test"])
