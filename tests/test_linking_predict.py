"""``bioelectra predict --linker DIR``: the entities of the linker's type get a concept id, name and score in
JSONL, PubTator's sixth column and BioC's ``identifier`` infon, read back with the ``bioc`` package."""

from __future__ import annotations

import json
from unittest import mock

import pytest
import test_predict
from test_predict import PUBMED, SENTENCE
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DownstreamError
from downstream.linking.dictionary import Dictionary
from downstream.linking.predict import EntityLinker, preferred_concept, written_id
from downstream.linking.saved import save_linker
from downstream.linking.spec import LINKING_DATASETS
from downstream.predict.files import predict_files
from downstream.predict.formats import Document
from downstream.predict.results import DocumentEntities, Entity
from downstream.predict.stream import PredictorSpec, rendered_chunks

# test_predict's fixtures: a tiny NER model trained until it tags SENTENCE's two diseases, one torch thread.
ner_model = test_predict.ner_model
_one_thread = test_predict._one_thread


@pytest.fixture
def linker_dir(tmp_path):
    dictionary = Dictionary()
    for name, ids, readable in [("duchenne muscular dystrophy", ("D020388", "310200"), "Muscular Dystrophy, Duchenne"),
                                ("breast neoplasms", ("D001943",), "Breast Neoplasms"), ("breast cancer", ("D001943",), "Breast Neoplasms"),
                                ("dmd", ("310200",), "Duchenne muscular dystrophy (OMIM)")]:  # fmt: skip
        dictionary.add(name, ids, readable=readable)
    return save_linker(tmp_path / "linker", dictionary, LINKING_DATASETS["ncbi-disease"], {"method": "sparse"}, ngram_range=(1, 2))


def test_best_names_are_searched_once_per_distinct_mention(linker_dir):
    linker = EntityLinker(linker_dir)
    searched = []
    search = linker.linker.search
    linker.linker.search = lambda texts, k: searched.append(list(texts)) or search(texts, k)
    first = linker.best_names(["breast cancers", "dmd x", "breast cancers"])
    again = linker.best_names(["dmd x", "breast cancers"])
    assert searched == [["breast cancers", "dmd x"]]  # the second call found both remembered
    assert first[0] == first[2] == again[1] and linker.dictionary.names[first[0][0]] == "breast cancer"


@pytest.mark.parametrize("dense", [False, True])
def test_a_mention_that_is_a_name_gets_it_unsearched_with_the_score_the_search_gives(linker_dir, dense, tiny_checkpoint):
    """A dictionary name is its own best name under the sparse score and under a dense linker's with normalised
    embeddings (both cosines): best_names gives it without searching, with the exact match's score; the search
    finds the same name with that score (to float rounding). With raw inner products (the biosyn linker's),
    nothing is taken unsearched."""
    linker = EntityLinker(linker_dir)
    if dense:
        from downstream.linking.dense import DenseEncoder, HybridLinker

        encoder = DenseEncoder(str(tiny_checkpoint))
        linker.linker = HybridLinker(encoder, linker.dictionary.names, linker.linker, sparse_weight=0.5)
        assert linker.linker.exact_match_score == 1.5
    texts = ["breast neoplasms", "dmd", "breast cancers"]
    expected = linker.linker.search(texts, 1)
    searched = _searches(linker)
    found = linker.best_names(texts)
    assert searched == [["breast cancers"]]
    assert [i for i, _ in found] == expected[0][:, 0].tolist()
    assert expected[1][:2, 0].tolist() == pytest.approx([found[0][1], found[1][1]], abs=1e-5)
    assert found[0][1] == found[1][1] == linker.linker.exact_match_score
    if dense:
        linker.linker.encoder.normalize = False  # raw inner products: another name may score more
        assert linker.linker.exact_match_score is None
        fresh = EntityLinker(linker_dir)
        fresh.linker = linker.linker
        searched = _searches(fresh)
        fresh.best_names(texts)
        assert searched == [texts]


