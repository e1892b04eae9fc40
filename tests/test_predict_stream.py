"""``bioelectra predict`` at corpus scale: PubTator and BioC XML read back with the ``bioc`` package, worker
processes, and resuming a killed run (:mod:`downstream.predict.output`, :mod:`downstream.predict.stream`)."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import test_predict
from test_predict import PUBMED, SENTENCE
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DownstreamError
from downstream.predict import files as files_module
from downstream.predict.base import inference_dtype
from downstream.predict.files import predict_files
from downstream.predict.formats import read_documents
from downstream.predict.stream import worker_threads

ROOT = Path(__file__).resolve().parent.parent
# test_predict's fixtures: a tiny NER model trained until it tags SENTENCE, one torch thread.
ner_model = test_predict.ner_model
_one_thread = test_predict._one_thread
OTHER = "Mutations in BRCA1 increase the risk of breast cancer."


def _corpus(path: Path, n: int) -> Path:
    """``n`` JSONL documents, some with entities, some without, of different lengths."""
    lines = []
    for i in range(n):
        text = [SENTENCE, OTHER, "The patient was treated with steroids.", f"Case {i}.\n" + SENTENCE][i % 4]
        lines.append(json.dumps({"id": f"doc{i}", "text": text * (1 + i % 3)}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _jsonl_entities(path: Path) -> list[tuple]:
    return [(r["document"], r["start"], r["end"], r["text"], r["type"]) for r in map(json.loads, path.read_text().splitlines())]


# --- PubTator and BioC XML, read back with the bioc package ---------------------------------------------------


def test_pubtator_read_back_with_bioc(ner_model, tmp_path):
    from bioc import pubtator

    source = tmp_path / "baseline.xml"
    source.write_text(PUBMED, encoding="utf-8")
    predict_files(ner_model, [source], output=tmp_path / "e.jsonl", device="cpu")
    expected = _jsonl_entities(tmp_path / "e.jsonl")
    summary = predict_files(ner_model, [source], output_format="pubtator", output=tmp_path / "e.pubtator", device="cpu")
    text = (tmp_path / "e.pubtator").read_text(encoding="utf-8")
    assert text.startswith("111|t|Duchenne muscular dystrophy in a boy\n111|a|" + SENTENCE + "\n111\t0\t27\tDuchenne muscular dystrophy\tDisease\t-\n")
    assert "\n\n222|t|No abstract here.\n222|a|\n" in text
    documents = pubtator.loads(text)
    assert [d.pmid for d in documents] == ["111", "222"]  # PubMed XML keeps the PMID as the document id
    found = [(a.pmid, a.start, a.end, a.text, a.type) for d in documents for a in d.annotations]
    assert found == expected and summary.predictions == len(expected) >= 3
    by_id = {d.id: d.text for d in read_documents([source])}
    for d in documents:
        assert d.text == by_id[d.pmid]  # title + "\n" + abstract: the offsets are ours
        assert all(d.text[a.start : a.end] == a.text for a in d.annotations)


def test_bioc_xml_read_back_with_bioc(ner_model, tmp_path):
    import bioc

    source = tmp_path / "baseline.xml"
    source.write_text(PUBMED, encoding="utf-8")
    predict_files(ner_model, [source], output=tmp_path / "e.jsonl", device="cpu")
    expected = _jsonl_entities(tmp_path / "e.jsonl")
    predict_files(ner_model, [source], output_format="bioc", output=tmp_path / "e.xml", device="cpu")
    with open(tmp_path / "e.xml", encoding="utf-8") as handle:
        collection = bioc.biocxml.load(handle)
    assert collection.source == "bioelectra predict" and [d.id for d in collection.documents] == ["111", "222"]
    first = collection.documents[0]
    assert [(p.infons["type"], p.offset) for p in first.passages] == [("title", 0), ("abstract", 37)]
    found = []
    for document in collection.documents:
        for passage in document.passages:
            for a in passage.annotations:
                [location] = a.locations
                assert passage.text[location.offset - passage.offset : location.end - passage.offset] == a.text
                assert 0.5 < float(a.infons["score"]) <= 1.0
                found.append((document.id, location.offset, location.end, a.text, a.infons["type"]))
    assert found == expected


def test_cli_pubtator_to_stdout(ner_model, tmp_path):
    source = tmp_path / "one.txt"
    source.write_text(SENTENCE + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["predict", "--model", str(ner_model), "--format", "pubtator", "--device", "cpu", str(source)])
    assert result.exit_code == 0, result.output
    assert f"{source}:1|t|{SENTENCE}\n{source}:1|a|\n{source}:1\t31\t58\tDuchenne muscular dystrophy\tDisease\t-\n" in result.output


# --- worker processes ----------------------------------------------------------------------------------------


def test_worker_threads_and_dtype():
    import torch

    assert [worker_threads(n, cores=2) for n in (1, 2, 3)] == [2, 1, 1]
    assert worker_threads(2, cores=16) == 8
    assert inference_dtype(torch.device("cpu")) == torch.float32
    assert inference_dtype(torch.device("cuda")) == torch.bfloat16  # the choice only: no GPU needed


def test_forward_passes_on_two_threads_give_what_one_gives_and_torch_threads_come_back(ner_model):
    import threading

    import torch

    from downstream.predict.predictor import load_predictor
    from downstream.predict.stream import PredictorSpec, rendered_chunks, share_cores

    documents = [f"{SENTENCE} Case {i}: {OTHER}" for i in range(12)]
    predictor = load_predictor(ner_model, device="cpu", batch_size=2)  # many batches a chunk
    alone = list(predictor.predict_entities(documents))
    seen: dict[int, int] = {}
    forward = predictor._forward
    both = threading.Barrier(2, timeout=30)  # each thread's first batch waits for the other's: both take a batch

    def recorded(rows):
        first = threading.get_ident() not in seen
        seen[threading.get_ident()] = torch.get_num_threads()
        if first:
            both.wait()
        return forward(rows)

    predictor._forward = recorded
    before = torch.get_num_threads()
    share_cores(predictor, 2)
    try:
        assert predictor.forward_threads == 2 and torch.get_num_threads() == 1
        assert list(predictor.predict_entities(documents)) == alone
        assert len(seen) == 2 and set(seen.values()) == {1}  # two threads, one torch thread each
        predictor._forward = forward
        predictor.forward_threads = 3  # the pool follows a new count
        assert list(predictor.predict_entities(documents)) == alone and predictor._pool[0] == 3
    finally:
        torch.set_num_threads(before)
        predictor.forward_threads = 1
    # the one-process path of a predict run: the caller's torch threads and the predictor's come back after it
    torch.set_num_threads(2)
    spec = PredictorSpec(str(ner_model), batch_size=2)
    try:
        from downstream.predict.formats import Document

        chunks = list(rendered_chunks(spec, [Document("d", SENTENCE)], output_format="jsonl", predictor=predictor))
        assert len(chunks) == 1 and torch.get_num_threads() == 2 and predictor.forward_threads == 1
    finally:
        torch.set_num_threads(before)


def test_the_heap_alive_before_predicting_is_frozen_while_predicting_and_thawed_after(ner_model):
    import gc

    from downstream.predict.formats import Document
    from downstream.predict.predictor import load_predictor
    from downstream.predict.stream import PredictorSpec, rendered_chunks

    predictor = load_predictor(ner_model, device="cpu")
    counts = []
    predict = predictor.predict
    predictor.predict = lambda chunk: counts.append(gc.get_freeze_count()) or predict(chunk)
    spec = PredictorSpec(str(ner_model))
    documents = [Document(str(i), SENTENCE) for i in range(3)]
    assert gc.get_freeze_count() == 0
    chunks = list(rendered_chunks(spec, documents, output_format="jsonl", chunk_documents=2, predictor=predictor))
    assert len(chunks) == 2 and len(counts) == 2 and min(counts) > 0  # frozen: the model among them
    assert gc.get_freeze_count() == 0  # thawed: the caller's objects are collected again
    # a caller that froze its heap itself keeps it frozen after
    gc.freeze()
    try:
        list(rendered_chunks(spec, documents, output_format="jsonl", predictor=predictor))
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    # an error while predicting thaws it too
    predictor.predict = lambda chunk: (_ for _ in ()).throw(RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        list(rendered_chunks(spec, documents, output_format="jsonl", predictor=predictor))
    assert gc.get_freeze_count() == 0


@pytest.mark.slow
def test_two_workers_write_what_one_writes(ner_model, tmp_path):
    corpus = _corpus(tmp_path / "corpus.jsonl", 40)
    one = predict_files(ner_model, [corpus], output=tmp_path / "one.jsonl", device="cpu", chunk_documents=7)
    two = predict_files(ner_model, [corpus], output=tmp_path / "two.jsonl", device="cpu", chunk_documents=7, num_workers=2)
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert (one.documents, one.predictions) == (two.documents, two.predictions) == (40, one.predictions)
    assert one.predictions > 40


# --- resuming ------------------------------------------------------------------------------------------------


class _Killed(Exception):
    pass


def _fail_after(monkeypatch, chunks: int) -> None:
    """Make predict_files stop, as a kill would, after ``chunks`` chunks were written."""
    real = files_module.rendered_chunks

    def failing(*args, **kwargs):
        for i, item in enumerate(real(*args, **kwargs)):
            if i == chunks:
                raise _Killed()
            yield item

    monkeypatch.setattr(files_module, "rendered_chunks", failing)


@pytest.mark.parametrize("output_format", ["jsonl", "conll", "pubtator", "bioc"])
def test_resume_after_a_failure_loses_and_repeats_nothing(ner_model, tmp_path, monkeypatch, output_format):
    corpus = _corpus(tmp_path / "corpus.jsonl", 20)
    reference = tmp_path / "reference.out"
    predict_files(ner_model, [corpus], output_format=output_format, output=reference, device="cpu", chunk_documents=3)
    out = tmp_path / "run.out"
    _fail_after(monkeypatch, 3)
    with pytest.raises(_Killed):
        predict_files(ner_model, [corpus], output_format=output_format, output=out, device="cpu", chunk_documents=3)
    monkeypatch.undo()
    partial, ledger = tmp_path / ".run.out.partial", tmp_path / ".run.out.progress.json"
    assert not out.exists() and json.loads(ledger.read_text())["documents"] == 9
    with open(partial, "a", encoding="utf-8") as handle:
        handle.write('{"document": "doc9", "sta')  # killed in the middle of a line
    summary = predict_files(ner_model, [corpus], output_format=output_format, output=out, device="cpu", chunk_documents=3)
    assert (summary.skipped, summary.documents) == (9, 11)
    if output_format == "bioc":  # the collection's date line may differ; the rest is the same bytes
        assert out.read_text().split("\n", 3)[3] == reference.read_text().split("\n", 3)[3]
    else:
        assert out.read_bytes() == reference.read_bytes()
    assert not partial.exists() and not ledger.exists()


def test_resume_brat_keeps_the_names(ner_model, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": "same/id" if i % 2 else "same_id", "text": SENTENCE}) + "\n" for i in range(8)))
    predict_files(ner_model, [corpus], output_format="brat", output=tmp_path / "reference", device="cpu", chunk_documents=3)
    _fail_after(monkeypatch, 1)
    with pytest.raises(_Killed):
        predict_files(ner_model, [corpus], output_format="brat", output=tmp_path / "run", device="cpu", chunk_documents=3)
    monkeypatch.undo()
    summary = predict_files(ner_model, [corpus], output_format="brat", output=tmp_path / "run", device="cpu", chunk_documents=3)
    assert summary.skipped == 3
    names = sorted(p.name for p in (tmp_path / "reference").iterdir())
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == names and "same_id-8.ann" in names
    assert all((tmp_path / "run" / n).read_bytes() == (tmp_path / "reference" / n).read_bytes() for n in names)


def test_resume_refuses_a_partial_run_of_another_command(ner_model, tmp_path, monkeypatch):
    corpus = _corpus(tmp_path / "corpus.jsonl", 10)
    _fail_after(monkeypatch, 1)
    with pytest.raises(_Killed):
        predict_files(ner_model, [corpus], output=tmp_path / "run.jsonl", device="cpu", chunk_documents=3)
    monkeypatch.undo()
    with pytest.raises(DownstreamError, match=r"a partial run of another command \(max_seq_length: 512 then, 64 now\)"):
        predict_files(ner_model, [corpus], output=tmp_path / "run.jsonl", device="cpu", chunk_documents=3, max_seq_length=64)


KILLED_RUN = """
import sys, time
from downstream.predict.files import predict_files
predict_files(sys.argv[1], [sys.argv[2]], output=sys.argv[3], device="cpu", chunk_documents=5,
              progress=lambda n: time.sleep(0.2))
"""


@pytest.mark.slow
def test_kill_at_half_and_restart_with_the_cli(ner_model, tmp_path):
    corpus = _corpus(tmp_path / "corpus.jsonl", 100)
    predict_files(ner_model, [corpus], output=tmp_path / "reference.jsonl", device="cpu", chunk_documents=5)
    out, ledger = tmp_path / "run.jsonl", tmp_path / ".run.jsonl.progress.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(ner_model), str(corpus), str(out)], cwd=ROOT, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if ledger.exists() and json.loads(ledger.read_text() or "{}").get("documents", 0) >= 50:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done = json.loads(ledger.read_text())["documents"]
    assert 50 <= done < 100 and not out.exists()
    result = CliRunner().invoke(app, ["predict", "--model", str(ner_model), "--device", "cpu", "-o", str(out), str(corpus)])
    assert result.exit_code == 0, result.output
    assert f"resumed: skipped the {done} documents" in " ".join(result.output.split())
    assert out.read_bytes() == (tmp_path / "reference.jsonl").read_bytes()


# the heavy modules a probe lists as loaded (a Python expression run inside each probe)
_LOADED = f"sorted(m for m in {('sklearn', 'seqeval', 'pandas', 'scipy.stats')!r} if m in sys.modules)"
_IMPORTS_PROBE = """
import json, sys
from downstream.predict.files import predict_files
summary = predict_files(sys.argv[1], [sys.argv[2]], output=sys.argv[3], device="cpu")
print(json.dumps({"entities": summary.predictions, "loaded": LOADED}))
""".replace("LOADED", _LOADED)
# What transformers alone loads for the same model and tokenizer: transformers 5.17 (the GPU machines' lower
# bound) imports scikit-learn, and pandas behind it, from its generation utilities whenever it is installed;
# transformers 5.24, the version tested here, does not.
_TRANSFORMERS_PROBE = """
import json, sys
from transformers import AutoModelForTokenClassification, AutoTokenizer
AutoModelForTokenClassification.from_pretrained(sys.argv[1]); AutoTokenizer.from_pretrained(sys.argv[1])
print(json.dumps(LOADED))
""".replace("LOADED", _LOADED)


def test_predict_starts_without_scikit_learn(ner_model, tmp_path):
    """A whole ``predict`` run imports neither seqeval's metrics nor scikit-learn and pandas behind them (1.8 s
    of a 10 s start on the 2-core machine) beyond what transformers itself imports to load the model (nothing
    with transformers 5.24): its entities are chunked by :func:`downstream.ner.data.iob2_chunks`."""
    source = tmp_path / "in.txt"
    source.write_text(SENTENCE + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}

    def probe(*args: str) -> str:
        return subprocess.run([sys.executable, "-c", *args], capture_output=True, text=True, check=True, cwd=ROOT,
                              env=env).stdout.strip().splitlines()[-1]  # fmt: skip

    result = json.loads(probe(_IMPORTS_PROBE, str(ner_model), str(source), str(tmp_path / "out.jsonl")))
    by_transformers = json.loads(probe(_TRANSFORMERS_PROBE, str(ner_model)))
    assert "seqeval" not in by_transformers
    assert result == {"entities": 2, "loaded": by_transformers}


_HEAP_PROBE = """
import sys, torch
from downstream.predict.stream import limit_heap_growth
limited = sys.argv[1] == "limit" and limit_heap_growth()
def rss_mb():
    return int([x for x in open("/proc/self/status") if x.startswith("VmRSS")][0].split()[1]) // 1024
big = torch.empty(8 << 18).fill_(1.0)  # 8 MB, mapped; freeing it raises glibc's dynamic threshold to 8 MB
del big
start = rss_mb()
blocks = [torch.empty(6 << 18).fill_(1.0) for _ in range(40)]  # 40 x 6 MB, as a forward pass's tensors
del blocks[:-1]  # freed, but for the last (which keeps the heap's top in use)
print(limited, rss_mb() - start)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists() or platform.libc_ver()[0] != "glibc", reason="glibc on Linux only")
def test_limit_heap_growth_gives_freed_tensors_back():
    """Without the fixed threshold glibc keeps 39 freed 6 MB blocks in its heap (~234 MB resident); with it
    each was mapped on its own and unmapped when freed."""

    def run(mode: str) -> tuple[str, int]:
        out = subprocess.run([sys.executable, "-c", _HEAP_PROBE, mode], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parent.parent).stdout.split()  # fmt: skip
        return out[0], int(out[1])

    kept, kept_mb = run("none")
    limited, limited_mb = run("limit")
    assert limited == "True" and kept == "False"
    assert kept_mb > 150 and limited_mb < 40, (kept_mb, limited_mb)
