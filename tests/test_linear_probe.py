"""recipes/bioelectra-mini/linear_probe.py: word alignment, the probe itself, and the script end to end."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from conftest import FIXTURES, load_script

SCRIPT = Path(__file__).resolve().parent.parent / "recipes" / "bioelectra-mini" / "linear_probe.py"


def test_word_features_take_each_words_first_sub_token(tiny_checkpoint):
    from transformers import AutoModel, AutoTokenizer

    from downstream.ner.data import read_ner_file

    probe = load_script(SCRIPT)
    tokenizer = AutoTokenizer.from_pretrained(tiny_checkpoint)
    model = AutoModel.from_pretrained(tiny_checkpoint).eval()
    sentences = read_ner_file(FIXTURES / "ner-tiny" / "train.tsv").sentences[:5]
    x, tags, lengths = probe.word_features(model, tokenizer, sentences, batch_size=2)
    assert lengths == [len(s.words) for s in sentences]
    assert tags == [t for s in sentences for t in s.tags]
    assert x.shape == (sum(lengths), model.config.num_hidden_layers + 1, model.config.hidden_size)
    # the row of a word is the state of its first sub-token in that sentence alone
    enc = tokenizer(list(sentences[1].words), is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        last = model(**enc).last_hidden_state[0]
    first = enc.word_ids(0).index(2)  # third word
    torch.testing.assert_close(x[lengths[0] + 2, -1], last[first], rtol=1e-4, atol=1e-5)


def test_probe_learns_a_linearly_separable_tagging():
    probe = load_script(SCRIPT)
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (600,), generator=g)
    x = torch.randn(600, 8, generator=g) + 4.0 * torch.nn.functional.one_hot(y, 8).float()
    layer, mean, std = probe.train_probe(x, y, 3, epochs=300)  # one 4,096-row batch per epoch here
    assert (layer((x - mean) / std).argmax(-1) == y).float().mean() > 0.97


def test_script_prints_probe_f1_for_a_checkpoint(tiny_checkpoint, capsys, tmp_path):
    probe = load_script(SCRIPT)
    output = tmp_path / "probe" / "probe.json"
    result = probe.main(["--ckpt", str(tiny_checkpoint), "--data-dir", str(FIXTURES / "ner-tiny"), "--epochs", "2",
                         "--output", str(output)])  # fmt: skip
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == result == json.loads(output.read_text())
    assert [p.name for p in output.parent.iterdir()] == ["probe.json"]  # no temporary file left
    assert result["train_words"] > 0 and result["dev_words"] > 0
    assert set(result["f1"]) == {"last_layer", "all_layers"}
    assert all(0.0 <= v <= 100.0 for v in result["f1"].values())
