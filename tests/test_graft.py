"""recipes/bioelectra-small/graft.py: parts of a pre-trained discriminator grafted onto its untrained twin."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from conftest import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "recipes" / "bioelectra-small" / "graft.py"


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, tiny_checkpoint) -> Path:
    """The tiny checkpoint with every tensor moved off its initialisation, stored in float16 like `ship`."""
    from safetensors.torch import load_file, save_file

    directory = tmp_path_factory.mktemp("pretrained")
    for item in tiny_checkpoint.iterdir():
        shutil.copy2(item, directory / item.name)
    state = load_file(tiny_checkpoint / "model.safetensors")
    save_file({k: (v + 0.5).half() for k, v in state.items()}, directory / "model.safetensors")
    return directory


@pytest.mark.parametrize("part", ["word_embeddings", "encoder"])
def test_graft_takes_the_named_part_from_the_pretrained_model_and_the_rest_from_its_twin(
    tmp_path, pretrained, part
):
    from safetensors.torch import load_file
    from transformers import AutoModelForTokenClassification

    from bioelectra.presets import STAMP_FILE, build_untrained_twin

    graft = load_script(SCRIPT)
    report = graft.graft(pretrained, tmp_path / "out", [part])
    out = load_file(tmp_path / "out" / "model.safetensors")
    donor = load_file(pretrained / "model.safetensors")
    twin = load_file(build_untrained_twin(pretrained, tmp_path / "twin") / "model.safetensors")
    taken = [name for name in out if graft.in_parts(name, [part])]
    assert taken and len(taken) < len(out)
    for name, tensor in out.items():
        assert tensor.dtype == torch.float32
        expected = donor[name].float() if name in taken else twin[name]
        assert torch.equal(tensor, expected), name
    if part == "word_embeddings":
        assert taken == ["electra.embeddings.word_embeddings.weight"]
    else:
        assert all(name.startswith("electra.encoder.layer.") for name in taken)
    assert report == json.loads((tmp_path / "out" / "grafted.json").read_text())
    assert report["from_pretrained"] == len(taken) and report["from_twin"] == len(out) - len(taken)
    # a plain checkpoint for finetune: loads for token classification, carries no twin stamp, no leftovers
    assert not (tmp_path / "out" / STAMP_FILE).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "twin"]
    model = AutoModelForTokenClassification.from_pretrained(tmp_path / "out", num_labels=3)
    torch.testing.assert_close(
        model.electra.embeddings.word_embeddings.weight, out["electra.embeddings.word_embeddings.weight"]
    )


def test_graft_refuses_unknown_parts_and_missing_weights(tmp_path, pretrained, capsys):
    graft = load_script(SCRIPT)
    with pytest.raises(ValueError, match="expected one or more of"):
        graft.graft(pretrained, tmp_path / "out", ["decoder"])
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        graft.graft(tmp_path, tmp_path / "out", ["encoder"])
    assert (
        graft.main(["--pretrained", str(tmp_path), "--take", "encoder", "--output-dir", str(tmp_path / "o")])
        == 1
    )
    assert "no model.safetensors" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


def test_graft_command_line_writes_the_report(tmp_path, pretrained, capsys):
    graft = load_script(SCRIPT)
    argv = [
        "--pretrained",
        str(pretrained),
        "--take",
        "embeddings",
        "--take",
        "head",
        "--output-dir",
        str(tmp_path / "g"),
    ]
    assert graft.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["parts"] == ["embeddings", "head"] and report["seed"] == 0
    names = json.loads((tmp_path / "g" / "grafted.json").read_text())
    assert names == report and report["from_pretrained"] > 4