def _document(doc_id: str, text: str, mentions: list[tuple[str, str]]) -> DocumentEntities:
    """A prediction for ``text`` with an entity at the first occurrence of each ``(mention, type)``."""
    entities = []
    for mention, kind in mentions:
        start = text.index(mention)
        entities.append(Entity(doc_id, start, start + len(mention), mention, kind, 0.9))
    return DocumentEntities(Document(doc_id, text), (), tuple(entities))


def _searches(linker: EntityLinker) -> list[list[str]]:
    """The texts of each search ``linker`` makes from now on."""
    searched = []
    search = linker.linker.search
    linker.linker.search = lambda texts, k: searched.append(list(texts)) or search(texts, k)
    return searched


def test_a_chunk_is_linked_as_its_documents_one_at_a_time(linker_dir):
    """link_many gives each document the entities link gives it alone, with one search for the chunk's new
    mentions (each once); abbreviations are each document's own ("DMD" is the dystrophy where it is defined,
    the OMIM entry's name elsewhere); entities of another type and documents without entities stay as they are."""
    predictions = [
        _document("1", "Duchenne muscular dystrophy (DMD) and breast cancer.",
                  [("Duchenne muscular dystrophy", "Disease"), ("breast cancer", "Disease"), ("DMD", "Disease")]),
        _document("2", "No disease here.", []),
        _document("3", "Cisplatin for breast neoplasms; DMD.", [("Cisplatin", "Chemical"), ("breast neoplasms", "disease"),
                                                                 ("DMD", "Disease")]),
        _document("4", "Breast Cancer again, and x; - too.", [("Breast Cancer", "Disease"), ("x", "Disease"), ("-", "Disease")]),
    ]  # fmt: skip
    one_at_a_time = EntityLinker(linker_dir)
    per_document = [one_at_a_time.link(p) for p in predictions]
    chunk_linker = EntityLinker(linker_dir)
    searched = _searches(chunk_linker)
    per_chunk = chunk_linker.link_many(predictions)
    assert per_chunk == per_document
    assert searched == [["x"]]  # the other mentions are dictionary names: linked unsearched
    ids = [[e.concept_id for e in p.entities] for p in per_chunk]
    assert ids == [["D020388", "D001943", "D020388"], [], [None, "D001943", "OMIM:310200"], ["D001943", None, None]]
    assert per_chunk[1] is predictions[1] and per_chunk[2].entities[0] == predictions[2].entities[0]
    # "x" shares no n-gram with any name (every score 0) and "-" is empty once prepared: neither is linked
    assert per_chunk[3].entities[1:] == predictions[3].entities[1:]
    assert chunk_linker.link_many([]) == [] and len(searched) == 1


def test_predict_links_each_chunk_with_one_search(ner_model, linker_dir, monkeypatch):
    """rendered_chunks (what predict runs) hands the linker each chunk at once, searches a mention once, and
    writes what linking each document alone writes (the look-up of dictionary names turned off: SENTENCE's
    mentions are names)."""
    from downstream.linking.sparse import SparseLinker

    monkeypatch.setattr(SparseLinker, "exact_match_score", None)
    documents = [Document(str(i), SENTENCE) for i in range(6)]
    spec = PredictorSpec(str(ner_model), device="cpu")
    predictor = spec.load()
    linker = EntityLinker(linker_dir)
    calls = []
    link_many = linker.link_many
    linker.link_many = lambda predictions: calls.append(len(predictions)) or link_many(predictions)
    searched = _searches(linker)
    chunks = list(rendered_chunks(spec, documents, output_format="jsonl", chunk_documents=4, predictor=predictor, linker=linker))
    assert calls == [4, 2]
    assert searched == [["duchenne muscular dystrophy", "breast cancer"]]  # the second chunk's were remembered
    alone = EntityLinker(linker_dir)
    expected = [predictor.render(alone.link(p), "jsonl") for p in predictor.predict(documents)]
    assert [text for _, rendered in chunks for text, _ in rendered] == expected
    assert '"concept_id": "D020388"' in expected[0]


