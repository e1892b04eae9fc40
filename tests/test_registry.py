"""Dataset registry: shipped NCBI-disease, --data-dir layouts, download and cache, offline errors."""

import gzip
import hashlib
import io
import tarfile
import time

import pytest

from downstream import dataset_specs, registry
from downstream.errors import DatasetUnavailableError, DownstreamError
from downstream.ner.data import read_ner_file


def test_all_ner_benchmarks_are_registered():
    assert set(dataset_specs.NER_DATASETS) == {
        "bc2gm", "bc4chemd", "bc5cdr-chem", "bc5cdr-disease", "jnlpba", "linnaeus", "ncbi-disease", "s800",
    }
    for spec in dataset_specs.NER_DATASETS.values():
        assert spec.archive_url.startswith("http") and spec.archive_member.startswith("datasets/NER/")
        assert spec.original_url.startswith("http")


def test_shipped_ncbi_disease_is_the_registered_bytes_and_counts():
    files = registry.locate_dataset("ncbi-disease", task="ner")
    for split, filename in (("train", "train.tsv"), ("dev", "devel.tsv"), ("test", "test.tsv")):
        data = gzip.decompress(files[split].read_bytes())
        assert hashlib.sha256(data).hexdigest() == registry.get_spec("ncbi-disease").sha256[filename]
    counts = {split: len(read_ner_file(path).sentences) for split, path in files.items()}
    assert counts == {"train": 5424, "dev": 923, "test": 940}


def test_find_split_files_accepts_dev_spelling(tmp_path):
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        (tmp_path / name).write_text("a\tO\n")
    assert registry.find_split_files(tmp_path)["dev"].name == "dev.tsv"
    (tmp_path / "devel.tsv").write_text("a\tO\n")
    assert registry.find_split_files(tmp_path)["dev"].name == "devel.tsv"


def test_missing_split_names_what_is_expected(tmp_path):
    (tmp_path / "train.tsv").write_text("a\tO\n")
    with pytest.raises(DatasetUnavailableError, match="missing devel.tsv or dev.tsv, test.tsv"):
        registry.find_split_files(tmp_path)


def test_unknown_dataset_and_wrong_task():
    with pytest.raises(DownstreamError, match="unknown dataset 'nope'"):
        registry.get_spec("nope")
    with pytest.raises(DownstreamError, match="is a NER benchmark"):
        registry.get_spec("bc2gm", task="re")


def test_offline_missing_dataset_fails_fast_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    with pytest.raises(DatasetUnavailableError) as info:
        registry.locate_dataset("bc2gm")
    assert time.perf_counter() - started < 5
    message = str(info.value)
    assert "train.tsv, devel.tsv (or dev.tsv), test.tsv" in message
    assert str(tmp_path / "datasets" / "bc2gm") in message
    assert "--data-dir" in message and "datasets/NER/BC2GM" in message


def _archive(tmp_path, member: str, files: dict[str, bytes]):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{member}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path = tmp_path / "datasets.tar.gz"
    path.write_bytes(buffer.getvalue())
    return path


def _spec(archive, sha):
    return dataset_specs.DatasetSpec(
        name="toy", task="ner", title="toy", entity_types=("Disease",), archive_url=archive.as_uri(),
        archive_member="datasets/NER/Toy", original_url="http://example.org", citation="-", sha256=sha,
    )


def test_download_extracts_verifies_and_caches(tmp_path, monkeypatch):
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "BIOELECTRA_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    files = {"train.tsv": b"a\tB\n\n", "devel.tsv": b"b\tO\n\n", "test.tsv": b"c\tO\n\n", "train_dev.tsv": b"x\tO\n"}
    archive = _archive(tmp_path, "datasets/NER/Toy", files)
    sha = {"train.tsv": hashlib.sha256(files["train.tsv"]).hexdigest()}
    target = tmp_path / "cache" / "toy"
    registry.download_dataset(_spec(archive, sha), target)
    assert sorted(p.name for p in target.iterdir()) == ["devel.tsv", "test.tsv", "train.tsv", "train_dev.tsv"]
    assert (target / "train.tsv").read_bytes() == files["train.tsv"]
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_download_with_bad_checksum_leaves_nothing(tmp_path, monkeypatch):
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "BIOELECTRA_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    archive = _archive(tmp_path, "datasets/NER/Toy", {"train.tsv": b"a\tB\n", "devel.tsv": b"b\tO\n", "test.tsv": b"c\tO\n"})
    target = tmp_path / "cache" / "toy"
    with pytest.raises(DownstreamError, match="SHA-256"):
        registry.download_dataset(_spec(archive, {"train.tsv": "0" * 64}), target)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []
