"""Nothing lost, nothing misleading (issue 74's ten cases, one test each): predict never overwrites its
input, a failed run never blocks its own fix, every span and option is checked before work, and a limited
run says so in every file it writes."""

from __future__ import annotations

import errno
import json
import logging
import shutil

import pytest
import test_predict
from conftest import FIXTURES
from test_bad_input import fails_clearly
from test_predict import PUBMED, SENTENCE
from typer.testing import CliRunner

from bioelectra.cli import _single, app, normalize_original_flags
from downstream.errors import DataFormatError, DownstreamError
from downstream.predict.files import predict_files

runner = CliRunner()
# test_predict's fixtures: a tiny NER model trained until it tags SENTENCE, one torch thread.
ner_model = test_predict.ner_model
_one_thread = test_predict._one_thread


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# --- 1. an output that is an input ---------------------------------------------------------------------------


def test_predict_refuses_an_output_that_is_one_of_its_inputs(ner_model, tmp_path, monkeypatch):
    same = tmp_path / "same.txt"
    same.write_text(SENTENCE + "\n" + SENTENCE + "\n", encoding="utf-8")
    before = same.read_bytes()
    fails_clearly(app, ["predict", "--model", ner_model, "--device", "cpu", same, "-o", same],
                  f"--output {same}: it is an input of this command")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link.txt").symlink_to(same)
    fails_clearly(app, ["predict", "--model", ner_model, "--device", "cpu", "same.txt", "-o", "link.txt"],
                  "--output link.txt: it is an input of this command", "same.txt")  # fmt: skip
    assert same.read_bytes() == before and _leftovers(tmp_path) == []


# --- 2. MRQA spans that do not hold their answer's text --------------------------------------------------------


def test_mrqa_spans_that_miss_their_text_are_relocated_or_dropped_and_counted(tmp_path, caplog):
    from downstream.qa.mrqa import read_mrqa_file

    context = "Low-dose aspirin irreversibly inhibits COX-1 in platelets."
    assert context[39:44] == "COX-1"
    lines = [
        {"header": {"dataset": "x", "split": "train"}},
        {"context": context, "qas": [
            {"qid": "off", "question": "What?", "detected_answers": [{"text": "COX-1", "char_spans": [[42, 46]]}]},
            {"qid": "right", "question": "Who?", "detected_answers": [{"text": "aspirin", "char_spans": [[9, 15]]}]},
            {"qid": "case", "question": "Who?", "detected_answers": [{"text": "Aspirin", "char_spans": [[9, 15]]}]},
            {"qid": "gone", "question": "Where?", "detected_answers": [{"text": "liver", "char_spans": [[48, 52]]}]},
        ]},
    ]  # fmt: skip
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with caplog.at_level(logging.WARNING):
        split = read_mrqa_file(path)
    by_id = {e.id: e for e in split.examples}
    assert by_id["off"].answers == [("COX-1", 39)]  # the text's own place, not '-1 in' at 42
    assert by_id["right"].answers == [("aspirin", 9)] and by_id["case"].answers == [("aspirin", 9)]
    assert "gone" not in by_id and split.dropped_example_ids == ["gone"]
    assert (split.num_relocated, split.num_dropped) == (1, 1)
    assert "1 answers relocated" in caplog.text and "train.jsonl" in caplog.text


# --- 3. --hparams values of the wrong type --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hparams", "needle"),
    [
        ({"num_train_epochs": "two"}, "hparam 'num_train_epochs': expected float, got str 'two'"),
        ({"learning_rate": "1e-4"}, "hparam 'learning_rate': expected float, got str '1e-4'"),
        ({"train_batch_size": "32"}, "hparam 'train_batch_size': expected int, got str '32'"),
        ({"num_trials": 2.5}, "hparam 'num_trials': expected int, got float 2.5"),
        ({"double_unordered": "yes"}, "hparam 'double_unordered': expected bool, got str 'yes'"),
        ({"doc_stride": "64"}, "hparam 'doc_stride': expected int, got str '64'"),
        ({"do_train": "false"}, "hparam 'do_train': expected bool, got str 'false'"),
    ],
)
def test_run_finetuning_hparams_of_the_wrong_type_name_key_value_and_type(tmp_path, hparams, needle):
    data = tmp_path / "D"
    shutil.copytree(FIXTURES / "ner-tiny", data / "finetuning_data" / "tiny")
    args = normalize_original_flags(["--data-dir", str(data), "--model-name", "bioelectra-mini",
                                     "--hparams", json.dumps({"task_names": ["tiny"], **hparams})])  # fmt: skip
    fails_clearly(_single("run-finetuning"), args, needle)
    assert not (data / "models").exists()


