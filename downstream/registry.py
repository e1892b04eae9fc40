"""Registry of the biomedical benchmarks by name: format, public source, file layout, checksums.

A dataset is found, in this order:

1. shipped inside this package (NCBI-disease, so the main job runs offline on a fresh machine);
2. the local cache, ``$BIOELECTRA_CACHE/datasets/<name>/`` (default ``~/.cache/bioelectra``);
3. downloaded from its public source into the cache (needs a network; refused at once when
   ``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE`` or ``BIOELECTRA_OFFLINE`` is set, and within seconds when
   the host cannot be reached), with SHA-256 checks where the checksums are known.

``--data-dir DIR`` bypasses the registry for any dataset, registered or not.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import socket
import tarfile
import tempfile
import urllib.parse
import urllib.request
from importlib import resources
from pathlib import Path

from downstream.dataset_specs import DATASETS, DatasetSpec
from downstream.errors import DatasetUnavailableError, DownstreamError

logger = logging.getLogger(__name__)



#: Extensions tried for each split file, in order.
SPLIT_SUFFIXES = (".tsv", ".tsv.gz", ".txt", ".txt.gz", ".conll", ".iob2")



def get_spec(name: str, *, task: str | None = None) -> DatasetSpec:
    """The registry entry for ``name``.

    Raises:
        DownstreamError: unknown name, or a dataset of another task kind than ``task``.
    """
    spec = DATASETS.get(name.lower())
    if spec is None:
        known = ", ".join(sorted(k for k, v in DATASETS.items() if task is None or v.task == task))
        raise DownstreamError(
            f"unknown dataset {name!r}; registered{' ' + task.upper() if task else ''} datasets: {known}. "
            "For your own files use --data-dir DIR."
        )
    if task is not None and spec.task != task:
        raise DownstreamError(f"dataset {name!r} is a {spec.task.upper()} benchmark, not {task.upper()} (--loader {spec.task})")
    return spec


def cache_root() -> Path:
    """``$BIOELECTRA_CACHE`` or ``~/.cache/bioelectra``."""
    return Path(os.environ.get("BIOELECTRA_CACHE", Path.home() / ".cache" / "bioelectra"))


def shipped_dir(name: str) -> Path | None:
    """The folder of a dataset shipped inside the package, or None."""
    root = Path(str(resources.files("downstream") / "data" / name))
    return root if root.is_dir() else None


def find_split_files(folder: Path) -> dict[str, Path]:
    """Locate ``train``, ``dev`` and ``test`` files in ``folder``.

    Accepts ``devel`` or ``dev`` for the development split and the extensions in ``SPLIT_SUFFIXES``
    (``.gz`` files are read transparently).

    Returns:
        ``{"train": path, "dev": path, "test": path}``.

    Raises:
        DatasetUnavailableError: the folder is missing or lacks a split; the message lists what was expected.
    """
    folder = Path(folder)
    if not folder.is_dir():
        if folder.exists():
            raise DatasetUnavailableError(
                f"{folder}: is a file; --data-dir takes the folder that holds train.tsv, devel.tsv and test.tsv"
            )
        raise DatasetUnavailableError(f"data folder not found: {folder}")
    found = find_named_splits(folder, SPLIT_SUFFIXES)
    missing = [s for s in ("train", "dev", "test") if s not in found]
    if missing:
        wanted = {"train": "train.tsv", "dev": "devel.tsv or dev.tsv", "test": "test.tsv"}
        raise DatasetUnavailableError(
            f"{folder}: missing {', '.join(wanted[m] for m in missing)} "
            f"(expected train.tsv, devel.tsv or dev.tsv, test.tsv; .gz accepted)"
        )
    return found


def offline_mode() -> bool:
    """True when the user asked for no network (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``, ``BIOELECTRA_OFFLINE``)."""
    for var in ("BIOELECTRA_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}:
            return True
    return False


def _expected_files(spec: DatasetSpec, target: Path) -> str:
    """What ``target`` must hold for ``spec``, by the dataset's layout and files (the same for every task kind)."""
    if spec.layout == "folds":
        return f"fold folders {target}/1/ .. {target}/10/, each with train.tsv, dev.tsv (may be empty), test.tsv"
    named = list(spec.split_files.values()) or list(spec.files)
    if named:
        return f"{', '.join(named)} in {target}"
    return f"train.tsv, devel.tsv (or dev.tsv), test.tsv in {target}"


