"""Reading original TF ELECTRA checkpoints without TensorFlow, and converting them.

The fixtures in ``fixtures/tf_checkpoints`` were written by real TensorFlow
(``fixtures/make_tf_checkpoints.py``);
``expected.npz`` next to each holds what TensorFlow's own reader returned for every variable.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from bioelectra import tf as tfc
from bioelectra.tf import (
    TFCheckpointError,
    TFCheckpointReader,
    convert_tf_checkpoint,
    crc32c,
    find_checkpoint,
    is_tf_checkpoint_dir,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tf_checkpoints"
FP32 = FIXTURES / "fp32-tied"
BF16 = FIXTURES / "bf16-untied"
DTYPES = FIXTURES / "dtypes"
SHARDED = FIXTURES / "sharded"


def expected(directory: Path) -> dict[str, np.ndarray]:
    data = np.load(directory / "expected.npz")
    return {str(name): data[f"t{i}"] for i, name in enumerate(data["names"])}


def crc32c_bitwise(data: bytes) -> int:
    """Reference CRC-32C, bit by bit (no tables): independent of the implementation under test."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def hf_to_tf(hf_name: str, *, generator: bool = False, untied: bool = False) -> tuple[str, bool]:
    """The expected original variable of a transformers parameter, written out independently of the module."""
    parts = hf_name.split(".")
    leaf = parts[-1]
    if hf_name.startswith("electra.embeddings.") and hf_name.split(".")[2] != "LayerNorm":
        scope = "generator" if generator and untied else "electra"
        return f"{scope}/embeddings/{parts[2]}", False
    if hf_name.startswith("electra.embeddings.LayerNorm"):
        scope = "generator" if generator and untied else "electra"
        return f"{scope}/embeddings/LayerNorm/{'gamma' if leaf == 'weight' else 'beta'}", False
    if hf_name == "generator_lm_head.bias":
        return "generator_predictions/output_bias", False
    scope = "generator" if generator else "electra"
    path = hf_name.replace("electra.encoder.layer.", f"{scope}/encoder/layer_").replace(
        "electra.embeddings_project", f"{scope}/embeddings_project"
    )
    path = path.replace("discriminator_predictions.dense_prediction", "discriminator_predictions/dense_1")
    path = path.rsplit(".", 1)[0].replace(".", "/")
    if "LayerNorm" in path:
        return f"{path}/{'gamma' if leaf == 'weight' else 'beta'}", False
    return f"{path}/{'kernel' if leaf == 'weight' else 'bias'}", leaf == "weight"


# ------------------------------------------------------------------------------------------------
# crc32c
# ------------------------------------------------------------------------------------------------


def test_crc32c_known_values():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4 test vectors
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(b"") == 0
    assert tfc.mask_crc32c(0) == 0xA282EAD8


