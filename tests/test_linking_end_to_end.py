"""``bioelectra evaluate --loader linking --model NER --linker DIR --dataset NAME``: the test abstracts of a tiny
linking corpus through a tiny NER model and a tiny linker, the PubTator file it writes, the document-level scores
(by hand and as ``score_files`` gives them from that file), the reports, and the messages for what cannot run."""

from __future__ import annotations

import json

import pytest
import test_linking_predict
import test_predict
from test_bad_input import fails_clearly as fails_clearly_in
from test_predict import SENTENCE
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DatasetUnavailableError, DownstreamError
from downstream.linking.dictionary import Dictionary
from downstream.linking.documents import PUBLISHED_DNER, published_figures, score_files
from downstream.linking.end_to_end import evaluate_end_to_end
from downstream.linking.saved import save_linker
from downstream.linking.spec import LINKING_DATASETS, LinkingSpec

# test_predict's tiny NER model (tags SENTENCE's two diseases) and test_linking_predict's tiny Disease linker
ner_model = test_predict.ner_model
re_model = test_predict.re_model
_one_thread = test_predict._one_thread
linker_dir = test_linking_predict.linker_dir

runner = CliRunner()

#: Two abstracts: the first with SENTENCE's two diseases (the model finds both) and a chemical; the second
#: with a disease written as the model's all-O training sentence, which it does not find.
TITLE_1, TITLE_2 = "A case.", "Steroids."
ABSTRACT_2 = "The patient was treated with steroids and later developed no symptoms."


def _annotation(pmid: str, text: str, mention: str, kind: str, ids: str) -> str:
    start = text.index(mention)
    return f"{pmid}\t{start}\t{start + len(mention)}\t{mention}\t{kind}\t{ids}"


