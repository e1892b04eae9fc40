"""The PICO kind: BLURB's EBM PICO reader, its macro token-level F1 against scikit-learn, scoring without a
training file, fine-tuning with one, and the real dev / test files when ../shared/data is present."""

from __future__ import annotations

import json
import random

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DataFormatError, DatasetUnavailableError, DownstreamError
from downstream.pico.data import PICO_LABELS, TRAIN_FILE_HELP, find_pico_files, read_pico_file, token_ids
from downstream.pico.metrics import pico_metrics
from downstream.pico.task import PicoTask

runner = CliRunner()
PICO = FIXTURES / "pico-tiny"


def test_reader_keeps_documents_sentences_and_quotes():
    split = read_pico_file(PICO / "dev.tsv")
    assert [len(s.words) for s in split.sentences] == [7, 4]
    assert {s.document for s in split.sentences} == {"900011"} and split.sentences[1].line == 11
    assert split.sentences[1].words[2] == '"unchanged"'  # a quote is an ordinary character
    assert split.counts() == {"documents": 1, "sentences": 2, "tokens": 11,
                              "tags": {"O": 6, "I-PAR": 2, "I-INT": 2, "I-OUT": 1}}  # fmt: skip
    assert token_ids(read_pico_file(PICO / "test.tsv"))[1][:2] == ["900022.0.0", "900022.0.1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-DOCSTART- (1)\n\nword\tB-PAR\n", r"x.tsv:3: tag 'B-PAR' is not one of O, I-PAR, I-INT, I-OUT"),
        ("-DOCSTART- (1)\n\nword I-PAR\n", r"x.tsv:3: expected 'token<TAB>tag' \(2 tab-separated columns\), got 1"),
        ("word\tO\n", r"x.tsv:1: a token before the first '-DOCSTART- \(<PMID>\)' line"),
        ("-DOCSTART- (1)\n\n", r"x.tsv: no sentences found"),
    ],
)
def test_reader_names_file_and_line_of_bad_input(tmp_path, text, message):
    (tmp_path / "x.tsv").write_text(text)
    with pytest.raises(DataFormatError, match=message):
        read_pico_file(tmp_path / "x.tsv")


