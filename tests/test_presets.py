"""Size presets: original ELECTRA shapes with Bio-ELECTRA's vocabulary, and hub ids offline."""

import time

import pytest
from typer.testing import CliRunner

from bioelectra.cli import app
from bioelectra.presets import ELECTRA_SIZES, bio_electra_vocab_file, load_wordpiece_tokenizer, preset_config


def test_shipped_vocab_tokenizer_has_all_entries_and_is_cased():
    tokenizer = load_wordpiece_tokenizer(bio_electra_vocab_file(), do_lower_case=False)
    assert len(tokenizer) == 31620
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3, 4]) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert tokenizer.tokenize("BRCA1 mutations") == ["BRCA", "##1", "mutations"]
    assert tokenizer.unk_token_id not in tokenizer("Familial adenomatous polyposis")["input_ids"]


def test_vocab_without_special_tokens_is_rejected(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\n")
    with pytest.raises(ValueError, match="lacks special tokens"):
        load_wordpiece_tokenizer(vocab, do_lower_case=True)


@pytest.mark.parametrize(("size", "hidden", "layers", "heads", "embedding"), [
    ("small", 256, 12, 4, 128), ("base", 768, 12, 12, 768), ("large", 1024, 24, 16, 1024),
])
def test_preset_shapes_are_the_original_sizes(size, hidden, layers, heads, embedding):
    config = preset_config(size, vocab_size=31620)
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.embedding_size) == (
        hidden, layers, heads, embedding)
    assert config.intermediate_size == 4 * hidden
    assert set(ELECTRA_SIZES) == {"small", "base", "large"}


def test_hub_id_offline_fails_fast_with_advice(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    result = CliRunner().invoke(app, ["finetune", "--dataset", "ncbi-disease", "--ckpt", "someone/some-electra",
                                      "--output-dir", str(tmp_path)])
    assert time.perf_counter() - started < 30
    assert result.exit_code == 2
    assert "offline" in result.output and "--ckpt DIR" in result.output.replace("\n", " ")
