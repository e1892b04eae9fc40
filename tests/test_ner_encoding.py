"""Sub-token alignment, windows for long sentences and reassembly of per-word predictions."""

import numpy as np
import pytest
from conftest import write_lines

from downstream.ner.data import (
    IGNORE_INDEX,
    NerSplit,
    Sentence,
    align_labels,
    build_label_list,
    encode_split,
    read_ner_file,
    window_spans,
    word_predictions,
)


def test_align_labels_first_subtoken_only():
    ids, labels = align_labels([[10, 11, 12], [13], [14, 15]], [1, 0, 2])
    assert ids == [10, 11, 12, 13, 14, 15]
    assert labels == [1, IGNORE_INDEX, IGNORE_INDEX, 0, 2, IGNORE_INDEX]


def test_window_spans_cover_every_word_once():
    assert window_spans([1, 1, 1], 10) == [(0, 3)]
    assert window_spans([3, 3, 3, 3], 6) == [(0, 2), (2, 4)]
    # a word longer than the budget gets its own window
    assert window_spans([2, 9, 2], 4) == [(0, 1), (1, 2), (2, 3)]
    assert window_spans([], 4) == []
    with pytest.raises(ValueError):
        window_spans([1], 0)


def _split(tmp_path, sentences):
    lines = []
    for sentence in sentences:
        lines += [f"{w}\t{t}" for w, t in sentence] + [""]
    return read_ner_file(write_lines(tmp_path / "s.tsv", lines))


def test_features_have_cls_sep_and_label_first_subtokens(tmp_path, wordpiece_tokenizer):
    split = _split(tmp_path, [[("BRCA1", "B"), ("mutations", "O")]])
    labels = build_label_list([split])
    encoded = encode_split(split, wordpiece_tokenizer, {label: i for i, label in enumerate(labels)}, max_seq_length=16)
    feature = encoded[0]
    tokens = wordpiece_tokenizer.convert_ids_to_tokens(feature["input_ids"])
    assert tokens == ["[CLS]", "BRCA", "##1", "mutations", "[SEP]"]
    assert feature["labels"] == [IGNORE_INDEX, labels.index("B"), IGNORE_INDEX, labels.index("O"), IGNORE_INDEX]
    assert feature["token_type_ids"] == [0] * 5


@pytest.mark.parametrize("max_seq_length", [4, 5, 8, 128])
def test_long_sentences_are_windowed_and_every_word_predicted(tmp_path, wordpiece_tokenizer, max_seq_length):
    words = ["Familial", "adenomatous", "polyposis", "BRCA1", "and", "hereditary", "nonpolyposis", "colorectal", "cancer", "."]
    tags = ["B", "I", "I", "O", "O", "B", "I", "I", "I", "O"]
    split = _split(tmp_path, [list(zip(words, tags, strict=False)), [("Gout", "B")], list(zip(words[::-1], ["O"] * 10, strict=False))])
    label2id = {"O": 0, "B": 1, "I": 2}
    encoded = encode_split(split, wordpiece_tokenizer, label2id, max_seq_length=max_seq_length, sort_by_length=True)
    assert all(len(f["input_ids"]) <= max_seq_length for f in encoded.features)
    if max_seq_length < 16:
        assert encoded.num_split_sentences == 2
    # an "oracle" prediction: the gold label at each labelled position
    width = max(len(f["labels"]) for f in encoded.features)
    labels = np.full((len(encoded), width), IGNORE_INDEX)
    for row, feature in enumerate(encoded.features):
        labels[row, : len(feature["labels"])] = feature["labels"]
    predicted = word_predictions(encoded, np.where(labels == IGNORE_INDEX, 0, labels), labels)
    assert [len(p) for p in predicted] == [len(s.words) for s in split.sentences]
    assert sum(len(p) for p in predicted) == split.num_words
    assert predicted == [[label2id[t] for t in s.tags] for s in split.sentences]


def test_a_word_longer_than_the_window_is_cut_but_still_predicted(wordpiece_tokenizer):
    long_word = "x" + "Zq" * 40  # many sub-tokens
    split = NerSplit(path="mem", sentences=[Sentence((long_word, "cancer"), ("O", "B"), 1)])
    encoded = encode_split(split, wordpiece_tokenizer, {"O": 0, "B": 1, "I": 2}, max_seq_length=6)
    assert encoded.num_truncated_words == 1
    assert [f["labels"].count(IGNORE_INDEX) < len(f["labels"]) for f in encoded.features] == [True, True]
    assert all(len(f["input_ids"]) <= 6 for f in encoded.features)


def test_word_predictions_detects_misaligned_input(wordpiece_tokenizer):
    split = NerSplit(path="mem", sentences=[Sentence(("Gout",), ("B",), 1)])
    encoded = encode_split(split, wordpiece_tokenizer, {"O": 0, "B": 1}, max_seq_length=8)
    with pytest.raises(ValueError, match="labelled sub-tokens"):
        word_predictions(encoded, np.zeros((1, 4), dtype=int), np.full((1, 4), IGNORE_INDEX))


def test_unknown_tag_in_label_set_is_an_error(tmp_path, wordpiece_tokenizer):
    split = _split(tmp_path, [[("Gout", "B-Disease")]])
    with pytest.raises(ValueError, match="not in the label set"):
        encode_split(split, wordpiece_tokenizer, {"O": 0}, max_seq_length=8)


def test_real_ncbi_every_word_of_every_file_is_evaluated(shared_data, wordpiece_tokenizer):
    """On the real files (long JNLPBA sentences too), windows give each word exactly one prediction."""
    for name in ("ncbi-disease", "jnlpba"):
        for split_name, expected_sentences in (("devel", {"ncbi-disease": 923, "jnlpba": 3856}),):
            split = read_ner_file(shared_data / "ner" / name / f"{split_name}.tsv")
            assert len(split.sentences) == expected_sentences[name]
            label2id = {label: i for i, label in enumerate(build_label_list([split]))}
            encoded = encode_split(split, wordpiece_tokenizer, label2id, max_seq_length=64, sort_by_length=True)
            width = max(len(f["labels"]) for f in encoded.features)
            labels = np.full((len(encoded), width), IGNORE_INDEX)
            for row, feature in enumerate(encoded.features):
                labels[row, : len(feature["labels"])] = feature["labels"]
            predicted = word_predictions(encoded, np.zeros_like(labels), labels)
            assert sum(len(p) for p in predicted) == split.num_words
            if name == "jnlpba":
                assert encoded.num_split_sentences > 0
