"""Typed labels from any NER folder (issue #50): the entity type of bare B / I tags found from --entity-type,
--dataset or the folder's name; else a warning, and a card that does not offer the pipeline; a typed model
scored on bare files of another type only when the user says so."""

import logging
import shutil

import pytest
from conftest import FIXTURES

from downstream.errors import DownstreamError
from downstream.ner.card import card_sections
from downstream.ner.task import NerTask
from downstream.settings import FinetuneSettings


def _folder(tmp_path, name):
    folder = tmp_path / name
    shutil.copytree(FIXTURES / "ner-tiny", folder)
    return folder


def _task(**fields):
    settings = FinetuneSettings(task="ner", checkpoint="c", output_dir="o", **fields)
    return NerTask(NerTask.locate_files(settings), **NerTask.options(settings)), settings


@pytest.mark.parametrize("name", ["bc5cdr-chem", "BC5CDR-chem"])  # ours and BioBERT's folder names
def test_a_folder_named_like_a_registered_dataset_types_the_tags(tmp_path, name):
    task, settings = _task(data_dir=_folder(tmp_path, name))
    assert task.labels == ["O", "B-Chemical", "I-Chemical"]
    assert task.report_extras(settings) == {"entity_type": "Chemical", "entity_type_source": f"the folder name {name}"}
    # the type names the saved model's labels: part of the fingerprint
    untyped = FinetuneSettings(task="ner", checkpoint="c", output_dir="o", data_dir=tmp_path / "elsewhere")
    assert settings.fingerprint() != untyped.fingerprint()


def test_a_dataset_name_types_a_data_folder(tmp_path):
    task, _ = _task(data_dir=_folder(tmp_path, "mine"), dataset="ncbi-disease")
    assert task.labels == ["O", "B-Disease", "I-Disease"]


def test_typed_files_keep_their_types(tmp_path):
    folder = _folder(tmp_path, "bc5cdr-chem")
    for path in folder.glob("*.tsv"):
        path.write_text("\n".join(line.replace("\tB", "\tB-Gene").replace("\tI", "\tI-Gene") for line in path.read_text().split("\n")))
    task, _ = _task(data_dir=folder)
    assert task.labels == ["O", "B-Gene", "I-Gene"]


def test_bare_tags_of_unknown_type_are_warned_and_the_card_offers_no_pipeline(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        task, settings = _task(data_dir=_folder(tmp_path, "my-corpus"))
    assert task.labels == ["O", "B", "I"]
    assert any("Give --entity-type TYPE" in r.getMessage() for r in caplog.records)
    assert task.report_extras(settings) == {"untyped_labels": True}
    usage, labels_line, _, _ = card_sections(settings, task.labels, "entity-level F1")
    assert "Not ready for a pipeline" in usage and "pipeline(" not in usage
    typed_usage = card_sections(_task(data_dir=_folder(tmp_path, "ncbi-disease"))[1], ["O", "B-Disease", "I-Disease"], "F1")[0]
    assert "pipeline(" in typed_usage


def test_a_typed_model_on_bare_files_of_another_type_is_an_error_unless_the_user_says_so(tmp_path, caplog):
    chem = _folder(tmp_path, "bc5cdr-chem")
    disease_model = ["O", "B-Disease", "I-Disease"]
    task, _ = _task(data_dir=chem)
    with pytest.raises(DownstreamError, match="Give --entity-type Disease"):
        task.use_labels(disease_model)
    task, _ = _task(data_dir=chem, entity_type="Disease")  # the user says the files are Disease
    task.use_labels(disease_model)
    assert task.labels == disease_model
    # files of unknown type are scored as the model's, with a warning
    task, _ = _task(data_dir=_folder(tmp_path, "my-corpus"))
    with caplog.at_level(logging.WARNING):
        task.use_labels(disease_model)
    assert task.labels == disease_model and any("scored as Disease" in r.getMessage() for r in caplog.records)
    # a model with bare labels on folder-typed files: the same entities, bare again
    task, _ = _task(data_dir=chem)
    task.use_labels(["O", "B", "I"])
    assert task.labels == ["O", "B", "I"]


def test_evaluate_a_disease_model_on_chemical_files_needs_the_type_said_and_shows_no_raw_bars(tmp_path, tiny_checkpoint):
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from typer.testing import CliRunner

    from bioelectra.cli import app

    labels = ["O", "B-Disease", "I-Disease"]
    model_dir = tmp_path / "disease-model"
    model = AutoModelForTokenClassification.from_pretrained(
        tiny_checkpoint, num_labels=3, id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)}
    )
    model.save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(tiny_checkpoint).save_pretrained(model_dir)
    chem = _folder(tmp_path, "bc5cdr-chem")
    args = ["evaluate", "--model", str(model_dir), "--data-dir", str(chem), "--max-seq-length", "16", "--max-eval-examples", "3"]
    result = CliRunner().invoke(app, [*args, "--output-dir", str(tmp_path / "e1")])
    assert result.exit_code == 2
    assert "Give --entity-type Disease" in " ".join(result.output.split())
    result = CliRunner().invoke(app, [*args, "--entity-type", "Disease", "--output-dir", str(tmp_path / "e2")])
    assert result.exit_code == 0, result.output
    assert "(baseline precision 0.00  recall 0.00  F1 0.00)" in result.output  # the score's single-class baseline beside it
    assert "it/s]" not in result.output and "Loading weights" not in result.output  # no raw tqdm bars
    assert "| test baseline |" in (tmp_path / "e2" / "results.md").read_text()
