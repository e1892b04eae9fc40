"""Damaged and odd input, bad options and half-written leftovers: each gives one clear error (exit 2, the
file or option named) or a correct result, never a Python traceback. Issue 17's cases, one test each, and
property-based tests of every reader with Hypothesis (random bytes, truncations, BOMs, mixed line ends,
huge lines): each input parses or raises the reader's own error type, nothing else."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from bioelectra.cli import app, pretrain_app
from bioelectra.corpus import CorpusError, read_jsonl, read_pubmed_xml, read_text_file
from bioelectra.textio import TextFileError, read_text
from downstream.errors import DataFormatError
from downstream.ner.data import read_ner_file
from downstream.relation.data import read_re_file

runner = CliRunner()
#: How many inputs each property test draws (the suite tries PROPERTY_EXAMPLES x the number of them).
PROPERTY_EXAMPLES = 150


def fails_clearly(app_, args, *needles):
    result = runner.invoke(app_, [str(a) for a in args])
    assert result.exit_code == 2, f"exit {result.exit_code}: {result.output[-1500:]} {result.exception!r}"
    assert "Traceback" not in result.output
    text = " ".join(result.output.split())
    for needle in needles:
        assert needle in text, text[-1500:]
    return text


# --- 2. damaged gzip, every reader ----------------------------------------------------------------


def _gzip_variants(tmp_path, payload: bytes, name: str):
    good = gzip.compress(payload)
    truncated = tmp_path / f"truncated-{name}"
    truncated.write_bytes(good[: len(good) // 2])
    corrupted = tmp_path / f"corrupted-{name}"
    corrupted.write_bytes(good[:12] + bytes(b ^ 0x5A for b in good[12:-8]) + good[-8:])
    bad_crc = tmp_path / f"crc-{name}"
    bad_crc.write_bytes(good[:-8] + bytes(4) + good[-4:])
    not_gzip = tmp_path / f"plain-{name}"
    not_gzip.write_bytes(payload)
    return {"truncated": truncated, "corrupted": corrupted, "crc": bad_crc, "not gzip": not_gzip}


READERS = {
    "ner.tsv.gz": (lambda p: read_ner_file(p), DataFormatError, b"Aspirin\tB\ncauses\tO\n\n" * 200),
    "re.tsv.gz": (lambda p: read_re_file(p), DataFormatError, b"sentence\tlabel\n" + b"a @GENE$ b\t1\n" * 200),
    "corpus.txt.gz": (lambda p: list(read_text_file(p)), CorpusError, b"one sentence here .\n\n" * 300),
    "corpus.jsonl.gz": (lambda p: list(read_jsonl(p)), CorpusError, b'{"text": "a b c"}\n' * 300),
    "corpus.xml.gz": (
        lambda p: list(read_pubmed_xml(p)),
        CorpusError,
        b"<PubmedArticleSet>" + b"<PubmedArticle><MedlineCitation><Article><ArticleTitle>T</ArticleTitle>"
        b"</Article></MedlineCitation></PubmedArticle>" * 200 + b"</PubmedArticleSet>",
    ),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_damaged_gzip_names_the_file_in_every_reader(tmp_path, reader):
    read, error, payload = READERS[reader]
    for damage, path in _gzip_variants(tmp_path, payload, reader).items():
        with pytest.raises(error) as info:
            read(path)
        assert path.name in str(info.value), (damage, str(info.value))
        assert "gzip" in str(info.value), (damage, str(info.value))


def test_truncated_gzip_through_the_cli_is_an_error_not_aborted(tmp_path, tiny_checkpoint):
    data = tmp_path / ("a-folder-name-long-enough-that-the-error-line-runs-past-eighty-columns-" * 2) / "data"
    shutil.copytree(FIXTURES / "ner-tiny", data)
    good = gzip.compress((data / "train.tsv").read_bytes() * 50)
    (data / "train.tsv").unlink()
    (data / "train.tsv.gz").write_bytes(good[: len(good) // 2])
    args = ["finetune", "--data-dir", data, "--ckpt", tiny_checkpoint, "--output-dir", tmp_path / "o"]
    text = fails_clearly(app, args, "train.tsv.gz", "truncated gzip")
    assert "Aborted" not in text
    # the path on one line as it is (the console soft-wraps: an 80-column pipe or log once broke it in two)
    assert str(data / "train.tsv.gz") in runner.invoke(app, [str(a) for a in args]).output
    assert not (tmp_path / "o").exists()  # nothing left behind by a failed start


# --- 4. a byte-order mark ------------------------------------------------------------------------


def test_bom_is_dropped_everywhere_text_is_read(tmp_path):
    bom = "\ufeff".encode()
    re_file = tmp_path / "re.tsv"
    re_file.write_bytes(bom + b"sentence\tlabel\na @GENE$ b\t1\nc @GENE$ d\t0\n")
    split = read_re_file(re_file)
    assert [e.label for e in split.examples] == ["1", "0"]  # the header is a header, not an example
    ner_file = tmp_path / "ner.tsv"
    ner_file.write_bytes(bom + b"-DOCSTART-\tO\n\nAspirin\tB\n\n")
    assert [list(s.words) for s in read_ner_file(ner_file).sentences] == [["Aspirin"]]
    text = tmp_path / "c.txt"
    text.write_bytes(bom + b"first line\n")
    assert list(read_text_file(text)) == [["first line"]]
    jsonl = tmp_path / "c.jsonl.gz"
    jsonl.write_bytes(gzip.compress(bom + b'{"text": "x y"}\n'))
    assert list(read_jsonl(jsonl)) == [["x y"]]


# --- 9. smaller ------------------------------------------------------------------------------------


def test_a_txt_of_nul_bytes_is_an_error_not_a_document(tmp_path):
    f = tmp_path / "zeros.txt"
    f.write_bytes(b"\x00" * 64)
    with pytest.raises(CorpusError, match=r"zeros\.txt:1: NUL bytes"):
        list(read_text_file(f))


def test_tokens_with_spaces_are_written_as_one_field(tmp_path):
    from downstream.ner.data import write_conll_predictions

    f = tmp_path / "ner.tsv"
    f.write_text("5 mg\tO\nAspirin\tB\n\n")
    split = read_ner_file(f)
    out = tmp_path / "pred.txt"
    write_conll_predictions(out, split, [["O", "B"]])
    assert out.read_text().splitlines()[:2] == ["5_mg O O", "Aspirin B B"]


def test_a_label_never_seen_in_training_is_warned_and_counted(tmp_path, caplog):
    from downstream.ner.task import NerTask

    for name, body in (("train", "a\tB-Disease\n\n"), ("devel", "b\tB-Gene\n\n"), ("test", "c\tB-Gene\nd\tI-Gene\n\n")):
        (tmp_path / f"{name}.tsv").write_text(body)
    files = {"train": tmp_path / "train.tsv", "dev": tmp_path / "devel.tsv", "test": tmp_path / "test.tsv"}
    task = NerTask(files)
    assert task.unseen_labels == {"B-Gene": 2, "I-Gene": 1}
    assert "training never has" in caplog.text


# --- 3, 5, 6, 8. options and folders ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (["--learning-rate", "inf"], "--learning-rate inf"),
        (["--epochs", "0"], "--epochs 0.0"),
        (["--epochs", "inf"], "--epochs inf"),
        (["--max-train-examples", "0"], "--max-train-examples 0"),
        (["--max-train-examples", "-1"], "--max-train-examples -1"),
        (["--max-seq-length", "100000"], "--max-seq-length 100000"),
    ],
)
def test_nonsense_finetune_options_are_refused_before_training(tmp_path, tiny_checkpoint, options, needle):
    out = tmp_path / "run"
    fails_clearly(app, ["finetune", "--data-dir", FIXTURES / "ner-tiny", "--ckpt", tiny_checkpoint,
                        "--output-dir", out, *options], needle)  # fmt: skip
    assert not out.exists() or not any(out.rglob("checkpoints"))


def test_a_loss_that_becomes_nan_stops_the_trial_naming_step_and_rate(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    fails_clearly(app, ["finetune", "--data-dir", FIXTURES / "ner-tiny", "--ckpt", tiny_checkpoint, "--output-dir", out,
                        "--learning-rate", "1e30", "--epochs", "1", "--batch-size", "2", "--max-seq-length", "16"],
                  "loss became nan", "learning rate 1e+30")  # fmt: skip
    assert not (out / "trial-0" / "checkpoints").exists()


def test_folders_and_files_mixed_up_are_named(tmp_path, tiny_checkpoint):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    fails_clearly(app, ["finetune", "--data-dir", FIXTURES / "ner-tiny", "--ckpt", tiny_checkpoint, "--output-dir", a_file],
                  "exists and is a file")  # fmt: skip
    fails_clearly(app, ["finetune", "--data-dir", a_file, "--ckpt", tiny_checkpoint, "--output-dir", tmp_path / "o"],
                  "is a file; --data-dir takes the folder")  # fmt: skip
    empty = tmp_path / "empty-ckpt"
    empty.mkdir()
    text = fails_clearly(app, ["finetune", "--data-dir", FIXTURES / "ner-tiny", "--ckpt", empty, "--output-dir", tmp_path / "o"],
                         "not a save_pretrained checkpoint folder", "config.json")  # fmt: skip
    assert "sentencepiece" not in text and "tiktoken" not in text


def test_a_corrupt_trial_record_is_named_and_the_trial_run_again(tmp_path, tiny_checkpoint, caplog):
    out = tmp_path / "run"
    args = ["finetune", "--data-dir", FIXTURES / "ner-tiny", "--ckpt", tiny_checkpoint, "--output-dir", out,
            "--epochs", "1", "--batch-size", "2", "--max-seq-length", "16"]  # fmt: skip
    assert runner.invoke(app, [str(a) for a in args]).exit_code == 0
    (out / "trial-0" / "trial.json").write_text('{"seed": 4')
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert "trial.json: unreadable" in " ".join((result.output + caplog.text).split())
    assert json.loads((out / "trial-0" / "trial.json").read_text())["seed"] == 42


def test_hparams_values_of_the_wrong_type_name_the_key(tmp_path):
    fails_clearly(pretrain_app, ["train", "--data-dir", tmp_path, "--hparams", '{"num_train_steps": "5"}'],
                  "hparam 'num_train_steps': expected int, got str '5'")  # fmt: skip
    fails_clearly(pretrain_app, ["train", "--data-dir", tmp_path, "--hparams", '{"compile_scope": "model"}'],
                  "hparam compile_scope='model': expected one of step, forward, layers")  # fmt: skip
    fails_clearly(pretrain_app, ["train", "--data-dir", tmp_path, "--hparams", '{"compile_options": {"max-autotun": true}}'],
                  "hparam compile_options: 'max-autotun' is not an option of torch's inductor (did you mean max_autotune")  # fmt: skip


# --- 7. leftovers -----------------------------------------------------------------------------------


def test_build_data_removes_a_killed_runs_temporary_folder_and_writes_an_ordinary_folder(tmp_path, caplog):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("one two three .\nfour five .\n\nsix seven .\n")
    stale = tmp_path / ".data.tmp-abc123"
    (stale / "examples").mkdir(parents=True)
    result = runner.invoke(pretrain_app, ["build-data", "--corpus-dir", str(corpus), "--output-dir", str(tmp_path / "data"),
                                          "--max-seq-length", "16"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert "half-written output of an earlier build-data" in " ".join((result.output + caplog.text).split())
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o777 & ~umask


# --- property-based: every reader parses or raises its own error ------------------------------------

_lines = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40),
        st.sampled_from(["Aspirin\tB", "x\tI", "-DOCSTART-\tO", "a\tb\tc", "\t", "sentence\tlabel", "s\t1", "{}", '{"text": 3}']),
        st.just("w" * 5000),  # a huge line
    ),
    max_size=30,
)
_endings = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def file_bytes(draw):
    """Text-like content with mixed line ends, maybe a BOM, maybe cut anywhere, or plain random bytes."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=400))
    lines = draw(_lines)
    data = "".join(line + draw(_endings) for line in lines).encode("utf-8")
    if draw(st.booleans()):
        data = "\ufeff".encode() + data
    if data and draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return data


