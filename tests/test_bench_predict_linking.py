"""bench/predict_linking.py on tiny fixtures: a tiny NER model and a three-name linker over three documents, each
way in a process of its own; the report's keys, and figures that agree with one another and with the outputs."""

from __future__ import annotations

import datetime
import json

import pytest
import test_predict
from conftest import REPO_ROOT, load_script
from test_predict import SENTENCE

# test_predict's tiny NER model (it tags SENTENCE's two diseases)
ner_model = test_predict.ner_model
_one_thread = test_predict._one_thread


@pytest.fixture
def linker_dir(tmp_path):
    """A sparse linker of three names: "duchenne muscular dystrophy" is one (looked up), "breast cancer" is not
    (searched)."""
    from downstream.linking.dictionary import Dictionary
    from downstream.linking.saved import save_linker
    from downstream.linking.spec import LINKING_DATASETS

    dictionary = Dictionary()
    for name, ids in [("duchenne muscular dystrophy", ("D020388",)), ("breast neoplasms", ("D001943",)), ("dmd", ("310200",))]:
        dictionary.add(name, ids)
    return save_linker(tmp_path / "linker", dictionary, LINKING_DATASETS["ncbi-disease"], {"method": "sparse"}, ngram_range=(1, 2))


@pytest.fixture
def dense_linker_dir(linker_dir, tmp_path, tiny_checkpoint):
    """The same names behind a dense linker: the tiny checkpoint's encoder, the names embedded."""
    from downstream.linking.dense import DenseEncoder
    from downstream.linking.saved import load_linker, save_linker
    from downstream.linking.spec import LINKING_DATASETS

    _, dictionary, _ = load_linker(linker_dir)
    encoder = DenseEncoder(str(tiny_checkpoint))
    return save_linker(tmp_path / "dense", dictionary, LINKING_DATASETS["ncbi-disease"], {"method": "dense"}, ngram_range=(1, 2),
                       encoder=encoder, name_embeddings=encoder.embed(dictionary.names))  # fmt: skip


@pytest.fixture(scope="module")
def bench():
    return load_script(REPO_ROOT / "bench" / "predict_linking.py")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_a_dry_run_reports_consistent_figures(bench, ner_model, kind, request, tmp_path):
    linker_dir = request.getfixturevalue("linker_dir" if kind == "sparse" else "dense_linker_dir")
    corpus = tmp_path / "corpus.jsonl"
    texts = [SENTENCE] * 3
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    out = tmp_path / "report.json"
    report = bench.main(["--model", str(ner_model), "--linker", str(linker_dir), "--corpus", str(corpus),
                         "--workdir", str(tmp_path / "work"), "--out", str(out)])  # fmt: skip
    assert json.loads(out.read_text(encoding="utf-8")) == report
    assert {"benchmark", "date", "device", "versions", "model", "linker", "corpus", "workers", "batch_size", "repeats",
            "runs", "documents", "entities", "entities_linked", "seconds_without_linker", "seconds_with_linker",
            "seconds_per_document_without_linker", "seconds_per_document_with_linker", "overhead_percent", "linking",
            "overhead_percent_after_load"} <= set(report)  # fmt: skip
    assert datetime.date.fromisoformat(report["date"]) and report["device"] and report["versions"]["numpy"]
    assert report["linker"]["linker"] == kind and report["linker"]["num_names"] == 3
    # the same documents and entities both ways; SENTENCE's two diseases in each document, all linked
    assert report["documents"] == 3 and report["entities"] == 6 and report["entities_linked"] == 6
    without, with_linker = report["runs"]["without_linker"][0], report["runs"]["with_linker"][0]
    assert (without["entities"], with_linker["entities"], without["entities_linked"]) == (6, 6, 0)
    assert "linking" not in without
    for run in (without, with_linker):  # the garbage collector's time in each run, imports included
        assert 0 < run["gc_seconds"] < run["seconds"] and run["gc_collections"] > 0
    # seconds: per document, the overhead, and the linker's parts within the run with it
    assert report["seconds_without_linker"] == without["seconds"] and report["seconds_with_linker"] == with_linker["seconds"]
    for way in ("without_linker", "with_linker"):
        assert report[f"seconds_per_document_{way}"] == pytest.approx(report[f"seconds_{way}"] / 3, abs=1e-5)
    expected = 100 * (with_linker["seconds"] - without["seconds"]) / without["seconds"]
    assert report["overhead_percent"] == pytest.approx(expected, abs=0.01)
    parts = report["linking"]
    # "duchenne muscular dystrophy" is a name, looked up; "breast cancer" is not, searched; each once
    assert parts["searched_mentions"] == 1 and parts["looked_up_mentions"] == 1
    # the run with the linker wrote the mentions it searched (bench/hybrid_search.py --texts reads them)
    assert json.loads((tmp_path / "work" / "with_linker-0-searched.json").read_text(encoding="utf-8")) == ["breast cancer"]
    assert 0 < parts["load_seconds"] < with_linker["seconds"] and 0 < parts["link_seconds"] < with_linker["seconds"]
    assert 0 < parts["tfidf_transform_seconds"] <= parts["search_seconds"] <= parts["link_seconds"]
    assert 0 < parts["abbreviations_seconds"] <= parts["link_seconds"] - parts["search_seconds"] + 1e-5
    # a dense linker's encoder runs on the mentions inside its search; a sparse linker has none
    embedding = parts["mention_embedding_seconds"]
    assert (0 < embedding <= parts["search_seconds"] - parts["tfidf_transform_seconds"]) if kind == "dense" else embedding == 0
    assert parts["product_and_top1_seconds"] == pytest.approx(
        parts["search_seconds"] - parts["tfidf_transform_seconds"] - embedding, abs=1e-5)
    assert parts["preparation_seconds"] == pytest.approx(
        parts["link_seconds"] - parts["search_seconds"] - parts["abbreviations_seconds"], abs=1e-5)
    assert parts["link_seconds_per_document"] == pytest.approx(parts["link_seconds"] / 3, abs=1e-5)
    assert parts["link_percent_of_without"] == pytest.approx(100 * parts["link_seconds"] / without["seconds"], abs=0.1)
    after_load = 100 * (with_linker["seconds"] - parts["load_seconds"] - without["seconds"]) / without["seconds"]
    assert report["overhead_percent_after_load"] == pytest.approx(after_load, abs=0.1)


def test_bad_options_are_refused_before_anything_runs(bench, tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--model", str(tmp_path), "--linker", str(tmp_path)])
    assert "no linker.json" in capsys.readouterr().err
    (tmp_path / "linker.json").write_text("{}")
    with pytest.raises(SystemExit):
        bench.main(["--model", str(tmp_path), "--linker", str(tmp_path), "--repeats", "0"])
    assert "--repeats 0: expected at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--model", str(tmp_path), "--linker", str(tmp_path), "--corpus", str(tmp_path / "absent.jsonl")])
    assert "absent.jsonl: no such file" in capsys.readouterr().err