def test_a_dense_linkers_encoder_gets_the_cores_while_predict_runs(ner_model, linker_dir):
    """rendered_chunks gives a dense linker's encoder one Python thread a core for its batches of mentions (torch
    runs one thread a forward pass there) and gives back what it had."""
    from types import SimpleNamespace

    spec = PredictorSpec(str(ner_model), device="cpu")
    predictor = spec.load()
    linker = EntityLinker(linker_dir)
    assert linker.threads == 1
    linker.threads = 4  # a sparse linker has no encoder: nothing to give threads to
    assert linker.threads == 1
    linker.linker.encoder = SimpleNamespace(threads=1)  # stands for a dense linker's DenseEncoder
    seen = []
    link_many = linker.link_many
    linker.link_many = lambda predictions: seen.append(linker.threads) or link_many(predictions)
    documents = [Document(str(i), SENTENCE) for i in range(3)]
    with mock.patch("downstream.predict.stream.available_cores", return_value=2):
        list(rendered_chunks(spec, documents, output_format="jsonl", chunk_documents=2, predictor=predictor, linker=linker))
    assert seen == [2, 2] and linker.threads == 1


@pytest.mark.slow
def test_two_workers_link_what_one_links(ner_model, linker_dir, tmp_path, monkeypatch):
    """Worker processes load the linker and link their chunks as this process does; this process lets go of the
    linker it loaded to check the folder (a dense linker's encoder and embeddings are hundreds of MB)."""
    import downstream.predict.files as files

    handed = []
    real = files.rendered_chunks
    monkeypatch.setattr(files, "rendered_chunks", lambda *args, **kwargs: handed.append(kwargs["linker"]) or real(*args, **kwargs))
    monkeypatch.setattr(files, "available_cores", lambda: 2)  # two workers, whatever this machine has
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": SENTENCE}) + "\n" for i in range(6)), encoding="utf-8")
    one = predict_files(ner_model, [corpus], output=tmp_path / "one.jsonl", device="cpu", chunk_documents=2, linker_dir=linker_dir)
    two = predict_files(ner_model, [corpus], output=tmp_path / "two.jsonl", device="cpu", chunk_documents=2, num_workers=2,
                        linker_dir=linker_dir)  # fmt: skip
    assert isinstance(handed[0], EntityLinker) and handed[1] is None  # one process links itself; two workers do
    assert (two.documents, two.predictions) == (one.documents, one.predictions) == (6, 12)
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert (tmp_path / "one.jsonl").read_text().count('"concept_id": "D020388"') == 6


def test_a_name_of_a_mesh_and_an_omim_concept_gives_the_mesh_id(tmp_path):
    """MEDIC gives "colorectal cancer" to OMIM 114500 before MeSH D015179; the corpora annotate it D015179."""
    assert preferred_concept(("114500", "D015179")) == "D015179" and preferred_concept(("C535468", "D1")) == "C535468"
    assert preferred_concept(("310200",)) == "310200"
    dictionary = Dictionary()
    dictionary.add("colorectal cancer", ["114500"], readable="Colorectal cancer (OMIM)")
    dictionary.add("colorectal cancer", ["D015179"], readable="Colorectal Neoplasms")
    folder = save_linker(tmp_path / "l", dictionary, LINKING_DATASETS["ncbi-disease"], {}, ngram_range=(1, 2))
    (linked,) = EntityLinker(folder).link_many([_document("1", "Colorectal cancer.", [("Colorectal cancer", "Disease")])])
    assert (linked.entities[0].concept_id, linked.entities[0].concept_name) == ("D015179", "Colorectal Neoplasms")


def test_written_ids():
    assert (written_id("D001943"), written_id("310200")) == ("D001943", "OMIM:310200")


def test_jsonl_entities_get_their_concepts(ner_model, linker_dir, tmp_path):
    source = tmp_path / "one.txt"
    source.write_text(SENTENCE + "\n", encoding="utf-8")
    summary = predict_files(ner_model, [source], output=tmp_path / "e.jsonl", device="cpu", linker_dir=linker_dir)
    records = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert summary.predictions == 2
    assert [(r["text"], r["concept_id"], r["concept_name"]) for r in records] == [
        ("Duchenne muscular dystrophy", "D020388", "Muscular Dystrophy, Duchenne"), ("breast cancer", "D001943", "Breast Neoplasms")]  # fmt: skip
    assert all(r["concept_score"] == pytest.approx(1.0, abs=1e-5) for r in records)  # exact names: cosine 1 (float32)
    plain = predict_files(ner_model, [source], output=tmp_path / "plain.jsonl", device="cpu")
    assert plain.predictions == 2 and "concept_id" not in (tmp_path / "plain.jsonl").read_text()