PROPERTY_READERS = {
    "ner": (lambda p: read_ner_file(p), (DataFormatError,)),
    "re": (lambda p: read_re_file(p), (DataFormatError,)),
    "text": (lambda p: list(read_text_file(p)), (CorpusError,)),
    "jsonl": (lambda p: list(read_jsonl(p)), (CorpusError,)),
    "xml": (lambda p: list(read_pubmed_xml(p)), (CorpusError,)),
    "textio": (lambda p: read_text(p), (TextFileError,)),
}


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("reader", sorted(PROPERTY_READERS))
def test_readers_parse_or_raise_their_own_error(tmp_path_factory, reader, compressed):
    read, errors = PROPERTY_READERS[reader]
    folder = tmp_path_factory.mktemp(f"prop-{reader}")
    suffix = {"ner": ".tsv", "re": ".tsv", "text": ".txt", "jsonl": ".jsonl", "xml": ".xml", "textio": ".txt"}[reader]

    @settings(max_examples=PROPERTY_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=file_bytes(), damage=st.sampled_from(["none", "none", "truncate", "raw"]))
    def check(data, damage):
        path = folder / (f"f{suffix}.gz" if compressed else f"f{suffix}")
        if compressed:
            packed = gzip.compress(data)
            if damage == "truncate":
                packed = packed[: max(1, len(packed) // 2)]
            elif damage == "raw":
                packed = data  # a .gz name on content that is not gzip
            path.write_bytes(packed)
        else:
            path.write_bytes(data)
        try:
            read(path)
        except errors as exc:
            assert str(path) in str(exc) or path.name in str(exc), str(exc)

    check()
