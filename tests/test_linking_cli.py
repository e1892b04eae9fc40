"""Entity linking from the command line (``finetune --loader linking``) on the hand-made fixture, its
reports and errors file, and the messages for what is wrong."""

from __future__ import annotations

import json

import numpy as np
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.linking.dictionary import Dictionary
from downstream.linking.preprocess import Query
from downstream.linking.run import Linked, link_queries, write_errors
from downstream.linking.saved import load_linker
from downstream.linking.sparse import SparseLinker

TINY = FIXTURES / "linking-tiny"
runner = CliRunner()


def _finetune(tmp_path, tiny_checkpoint, *args):
    out = tmp_path / "run"
    result = runner.invoke(app, ["finetune", "--loader", "linking", "--data-dir", str(TINY), "--ckpt", str(tiny_checkpoint),
                                 "--output-dir", str(out), *args])  # fmt: skip
    return result, out


def test_sparse_linking_run_writes_reports_predictions_and_errors(tmp_path, tiny_checkpoint):
    result, out = _finetune(tmp_path, tiny_checkpoint, "--dataset", "ncbi-disease", "--linker", "sparse")
    assert result.exit_code == 0, result.output
    report = json.loads((out / "results.json").read_text())
    assert report["task"] == "linking" and report["linker"] == "sparse" and report["num_trials"] == 1
    trial = report["trials"][0]
    assert set(trial["dev"]) == {"accuracy_at_1", "accuracy_at_5"}
    assert all(0.0 <= trial[s][m] <= 1.0 for s in ("dev", "test") for m in trial[s])
    assert trial["test"]["accuracy_at_1"] <= trial["test"]["accuracy_at_5"]
    assert report["counts"]["test"]["queries"] == 4 and report["counts"]["dev"]["composite"] == 1
    assert report["published"]["BioSyn (BioBERT)"]["accuracy_at_1"] == 0.911
    predictions = (out / "trial-0" / "test_predictions.tsv").read_text().splitlines()
    assert len(predictions) == 1 + 4 and predictions[0].startswith("pmid\tstart\tend\tmention")
    assert (out / "trial-0" / "errors.tsv").read_text().startswith("pmid\tstart\tend\tmention\tpart\tgold_ids\tgold_names")
    assert "accuracy@1" in (out / "results.md").read_text() or "acc@1" in (out / "results.md").read_text()
    assert "accuracy_at_1" in result.output
    linker, dictionary, card = load_linker(out / "trial-0" / "linker")  # the sparse linker, saved for predict
    assert isinstance(linker, SparseLinker) and card["linker"] == "sparse" and card["entity_type"] == "Disease"
    assert all((out / "trial-0" / "linker" / card["tfidf"][f]).is_file() for f in ("vocabulary", "idf", "name_vectors"))
    indices, _ = linker.search(["ataxia telangiectasia"], 1)
    assert "D001260" in dictionary.concept_ids[indices[0, 0]]


def test_chemicals_use_the_annotated_names_only(tmp_path, tiny_checkpoint):
    result, out = _finetune(tmp_path, tiny_checkpoint, "--dataset", "bc5cdr-chemical")
    assert result.exit_code == 0, result.output
    report = json.loads((out / "results.json").read_text())
    assert "no vocabulary" in report["dictionary"]
    # test: Cisplatin and Lithium carbonate are named in train / dev; nothing is dropped, both are found
    assert report["counts"]["test"]["queries"] == 2 and report["counts"]["test"]["dropped"] == 0
    assert report["trials"][0]["test"]["accuracy_at_1"] == 1.0


def test_errors_file_names_gold_and_predicted_concepts(tmp_path):
    dictionary = Dictionary()
    dictionary.add("tremor", ["D014202"], readable="Tremor")
    dictionary.add("renal failure", ["D051437"], readable="Renal Insufficiency")
    queries = [Query("9", 0, 6, "Tremor", ("tremor",), ("D014202",), "Disease"),
               Query("9", 10, 24, "kidney failure", ("kidney failure",), ("D007674",), "Disease")]  # fmt: skip
    linked = Linked(queries=queries, indices=[[[0, 1]], [[1, 0]]], scores=[[[1.0, 0.1]], [[0.7, 0.2]]], metrics={})
    path = tmp_path / "errors.tsv"
    assert write_errors(path, linked, dictionary) == 1
    row = path.read_text().splitlines()[1].split("\t")
    assert row[3:11] == ["kidney failure", "kidney failure", "D007674", "?", "D051437", "Renal Insufficiency", "renal failure", "0.7000"]