def test_settings_of_the_wrong_type_are_a_value_error_naming_the_field():
    from downstream.settings import FinetuneSettings

    with pytest.raises(ValueError, match="num_train_epochs 'two': expected float, got str"):
        FinetuneSettings(task="ner", checkpoint="x", output_dir="o", num_train_epochs="two")
    with pytest.raises(ValueError, match="per_device_train_batch_size '32': expected int, got str"):
        FinetuneSettings(task="ner", checkpoint="x", output_dir="o", per_device_train_batch_size="32")
    FinetuneSettings(task="ner", checkpoint="x", output_dir="o", num_train_epochs=2, max_train_examples=None)


# --- 4. run_finetuning.py twice ------------------------------------------------------------------------------


def test_run_finetuning_twice_reuses_its_trials_and_never_reads_its_results_as_the_checkpoint(tmp_path, caplog):
    data = tmp_path / "D"
    shutil.copytree(FIXTURES / "ner-tiny", data / "finetuning_data" / "tiny")
    hparams = {"task_names": ["tiny"], "num_trials": 1, "num_train_epochs": 1, "max_seq_length": 32, "train_batch_size": 8}
    args = normalize_original_flags(["--data-dir", str(data), "--model-name", "bioelectra-mini", "--hparams", json.dumps(hparams)])
    first = runner.invoke(_single("run-finetuning"), args)
    assert first.exit_code == 0, first.output[-2000:]
    root = data / "models" / "bioelectra-mini"
    record = root / "finetuning_models" / "tiny_model" / "trial-0" / "trial.json"
    stamp = record.stat().st_mtime_ns
    assert (root / "results" / "tiny_results.txt").read_text().startswith("tiny: precision: ")
    assert not (root / "config.json").exists()  # results and checkpoints apart: no checkpoint written there
    with caplog.at_level(logging.INFO):
        second = runner.invoke(_single("run-finetuning"), args)
    assert second.exit_code == 0, second.output[-2000:]
    assert "not a save_pretrained checkpoint" not in second.output
    assert record.stat().st_mtime_ns == stamp and "already done, reusing" in second.output + caplog.text
    assert "holds no checkpoint" in " ".join(second.output.split())


# --- 5. a failed predict run leaves nothing that blocks its fix ------------------------------------------------


def test_a_failed_predict_run_leaves_nothing_and_its_fix_runs(ner_model, tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "abstract": SENTENCE}) + "\n", encoding="utf-8")
    out = tmp_path / "out" / "e.jsonl"
    base = ["predict", "--model", ner_model, "--device", "cpu", docs, "-o", out]
    fails_clearly(app, base, "no field 'text' (--text-field)")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    folder = tmp_path / "a-folder"
    folder.mkdir()
    fails_clearly(app, ["predict", "--model", ner_model, "--device", "cpu", folder, "-o", out], "not a file")
    junk = tmp_path / "junk.txt"
    junk.write_bytes(b"\xff\xfe\x00\x81" * 8)
    fails_clearly(app, ["predict", "--model", ner_model, "--device", "cpu", junk, "-o", out], "expected UTF-8")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    fails_clearly(app, ["predict", "--model", ner_model, "--device", "cpu", empty, "-o", out], "empty input")
    no_articles = tmp_path / "none.xml"
    no_articles.write_text("<PubmedArticleSet></PubmedArticleSet>")
    fails_clearly(app, ["predict", "--model", ner_model, "--device", "cpu", no_articles, "-o", out], "empty input")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    result = runner.invoke(app, [str(a) for a in [*base, "--text-field", "abstract"]])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text().splitlines()[0])["document"] == "d1" and _leftovers(out.parent) == []