def _unavailable_message(spec: DatasetSpec, target: Path, reason: str) -> str:
    if spec.get_from:
        return (
            f"dataset {spec.name!r} ({spec.title}) is not available: {reason}.\n"
            f"  Expected: {', '.join(spec.sha256)} in {target}\n"
            f"  or pass --data-dir DIR pointing at such a folder.\n"
            f"  It is not downloaded here; get it from {spec.get_from}."
        )
    if spec.files:
        source = ", ".join(spec.files.values())
    else:
        source = f"{spec.archive_url} (folder {spec.archive_member}/ inside the archive)"
    return (
        f"dataset {spec.name!r} ({spec.title}) is not available: {reason}.\n"
        f"  Expected: {_expected_files(spec, target)}\n"
        f"  or pass --data-dir DIR pointing at such a folder.\n"
        f"  Source: {source}; original: {spec.original_url}"
    )


def _host_reachable(url: str, timeout: float) -> bool:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return True
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_dataset(spec: DatasetSpec, target: Path, *, timeout: float = 5.0) -> Path:
    """Download ``spec``'s archive, extract its split files into ``target`` and verify their checksums.

    The archive is streamed to a temporary file with a progress bar; only the dataset's folder is
    extracted; files land under a temporary name and are renamed when all checks pass.

    Raises:
        DatasetUnavailableError: offline, unreachable host, or a failed download.
        DownstreamError: a checksum mismatch or a member missing from the archive.
    """
    if offline_mode():
        raise DatasetUnavailableError(_unavailable_message(spec, target, "offline mode (HF_HUB_OFFLINE / BIOELECTRA_OFFLINE is set)"))
    if not _host_reachable(spec.archive_url, timeout):
        raise DatasetUnavailableError(
            _unavailable_message(spec, target, f"cannot reach {urllib.parse.urlparse(spec.archive_url).hostname} within {timeout:.0f} s")
        )
    from tqdm.auto import tqdm

    target.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", dir=target.parent))
    try:
        archive = workdir / "archive.tar.gz"
        logger.info("downloading %s (%s)", spec.archive_url, spec.name)
        try:
            with urllib.request.urlopen(spec.archive_url, timeout=timeout) as response, open(archive, "wb") as out:
                total = int(response.headers.get("Content-Length") or 0) or None
                with tqdm(total=total, unit="B", unit_scale=True, desc=f"download {spec.name}") as bar:
                    for block in iter(lambda: response.read(1 << 20), b""):
                        out.write(block)
                        bar.update(len(block))
        except OSError as exc:
            raise DatasetUnavailableError(_unavailable_message(spec, target, f"download failed: {exc}")) from exc
        staging = workdir / "files"
        staging.mkdir()
        prefix = spec.archive_member.rstrip("/") + "/"
        extracted = 0
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                name = member.name.lstrip("./")
                if not member.isfile() or not name.startswith(prefix):
                    continue
                rel = name[len(prefix):]
                nested = spec.layout == "folds" and rel.count("/") == 1 and rel.split("/")[0].isdigit()
                if ("/" in rel and not nested) or rel.startswith(".") or "/." in rel:
                    continue
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as src, open(staging / rel, "wb") as dst:  # type: ignore[union-attr]
                    shutil.copyfileobj(src, dst)
                extracted += 1
        if extracted == 0:
            raise DownstreamError(f"{spec.archive_url}: no files under {prefix} in the archive")
        verify_checksums(spec, staging)
        if spec.split_files:
            split_files_of(spec, staging)
        elif spec.layout == "splits":
            find_split_files(staging)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    logger.info("cached %s in %s", spec.name, target)
    return target


def verify_checksums(spec: DatasetSpec, folder: Path) -> None:
    """Check the SHA-256 of each file that ``spec`` has a checksum for.

    Raises:
        DownstreamError: a file's checksum differs (the message gives both).
    """
    for filename, expected in spec.sha256.items():
        path = folder / filename
        if not path.is_file():
            continue
        actual = sha256_of(path)
        if actual != expected:
            raise DownstreamError(
                f"{path}: SHA-256 {actual} differs from the registered {expected} for {spec.name}; "
                "the download is corrupt or the source changed (use --data-dir to run on your own copy)"
            )


def locate_dataset(name: str, *, task: str | None = None, download: bool = True) -> dict[str, Path]:
    """The split files of a registered dataset: shipped, cached, or downloaded into the cache.

    Returns:
        ``{"train": path, "dev": path, "test": path}``.

    Raises:
        DownstreamError: unknown dataset.
        DatasetUnavailableError: not shipped, not cached, and not downloadable now.
    """
    spec = get_spec(name, task=task)
    shipped = shipped_dir(spec.name) if spec.shipped else None
    if shipped is not None:
        return find_split_files(shipped)
    cached = cache_root() / "datasets" / spec.name
    if cached.is_dir():
        return find_split_files(cached)
    if not download or spec.get_from:
        raise DatasetUnavailableError(_unavailable_message(spec, cached, "not in the cache"))
    return find_split_files(download_dataset(spec, cached))


