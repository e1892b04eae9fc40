"""BLURB: its own files read by the existing kinds (JNLPBA, GAD, BioASQ in BLURB's form), the 13 datasets in six
task types, the BLURB score against hand-computed cases, and ``benchmark --suite blurb`` listing what is missing."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.benchmark import SUITES, locate
from downstream.blurb import BLURB_DATASETS, BLURB_TASK_TYPES, blurb_markdown, blurb_report, blurb_score
from downstream.dataset_specs import DATASETS
from downstream.errors import DataFormatError, DatasetUnavailableError, DownstreamError
from downstream.literature import literature_file, load_literature
from downstream.registry import locate_dataset_dir, locate_task_files
from downstream.settings import FinetuneSettings
from downstream.yesno.data import find_yesno_files, read_blurb_yesno_tsv, read_yesno_file

runner = CliRunner()


# ------------------------------------------------------------------------------------------- the score


def test_blurb_has_13_datasets_in_six_task_types():
    assert len(BLURB_TASK_TYPES) == 6 and len(BLURB_DATASETS) == 13 == len(set(BLURB_DATASETS))
    assert BLURB_TASK_TYPES["question answering"] == ("pubmedqa", "bioasq-blurb")
    assert SUITES["blurb"] == list(BLURB_DATASETS)
    # the names this version registers are of the kinds that score them; biosses and hoc may come later
    assert {"jnlpba-blurb", "gad-blurb", "bioasq-blurb", "ebm-pico"} <= set(DATASETS)


def test_blurb_score_by_hand():
    values = {"bc5cdr-chem": 90.0, "bc5cdr-disease": 80.0, "ncbi-disease": 85.0, "bc2gm": 75.0, "jnlpba-blurb": 70.0,
              "ebm-pico": 70.0, "chemprot": 60.0, "ddi": 70.0, "gad-blurb": 80.0, "biosses": 90.0, "hoc": 80.0,
              "pubmedqa": 50.0, "bioasq-blurb": 90.0}  # fmt: skip
    # NER (90+80+85+75+70)/5 = 80; PICO 70; RE (60+70+80)/3 = 70; similarity 90; classification 80; QA (50+90)/2 = 70
    # BLURB = (80 + 70 + 70 + 90 + 80 + 70) / 6 = 460 / 6
    full = blurb_score(values)
    assert full["score"] == pytest.approx(460 / 6) and full["complete"] and full["num_datasets"] == 13
    assert full["task_types"]["named entity recognition"]["score"] == pytest.approx(80.0)
    # not the mean over the 13 datasets (which weighs NER five times)
    assert full["score"] != pytest.approx(sum(values.values()) / 13)
    # missing: biosses and hoc absent, ebm-pico None: (80 + 70 + 70) / 3 over 10 of 13
    partial = blurb_score({**{k: v for k, v in values.items() if k not in ("biosses", "hoc")}, "ebm-pico": None, "linnaeus": 1.0})
    assert partial["score"] == pytest.approx(220 / 3) and partial["num_datasets"] == 10 and not partial["complete"]
    assert list(partial["task_types"]) == ["named entity recognition", "relation extraction", "question answering"]
    assert blurb_score({})["score"] is None


def test_blurb_report_compares_published_models_over_the_same_datasets():
    ours = {"ncbi-disease": 80.0, "chemprot": 60.0, "pubmedqa": 50.0}
    published = {"pubmedbert": {"ncbi-disease": 87.82, "chemprot": 77.24, "pubmedqa": 55.84, "ddi": 82.36},
                 "biolinkbert-base": {"pubmedqa": 70.2}}  # fmt: skip
    section = blurb_report(ours, published, {"pubmedbert": {"value": 81.1, "source": "linkbert-2022"}})
    assert section["ours"]["score"] == pytest.approx((80 + 60 + 50) / 3)
    assert set(section["published"]) == {"pubmedbert"}  # BioLinkBERT lacks two of our datasets
    assert section["published"]["pubmedbert"]["score"] == pytest.approx((87.82 + 77.24 + 55.84) / 3)  # ddi not ours: not used
    assert len(section["missing"]) == 10 and "ebm-pico" in section["missing"]
    text = "\n".join(blurb_markdown(section, {"pubmedbert": "PubMedBERT"}, {"ebm-pico": "no training file"}, {"linkbert-2022": 3}))
    assert "## BLURB score over 3 of 13 datasets" in text and "| **BLURB score over 3 of 13 datasets** |  | **63.33** | **73.63** |" in text
    assert "PubMedBERT 81.10<sup>3</sup>" in text and "ebm-pico (no training file)" in text and "hoc (not in this suite run)" in text


# ------------------------------------------------------------------------------- BLURB's files, read


def test_bioasq_blurb_tsv_keeps_quotes_and_its_first_row(tmp_path):
    # hand-made, in BLURB's layout: no header, raw quotes
    (tmp_path / "train.tsv").write_text('q1\tIs "X" a gene?\tSnippet one says "yes, X is".  Snippet two.\tyes\n'
                                        'q2\tDoes Y bind Z?\tNo evidence.\tno\n')  # fmt: skip
    (tmp_path / "test.tsv").write_text("qid\tquestion\tpassage\tlabel\nq3\tIs W safe?\tIt is.\tyes\n")
    split = read_blurb_yesno_tsv(tmp_path / "train.tsv")
    assert [e.id for e in split.examples] == ["q1", "q2"]  # the first line is a question, not a header
    assert split.examples[0].question == 'Is "X" a gene?' and split.examples[0].context.endswith('"yes, X is".  Snippet two.')
    assert split.question_labels() == {"q1": "yes", "q2": "no"}
    assert [e.id for e in read_yesno_file(tmp_path / "test.tsv").examples] == ["q3"]  # a header naming the columns is skipped
    assert set(find_yesno_files(tmp_path)) == {"train", "test"}
    (tmp_path / "bad.tsv").write_text("q1\tquestion\tyes\n")
    with pytest.raises(DataFormatError, match=r"bad.tsv:1: expected 'qid<TAB>question<TAB>passage<TAB>label' \(4 tab-separated columns\), got 3"):
        read_blurb_yesno_tsv(tmp_path / "bad.tsv")
    (tmp_path / "bad.tsv").write_text("q1\tA?\tB.\tyes\nq1\tA?\tB.\tno\n")
    with pytest.raises(DataFormatError, match="bad.tsv:2: question 'q1' a second time"):
        read_blurb_yesno_tsv(tmp_path / "bad.tsv")


def test_a_folder_named_jnlpba_blurb_uses_dev_tsv_not_the_typed_devel(tmp_path):
    folder = tmp_path / "jnlpba-blurb"
    folder.mkdir()
    for name in ("train.tsv", "test.tsv"):
        shutil.copy(FIXTURES / "ner-tiny" / name, folder / name)
    shutil.copy(FIXTURES / "ner-tiny" / "devel.tsv", folder / "dev.tsv")
    (folder / "devel.tsv").write_text("-DOCSTART- 1\n\nhuman\tB-DNA\nlocus\tI-DNA\n")
    from downstream.ner.conll2000 import find_tagging_files

    settings = FinetuneSettings(task="ner", checkpoint="-", output_dir=tmp_path / "o", data_dir=folder)
    files = locate_task_files(settings, "ner", find_tagging_files)
    assert files["dev"].name == "dev.tsv" and files["train"].name == "train.tsv"
    # another name: the usual rule (devel first)
    other = tmp_path / "mine"
    shutil.copytree(folder, other)
    assert locate_task_files(FinetuneSettings(task="ner", checkpoint="-", output_dir=tmp_path / "o", data_dir=other),
                             "ner", find_tagging_files)["dev"].name == "devel.tsv"  # fmt: skip


def test_blurb_files_are_never_downloaded_and_say_where_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path))
    with pytest.raises(DatasetUnavailableError, match=r"(?s)bioasq-blurb.*It is not downloaded here.*participants-area.bioasq.org"):
        locate_dataset_dir("bioasq-blurb")
    with pytest.raises(DatasetUnavailableError, match=r"(?s)ebm-pico.*dev.tsv, test.tsv.*EBM-NLP"):
        locate_dataset_dir("ebm-pico")
    assert DATASETS["gad-blurb"].task == "re" and DATASETS["jnlpba-blurb"].tag_entity_type() == "bio-entity"
    assert not any(DATASETS[n].in_suites for n in ("jnlpba-blurb", "gad-blurb", "bioasq-blurb"))  # not twice in the kind suites


def test_suite_locates_what_is_there_and_says_why_not(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "empty-cache"))
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "pico-tiny", root / "pico" / "ebm-pico")
    (root / "pico" / "ebm-pico" / "train.tsv").unlink()
    shutil.copytree(FIXTURES / "ner-tiny", root / "ner" / "ncbi-disease-not-here")
    where, why = locate("ebm-pico", root)
    assert where is None and "dev and test only, no training file" in why and "EBM-NLP" in why
    shutil.copy(FIXTURES / "pico-tiny" / "train.tsv", root / "pico" / "ebm-pico" / "train.tsv")
    assert locate("ebm-pico", root)[0] == {"data_dir": root / "pico" / "ebm-pico"}
    assert locate("bc2gm", root)[0] is None
    if "biosses" not in DATASETS:
        assert locate("biosses", root) == (None, "not registered in this version (its task kind is not part of it)")


@pytest.mark.slow
def test_benchmark_suite_blurb_scores_what_is_present(tmp_path, tiny_checkpoint, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "empty-cache"))
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "ner-tiny", root / "ner" / "ncbi-disease")
    shutil.copytree(FIXTURES / "pico-tiny", root / "pico" / "ebm-pico")
    (root / "pico" / "ebm-pico" / "train.tsv").unlink()  # as ../shared/data has it
    out = tmp_path / "bench"
    result = runner.invoke(app, ["benchmark", "--ckpt", str(tiny_checkpoint), "--suite", "blurb", "--trials", "1", "--data-root",
                                 str(root), "--epochs", "1", "--max-seq-length", "32", "--batch-size", "4", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads((out / "benchmark.json").read_text())
    assert [r["dataset"] for r in report["rows"]] == ["ncbi-disease"] and len(report["missing"]) == 12
    assert "no training file" in report["missing"]["ebm-pico"]
    ours = report["blurb"]["ours"]
    assert ours["num_datasets"] == 1 and ours["score"] == pytest.approx(100 * report["rows"][0]["summary"]["test"]["f1"]["mean"])
    assert report["blurb"]["published"]["pubmedbert"]["score"] == pytest.approx(87.82)
    markdown = (out / "benchmark.md").read_text()
    assert "## BLURB score over 1 of 13 datasets" in markdown and "Published BLURB scores (all 13 datasets): PubMedBERT (BLURB) 81.16" in markdown
    assert "BioBERT (BLURB) 80.34" in markdown and "BioLinkBERT-base 83.39" in markdown and (out / "plots" / "benchmark.png").is_file()
    assert "Files: ncbi-disease: NCBI disease corpus." in markdown
    # a limited run: our BLURB score alone, no published figures beside it
    limited = runner.invoke(app, ["benchmark", "--ckpt", str(tiny_checkpoint), "--suite", "ncbi-disease", "--trials", "1", "--data-root",
                                  str(root), "--max-steps", "1", "--max-seq-length", "32", "--output-dir", str(tmp_path / "limited")])  # fmt: skip
    assert limited.exit_code == 0, limited.output + repr(limited.exception)
    section = json.loads((tmp_path / "limited" / "benchmark.json").read_text())["blurb"]
    assert section["limited"] and section["ours"]["num_datasets"] == 1 and section["published"] == {} == section["published_scores"]
    text = (tmp_path / "limited" / "benchmark.md").read_text()
    assert "its score is not set beside published figures" in text and "| task type | datasets | ours |\n|---|---|---:|\n" in text


# ------------------------------------------------------------------------------------------ literature


def test_literature_has_blurb_scores_with_sources(tmp_path):
    from downstream.kinds import task_class

    literature = load_literature()
    scores = {s.model: s for s in literature.suite_scores if s.suite == "blurb"}
    assert scores["pubmedbert"].value == 81.16 and scores["biobert-blurb"].value == 80.34 and scores["biolinkbert-base"].value == 83.39
    assert "LinkBERT" in literature.sources[scores["biolinkbert-base"].source]["citation"]
    assert literature.lookup("bioasq-blurb", "accuracy")["biolinkbert-base"].value == 91.43
    # each of the three models has a figure in every BLURB dataset's metric, and BLURB's averaging of its 13
    # figures gives back the published BLURB score (to the 2 decimals printed): a check of the transcription
    for model in ("pubmedbert", "biobert-blurb", "biolinkbert-base"):
        figures = {d: literature.lookup(d, task_class(DATASETS[d].task).benchmark_metrics[0][0]).get(model) for d in BLURB_DATASETS}
        assert all(figures.values()), (model, [d for d, f in figures.items() if f is None])
        assert blurb_score({d: f.value for d, f in figures.items()})["score"] == pytest.approx(scores[model].value, abs=0.005), model
    data = json.loads(literature_file().read_text())
    data["suite_scores"][0]["source"] = "nowhere"
    (tmp_path / "l.json").write_text(json.dumps(data))
    with pytest.raises(DownstreamError, match=r"suite_scores\[0\]: unknown model 'pubmedbert' or source 'nowhere'"):
        load_literature(tmp_path / "l.json")


# -------------------------------------------------------------------------------------- the real files


@pytest.mark.shared_data
def test_real_blurb_files_read_as_blurb_counts_them(shared_data):
    bioasq = find_yesno_files(shared_data / "qa" / "bioasq-blurb")
    counts = {split: len(read_yesno_file(path).examples) for split, path in bioasq.items()}
    assert counts == {"train": 670, "dev": 75, "test": 140}  # BLURB's 670 / 75 / 140
    test = read_yesno_file(bioasq["test"])
    assert test.examples[0].id == "5c58a74e86df2b917400000d"  # the first row is a question (no header)
    assert test.label_counts() == {"yes": 94, "no": 46}
    from downstream.ner.conll2000 import find_tagging_files, read_tagging_file

    settings = FinetuneSettings(task="ner", checkpoint="-", output_dir=shared_data, data_dir=shared_data / "ner" / "jnlpba-blurb")
    files = locate_task_files(settings, "ner", find_tagging_files)
    assert files["dev"].name == "dev.tsv"
    assert [read_tagging_file(files[s]).num_entities for s in ("dev", "test")] == [4551, 8662]  # BLURB's counts
    from downstream.relation.data import find_re_files, read_re_file

    gad = find_re_files(shared_data / "re" / "gad-blurb")
    assert [len(read_re_file(gad[s]).examples) for s in ("train", "dev", "test")] == [4261, 535, 534]