def test_a_partial_run_of_another_command_says_how_to_start_over(ner_model, tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "text": SENTENCE, "abstract": "x"}) + "\n" for i in range(3)))
    out = tmp_path / "e.jsonl"
    partial, ledger = tmp_path / ".e.jsonl.partial", tmp_path / ".e.jsonl.progress.json"
    # a killed run of the default --text-field that had written one document
    predict_files(ner_model, [docs], output=out, device="cpu", chunk_documents=1)
    out.rename(partial)
    from downstream.predict.files import run_fingerprint

    fingerprint = run_fingerprint(ner_model, [docs], input_format="auto", text_field="text", id_field="id",
                                  document_per_file=False, output_format="jsonl", max_seq_length=512)  # fmt: skip
    ledger.write_text(json.dumps({"documents": 3, "bytes": partial.stat().st_size, "fingerprint": fingerprint}))
    args = ["predict", "--model", ner_model, "--device", "cpu", docs, "-o", out, "--text-field", "abstract"]
    text = fails_clearly(app, args, "a partial run of another command", "text_field: 'text' then, 'abstract' now",
                         "--overwrite", str(partial), str(ledger))  # fmt: skip
    assert "run the same command" not in text
    result = runner.invoke(app, [str(a) for a in [*args, "--overwrite"]])
    assert result.exit_code == 0, result.output
    assert "3 documents" in result.output and _leftovers(tmp_path) == []
    # a killed run that wrote no document yet holds nothing to keep: another command just starts
    partial.write_text("")
    ledger.write_text(json.dumps({"documents": 0, "bytes": 0, "fingerprint": fingerprint}))
    out.unlink()
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert "3 documents" in result.output and _leftovers(tmp_path) == []


def test_an_existing_output_is_kept_unless_overwrite(ner_model, tmp_path):
    source = tmp_path / "one.txt"
    source.write_text(SENTENCE + "\n", encoding="utf-8")
    out = tmp_path / "e.jsonl"
    out.write_text("the user's own file\n")
    fails_clearly(app, ["predict", "--model", ner_model, "--device", "cpu", source, "-o", out], f"--output {out}: exists",
                  "--overwrite")  # fmt: skip
    assert out.read_text() == "the user's own file\n"
    result = runner.invoke(app, ["predict", "--model", str(ner_model), "--device", "cpu", str(source), "-o", str(out), "--overwrite"])
    assert result.exit_code == 0, result.output
    assert "Duchenne muscular dystrophy" in out.read_text()


# --- 6. CoNLL-2000 files of another shape --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "got"),
    [("The B-NP", "2 column(s)"), ("The DT x B-NP", "4 column(s)"), ("The\tDT\tB-NP", "a tab")],
    ids=["two columns", "four columns", "tabs"],
)
@pytest.mark.parametrize("dataset", [None, "chunk"], ids=["data-dir", "dataset chunk"])
def test_conll2000_files_of_another_shape_say_what_was_expected(tmp_path, tiny_checkpoint, line, got, dataset):
    data = tmp_path / "chunk"
    data.mkdir()
    for name in ("train.txt", "test.txt"):
        (data / name).write_text(f"{line}\ncat NN I-NP\n\n")
    args = ["finetune", "--loader", "ner", "--data-dir", data, "--ckpt", tiny_checkpoint, "--output-dir", tmp_path / "o"]
    text = fails_clearly(app, [*args, *(["--dataset", dataset] if dataset else [])],
                         f"{data / 'train.txt'}:1: expected 'word POS chunk-tag' (3 space-separated columns", got)  # fmt: skip
    assert dataset is not None or "missing devel.tsv or dev.tsv" in text  # the other reading, named beside it


def test_a_tab_separated_ner_folder_is_still_read_as_ner(tmp_path):
    from downstream.ner.conll2000 import find_tagging_files

    assert find_tagging_files(FIXTURES / "ner-tiny")["dev"].name.startswith("devel")
    with pytest.raises(DataFormatError, match=r"train.tsv:1: expected 'word POS chunk-tag'"):
        find_tagging_files(FIXTURES / "ner-tiny", chunking=True)
    partial = tmp_path / "ner"
    partial.mkdir()
    for name in ("train.tsv", "devel.tsv"):
        shutil.copy(FIXTURES / "ner-tiny" / name, partial / name)
    from downstream.errors import DatasetUnavailableError

    with pytest.raises(DatasetUnavailableError, match="missing test.tsv") as info:
        find_tagging_files(partial)  # a NER folder short of a split: no word of CoNLL-2000
    assert "CoNLL-2000" not in str(info.value)


# --- 7. evaluate: a model of one kind on data of another -------------------------------------------------------


def test_evaluate_names_the_model_kind_and_the_data_kind(ner_model, tmp_path):
    out = tmp_path / "ev"
    fails_clearly(app, ["evaluate", "--model", ner_model, "--loader", "qa", "--data-dir", FIXTURES / "mrqa-tiny",
                        "--output-dir", out],
                  "is a token classification model (ElectraForTokenClassification", "--loader qa", "--loader ner")  # fmt: skip
    assert not out.exists()


# --- 8. a limited benchmark says so in every file ---------------------------------------------------------------


