"""RE model inputs: placeholders as single tokens, truncation reporting, the task adapter and both heads."""

import pytest
from conftest import FIXTURES, write_lines

from downstream.relation.data import (
    PLACEHOLDERS,
    ReSplit,
    add_placeholder_tokens,
    encode_re_split,
    find_re_files,
    placeholders_in,
    read_re_file,
)


@pytest.fixture()
def tokenizer(tiny_checkpoint):
    from downstream.checkpoints import load_tokenizer

    return load_tokenizer(str(tiny_checkpoint))  # a fresh copy: adding tokens must not leak between tests


def test_without_special_tokens_wordpiece_splits_placeholders(tokenizer):
    assert tokenizer.tokenize("@GENE$") == ["@", "GEN", "##E", "$"]
    assert len(tokenizer.tokenize("BC6ENTC")) > 1


def test_placeholders_become_single_unsplit_tokens(tokenizer):
    before = len(tokenizer)
    ids = add_placeholder_tokens(tokenizer, PLACEHOLDERS)
    assert len(tokenizer) == before + len(PLACEHOLDERS) and ids == list(range(before, before + len(PLACEHOLDERS)))
    tokens = tokenizer.tokenize("The @GENE$ gene, BC6ENTC-induced @DRUG$,@DRUG$ and @CHEM-GENE$.")
    assert tokens == ["The", "@GENE$", "gene", ",", "BC6ENTC", "-", "induced", "@DRUG$", ",", "@DRUG$", "and", "@CHEM-GENE$", "."]
    # idempotent: a second call adds nothing and returns the same ids
    assert add_placeholder_tokens(tokenizer, PLACEHOLDERS) == ids and len(tokenizer) == before + len(PLACEHOLDERS)


def test_placeholders_found_in_data():
    chem = read_re_file(FIXTURES / "re-chemprot" / "train.tsv")
    assert placeholders_in([chem]) == ["BC6ENTC", "BC6ENTG", "BC6OTHER"]
    gad = read_re_file(FIXTURES / "re-gad" / "1" / "test.tsv")
    assert placeholders_in([gad]) == ["@GENE$", "@DISEASE$"]


def test_truncation_counts_examples_that_lose_a_marker(tmp_path, tokenizer):
    path = write_lines(tmp_path / "t.tsv", [
        "index\tsentence\tlabel",
        "a\t@GENE$ causes @DISEASE$ .\t1",  # short: untouched
        "b\t@GENE$ " + "very " * 20 + "long @DISEASE$ .\t1",  # truncated, @DISEASE$ lost
        "c\t@GENE$ and @DISEASE$ " + "tail " * 20 + ".\t0",  # truncated, both markers kept
    ])
    split = read_re_file(path)
    ids = add_placeholder_tokens(tokenizer, placeholders_in([split]))
    encoded = encode_re_split(split, tokenizer, {"0": 0, "1": 1}, max_seq_length=12, placeholder_ids=ids)
    assert encoded.stats["truncated"] == 2 and encoded.stats["marker_lost"] == 1
    assert encoded.stats["marker_lost_indices"] == ["b"]
    for feature in encoded.features:
        assert len(feature["input_ids"]) <= 12
        assert feature["input_ids"][0] == tokenizer.cls_token_id and feature["input_ids"][-1] == tokenizer.sep_token_id
    short = encoded.features[0]
    assert tokenizer.convert_ids_to_tokens(short["input_ids"]) == ["[CLS]", "@GENE$", "causes", "@DISEASE$", ".", "[SEP]"]
    assert short["labels"] == 1
    # sorted for evaluation: positions map back to the file order
    by_length = encode_re_split(split, tokenizer, {"0": 0, "1": 1}, max_seq_length=64, sort_by_length=True)
    lengths = [len(f["input_ids"]) for f in by_length.features]
    assert lengths == sorted(lengths) and sorted(by_length.example_index) == [0, 1, 2]


def test_examples_missing_a_marker_in_the_file_are_counted(tmp_path, tokenizer):
    from downstream.relation.data import argument_marker_count

    assert argument_marker_count("BC6ENTC binds BC6ENTG near BC6OTHER") == 2
    assert argument_marker_count("@DRUG-DRUG$ with x") == 2 and argument_marker_count("@GENE$ only") == 1
    path = write_lines(tmp_path / "t.tsv", ["sentence\tlabel", "BC6ENTC binds BC6ENTG\tCPR:4", "BC6OTHER binds BC6ENTG\tFalse"])
    encoded = encode_re_split(read_re_file(path), tokenizer, {"False": 0, "CPR:4": 1}, max_seq_length=32)
    assert (encoded.stats["marker_missing"], encoded.stats["marker_missing_indices"]) == (1, ["1"])