@pytest.mark.parametrize("size", [1, 511, 512, 513, 777, 4100, 70001])
def test_crc32c_lanes_match_bitwise_reference(size):
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    assert crc32c(data) == crc32c_bitwise(data)
    # continuing from a previous crc equals one pass over the concatenation
    assert crc32c(data[size // 3 :], crc32c(data[: size // 3])) == crc32c(data)


def test_crc32c_large_buffer_consistent():
    data = np.random.default_rng(0).integers(0, 256, 3_000_017, dtype=np.uint8)
    whole = crc32c(data)
    cut = 1_234_567  # different lane geometry on each side
    assert crc32c(data[cut:], crc32c(data[:cut])) == whole
    assert crc32c(data.tobytes()) == whole


# ------------------------------------------------------------------------------------------------
# reader
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("directory", [FP32, BF16, DTYPES, SHARDED], ids=lambda p: p.name)
def test_reader_returns_exactly_what_tensorflow_wrote(directory):
    reader = TFCheckpointReader(find_checkpoint(directory))
    want = expected(directory)
    skipped = {"c/string", "c/partitioned"} if directory == DTYPES else set()
    assert set(reader.variable_names()) == set(want) | ({"c/string"} if directory == DTYPES else set())
    for name, value in want.items():
        if name in skipped:
            continue
        got = reader.read(name)
        assert got.shape == value.shape, name
        assert got.dtype == value.dtype, name
        assert np.array_equal(got, value), name


def test_reader_dtypes_and_shapes():
    reader = TFCheckpointReader(find_checkpoint(DTYPES))
    kinds = {n: e.dtype for n, e in reader.entries.items()}
    assert kinds["a/bfloat16"] == "bfloat16" and reader.read("a/bfloat16").dtype == np.float32
    assert kinds["a/float16"] == "float16" and reader.read("a/float16").dtype == np.float16
    assert reader.read("b/int32").dtype == np.int32
    assert reader.read("b/int64").dtype == np.int64
    assert reader.read("c/scalar").shape == () and float(reader.read("c/scalar")) == 3.25
    assert reader.read("c/empty").shape == (0, 4)
    bf16 = TFCheckpointReader(find_checkpoint(BF16))
    assert bf16.entries["electra/embeddings/word_embeddings"].dtype == "bfloat16"
    assert bf16.read("global_step").dtype == np.int64 and int(bf16.read("global_step")) == 7


def test_reader_two_shards(tmp_path):
    reader = TFCheckpointReader(find_checkpoint(SHARDED))
    assert reader.num_shards == 2
    assert {e.shard_id for e in reader.entries.values()} == {0, 1}
    d = copy_fixture(SHARDED, tmp_path / "ckpt")
    (d / "model.ckpt-3.data-00001-of-00002").unlink()
    reader = TFCheckpointReader(find_checkpoint(d))
    in_second = next(n for n, e in reader.entries.items() if e.shard_id == 1)
    with pytest.raises(FileNotFoundError, match="data-00001-of-00002"):
        reader.read(in_second)


def test_reader_refuses_string_and_partitioned_variables():
    reader = TFCheckpointReader(find_checkpoint(DTYPES))
    with pytest.raises(TFCheckpointError, match=r"c/string.*dtype string"):
        reader.read("c/string")
    with pytest.raises(TFCheckpointError, match=r"c/partitioned.*partitioned"):
        reader.read("c/partitioned")


def copy_fixture(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_corrupted_shard_fails_crc(tmp_path):
    d = copy_fixture(FP32, tmp_path / "ckpt")
    reader = TFCheckpointReader(find_checkpoint(d))
    entry = reader.entries["electra/encoder/layer_1/output/dense/kernel"]
    shard = reader.shard_path(entry.shard_id)
    del reader
    raw = bytearray(shard.read_bytes())
    raw[entry.offset + 17] ^= 0x01  # one flipped bit
    shard.write_bytes(bytes(raw))
    reader = TFCheckpointReader(find_checkpoint(d))
    with pytest.raises(
        TFCheckpointError, match=r"data-00000-of-00001.*layer_1/output/dense/kernel.*crc32c mismatch"
    ):
        reader.read("electra/encoder/layer_1/output/dense/kernel")
    reader.read("electra/encoder/layer_0/output/dense/kernel")  # the others are intact
    out = tmp_path / "out"
    with pytest.raises(TFCheckpointError, match="crc32c mismatch"):
        convert_tf_checkpoint(d, out, num_attention_heads=2)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []  # no temporary left over


def test_corrupted_or_truncated_index_fails(tmp_path):
    d = copy_fixture(FP32, tmp_path / "ckpt")
    index = d / "model.ckpt-10.index"
    raw = bytearray(index.read_bytes())
    raw[40] ^= 0x20
    index.write_bytes(bytes(raw))
    with pytest.raises(TFCheckpointError, match=r"model.ckpt-10.index.*crc32c mismatch"):
        TFCheckpointReader(index)
    index.write_bytes(bytes(raw[:30]))
    with pytest.raises(TFCheckpointError, match="too short"):
        TFCheckpointReader(index)


def test_truncated_shard_fails(tmp_path):
    d = copy_fixture(BF16, tmp_path / "ckpt")
    shard = d / "model.ckpt-7.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:100])
    reader = TFCheckpointReader(find_checkpoint(d))
    last = max(reader.entries.values(), key=lambda e: e.offset)
    with pytest.raises(TFCheckpointError, match="truncated"):
        reader.read(last.name)


def test_find_checkpoint_picks_newest_step_and_uses_checkpoint_file(tmp_path):
    # the checkpoint file holds a gs:// path: its base name is looked up next to it
    assert find_checkpoint(FP32) == FP32 / "model.ckpt-10"
    d = tmp_path / "steps"
    d.mkdir()
    for step in (7, 12, 9):
        for f in BF16.glob("model.ckpt-7.*"):
            shutil.copy(f, d / f.name.replace("ckpt-7", f"ckpt-{step}"))
    assert find_checkpoint(d) == d / "model.ckpt-12"
    (d / "checkpoint").write_text('model_checkpoint_path: "/elsewhere/model.ckpt-9"\n')
    assert find_checkpoint(d) == d / "model.ckpt-9"
    (d / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-99"\n')
    with pytest.raises(FileNotFoundError, match=r"model.ckpt-99"):
        find_checkpoint(d)
    with pytest.raises(FileNotFoundError, match="no TensorFlow checkpoint"):
        find_checkpoint(tmp_path)


def test_is_tf_checkpoint_dir(tmp_path):
    assert is_tf_checkpoint_dir(FP32) and is_tf_checkpoint_dir(BF16)
    assert not is_tf_checkpoint_dir(tmp_path)
    assert not is_tf_checkpoint_dir(FP32 / "vocab.txt")
    (tmp_path / "model.ckpt-1.index").write_bytes(b"")  # an index without its data shard
    assert not is_tf_checkpoint_dir(tmp_path)


# ------------------------------------------------------------------------------------------------
# conversion
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp32_both(tmp_path_factory):
    out = tmp_path_factory.mktemp("conv") / "fp32-both"
    report = convert_tf_checkpoint(FP32, out, export="both")
    return out, report


@pytest.fixture(scope="module")
def bf16_both(tmp_path_factory):
    out = tmp_path_factory.mktemp("conv") / "bf16-both"
    report = convert_tf_checkpoint(BF16, out, export="both")
    return out, report


def assert_exact(model, want, *, generator, untied):
    state = model.state_dict()
    tied = "generator_lm_head.weight"
    checked = 0
    for hf_name, tensor in state.items():
        if hf_name == tied:
            continue
        tf_name, transpose = hf_to_tf(hf_name, generator=generator, untied=untied)
        value = want[tf_name].T if transpose else want[tf_name]
        assert tensor.dtype == torch.float32, hf_name
        assert np.array_equal(tensor.numpy(), value), f"{hf_name} != {tf_name}"
        checked += 1
    return checked


def test_discriminator_parameters_exact(fp32_both):
    from transformers import ElectraForPreTraining

    out, report = fp32_both
    model = ElectraForPreTraining.from_pretrained(out / "discriminator")
    c = model.config
    assert (c.vocab_size, c.embedding_size, c.hidden_size, c.num_hidden_layers) == (40, 8, 16, 2)
    assert (c.num_attention_heads, c.intermediate_size, c.max_position_embeddings) == (2, 32, 16)
    checked = assert_exact(model, expected(FP32), generator=False, untied=False)
    assert checked == len(model.state_dict()) == 5 + 2 + 2 * 16 + 4
    assert "electra.embeddings_project.weight" in model.state_dict()


def test_generator_parameters_exact_tied_embeddings(fp32_both):
    from transformers import ElectraForMaskedLM

    out, _ = fp32_both
    model = ElectraForMaskedLM.from_pretrained(out / "generator")
    want = expected(FP32)
    c = model.config
    assert (c.embedding_size, c.hidden_size, c.num_hidden_layers, c.num_attention_heads) == (8, 4, 1, 1)
    assert_exact(model, want, generator=True, untied=False)
    # the shared embeddings are the discriminator's, the LM head is tied to them, the bias is output_bias
    assert np.array_equal(
        model.generator_lm_head.weight.detach().numpy(), want["electra/embeddings/word_embeddings"]
    )
    assert np.array_equal(
        model.electra.embeddings_project.weight.detach().numpy(),
        want["generator/embeddings_project/kernel"].T,
    )


def test_bf16_untied_both(bf16_both):
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    out, report = bf16_both
    want = expected(BF16)
    disc = ElectraForPreTraining.from_pretrained(out / "discriminator")
    gen = ElectraForMaskedLM.from_pretrained(out / "generator")
    assert assert_exact(disc, want, generator=False, untied=False) == len(disc.state_dict())
    assert_exact(gen, want, generator=True, untied=True)
    assert disc.config.num_attention_heads == 4  # from hparams.json's model_hparam_overrides
    assert "electra.embeddings_project.weight" not in disc.state_dict()  # embedding size == hidden size
    assert (gen.config.embedding_size, gen.config.hidden_size) == (8, 8)
    assert np.array_equal(
        gen.generator_lm_head.weight.detach().numpy(), want["generator/embeddings/word_embeddings"]
    )
    assert report.dtypes == {"bfloat16": report.mapped["discriminator"] + report.mapped["generator"]}
    assert report.do_lower_case is True and "hparams.json" in report.do_lower_case_source
    saved = json.loads((out / "conversion_report.json").read_text())
    assert saved["step"] == 7 and saved["outputs"]["generator"] == str(out / "generator")


@pytest.mark.parametrize("which", ["fp32", "bf16"])
def test_both_also_writes_the_joint_pretraining_model(which, fp32_both, bf16_both):
    """`--export both` writes the full ElectraPretrainingModel: exact weights, ties as in the original."""
    from transformers import AutoModel

    from bioelectra.modeling import ElectraPretrainingModel

    out, report = fp32_both if which == "fp32" else bf16_both
    untied = which == "bf16"
    want = expected(FP32 if which == "fp32" else BF16)
    assert report.outputs["pretraining"] == str(out / "pretraining")
    joint = AutoModel.from_pretrained(out / "pretraining")
    assert isinstance(joint, ElectraPretrainingModel)
    assert joint.config.untied_generator_embeddings is untied
    assert_exact(joint.discriminator, want, generator=False, untied=untied)
    assert_exact(joint.generator, want, generator=True, untied=untied)
    disc_words = joint.discriminator.electra.embeddings.word_embeddings.weight
    gen_words = joint.generator.electra.embeddings.word_embeddings.weight
    assert (gen_words.data_ptr() == disc_words.data_ptr()) is (not untied)
    assert joint.generator.generator_lm_head.weight.data_ptr() == gen_words.data_ptr()


def test_report_counts(fp32_both, tmp_path):
    out, report = fp32_both
    want = expected(FP32)
    model_vars = [n for n in want if not n.endswith(("/adam_m", "/adam_v")) and n != "global_step"]
    disc_vars = [n for n in model_vars if n.startswith(("electra/", "discriminator_predictions/"))]
    assert report.step == 10
    assert report.mapped["discriminator"] == len(disc_vars)
    assert report.mapped["generator"] == len(model_vars) - len(disc_vars) + 5  # + the shared embeddings
    assert report.ignored_optimizer_slots == 2 * len(model_vars)
    assert report.ignored_bookkeeping == ["global_step"]
    assert report.unused_model_variables == []
    only_disc = convert_tf_checkpoint(FP32, tmp_path / "d")
    gen_only = sorted(n for n in model_vars if n.startswith(("generator/", "generator_predictions/")))
    assert only_disc.unused_model_variables == gen_only
    assert (tmp_path / "d" / "config.json").is_file() and (
        tmp_path / "d" / "conversion_report.json"
    ).is_file()
    assert not (tmp_path / "d" / "discriminator").exists()


def numpy_layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def numpy_gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def test_discriminator_forward_matches_numpy(fp32_both):
    """Embeddings, projection and the first layer recomputed from the raw TF arrays (the original's math)."""
    from transformers import ElectraForPreTraining

    out, _ = fp32_both
    w = {k: v.astype(np.float64) for k, v in expected(FP32).items()}
    model = ElectraForPreTraining.from_pretrained(out / "discriminator").eval()
    ids = np.array([[2, 7, 9, 11, 3, 12, 30, 3]])
    types = np.array([[0, 0, 0, 0, 0, 1, 1, 1]])
    mask = np.array([[1, 1, 1, 1, 1, 1, 1, 0]])
    with torch.no_grad():
        hf = model(
            torch.tensor(ids),
            attention_mask=torch.tensor(mask),
            token_type_ids=torch.tensor(types),
            output_hidden_states=True,
        )
    e = "electra/embeddings/"
    x = (
        w[e + "word_embeddings"][ids[0]]
        + w[e + "position_embeddings"][: ids.shape[1]]
        + w[e + "token_type_embeddings"][types[0]]
    )
    x = numpy_layer_norm(x, w[e + "LayerNorm/gamma"], w[e + "LayerNorm/beta"])
    x = x @ w["electra/embeddings_project/kernel"] + w["electra/embeddings_project/bias"]  # (seq, 16)
    np.testing.assert_allclose(hf.hidden_states[0][0].numpy(), x, atol=1e-5)

    p = "electra/encoder/layer_0/"

    def dense(v, name):
        return v @ w[p + name + "/kernel"] + w[p + name + "/bias"]

    heads, size = 2, 8
    q, k, v = (
        dense(x, f"attention/self/{n}").reshape(-1, heads, size).transpose(1, 0, 2)
        for n in ("query", "key", "value")
    )
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(size) + (1.0 - mask[0]) * -10000.0  # (heads, seq, seq)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(1, 0, 2).reshape(-1, heads * size)
    attn = numpy_layer_norm(
        dense(context, "attention/output/dense") + x,
        w[p + "attention/output/LayerNorm/gamma"],
        w[p + "attention/output/LayerNorm/beta"],
    )
    ffn = dense(numpy_gelu(dense(attn, "intermediate/dense")), "output/dense")
    layer = numpy_layer_norm(ffn + attn, w[p + "output/LayerNorm/gamma"], w[p + "output/LayerNorm/beta"])
    np.testing.assert_allclose(
        hf.hidden_states[1][0].numpy()[:7], layer[:7], atol=1e-5
    )  # real (unmasked) tokens


def test_unknown_variable_is_an_error(tmp_path, monkeypatch):
    original = TFCheckpointReader.variable_names

    def with_extra(self):
        return original(self) + ["electra/pooler/dense/kernel", "task_specific/classifier/bias"]

    monkeypatch.setattr(TFCheckpointReader, "variable_names", with_extra)
    out = tmp_path / "out"
    with pytest.raises(
        TFCheckpointError,
        match=r"2 variable\(s\).*electra/pooler/dense/kernel, task_specific/classifier/bias",
    ):
        convert_tf_checkpoint(FP32, out)
    assert not out.exists()
    # slots and bookkeeping are known, anything else is not
    assert tfc.check_variables(["global_step", "x/adam_m", "x/adam_v"], [], where="t") == (
        ["x/adam_m", "x/adam_v"],
        ["global_step"],
    )
    with pytest.raises(TFCheckpointError, match="x/adam_mm"):
        tfc.check_variables(["x/adam_mm"], [], where="t")


def test_missing_variable_is_an_error(tmp_path, monkeypatch):
    original = TFCheckpointReader.__init__

    def without_one(self, prefix):
        original(self, prefix)
        del self.entries["electra/encoder/layer_1/attention/self/key/bias"]

    monkeypatch.setattr(TFCheckpointReader, "__init__", without_one)
    out = tmp_path / "out"
    with pytest.raises(TFCheckpointError, match=r"missing: electra/encoder/layer_1/attention/self/key/bias"):
        convert_tf_checkpoint(FP32, out)
    assert not out.exists()


def test_unfilled_parameter_and_shape_mismatch_are_errors():
    mapping = tfc.discriminator_mapping(1, project=False)
    expected_shapes = {k: (2, 2) for k in mapping}
    tensors = {s.name: np.zeros((2, 2), np.float32) for s in mapping.values()}
    tfc.build_state_dict(tensors, mapping, expected_shapes, where="t")
    with pytest.raises(TFCheckpointError, match="no checkpoint variable: extra.weight"):
        tfc.build_state_dict(tensors, mapping, {**expected_shapes, "extra.weight": (1,)}, where="t")
    tensors["electra/encoder/layer_0/output/dense/kernel"] = np.zeros((2, 3), np.float32)
    with pytest.raises(TFCheckpointError, match=r"output/dense/kernel has shape \[3, 2\] \(transposed\)"):
        tfc.build_state_dict(tensors, mapping, expected_shapes, where="t")


def test_given_sizes_must_match_the_tensors(tmp_path):
    with pytest.raises(TFCheckpointError, match=r"hidden_size = 32, but the checkpoint's tensors say 16"):
        convert_tf_checkpoint(FP32, tmp_path / "a", config={"hidden_size": 32, "num_attention_heads": 2})
    with pytest.raises(TFCheckpointError, match=r"unknown config key\(s\) \['hidden_sise'\]"):
        convert_tf_checkpoint(FP32, tmp_path / "a", config={"hidden_sise": 16})
    with pytest.raises(TFCheckpointError, match="unknown hparam"):
        convert_tf_checkpoint(BF16, tmp_path / "b", hparams={"model_size": "small", "hidden_sise": 16})
    with pytest.raises(
        TFCheckpointError, match=r"generator_layers 1.0 x 2 layers != the generator's 1 layers"
    ):
        convert_tf_checkpoint(BF16, tmp_path / "e", hparams={"generator_layers": 1.0})
    with pytest.raises(
        TFCheckpointError, match=r"generator size 0.5 x hidden 16 != the generator's hidden size 4"
    ):
        convert_tf_checkpoint(FP32, tmp_path / "f", config={"generator_size": "0.5"})
    with pytest.raises(TFCheckpointError, match="do not divide hidden size 16"):
        convert_tf_checkpoint(FP32, tmp_path / "c", num_attention_heads=3)
    with pytest.raises(
        TFCheckpointError, match="not an ELECTRA checkpoint|electra/embeddings/word_embeddings"
    ):
        convert_tf_checkpoint(DTYPES, tmp_path / "d", vocab_file=FP32 / "vocab.txt")
    assert not any(tmp_path.iterdir())


def test_existing_output_is_not_overwritten(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(TFCheckpointError, match="exists and is not empty"):
        convert_tf_checkpoint(FP32, out)
    convert_tf_checkpoint(FP32, out, overwrite=True)
    assert not (out / "keep.txt").exists() and (out / "model.safetensors").is_file()


# ------------------------------------------------------------------------------------------------
# command line and fine-tuning entry
# ------------------------------------------------------------------------------------------------


def test_cli_convert_then_load_for_token_classification(tmp_path):
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from bioelectra.cli import app

    out = tmp_path / "hf"
    result = CliRunner().invoke(app, ["convert", str(FP32), "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    assert "discriminator: 43 variables mapped" in result.output
    slots = sum(n.endswith(("/adam_m", "/adam_v")) for n in expected(FP32))
    assert f"{slots} optimizer slots" in result.output and "global_step" in result.output
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert len(tokenizer) == 40
    ids = tokenizer("The gene Protein")["input_ids"]
    # cased, as inferred from vocab.txt: lower-casing would turn "The" and "Protein" into [UNK]
    assert tokenizer.convert_ids_to_tokens(ids) == ["[CLS]", "The", "gene", "Protein", "[SEP]"]
    model = AutoModelForTokenClassification.from_pretrained(out, num_labels=3)
    want = expected(FP32)
    assert np.array_equal(
        model.electra.encoder.layer[1].attention.self.key.weight.detach().numpy(),
        want["electra/encoder/layer_1/attention/self/key/kernel"].T,
    )
    with torch.no_grad():
        logits = model(**tokenizer(["The gene Protein"], return_tensors="pt")).logits
    assert logits.shape == (1, 5, 3)


def test_cli_errors_exit_2(tmp_path):
    from bioelectra.cli import app

    result = CliRunner().invoke(app, ["convert", "--tf-checkpoint", str(tmp_path), "-o", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "no TensorFlow checkpoint" in " ".join(result.output.split())  # rich wraps long lines
    result = CliRunner().invoke(
        app, ["convert", str(FP32), "-o", str(tmp_path / "y"), "--model-size", "base"]
    )
    assert result.exit_code == 2 and "hidden size 768" in " ".join(result.output.split())
    assert not (tmp_path / "y").exists()


def test_finetune_resolves_a_tf_checkpoint_once(tmp_path):
    from bioelectra.cli import _resolve_checkpoint

    path = _resolve_checkpoint(str(BF16), tmp_path)
    target = tmp_path / "converted-discriminator"
    assert path == str(target) and (target / "model.safetensors").is_file()
    stamp = (target / "model.safetensors").stat().st_mtime_ns
    assert _resolve_checkpoint(str(BF16), tmp_path) == str(target)
    assert (target / "model.safetensors").stat().st_mtime_ns == stamp  # reused, not converted again


def test_generator_sharing_the_discriminator_encoder_maps_to_electra_scope():
    # untied_generator = False in the original: the generator is the discriminator plus generator_predictions
    mapping = tfc.generator_mapping(2, project=True, untied_embeddings=False, shared_encoder=True)
    sources = {k: v.name for k, v in mapping.items()}
    assert (
        sources["electra.encoder.layer.1.output.dense.weight"]
        == "electra/encoder/layer_1/output/dense/kernel"
    )
    assert sources["electra.embeddings_project.bias"] == "electra/embeddings_project/bias"
    assert sources["electra.embeddings.word_embeddings.weight"] == "electra/embeddings/word_embeddings"
    assert sources["generator_lm_head.bias"] == "generator_predictions/output_bias"
    assert not any(name.startswith("generator/") for name in sources.values())


def test_cli_generator_export_with_inline_hparams(tmp_path):
    from transformers import ElectraForMaskedLM

    from bioelectra.cli import app

    out = tmp_path / "gen"
    hparams = json.dumps({"model_size": "small", "model_hparam_overrides": {"hidden_size": 16}})
    result = CliRunner().invoke(
        app,
        [
            "convert",
            "--tf-checkpoint",
            str(FP32),
            "-o",
            str(out),
            "--export",
            "generator",
            "--hparams",
            hparams,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "generator: 28 variables mapped" in result.output
    model = ElectraForMaskedLM.from_pretrained(out)
    assert model.config.hidden_size == 4 and model.config.num_attention_heads == 1
