"""The finetune command for relation extraction, end to end on tiny fixtures and a tiny model; the RE registry."""

import json
import shutil

import pytest
from conftest import FIXTURES, make_ddi_zip
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream import dataset_specs, registry
from downstream.errors import DatasetUnavailableError

runner = CliRunner()


def _finetune(args):
    result = runner.invoke(app, ["finetune", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def _common(ckpt):
    return ["--loader", "re", "--ckpt", str(ckpt), "--batch-size", "8", "--learning-rate", "1e-3", "--max-seq-length", "32"]


@pytest.mark.slow
def test_chemprot_form_end_to_end(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    result = _finetune([*_common(tiny_checkpoint), "--data-dir", str(FIXTURES / "re-chemprot"), "--epochs", "2",
                        "--output-dir", str(out), "--trials", "2"])
    assert "micro F1 over CPR:3, CPR:4, CPR:5, CPR:6, CPR:9 (%)" in result.output

    report = json.loads((out / "results.json").read_text())
    assert report["task"] == "re" and report["num_trials"] == 2 and [t["seed"] for t in report["trials"]] == [42, 43]
    assert report["labels"] == ["False", "CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]
    assert report["positive_labels"] == ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]
    assert "micro-averaged" in report["metric_mode"] and report["model_class"] == "ElectraForRelationClassification"
    assert {s: report["counts"][s]["examples"] for s in ("train", "dev", "test")} == {"train": 24, "dev": 12, "test": 12}
    assert report["counts"]["placeholders"]["tokens"] == ["BC6ENTC", "BC6ENTG", "BC6OTHER"]
    for trial in report["trials"]:
        assert trial["test"]["num_examples"] == 12 and 0.0 <= trial["test"]["f1"] <= 1.0
        assert set(trial["test"]["per_class"]) == set(report["labels"])
    assert report["summary"]["test"]["f1"]["n"] == 2
    markdown = (out / "results.md").read_text()
    assert "| split | file | examples | truncated | marker lost |" in markdown and "- test: CPR:3" in markdown

    rows = (out / "trial-0" / "test_predictions.tsv").read_text().splitlines()
    assert rows[0] == "index\tgold\tpredicted" and len(rows) == 13
    gold = [line.rsplit("\t", 1)[1] for line in (FIXTURES / "re-chemprot" / "test.tsv").read_text().splitlines()[1:]]
    assert [r.split("\t")[1] for r in rows[1:]] == gold
    assert all(r.split("\t")[2] in report["labels"] for r in rows[1:])

    # the kept model and tokenizer belong together: placeholders are single tokens, the head reloads
    from transformers import AutoTokenizer

    from downstream.classification import ElectraForRelationClassification

    model_dir = out / "trial-0" / "model"
    model = ElectraForRelationClassification.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    assert tokenizer.tokenize("BC6ENTC binds BC6ENTG") == ["BC6ENTC", "binds", "BC6ENTG"]
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer)
    assert model.config.id2label[1] == "CPR:3"


@pytest.mark.slow
def test_gad_folds_all_with_hf_head(tmp_path, tiny_checkpoint):
    out = tmp_path / "gad"
    result = _finetune([*_common(tiny_checkpoint), "--data-dir", str(FIXTURES / "re-gad"), "--folds", "all",
                        "--max-steps", "2", "--re-head", "hf", "--output-dir", str(out)])
    assert "2 folds" in result.output and "F1 of class 1" in result.output
    report = json.loads((out / "results.json").read_text())
    assert report["folds"] == [1, 2]
    summary = report["summary_over_folds"]["test"]["f1"]
    assert summary["n"] == 2 and summary["ddof"] == 1
    fold_means = [r["summary"]["test"]["f1"]["mean"] for r in report["fold_reports"]]
    assert summary["mean"] == pytest.approx(sum(fold_means) / 2)
    assert [r["counts"]["test"]["examples"] for r in report["fold_reports"]] == [7, 8]
    assert all(r["counts"]["train"]["examples"] == 20 for r in report["fold_reports"])
    assert (out / "fold-2" / "trial-0" / "test_predictions.tsv").is_file()
    assert "mean over folds" in (out / "results.md").read_text()

    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(out / "fold-1" / "trial-0" / "model")
    assert type(model).__name__ == "ElectraForSequenceClassification"


@pytest.mark.slow
def test_ddi_from_the_xml_zip(tmp_path, tiny_checkpoint, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "ddi"
    make_ddi_zip(data)
    out = tmp_path / "run"
    _finetune([*_common(tiny_checkpoint), "--data-dir", str(data), "--max-steps", "1", "--dev-fraction", "0.3",
               "--output-dir", str(out)])
    report = json.loads((out / "results.json").read_text())
    counts = report["counts"]
    assert counts["train"]["examples"] == 10 and counts["test"]["examples"] == 3
    assert counts["train"]["training_examples"] + counts["dev"]["examples"] == 10
    assert "documents" in counts["dev"]["file"]  # DDI dev cut by document
    assert counts["source"]["untyped_true_pairs"] == ["DDI-DrugBank.d1.s3.p0"]
    assert report["positive_labels"] == ["DDI-advise", "DDI-effect", "DDI-int", "DDI-mechanism"]
    assert list((tmp_path / "cache" / "datasets" / "ddi-built").glob("ddi-built-*/train.tsv"))


def test_cli_errors_are_clear(tmp_path, tiny_checkpoint):
    result = runner.invoke(app, ["finetune", *_common(tiny_checkpoint), "--data-dir", str(FIXTURES / "re-gad"),
                                 "--output-dir", str(tmp_path / "o")])
    assert result.exit_code == 2 and "--fold K or run all with --folds all" in result.output.replace("\n", "")
    result = runner.invoke(app, ["finetune", "--loader", "ner", "--dataset", "ncbi-disease", "--fold", "1"])
    assert result.exit_code == 2 and "--loader re" in result.output
    result = runner.invoke(app, ["finetune", *_common(tiny_checkpoint), "--data-dir", str(FIXTURES / "re-gad"),
                                 "--folds", "x", "--output-dir", str(tmp_path / "o")])
    assert result.exit_code == 2 and "comma-separated" in result.output


def test_re_datasets_are_registered_with_sources_and_checksums():
    assert set(dataset_specs.RE_DATASETS) == {"chemprot", "ddi", "gad"}
    chem = registry.get_spec("chemprot", task="re")
    assert set(chem.sha256) == {"train.tsv", "dev.tsv", "test.tsv"} and "SciCrunch/bio_electra" in chem.files["train.tsv"]
    assert registry.get_spec("gad").layout == "folds" and len(registry.get_spec("gad").sha256) == 20
    assert registry.get_spec("ddi").layout == "ddi-zip" and "isegura/DDICorpus" in registry.get_spec("ddi").files["DDICorpus-2013.zip"]
    with pytest.raises(Exception, match="RE benchmark, not NER"):
        registry.get_spec("chemprot", task="ner")


def test_registered_re_dataset_from_cache_or_clear_offline_error(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path))
    monkeypatch.setenv("BIOELECTRA_OFFLINE", "1")
    with pytest.raises(DatasetUnavailableError, match=r"fold folders .*/gad/1/ \.\. .*/gad/10/"):
        registry.locate_dataset_dir("gad", task="re")
    with pytest.raises(DatasetUnavailableError, match="DDICorpus-2013.zip in"):
        registry.locate_dataset_dir("ddi", task="re")
    shutil.copytree(FIXTURES / "re-chemprot", tmp_path / "datasets" / "chemprot")
    assert registry.locate_dataset_dir("chemprot", task="re") == tmp_path / "datasets" / "chemprot"


def test_download_checks_checksums(tmp_path, monkeypatch):
    """``download_files`` with file:// URLs: a good copy is cached, a corrupt one refused."""
    import dataclasses

    from downstream.errors import DownstreamError

    monkeypatch.delenv("BIOELECTRA_OFFLINE", raising=False)
    monkeypatch.setattr(registry, "offline_mode", lambda: False)
    source = FIXTURES / "re-chemprot"
    spec = dataclasses.replace(
        registry.get_spec("chemprot"),
        files={n: (source / n).as_uri() for n in ("train.tsv", "dev.tsv", "test.tsv")},
        sha256={"train.tsv": registry.sha256_of(source / "train.tsv")},
    )
    target = registry.download_files(spec, tmp_path / "ok")
    assert (target / "test.tsv").read_bytes() == (source / "test.tsv").read_bytes()
    bad = dataclasses.replace(spec, sha256={"train.tsv": "0" * 64})
    with pytest.raises(DownstreamError, match="differs from the registered"):
        registry.download_files(bad, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


@pytest.mark.shared_data
def test_real_datasets_through_the_task_adapter(shared_data, tmp_path):
    """Counts that results.json reports, straight from the real files (no training)."""
    from downstream.relation.task import ReTask

    re_dir = shared_data / "re"
    chem = ReTask(registry_free_files(re_dir / "chemprot"))
    assert {s: len(chem.splits[s].examples) for s in ("train", "dev", "test")} == {"train": 16521, "dev": 10361, "test": 14396}
    gad = ReTask(registry_free_files(re_dir / "gad", fold=1))
    counts = gad.counts()
    assert counts["train"]["examples"] == 4796 and counts["test"]["examples"] == 534
    assert counts["train"]["training_examples"] + counts["dev"]["examples"] == 4796
    ddi = ReTask(registry_free_files(re_dir / "ddi"), cache_dir=tmp_path)
    assert ddi.counts()["train"]["examples"] == 27791 and len(ddi.splits["test"].examples) == 5716


def registry_free_files(folder, fold=None):
    from downstream.relation.data import find_re_files

    return find_re_files(folder, fold=fold)


def test_gad_archive_download_keeps_the_fold_folders(tmp_path, monkeypatch):
    """BioBERT's archive holds ``datasets/RE/GAD/<k>/*.tsv``: the fold folders survive extraction."""
    import dataclasses
    import hashlib
    import io
    import tarfile

    monkeypatch.setattr(registry, "offline_mode", lambda: False)
    members = {f"{k}/{name}": (FIXTURES / "re-gad" / str(k) / name).read_bytes()
               for k in (1, 2) for name in ("train.tsv", "dev.tsv", "test.tsv")}
    members["1/.hidden"] = b"x"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in {**members, "../NER/x.tsv": b"no"}.items():
            info = tarfile.TarInfo(f"datasets/RE/GAD/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive = tmp_path / "datasets.tar.gz"
    archive.write_bytes(buffer.getvalue())
    spec = dataclasses.replace(registry.get_spec("gad"), archive_url=archive.as_uri(),
                               sha256={"2/test.tsv": hashlib.sha256(members["2/test.tsv"]).hexdigest()})
    target = registry.download_dataset(spec, tmp_path / "cache" / "gad")
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*.tsv")) == sorted(
        k for k in members if k.endswith(".tsv"))
    from downstream.relation.data import list_folds

    assert list_folds(target) == [1, 2]


@pytest.mark.slow
def test_registered_name_resolves_through_the_cache(tmp_path, tiny_checkpoint, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    shutil.copytree(FIXTURES / "re-gad", tmp_path / "cache" / "datasets" / "gad")
    out = tmp_path / "run"
    _finetune([*_common(tiny_checkpoint), "--dataset", "gad", "--folds", "1,2", "--max-steps", "1", "--output-dir", str(out)])
    report = json.loads((out / "results.json").read_text())
    assert report["folds"] == [1, 2] and report["dataset_title"].startswith("GAD")
    assert report["fold_reports"][1]["fold"] == 2