def test_metric_by_hand():
    gold = [["I-PAR", "I-PAR", "O", "I-INT", "I-OUT"], ["O", "I-OUT"]]
    pred = [["I-PAR", "O", "O", "I-OUT", "I-OUT"], ["I-PAR", "O"]]
    m = pico_metrics(gold, pred)
    # PAR: tp 1, predicted 2, gold 2 -> P 1/2, R 1/2, F1 1/2; INT: tp 0 -> 0; OUT: tp 1, predicted 2, gold 2 -> 1/2
    assert m["per_type"]["PAR"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    assert m["per_type"]["INT"]["f1"] == 0.0 and m["per_type"]["OUT"]["f1"] == 0.5
    assert m["f1"] == pytest.approx(1 / 3) and m["micro_f1"] == pytest.approx(2 * 2 / (5 + 4))
    assert m["accuracy"] == pytest.approx(3 / 7) and m["num_words"] == 7
    with pytest.raises(ValueError, match="sentence 1: 2 gold tags but 1 predicted"):
        pico_metrics(gold, [pred[0], ["O"]])


def test_metric_matches_scikit_learn_macro_f1_over_the_three_elements():
    from sklearn.metrics import f1_score, precision_score, recall_score

    rng = random.Random(7)
    for _ in range(20):
        gold = [[rng.choice(PICO_LABELS) for _ in range(rng.randint(1, 12))] for _ in range(rng.randint(1, 8))]
        pred = [[rng.choice(PICO_LABELS) for _ in sentence] for sentence in gold]
        flat_gold, flat_pred = [t for s in gold for t in s], [t for s in pred for t in s]
        kwargs = {"labels": ["I-PAR", "I-INT", "I-OUT"], "average": "macro", "zero_division": 0}
        m = pico_metrics(gold, pred)
        assert m["f1"] == pytest.approx(f1_score(flat_gold, flat_pred, **kwargs))
        assert m["precision"] == pytest.approx(precision_score(flat_gold, flat_pred, **kwargs))
        assert m["recall"] == pytest.approx(recall_score(flat_gold, flat_pred, **kwargs))
        assert m["micro_f1"] == pytest.approx(f1_score(flat_gold, flat_pred, **{**kwargs, "average": "micro"}))


def test_without_train_a_model_can_be_scored_not_trained(tmp_path, tiny_checkpoint):
    for name in ("dev.tsv", "test.tsv"):
        (tmp_path / name).write_bytes((PICO / name).read_bytes())
    files = find_pico_files(tmp_path)
    assert set(files) == {"dev", "test"}
    task = PicoTask(files)
    assert "EBM-NLP 2.00" in task.not_trainable and "train_pmid.tsv" in task.not_trainable
    from downstream.checkpoints import load_tokenizer

    task.encode(load_tokenizer(str(tiny_checkpoint)), max_seq_length=16)
    assert len(task.dataset("train")) == 0 and len(task.dataset("dev")) >= 2
    assert task.counts()["train"]["file"].startswith("absent (train.tsv not in") and task.counts()["train"]["sentences"] == 0
    baseline = task.baseline("test")  # best single tag: accuracy of O; an element's F1 for all-that-element
    assert baseline["predictions"]["accuracy"] == "O" and baseline["values"]["f1"] > 0
    result = runner.invoke(app, ["finetune", "--loader", "pico", "--data-dir", str(tmp_path), "--ckpt", str(tiny_checkpoint),
                                 "--max-steps", "1", "--output-dir", str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code == 2 and "no train.tsv" in result.output and not (tmp_path / "run").exists()
    (tmp_path / "test.tsv").unlink()
    with pytest.raises(DatasetUnavailableError, match="missing test"):
        find_pico_files(tmp_path)


@pytest.mark.slow
def test_finetune_then_evaluate_pico(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    result = runner.invoke(app, ["finetune", "--loader", "pico", "--data-dir", str(PICO), "--ckpt", str(tiny_checkpoint),
                                 "--max-seq-length", "32", "--max-steps", "2", "--batch-size", "2", "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = json.loads((out / "results.json").read_text())
    assert report["task"] == "pico" and report["labels"] == list(PICO_LABELS)
    assert report["counts"]["test"]["tokens"] == 14 and report["counts"]["train"]["documents"] == 3
    rows = (out / "trial-0" / "test_predictions.tsv").read_text().splitlines()
    assert rows[0] == "id\ttoken\tgold\tpredicted" and len(rows) == 1 + 14 and rows[1].startswith("900021.0.0\tVitamin\tI-INT\t")
    assert "PAR" in (out / "trial-0" / "classification_report.txt").read_text()
    # evaluate re-scores the saved model on dev and test: the trial's own test F1
    again = runner.invoke(app, ["evaluate", "--model", str(out / "trial-0" / "model"), "--loader", "pico", "--data-dir",
                                str(PICO), "--max-seq-length", "32", "--output-dir", str(tmp_path / "eval")])  # fmt: skip
    assert again.exit_code == 0, again.output + repr(again.exception)
    scored = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert scored["test"]["f1"] == pytest.approx(report["trials"][0]["test"]["f1"])


def test_training_file_help_says_where_it_comes_from():
    assert "https://github.com/bepnye/EBM-NLP" in TRAIN_FILE_HELP and "bioelectra evaluate --loader pico" in TRAIN_FILE_HELP
    assert "build_ebm_pico_file" in TRAIN_FILE_HELP


def ebm_nlp_tree(root):
    """A hand-made EBM-NLP 2.00 layout (no text of the corpus): two documents, starting-span labels per element."""
    docs = {"111": "Aspirin for adults with migraine . Pain fell", "22": "Zinc in children ."}
    labels = {  # per element, one label per token; 111's "adults" is both a participant and an outcome: outcome wins
        "participants": {"111": "0 0 1 1 1 0 0 0", "22": "0 0 1 0"},
        "interventions": {"111": "1 0 0 0 0 0 0 0", "22": "1 0 0 0"},
        "outcomes": {"111": "0 0 1 0 0 0 1 0", "22": "0 0 0 0"},
    }
    (root / "ebm_nlp_2_00" / "documents").mkdir(parents=True)
    for pmid, text in docs.items():
        (root / "ebm_nlp_2_00" / "documents" / f"{pmid}.tokens").write_text(text.replace(" ", "\n") + "\n")
    for element, per_doc in labels.items():
        folder = root / "ebm_nlp_2_00" / "annotations" / "aggregated" / "starting_spans" / element / "train"
        folder.mkdir(parents=True)
        for pmid, line in per_doc.items():
            # comma-separated as ebm_nlp_demo.py reads them; one document newline-separated, as build_data.py splits
            (folder / f"{pmid}.AGGREGATED.ann").write_text(line.replace(" ", "," if pmid == "111" else "\n") + "\n")
    (root / "train_pmid.tsv").write_text("22,111")
    return root


def test_build_ebm_pico_from_an_ebm_nlp_copy(tmp_path):
    from downstream.pico.ebm_nlp import build_ebm_pico_file, read_pmid_list

    root = ebm_nlp_tree(tmp_path)
    out = tmp_path / "pico" / "train.tsv"
    counts = build_ebm_pico_file(root, read_pmid_list(root / "train_pmid.tsv"), out)
    assert counts == {"documents": 2, "sentences": 3, "tokens": 12}
    split = read_pico_file(out)
    assert [s.document for s in split.sentences] == ["22", "111", "111"]  # the list's order
    assert split.sentences[1].tags == ("I-INT", "O", "I-OUT", "I-PAR", "I-PAR", "O")  # outcomes win the overlap
    assert split.sentences[2].words == ("Pain", "fell") and split.sentences[2].tags == ("I-OUT", "O")
    assert out.read_text().startswith("-DOCSTART- (22)\n\nZinc\tI-INT\nin\tO\nchildren\tI-PAR\n.\tO\n\n-DOCSTART- (111)")
    (root / "ebm_nlp_2_00" / "annotations" / "aggregated" / "starting_spans" / "outcomes" / "train" / "111.AGGREGATED.ann").write_text("0,1")
    with pytest.raises(DataFormatError, match=r"111.AGGREGATED.ann: 2 labels for the 8 tokens of 111.tokens"):
        build_ebm_pico_file(root, ["111"], tmp_path / "x.tsv")
    assert not (tmp_path / "x.tsv").exists()  # nothing half-written
    with pytest.raises(DataFormatError, match="PMID 9 of the split list is not in this EBM-NLP copy"):
        build_ebm_pico_file(root, ["9"], tmp_path / "x.tsv")
    with pytest.raises(DatasetUnavailableError, match="no EBM-NLP 2.00 corpus"):
        build_ebm_pico_file(tmp_path / "pico", ["22"], tmp_path / "x.tsv")
    (tmp_path / "bad.tsv").write_text("12,x3")
    with pytest.raises(DataFormatError, match="expected PMIDs separated by commas, got 'x3'"):
        read_pmid_list(tmp_path / "bad.tsv")


@pytest.mark.shared_data
def test_real_ebm_pico_dev_and_test(shared_data):
    folder = shared_data / "pico" / "ebm-pico"
    files = find_pico_files(folder)
    assert set(files) == {"dev", "test"}
    test = read_pico_file(files["test"]).counts()
    # ../shared/data/pico/ebm-pico/PROVENANCE.md: 191 abstracts, 2,076 sentences, 51,784 tokens; BLURB's 16,364 PICO tokens
    assert (test["documents"], test["sentences"], test["tokens"]) == (191, 2076, 51784)
    assert test["tags"] == {"O": 35420, "I-PAR": 4711, "I-INT": 3563, "I-OUT": 8090}
    dev = read_pico_file(files["dev"]).counts()
    assert (dev["documents"], dev["tokens"]) == (960, 262268)
    with pytest.raises(DownstreamError):
        raise DownstreamError(PicoTask(files).not_trainable)