@pytest.mark.slow
def test_a_limited_benchmark_is_marked_in_every_file(tmp_path, tiny_checkpoint, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "empty-cache"))
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "ner-tiny", root / "ner" / "bc5cdr-chem")
    out = tmp_path / "bench"
    result = runner.invoke(app, ["benchmark", "--ckpt", str(tiny_checkpoint), "--suite", "bc5cdr-chem", "--trials", "1",
                                 "--data-root", str(root), "--max-steps", "3", "--max-eval-examples", "4",
                                 "--max-seq-length", "32", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    markdown = (out / "benchmark.md").read_text()
    assert "**Limited run**" in markdown and "--max-steps 3" in markdown and "--max-eval-examples 4" in markdown
    assert "3 epochs" not in markdown and "BLURB-style average" not in markdown
    report = json.loads((out / "benchmark.json").read_text())
    assert report["limits"] == {"max_steps": 3, "max_eval_examples": 4}
    # the BLURB part: ours alone, no published average or score beside a limited run's
    assert report["blurb"]["limited"] and report["blurb"]["published"] == {} and report["blurb"]["published_scores"] == {}
    trial_md = (out / "bc5cdr-chem" / "results.md").read_text()
    assert "**Limited run**" in trial_md and "--max-steps 3" in trial_md
    assert json.loads((out / "bc5cdr-chem" / "results.json").read_text())["limits"] == {"max_steps": 3, "max_eval_examples": 4}


def test_an_unlimited_report_says_nothing_of_limits():
    from downstream.settings import FinetuneSettings, run_limits

    assert run_limits(FinetuneSettings(task="ner", checkpoint="x", output_dir="o")) == {}
    limited = FinetuneSettings(task="ner", checkpoint="x", output_dir="o", max_train_examples=5)
    assert run_limits(limited) == {"max_train_examples": 5}


# --- 9. --num-workers beyond the cores --------------------------------------------------------------------------


def test_num_workers_is_bounded_by_the_cores_and_says_so(ner_model, tmp_path, monkeypatch, caplog):
    from downstream.predict import files as files_module

    monkeypatch.setattr(files_module, "available_cores", lambda: 1)
    source = tmp_path / "one.txt"
    source.write_text(SENTENCE + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        summary = predict_files(ner_model, [source], output=tmp_path / "e.jsonl", device="cpu", num_workers=999)
    assert summary.documents == 1 and summary.num_workers == 1
    assert "--num-workers 999: this process may use 1 CPU core(s); running 1 worker" in caplog.text


# --- 10. PubMed articles without text, a read-only output folder -------------------------------------------------


def test_pubmed_articles_without_title_or_abstract_are_counted_and_said(ner_model, tmp_path):
    empty = "<PubmedArticle><MedlineCitation><PMID>333</PMID><Article><ArticleTitle></ArticleTitle></Article></MedlineCitation></PubmedArticle>"
    source = tmp_path / "baseline.xml"
    source.write_text(PUBMED.replace("</PubmedArticleSet>", empty + "</PubmedArticleSet>"), encoding="utf-8")
    summary = predict_files(ner_model, [source], output=tmp_path / "e.jsonl", device="cpu")
    assert (summary.documents, summary.empty_articles) == (2, 1)
    result = runner.invoke(app, ["predict", "--model", str(ner_model), "--device", "cpu", str(source), "-o", str(tmp_path / "f.jsonl")])
    assert result.exit_code == 0, result.output
    assert "1 PubMed article without title or abstract" in " ".join(result.output.split())


def test_a_read_only_output_folder_names_output_not_the_hidden_file(ner_model, tmp_path, monkeypatch):
    from downstream.predict import output as output_module

    def refuse(path, *args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted", str(path))

    monkeypatch.setattr(output_module, "open", refuse, raising=False)
    source = tmp_path / "one.txt"
    source.write_text(SENTENCE + "\n", encoding="utf-8")
    out = tmp_path / "ro" / "e.jsonl"
    text = fails_clearly(app, ["predict", "--model", ner_model, "--device", "cpu", source, "-o", out],
                         f"--output {out}: cannot write in {out.parent}", "Operation not permitted")  # fmt: skip
    assert ".partial" not in text


def test_a_missing_input_is_named_before_any_output_is_made(ner_model, tmp_path):
    out = tmp_path / "out" / "e.jsonl"
    with pytest.raises(DownstreamError, match="no such file"):
        predict_files(ner_model, [tmp_path / "nope.txt"], output=out, device="cpu")
    assert not (tmp_path / "out").exists()