def download_files(spec: DatasetSpec, target: Path, *, timeout: float = 5.0) -> Path:
    """Download ``spec.files`` one by one into ``target`` and verify their checksums.

    Raises:
        DatasetUnavailableError: offline, unreachable host, or a failed download.
        DownstreamError: a checksum mismatch.
    """
    if offline_mode():
        raise DatasetUnavailableError(_unavailable_message(spec, target, "offline mode (HF_HUB_OFFLINE / BIOELECTRA_OFFLINE is set)"))
    first_url = next(iter(spec.files.values()))
    if not _host_reachable(first_url, timeout):
        raise DatasetUnavailableError(
            _unavailable_message(spec, target, f"cannot reach {urllib.parse.urlparse(first_url).hostname} within {timeout:.0f} s")
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", dir=target.parent))
    try:
        for rel, url in spec.files.items():
            logger.info("downloading %s (%s)", url, spec.name)
            (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response, open(workdir / rel, "wb") as out:
                    shutil.copyfileobj(response, out)
            except OSError as exc:
                raise DatasetUnavailableError(_unavailable_message(spec, target, f"download of {url} failed: {exc}")) from exc
        verify_checksums(spec, workdir)
        if target.exists():
            shutil.rmtree(target)
        os.replace(workdir, target)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    logger.info("cached %s in %s", spec.name, target)
    return target


def locate_dataset_dir(name: str, *, task: str | None = None, download: bool = True) -> Path:
    """The folder of a registered dataset (relation extraction: files, fold folders or the DDI zip), from
    the cache or downloaded into it.

    Raises:
        DownstreamError: unknown dataset.
        DatasetUnavailableError: not cached and not downloadable now.
    """
    spec = get_spec(name, task=task)
    shipped = shipped_dir(spec.name) if spec.shipped else None
    if shipped is not None:
        return shipped
    cached = cache_root() / "datasets" / spec.name
    if cached.is_dir():
        return cached
    if not download or spec.get_from:
        raise DatasetUnavailableError(_unavailable_message(spec, cached, "not in the cache"))
    if spec.files:
        return download_files(spec, cached)
    return download_dataset(spec, cached)


def split_files_of(spec: DatasetSpec, folder: Path) -> dict[str, Path]:
    """``spec.split_files`` as paths in ``folder`` (a folder that holds several datasets' files).

    Raises:
        DatasetUnavailableError: a file is missing (all of them listed).
    """
    paths = {part: Path(folder) / name for part, name in spec.split_files.items()}
    missing = [p.name for p in paths.values() if not p.is_file()]
    if missing:
        raise DatasetUnavailableError(_unavailable_message(spec, Path(folder), f"missing {', '.join(missing)}"))
    return paths


#: File stems of each split, in order of preference (``devel`` is BioBERT's, ``*_set`` PubMedQA's folds'; the
#: development split: ``devel``, ``dev``).
SPLIT_STEMS = {"train": ("train", "train_set"), "dev": ("devel", "dev", "dev_set"), "test": ("test", "test_set")}


def find_named_splits(folder: Path, suffixes: tuple[str, ...]) -> dict[str, Path]:
    """The split files of ``folder`` named by :data:`SPLIT_STEMS` with one of ``suffixes`` (first match of
    each split; splits without a file are absent). The folder must exist."""
    found: dict[str, Path] = {}
    for split, stems in SPLIT_STEMS.items():
        hit = next((Path(folder) / f"{stem}{s}" for stem in stems for s in suffixes if (Path(folder) / f"{stem}{s}").is_file()), None)
        if hit is not None:
            found[split] = hit
    return found


def locate_task_files(settings, task: str, find_files) -> dict[str, Path]:
    """The files of a run: ``find_files(settings.data_dir)`` (the registered dataset's ``split_files`` when the
    folder is named like one of this kind that has them: ``../shared/data/ner/jnlpba-blurb``, whose ``devel.tsv``
    is not its development split), else the registered dataset's ``split_files`` in its folder, else
    ``find_files`` of that folder (shipped, cached or downloaded).

    Raises:
        DownstreamError: neither a data folder nor a dataset, an unknown dataset or one of another task kind.
        DatasetUnavailableError: the files are missing (what was expected is listed).
    """
    if settings.data_dir is not None:
        folder = Path(settings.data_dir)
        named = DATASETS.get(folder.name.lower())  # a folder named like a dataset whose folder holds other files too
        if named is not None and named.split_files and named.task == task and folder.is_dir():
            return split_files_of(named, folder)
        return find_files(folder)
    if not settings.dataset:
        raise DownstreamError("no data: give a registered dataset name or a data directory")
    folder = locate_dataset_dir(settings.dataset, task=task)
    spec = get_spec(settings.dataset)
    return split_files_of(spec, folder) if spec.split_files else find_files(folder)