def _bc5cdr(root):
    """A BC5CDR-style test corpus under ``root/bc5cdr/`` (the only file the end-to-end run reads)."""
    text_1, text_2 = f"{TITLE_1} {SENTENCE}", f"{TITLE_2} {ABSTRACT_2}"
    lines = [f"11|t|{TITLE_1}", f"11|a|{SENTENCE}",
             _annotation("11", text_1, "Duchenne muscular dystrophy", "Disease", "D020388"),
             _annotation("11", text_1, "breast cancer", "Disease", "D001943|OMIM:114480"),
             _annotation("11", text_1, "patient", "Chemical", "D000001"),  # not a Disease: never scored
             "11\tCID\tD000001\tD001943", "",
             f"22|t|{TITLE_2}", f"22|a|{ABSTRACT_2}", _annotation("22", text_2, "symptoms", "Disease", "D012816"), ""]  # fmt: skip
    (root / "bc5cdr").mkdir(parents=True)
    (root / "bc5cdr" / "CDR_TestSet.PubTator.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "bc5cdr" / "CDR_TestSet.PubTator.txt"


def _evaluate(*args):
    return runner.invoke(app, ["evaluate", *[str(a) for a in args]])


def test_cli_end_to_end_writes_predictions_scores_and_reports(ner_model, linker_dir, tmp_path):
    gold = _bc5cdr(tmp_path / "data")
    out = tmp_path / "run"
    result = _evaluate("--loader", "linking", "--model", ner_model, "--linker", linker_dir, "--dataset", "bc5cdr-disease",
                       "--data-dir", tmp_path / "data", "--output-dir", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    predictions = out / "test_predictions.pubtator"
    lines = predictions.read_text(encoding="utf-8").splitlines()
    # PubTator as predict writes it: the gold title and abstract lines, offsets into title + " " + abstract
    assert lines[:2] == [f"11|t|{TITLE_1}", f"11|a|{SENTENCE}"] and f"22|a|{ABSTRACT_2}" in lines
    assert "11\t39\t66\tDuchenne muscular dystrophy\tDisease\tD020388" in lines
    # by hand: gold {D020388, D001943, OMIM 114480} and {D012816}; found D020388 and D001943 in abstract 11
    report = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert (report["tp"], report["fp"], report["fn"], report["documents"]) == (2, 0, 2, 2)
    assert report["precision"] == 1.0 and report["recall"] == pytest.approx(0.5) and report["f1"] == pytest.approx(2 / 3)
    # the same as documents.score_files gives from the written file
    again = score_files(gold, predictions, entity_type="Disease", dataset="bc5cdr-disease")
    assert {k: report[k] for k in ("precision", "recall", "f1", "tp", "fp", "fn")} == {k: again[k] for k in ("precision", "recall", "f1", "tp", "fp", "fn")}
    assert report["ner_model"] == str(ner_model) and report["linker"] == str(linker_dir) and report["entity_type"] == "Disease"
    assert isinstance(report["seconds"], float) and report["seconds"] >= 0 and report["published"] == published_figures("bc5cdr-disease", "Disease") != {}
    markdown = (out / "results.md").read_text(encoding="utf-8")
    assert "| this run (tp 2, fp 0, fn 2) | document | 100.00 | 50.00 | 66.67 |" in markdown
    assert "| DNorm (CDR_Data_README.txt) | not stated | 81.00 | 80.00 | 81.00 |" in markdown
    assert "CDR_Data_README.txt of the corpus release" in markdown  # the figure's source
    assert not list(out.glob(".*"))  # no temporary file left
    assert "F1 66.67" in " ".join(result.output.split())


def test_ncbi_disease_keeps_its_four_gold_types_and_the_first_abstracts_only(ner_model, linker_dir, tmp_path):
    text = f"{TITLE_1} {SENTENCE}"
    lines = [f"7|t|{TITLE_1}", f"7|a|{SENTENCE}", _annotation("7", text, "Duchenne muscular dystrophy", "SpecificDisease", "D020388"),
             _annotation("7", text, "breast cancer", "Modifier", "D001943"), "",
             f"8|t|{TITLE_2}", f"8|a|{ABSTRACT_2}", ""]  # fmt: skip
    (tmp_path / "ncbi-disease").mkdir()
    (tmp_path / "ncbi-disease" / "NCBItestset_corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = evaluate_end_to_end(ner_model, linker_dir, "ncbi-disease", data_dir=tmp_path, output_dir=tmp_path / "run",
                                  max_eval_examples=1, device="cpu")  # fmt: skip
    assert (results["tp"], results["fp"], results["fn"], results["documents"]) == (2, 0, 0, 1)
    assert results["gold_mention_types"] == "all" and "DNorm (Leaman et al. 2013)" in results["published"]
    assert "**Limited run** (--max-eval-examples 1)" in (tmp_path / "run" / "results.md").read_text(encoding="utf-8")
    assert "8|t|" not in (tmp_path / "run" / "test_predictions.pubtator").read_text(encoding="utf-8")


def test_published_figures_are_sourced_and_keyed_by_dataset_and_type():
    assert set(PUBLISHED_DNER) <= {(name, spec.linked_type) for name, spec in LINKING_DATASETS.items()}
    for figures in PUBLISHED_DNER.values():
        for figure in figures:
            assert figure.source and figure.url.startswith("https://") and 0 < figure.f1 < 1
            if figure.precision is not None:  # F from P and R, to the sources' rounding
                assert 2 * figure.precision * figure.recall / (figure.precision + figure.recall) == pytest.approx(figure.f1, abs=0.006)
    assert published_figures("ncbi-disease")["DNorm (Leaman et al. 2013)"]["document_level"] is True
    assert published_figures("ncbi-disease", "Chemical") == {} and published_figures(None) == {}


def test_cli_refuses_what_cannot_run_end_to_end(ner_model, re_model, linker_dir, tmp_path):
    _bc5cdr(tmp_path / "data")
    data = ["--data-dir", tmp_path / "data", "--output-dir", tmp_path / "never"]

    def refused(*args):
        return fails_clearly_in(app, ["evaluate", *args])

    refused("--loader", "linking", "--model", ner_model, "--dataset", "bc5cdr-disease", *data,
            "--loader linking: evaluate scores a NER model and a linker end to end; give --model NER_MODEL_DIR",
            "and --linker LINKER_DIR (a linking trial's linker/ folder")  # fmt: skip
    refused("--loader", "ner", "--model", ner_model, "--linker", linker_dir, "--dataset", "bc5cdr-disease", *data,
            "--linker is for --loader linking", "--loader ner takes no linker")  # fmt: skip
    refused("--loader", "linking", "--model", re_model, "--linker", linker_dir, "--dataset", "bc5cdr-disease", *data,
            "is a relation classification model; the linking end-to-end evaluation needs a NER model")  # fmt: skip
    chemical = Dictionary()
    chemical.add("cisplatin", ["D002945"])
    chemical_linker = save_linker(tmp_path / "chem", chemical, LINKING_DATASETS["bc5cdr-chemical"], {}, ngram_range=(1, 2))
    refused("--model", ner_model, "--linker", chemical_linker, "--dataset", "bc5cdr-chemical", *data,
            f"--model {ner_model} finds Disease; none is Chemical, the type --linker {chemical_linker} links")  # fmt: skip
    refused("--model", ner_model, "--linker", chemical_linker, "--dataset", "bc5cdr-disease", *data,
            "links Chemical mentions (saved by a run on bc5cdr-chemical), and --dataset bc5cdr-disease scores Disease concepts")  # fmt: skip
    refused("--model", ner_model, "--linker", linker_dir, "--dataset", "ncbi-disease", *data,
            "ncbi-disease: missing", "NCBItestset_corpus.txt")  # fmt: skip
    refused("--model", ner_model, "--linker", linker_dir, "--dataset", "bc5cdr-disease", "--fold", "1", *data,
            "--fold: not read by the linking end-to-end evaluation")  # fmt: skip
    refused("--model", ner_model, "--linker", linker_dir, "--dataset", "nosuch", *data, "unknown dataset 'nosuch'")
    assert not (tmp_path / "never").exists()


def test_a_benchmark_without_a_test_corpus_is_named(ner_model, linker_dir, tmp_path, monkeypatch):
    spec = LINKING_DATASETS["bc5cdr-disease"]
    monkeypatch.setitem(LINKING_DATASETS, "no-test", LinkingSpec(name="no-test", title="t", files={"train": spec.files["train"]},
                                                                 entity_type="Disease", vocabulary=None, typos=None, citation="c"))  # fmt: skip
    with pytest.raises(DownstreamError, match=r"--dataset no-test: no test corpus to score on \(its files: train\)"):
        evaluate_end_to_end(ner_model, linker_dir, "no-test", data_dir=tmp_path, output_dir=tmp_path / "never")
    with pytest.raises(DatasetUnavailableError, match="CDR_TestSet.PubTator.txt"):
        evaluate_end_to_end(ner_model, linker_dir, "bc5cdr-disease", data_dir=tmp_path, output_dir=tmp_path / "never")
    assert not (tmp_path / "never").exists()