@pytest.mark.shared_data
def test_real_chemprot_lines_without_a_marker(shared_data, tokenizer):
    """SOURCES.md 3c: train 23 lines without BC6ENTC + 1 without BC6ENTG, dev 6 / 0, test 14 / 1."""
    from downstream.relation.data import argument_marker_count

    for split, expected in (("train", 24), ("dev", 6), ("test", 15)):
        examples = read_re_file(shared_data / "re" / "chemprot" / f"{split}.tsv").examples
        assert sum(1 for e in examples if argument_marker_count(e.sentence) < 2) == expected


def test_unknown_label_while_encoding_names_the_line(tmp_path, tokenizer):
    from downstream.errors import DataFormatError

    split = ReSplit(path="x.tsv", examples=read_re_file(FIXTURES / "re-blurb" / "test.tsv").examples)
    with pytest.raises(DataFormatError, match=r"x.tsv:2: label 'CPR:4' not among"):
        encode_re_split(split, tokenizer, {"false": 0}, max_seq_length=32)


@pytest.mark.parametrize("head", ["electra", "hf"])
def test_task_builds_a_resized_classifier_and_scores_in_file_order(tiny_checkpoint, tokenizer, head):
    import numpy as np
    import torch
    from transformers import EvalPrediction

    from downstream.relation.task import ReTask

    task = ReTask(find_re_files(FIXTURES / "re-chemprot"), re_head=head)
    assert task.labels == ["False", "CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]
    assert task.positive_labels == ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]
    task.encode(tokenizer, max_seq_length=32)
    assert task.placeholders == ["BC6ENTC", "BC6ENTG", "BC6OTHER"] and len(tokenizer) == 31620 + 3
    torch.manual_seed(0)
    model = task.build_model(str(tiny_checkpoint))
    assert model.accepts_loss_kwargs is False
    assert model.get_input_embeddings().weight.shape == (31623, 32)
    assert type(model).__name__ == ("ElectraForRelationClassification" if head == "electra" else "ElectraForSequenceClassification")
    if head == "electra":
        assert isinstance(model.classifier, torch.nn.Linear)  # dropout + linear, no extra dense layer
    batch = task.data_collator(tokenizer)([task.dataset("train")[i] for i in range(4)])
    output = model(**batch)
    assert output.logits.shape == (4, 6) and output.loss.ndim == 0

    # the evaluator maps length-sorted predictions back to file order: predicting each gold label is perfect
    evaluator = task.evaluator("test")
    gold_ids = [task.label2id[task.splits["test"].examples[i].label] for i in task.dataset("test").example_index]
    metrics = evaluator(EvalPrediction(predictions=np.array(gold_ids), label_ids=np.array(gold_ids)))
    assert metrics["f1"] == 1.0 and metrics["accuracy"] == 1.0
    assert evaluator.last.predictions == [e.label for e in task.splits["test"].examples]


def test_empty_dev_is_cut_from_train_and_counts_keep_the_file_sizes(tokenizer):
    from downstream.relation.task import ReTask

    task = ReTask(find_re_files(FIXTURES / "re-gad", fold=1), dev_fraction=0.2, dev_split_seed=3)
    task.encode(tokenizer, max_seq_length=32)
    counts = task.counts()
    assert counts["train"]["examples"] == 20 and counts["train"]["training_examples"] == 16
    assert counts["dev"]["examples"] == 4 and "random.Random(3)" in counts["dev"]["file"]
    assert counts["test"]["examples"] == 7
    assert counts["placeholders"]["tokens"] == ["@GENE$", "@DISEASE$"]
    assert task.metric_mode.startswith("binary") and task.f1_name == "F1 of class 1"


def test_electra_head_refuses_a_non_electra_checkpoint(tmp_path, tokenizer):
    from transformers import BertConfig, BertModel

    from downstream.errors import DownstreamError
    from downstream.relation.task import ReTask

    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(tmp_path / "bert")
    task = ReTask(find_re_files(FIXTURES / "re-blurb"))
    with pytest.raises(DownstreamError, match="--re-head electra needs an ELECTRA checkpoint"):
        task.build_model(str(tmp_path / "bert"))