def test_a_linker_of_another_type_leaves_entities_alone(ner_model, tmp_path):
    dictionary = Dictionary()
    dictionary.add("cisplatin", ["D002945"])
    folder = save_linker(tmp_path / "chem", dictionary, LINKING_DATASETS["bc5cdr-chemical"], {}, ngram_range=(1, 2))
    assert EntityLinker(folder).entity_type == "Chemical"
    source = tmp_path / "one.txt"
    source.write_text(SENTENCE + "\n", encoding="utf-8")
    predict_files(ner_model, [source], output_format="pubtator", output=tmp_path / "e.pubtator", device="cpu", linker_dir=folder)
    assert [line.split("\t")[5] for line in (tmp_path / "e.pubtator").read_text().splitlines()[2:4]] == ["-", "-"]


def test_pubtator_and_bioc_carry_the_ids_and_read_back(ner_model, linker_dir, tmp_path):
    import bioc
    from bioc import pubtator

    source = tmp_path / "baseline.xml"
    source.write_text(PUBMED, encoding="utf-8")
    predict_files(ner_model, [source], output_format="pubtator", output=tmp_path / "e.pubtator", device="cpu", linker_dir=linker_dir)
    documents = pubtator.loads((tmp_path / "e.pubtator").read_text(encoding="utf-8"))
    ids = {(a.text, a.id) for d in documents for a in d.annotations}
    assert ("Duchenne muscular dystrophy", "D020388") in ids and ("breast cancer", "D001943") in ids
    predict_files(ner_model, [source], output_format="bioc", output=tmp_path / "e.xml", device="cpu", linker_dir=linker_dir)
    with open(tmp_path / "e.xml", encoding="utf-8") as handle:
        collection = bioc.biocxml.load(handle)
    found = {(a.text, a.infons["identifier"], a.infons["identifier_name"]) for d in collection.documents
             for p in d.passages for a in p.annotations}  # fmt: skip
    assert ("breast cancer", "D001943", "Breast Neoplasms") in found
    assert all(0.0 < float(a.infons["identifier_score"]) <= 1.0 + 1e-6 for d in collection.documents for p in d.passages for a in p.annotations)


def test_cli_predict_with_a_linker_and_its_errors(ner_model, linker_dir, tmp_path):
    source = tmp_path / "one.txt"
    source.write_text(SENTENCE + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["predict", "--model", str(ner_model), "--linker", str(linker_dir), "--format", "pubtator",
                                      "--device", "cpu", str(source)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "\tDuchenne muscular dystrophy\tDisease\tD020388\n" in result.output
    out = tmp_path / "never.jsonl"
    with pytest.raises(DownstreamError, match="not a saved linker"):
        predict_files(ner_model, [source], output=out, device="cpu", linker_dir=tmp_path)
    assert not out.exists()


def test_end_to_end_document_level_score(ner_model, linker_dir, tmp_path):
    from downstream.linking.documents import score_files

    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps({"id": "9", "text": "A case.\n" + SENTENCE}) + "\n", encoding="utf-8")
    predict_files(ner_model, [source], output_format="pubtator", output=tmp_path / "p.pubtator", device="cpu", linker_dir=linker_dir)
    text = "A case. " + SENTENCE
    gold = tmp_path / "gold.pubtator"
    rows = [f"9\t{text.index(m)}\t{text.index(m) + len(m)}\t{m}\tDisease\t{cid}"
            for m, cid in [("Duchenne muscular dystrophy", "D020388"), ("breast cancer", "D001943|OMIM:114480")]]  # fmt: skip
    gold.write_text("\n".join(["9|t|A case.", f"9|a|{SENTENCE}", *rows]) + "\n\n")
    scores = score_files(gold, tmp_path / "p.pubtator", entity_type="Disease")
    # gold concepts: D020388, D001943 and OMIM 114480; found: D020388, D001943
    assert (scores["tp"], scores["fp"], scores["fn"]) == (2, 0, 1)
