"""GLUE: the reader on hand-made files in GLUE's layouts (tests/fixtures/glue-*: an RTE, an MRPC with its
byte-order mark and an unbalanced quote, an STS-B, a header-less CoLA without a final newline), bad rows,
the metrics against scikit-learn / scipy / numpy and a hand-computed case, double_unordered, truncation and
the GLUE server's submission files. The real files of ../shared/data/glue are read when present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES

from downstream.classification import regression_scores
from downstream.errors import DataFormatError, DatasetUnavailableError, DownstreamError
from downstream.glue.data import double_unordered_pairs, find_glue_files, read_glue_file
from downstream.glue.metrics import classification_scores
from downstream.glue.spec import GLUE_TASKS, glue_spec, is_glue_name
from downstream.glue.task import GlueTask
from downstream.task import EvalResult


def test_names_glue_and_the_original_electra_code():
    assert glue_spec("sst").name == "sst-2" and glue_spec("STS-B").name == "sts-b" and glue_spec("sts").name == "sts-b"
    assert glue_spec("CoLA").folder == "CoLA" and glue_spec("mnli-mm").dev_file == "dev_mismatched.tsv"
    for name in ("cola", "sst", "mrpc", "sts", "qqp", "mnli", "qnli", "rte", "wnli"):
        assert is_glue_name(name)
    with pytest.raises(DownstreamError, match="unknown GLUE task 'ncbi-disease'"):
        glue_spec("ncbi-disease")
    selection = {name: spec.selection for name, spec in GLUE_TASKS.items()}
    assert selection["cola"] == "mcc" and selection["sts-b"] == "spearman"
    assert {v for k, v in selection.items() if k not in ("cola", "sts-b")} == {"accuracy"}


def test_reads_each_layout():
    rte = read_glue_file(FIXTURES / "glue-rte" / "train.tsv", glue_spec("rte"))
    assert len(rte.examples) == 8 and rte.examples[0].label == "entailment" and rte.examples[1].index == "1"
    assert rte.examples[6].text_a == 'The committee approved the new "green" budget.'  # quotes kept as text
    assert rte.label_counts() == {"entailment": 4, "not_entailment": 4}
    mrpc = read_glue_file(FIXTURES / "glue-mrpc" / "train.tsv", glue_spec("mrpc"))  # BOM, unbalanced quotes
    assert len(mrpc.examples) == 4 and mrpc.examples[1].text_a.startswith('Officials said this was an " extremely')
    assert mrpc.examples[0].text_b.startswith('" The pie') and mrpc.examples[3].line == 5
    cola = read_glue_file(FIXTURES / "glue-cola" / "dev.tsv", glue_spec("cola"))  # no header, no final newline
    assert [e.label for e in cola.examples] == ["1", "0", "1"] and cola.examples[2].text_a == "The doll wriggled loose."
    assert cola.examples[0].text_b is None and cola.examples[0].line == 1
    sts = read_glue_file(FIXTURES / "glue-stsb" / "train.tsv", glue_spec("sts-b"))
    assert [e.label for e in sts.examples] == [5.0, 3.8, 0.0, 4.25] and sts.examples[0].text_b == "An air plane is taking off."
    test = read_glue_file(FIXTURES / "glue-cola" / "test.tsv", glue_spec("cola"), labelled=False)
    assert not test.labelled and [e.index for e in test.examples] == ["0", "1"] and test.examples[0].label == "0"
    sts_test = read_glue_file(FIXTURES / "glue-stsb" / "test.tsv", glue_spec("sts-b"), labelled=False)
    assert sts_test.examples[1].text_a == "Men play soccer." and sts_test.examples[1].label == 0.0


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("task", "text", "message"),
    [
        ("rte", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\ta\tb\n", r"train.tsv:3: 3 fields, expected 4 tab-separated fields as the header"),
        ("rte", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tmaybe\n", r"train.tsv:2: unknown label 'maybe' for rte \(expected one of entailment, not_entailment\)"),
        ("sts-b", "sentence1\tsentence2\tscore\na\tb\t7.5\n", r"train.tsv:2: score 7.5 outside 0 to 5"),
        ("sts-b", "sentence1\tsentence2\tscore\na\tb\thigh\n", r"train.tsv:2: score 'high' is not a number"),
        ("cola", "gj04\t1\t\tGood.\ngj04\t1\tGood.\n", r"train.tsv:2: 3 fields, expected 4 tab-separated fields \(source, label"),
        ("qnli", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n", r"train.tsv:1: header .* lacks column 'question'"),
        ("rte", "", r"train.tsv: empty file"),
    ],
)
def test_bad_rows_name_file_line_and_what_was_expected(tmp_path, task, text, message):
    with pytest.raises(DataFormatError, match=message):
        read_glue_file(_write(tmp_path / "train.tsv", text), glue_spec(task))


def test_missing_files_say_what_is_expected_and_where_glue_is(tmp_path):
    _write(tmp_path / "QNLI" / "dev.tsv", "index\tquestion\tsentence\tlabel\n0\ta\tb\tentailment\n")
    with pytest.raises(DatasetUnavailableError, match=r"missing train.tsv for GLUE QNLI .*found dev.tsv.*nyu-mll/glue"):
        find_glue_files(tmp_path / "QNLI", glue_spec("qnli"))
    with pytest.raises(DatasetUnavailableError, match="data folder not found"):
        find_glue_files(tmp_path / "nowhere", glue_spec("rte"))
    with pytest.raises(DatasetUnavailableError, match="no such file"):
        read_glue_file(tmp_path / "QNLI" / "train.tsv", glue_spec("qnli"))
    mnli = tmp_path / "MNLI"
    for name in ("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv", "test_mismatched.tsv"):
        _write(mnli / name, "x\n")
    assert set(find_glue_files(mnli, glue_spec("mnli"))) == {"train", "dev"}
    files = find_glue_files(mnli, glue_spec("mnli-mm"))
    assert files["dev"].name == "dev_mismatched.tsv" and files["test"].name == "test_mismatched.tsv"


def test_classification_metrics_match_sklearn_and_a_hand_computed_mcc():
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

    gold = ["1", "1", "1", "0", "0", "0", "1", "0"]
    pred = ["1", "1", "0", "0", "0", "1", "1", "0"]
    # TP 3, FN 1, TN 3, FP 1: MCC = (3*3 - 1*1) / sqrt(4*4*4*4) = 0.5; F1 of class 1 = 0.75; accuracy 0.75
    cola = classification_scores(glue_spec("cola"), gold, pred)
    assert cola["mcc"] == pytest.approx(0.5) and cola["accuracy"] == pytest.approx(0.75) and "f1" not in cola
    mrpc = classification_scores(glue_spec("mrpc"), gold, pred)
    assert mrpc["f1"] == pytest.approx(0.75) and mrpc["precision"] == pytest.approx(0.75) and "mcc" not in mrpc
    assert mrpc["confusion"] == {"0": {"0": 3, "1": 1}, "1": {"0": 1, "1": 3}}
    rng = np.random.default_rng(0)
    gold = [str(x) for x in rng.integers(0, 2, 200)]
    pred = [str(x) for x in rng.integers(0, 2, 200)]
    scores = classification_scores(glue_spec("qqp"), gold, pred)
    assert scores["f1"] == pytest.approx(f1_score([int(g) for g in gold], [int(p) for p in pred]))
    assert scores["accuracy"] == pytest.approx(accuracy_score(gold, pred))
    assert classification_scores(glue_spec("cola"), gold, pred)["mcc"] == pytest.approx(matthews_corrcoef(gold, pred))
    assert classification_scores(glue_spec("cola"), gold, ["1"] * 200)["mcc"] == 0.0  # constant: 0, as sklearn


def test_regression_metrics_match_numpy_and_scipy():
    from scipy.stats import pearsonr, spearmanr

    gold = [0.0, 1.0, 2.5, 3.0, 4.75]
    pred = [0.1, 0.9, 3.5, 3.1, 6.0]
    scores = regression_scores(gold, pred)
    assert scores["pearson"] == pytest.approx(np.corrcoef(gold, pred)[0, 1])  # independent: numpy
    ranks = lambda xs: np.argsort(np.argsort(xs))  # noqa: E731 - no ties here
    assert scores["spearman"] == pytest.approx(np.corrcoef(ranks(gold), ranks(pred))[0, 1])
    assert scores["spearman"] == pytest.approx(0.9) and scores["pearson"] == pytest.approx(pearsonr(gold, pred)[0])
    assert scores["mse"] == pytest.approx(np.mean((np.array(gold) - np.array(pred)) ** 2))
    rng = np.random.default_rng(1)
    g, p = rng.uniform(0, 5, 300), rng.uniform(0, 5, 300)
    assert regression_scores(g, p)["spearman"] == pytest.approx(spearmanr(g, p)[0])
    flat = regression_scores(gold, [2.0] * 5)
    assert flat["pearson"] == 0.0 and flat["spearman"] == 0.0 and flat["constant_predictions"]


def _files(name: str) -> dict[str, Path]:
    return {s: FIXTURES / name / f"{s}.tsv" for s in ("train", "dev", "test")}


def test_double_unordered_doubles_mrpc_and_sts_training_pairs_only():
    mrpc = GlueTask(_files("glue-mrpc"), glue_task="mrpc")  # on by default, as the original
    train = mrpc.splits["train"].examples
    assert len(train) == 8 and not train[0].swapped and train[4].swapped
    assert (train[4].text_a, train[4].text_b, train[4].label) == (train[0].text_b, train[0].text_a, train[0].label)
    assert len(mrpc.splits["dev"].examples) == 3  # only training data
    assert len(GlueTask(_files("glue-mrpc"), glue_task="mrpc", double_unordered=False).splits["train"].examples) == 4
    assert len(GlueTask(_files("glue-rte"), glue_task="rte", double_unordered=True).splits["train"].examples) == 8  # not doubled
    assert len(GlueTask(_files("glue-stsb"), glue_task="sts").splits["train"].examples) == 8
    with pytest.raises(ValueError, match="sentence pairs"):
        double_unordered_pairs(read_glue_file(FIXTURES / "glue-cola" / "train.tsv", glue_spec("cola")))


def test_pairs_lose_tokens_from_the_longer_segment_first(wordpiece_tokenizer):
    from downstream.classification import encode_sentence_pairs
    from downstream.glue.data import GlueExample, GlueSplit

    long = "the patient was given a very long course of treatment over many weeks in the hospital ward"
    split = GlueSplit(None, [GlueExample("0", long, "it worked .", "entailment", 1)])
    encoded = encode_sentence_pairs(split.examples, wordpiece_tokenizer, lambda label: 0, max_seq_length=16, sort_by_length=False)
    ids = encoded.features[0]["input_ids"]
    second = wordpiece_tokenizer("it worked .", add_special_tokens=False)["input_ids"]
    assert len(ids) == 16 and ids[-len(second) - 1 : -1] == second  # the short sentence kept whole
    assert encoded.features[0]["token_type_ids"].count(1) == len(second) + 1 and encoded.stats["truncated"] == 1


def test_evaluator_maps_length_sorted_predictions_back_and_writes_the_submission(tmp_path, wordpiece_tokenizer):
    from transformers import EvalPrediction

    task = GlueTask(_files("glue-rte"), glue_task="rte")
    task.encode(wordpiece_tokenizer, max_seq_length=64)
    order = task.dataset("dev").example_index
    assert sorted(order) == list(range(4)) and order != list(range(4))  # sorted by length
    gold_ids = [task.label2id[task.splits["dev"].examples[i].label] for i in order]
    evaluator = task.evaluator("dev")
    metrics = evaluator(EvalPrediction(predictions=np.array(gold_ids), label_ids=np.array(gold_ids)))
    assert metrics["accuracy"] == 1.0 and evaluator.last.predictions == [e.label for e in task.splits["dev"].examples]
    test = task.evaluator("test")
    assert test(EvalPrediction(predictions=np.array([0, 1, 0]), label_ids=np.zeros(3))) == {"num_examples": 3}
    assert task.predictions_filename == "RTE.tsv" and test.last.metrics["scored"] is False
    task.write_predictions(tmp_path / "RTE.tsv", "test", test.last)
    rows = (tmp_path / "RTE.tsv").read_text().splitlines()
    by_index = dict(row.split("\t") for row in rows[1:])
    assert rows[0] == "index\tprediction" and len(rows) == 4 and set(by_index.values()) <= {"entailment", "not_entailment"}
    sorted_test = [task.splits["test"].examples[i].index for i in task.dataset("test").example_index]
    assert by_index[sorted_test[1]] == "not_entailment"


def test_sts_submission_scores_and_regression_targets(tmp_path):
    task = GlueTask(_files("glue-stsb"), glue_task="sts-b")
    assert task.labels == ["score"] and task._target(5.0) == 1.0 and task._target(3.8) == pytest.approx(0.76)
    assert task.predictions_filename == "STS-B.tsv" and task.headline_metrics == ("pearson", "spearman")
    task.write_predictions(tmp_path / "STS-B.tsv", "test", EvalResult(metrics={}, predictions=[4.12345, 0.5]))
    assert (tmp_path / "STS-B.tsv").read_text() == "index\tprediction\n0\t4.123\n1\t0.500\n"
    cola = GlueTask(_files("glue-cola"), glue_task="cola")
    cola.write_predictions(tmp_path / "CoLA.tsv", "test", EvalResult(metrics={}, predictions=["1", "0"]))
    assert (tmp_path / "CoLA.tsv").read_text() == "index\tprediction\n0\t1\n1\t0\n"


def test_regression_head_uses_mean_squared_error(tiny_checkpoint):
    import torch

    task = GlueTask(_files("glue-stsb"), glue_task="sts-b")
    model = task.build_model(str(tiny_checkpoint))
    assert model.config.problem_type == "regression" and model.config.num_labels == 1
    ids = torch.tensor([[2, 100, 200, 3]])
    model.eval()
    with torch.no_grad():
        out = model(input_ids=ids, labels=torch.tensor([0.5]))
    assert out.logits.shape == (1, 1) and float(out.loss) == pytest.approx(float((out.logits[0, 0] - 0.5) ** 2), rel=1e-5)
    assert torch.equal(task.reduce_logits(out.logits, None), out.logits[:, 0])


# the real GLUE files (../shared/data/glue), when present: every row read, the published split sizes
SIZES = {"cola": (8551, 1043, 1063), "sst-2": (67349, 872, 1821), "mrpc": (3668, 408, 1725),
         "sts-b": (5749, 1500, 1379), "rte": (2490, 277, 3000), "wnli": (635, 71, 146)}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SIZES))
def test_real_glue_files_read_whole(shared_data, name):
    spec = glue_spec(name)
    folder = shared_data / "glue" / spec.folder
    if not folder.is_dir():
        pytest.skip(f"GLUE {spec.folder} not found at {folder}")
    files = find_glue_files(folder, spec)
    sizes = tuple(len(read_glue_file(files[s], spec, labelled=s != "test").examples) for s in ("train", "dev", "test"))
    assert sizes == SIZES[name]


def test_max_eval_examples_and_the_single_class_baseline():
    """``--max-eval-examples`` cuts dev and test; the baseline is the best constant class (here computed with
    scikit-learn directly), none for STS-B's regression or GLUE's unlabelled test set."""
    from sklearn.metrics import accuracy_score, matthews_corrcoef

    task = GlueTask(_files("glue-rte"), glue_task="rte", max_eval_examples=3)
    assert len(task.splits["dev"].examples) == 3 and len(task.splits["test"].examples) == 3
    gold = [e.label for e in task.splits["dev"].examples]  # entailment, not_entailment, entailment
    baseline = task.baseline("dev")
    majority = max(set(gold), key=gold.count)
    assert baseline["predictions"]["accuracy"] == majority == "entailment"
    assert baseline["values"]["accuracy"] == pytest.approx(accuracy_score(gold, [majority] * 3))
    assert task.baseline("test") is None  # GLUE's test labels are hidden
    cola = GlueTask(_files("glue-cola"), glue_task="cola")
    cola_gold = [e.label for e in cola.splits["dev"].examples]
    assert cola.baseline("dev")["values"]["mcc"] == pytest.approx(matthews_corrcoef(cola_gold, [cola_gold[0]] * len(cola_gold)))
    assert GlueTask(_files("glue-stsb"), glue_task="sts").baseline("dev") is None
    assert task.predicted_classes(EvalResult(metrics={}, predictions=["entailment", "not_entailment"])) == ["entailment", "not_entailment"]
