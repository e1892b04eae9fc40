"""Shared test fixtures. Tests run offline: the hub is never contacted."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

# transformers binds its log handler to the sys.stderr of the moment it first logs. Were that inside a
# CliRunner invocation, the handler would keep the runner's stream, closed once the invocation ends, and every
# later transformers log would print "--- Logging error ---" with a traceback into later tests' output (a
# test order that ran test_seed_commands before test_bad_input failed so). Bind it now, to the session's.
from transformers.utils import logging as hf_logging  # noqa: E402  (after the environment above)

hf_logging.get_logger("transformers")


def pytest_configure(config):
    """Under pytest-xdist (``make test`` runs ``-n auto``), each worker's torch takes its share of the cores,
    not all of them: two workers of two threads each on two cores wait on each other's threads. Subprocesses
    that tests start keep torch's default."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        import torch

        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // int(workers)))


REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def load_script(path: Path):
    """Import a script of the repository that is not part of a package (a recipe, a benchmark) by its path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout; tests that need it are skipped with this reason when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real benchmark data not found at {SHARED_DATA} (../shared/data beside the checkout)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def wordpiece_tokenizer():
    """A fast tokenizer over Bio-ELECTRA's shipped 31,620-entry cased vocabulary."""
    from bioelectra.presets import (
        BIO_ELECTRA_VOCAB_LOWER_CASE,
        bio_electra_vocab_file,
        load_wordpiece_tokenizer,
    )

    return load_wordpiece_tokenizer(bio_electra_vocab_file(), do_lower_case=BIO_ELECTRA_VOCAB_LOWER_CASE)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, wordpiece_tokenizer) -> Path:
    """A tiny randomly initialised ELECTRA discriminator (hidden 32, 2 layers) with tokenizer files."""
    import torch
    from transformers import ElectraConfig, ElectraForPreTraining

    directory = tmp_path_factory.mktemp("tiny-electra")
    config = ElectraConfig(
        vocab_size=len(wordpiece_tokenizer),
        embedding_size=32,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=wordpiece_tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    ElectraForPreTraining(config).save_pretrained(directory)
    wordpiece_tokenizer.save_pretrained(directory)
    return directory


def write_lines(path: Path, lines: list[str], *, newline: str = "\n", final_newline: bool = True) -> Path:
    """Write ``lines`` joined by ``newline`` (bytes exactly, no platform translation)."""
    text = newline.join(lines) + (newline if final_newline else "")
    path.write_bytes(text.encode("utf-8"))
    return path


def make_ddi_zip(folder: Path, source: Path | None = None) -> Path:
    """Zip ``tests/fixtures/re-ddi-xml`` the way ``DDICorpus-2013.zip`` is laid out (``DDICorpus/...``,
    with a macOS ``.DS_Store`` member) into ``folder/DDICorpus-2013.zip``."""
    import zipfile

    source = source or FIXTURES / "re-ddi-xml"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "DDICorpus-2013.zip"
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(source.rglob("*.xml")):
            archive.write(path, f"DDICorpus/{path.relative_to(source).as_posix()}")
        archive.writestr("DDICorpus/Train/.DS_Store", b"\x00\x00\x00\x01Bud1")
    return target