def test_link_queries_links_each_part_of_a_composite():
    dictionary = Dictionary()
    for name, cid in [("breast cancer", "D1"), ("ovarian cancer", "D2"), ("tremor", "D3")]:
        dictionary.add(name, [cid])
    query = Query("1", 0, 5, "breast and ovarian cancer", ("breast cancer", "ovarian cancer"), ("D1", "D2"), "Disease")

    def search(texts, k):  # exact match first, then the rest in order
        rows = [[dictionary.names.index(t)] + [j for j in range(3) if dictionary.names[j] != t] for t in texts]
        return np.array(rows)[:, :k], np.ones((len(texts), k))

    linked = link_queries(search, [query], dictionary, k=2)
    assert linked.indices == [[[0, 1], [1, 0]]] and linked.metrics["accuracy_at_1"] == 1.0


def test_bad_options_and_missing_files_are_clear(tmp_path, tiny_checkpoint):
    result, _ = _finetune(tmp_path, tiny_checkpoint, "--dataset", "ncbi-disease", "--metric", "loss")
    assert result.exit_code != 0 and "expected one of accuracy_at_1, accuracy_at_5" in result.output
    result, _ = _finetune(tmp_path, tiny_checkpoint, "--dataset", "bc2gm")
    assert result.exit_code != 0 and "unknown dataset 'bc2gm'" in result.output and "bc5cdr-chemical" in result.output
    out = tmp_path / "other"
    result = runner.invoke(app, ["finetune", "--loader", "ner", "--dataset", "ncbi-disease", "--linker", "sparse",
                                 "--ckpt", str(tiny_checkpoint), "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code != 0 and "--linker is an option of --loader linking" in result.output
    result = runner.invoke(app, ["finetune", "--loader", "ner", "--dataset", "ncbi-disease", "--train-on", "train+dev",
                                 "--ckpt", str(tiny_checkpoint), "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code != 0 and "--train-on is an option of --loader linking" in result.output
    result, _ = _finetune(tmp_path, tiny_checkpoint, "--dataset", "ncbi-disease", "--train-on", "train+dev")
    assert result.exit_code != 0 and "the sparse linker is not trained" in result.output
    result, _ = _finetune(tmp_path, tiny_checkpoint, "--dataset", "ncbi-disease", "--train-on", "dev")
    assert result.exit_code != 0 and "--train-on" in result.output and "'train+dev'" in " ".join(result.output.split())
    result = runner.invoke(app, ["finetune", "--loader", "linking", "--dataset", "bc5cdr-disease", "--data-dir", str(tmp_path),
                                 "--ckpt", str(tiny_checkpoint), "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code != 0 and "missing" in result.output and "CDR_TrainingSet.PubTator.txt" in result.output
    assert not out.exists()  # nothing written before the inputs are known good


def test_the_command_line_choices_are_the_linking_kinds_own():
    from bioelectra.cli.finetune import Linker, TrainOn
    from downstream.linking.task import LINKERS, TRAIN_ON

    assert tuple(m.value for m in Linker) == LINKERS and tuple(m.value for m in TrainOn) == TRAIN_ON


def test_an_output_dir_that_is_a_file_is_refused_before_anything_runs(tmp_path, tiny_checkpoint):
    out = tmp_path / "results.txt"
    out.write_text("kept\n")
    result = runner.invoke(app, ["finetune", "--loader", "linking", "--dataset", "ncbi-disease", "--data-dir", str(TINY),
                                 "--ckpt", str(tiny_checkpoint), "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code != 0 and "exists and is a file, not a folder" in " ".join(result.output.split())
    assert out.read_text() == "kept\n"
