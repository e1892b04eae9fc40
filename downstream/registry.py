"""Registry of the biomedical benchmarks by name: format, public source, file layout, checksums, metric.

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
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from downstream.errors import DatasetUnavailableError, DownstreamError

logger = logging.getLogger(__name__)

#: BioBERT's pre-processed benchmark archive (the link in Bio-ELECTRA's README; BioBERT's ``download.sh``).
#: It unpacks to ``datasets/NER/<Name>/{train,devel,test,train_dev}.tsv`` and ``datasets/RE/<Name>/...``.
BIOBERT_ARCHIVE_URL = "http://nlp.dmis.korea.edu/projects/biobert-2020-checkpoints/datasets.tar.gz"

#: Names accepted for the development split, in order of preference.
DEV_SPLIT_NAMES = ("devel", "dev")

#: Extensions tried for each split file, in order.
SPLIT_SUFFIXES = (".tsv", ".tsv.gz", ".txt", ".txt.gz", ".conll", ".iob2")


@dataclass(frozen=True)
class DatasetSpec:
    """One registered benchmark.

    Attributes:
        name: registry key (``--dataset``).
        task: ``"ner"`` or ``"re"``.
        title: human-readable name.
        entity_types: entity types annotated (NER), as named by the original corpus.
        archive_url: the pre-processed archive the files come from.
        archive_member: folder inside the archive holding the split files.
        original_url: the original corpus' home page.
        citation: whom to cite.
        sha256: expected SHA-256 of split files (``{"train.tsv": "..."}``), where known.
        shipped: whether a copy ships inside this package (``downstream/data/<name>/``).
        metric: headline metric (a key of the task's metric dict).
    """

    name: str
    task: str
    title: str
    entity_types: tuple[str, ...]
    archive_url: str
    archive_member: str
    original_url: str
    citation: str
    sha256: dict[str, str] = field(default_factory=dict)
    shipped: bool = False
    metric: str = "f1"


# SHA-256 of the BioBERT-format files as redistributed in the BioMedBERT repository (commit 93fd69d6),
# which match BioBERT's published split sizes (see ../shared/data/SOURCES.md, section 1).
_NCBI_SHA = {
    "train.tsv": "26df55fb9da14f52834c7c7238ec30af271aa4e3bbe2256ef96cab2c0a7e159b",
    "devel.tsv": "a91324724fa0783ef3096f060580e6b4e8dfdf83664d48e77951a45b693c0eaa",
    "test.tsv": "ca56aff802f8c8849793e806914636f7c9d8bf03bbd88c66402266289beb3995",
}

NER_DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            name="bc2gm",
            task="ner",
            title="BioCreative II Gene Mention (BC2GM)",
            entity_types=("Gene",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/BC2GM",
            original_url="https://biocreative.bioinformatics.udel.edu/tasks/biocreative-ii/task-1a-gene-mention-tagging/",
            citation="Smith et al., Genome Biology 9(Suppl 2):S2, 2008",
            sha256={
                "train.tsv": "1f180df262ba11c108bf798eae9d94e2090b51985694eb5acd8e9c544045f9a0",
                "devel.tsv": "634e84223ef02cf231fa4b5a5a256ad581efe1405c5bb31986ac0cf055b64e38",
                "test.tsv": "ea0d230134416109a1feb1ff4169e43b89893ef93b91e392c2534944828b724a",
            },
        ),
        DatasetSpec(
            name="bc4chemd",
            task="ner",
            title="BioCreative IV CHEMDNER (BC4CHEMD)",
            entity_types=("Chemical",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/BC4CHEMD",
            original_url="https://biocreative.bioinformatics.udel.edu/resources/biocreative-iv/chemdner-corpus/",
            citation="Krallinger et al., Journal of Cheminformatics 7(Suppl 1):S2, 2015",
        ),
        DatasetSpec(
            name="bc5cdr-chem",
            task="ner",
            title="BioCreative V CDR, chemicals (BC5CDR-chem)",
            entity_types=("Chemical",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/BC5CDR-chem",
            original_url="https://biocreative.bioinformatics.udel.edu/tasks/biocreative-v/track-3-cdr/",
            citation="Li et al., Database 2016:baw068",
            sha256={
                "train.tsv": "1272b747a1d64ccfaa21061c515c26e9e1f134e3afd3c2ef14d8cd0697e9a234",
                "devel.tsv": "17a6bc43d459c9dedaedad7990eb44ce0c4789a3a9813104aef9d2f3192c8fd0",
                "test.tsv": "4da9183ad83d0921eaca25ba011871308b9476c14f9b10fba7bfee55a9750649",
            },
        ),
        DatasetSpec(
            name="bc5cdr-disease",
            task="ner",
            title="BioCreative V CDR, diseases (BC5CDR-disease)",
            entity_types=("Disease",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/BC5CDR-disease",
            original_url="https://biocreative.bioinformatics.udel.edu/tasks/biocreative-v/track-3-cdr/",
            citation="Li et al., Database 2016:baw068",
            sha256={
                "train.tsv": "ed209466f99f192460c8b2079cb9dd688c445ce1f2601c2c141f6a84b4a7edf2",
                "devel.tsv": "405332504d3f6d577f33084494d0916bcdfee789aa1bd954e93a5b79239c2967",
                "test.tsv": "a291f73998031d910dd84ae3c52c744d10ddc44042895056f978c39838bd48b3",
            },
        ),
        DatasetSpec(
            name="jnlpba",
            task="ner",
            title="JNLPBA 2004 bio-entity recognition (BioBERT version: the five GENIA types collapsed)",
            entity_types=("protein", "DNA", "RNA", "cell_line", "cell_type"),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/JNLPBA",
            original_url="http://www.geniaproject.org/shared-tasks/bionlp-jnlpba-shared-task-2004",
            citation="Kim et al., JNLPBA workshop, 2004",
            sha256={
                "train.tsv": "b54193c955d91fb7079f53961e72871c9d4522eb28a141f717f14d2e4eb76a42",
                "devel.tsv": "b770901337d10d844c2fd849266f99afb83850035c8f20db8c053b5874912520",
                "test.tsv": "ab07e2323e99f8be522cfe6287191244d94988b0455c08922d1b8dfb6c785d98",
            },
        ),
        DatasetSpec(
            name="linnaeus",
            task="ner",
            title="LINNAEUS species corpus",
            entity_types=("Species",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/linnaeus",
            original_url="http://linnaeus.sourceforge.net/",
            citation="Gerner et al., BMC Bioinformatics 11:85, 2010",
            sha256={
                "train.tsv": "398c0b30b3762d587ec1398715daef928a70b507d6c99094018989af7fab0eb6",
                "devel.tsv": "2a237cbd5860b87a789607a79b0d831351842cda081f8f5c268c3807ff4d08bc",
                "test.tsv": "122acde9645923138fb7411519f564b662f2caf977fa9aec21b7b8f0dd7d2c2e",
            },
        ),
        DatasetSpec(
            name="ncbi-disease",
            task="ner",
            title="NCBI disease corpus",
            entity_types=("Disease",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/NCBI-disease",
            original_url="https://www.ncbi.nlm.nih.gov/CBBresearch/Dogan/DISEASE/",
            citation="Dogan, Leaman and Lu, Journal of Biomedical Informatics 47:1-10, 2014",
            sha256=_NCBI_SHA,
            shipped=True,
        ),
        DatasetSpec(
            name="s800",
            task="ner",
            title="SPECIES-800 (S800)",
            entity_types=("Species",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/s800",
            original_url="https://species.jensenlab.org/",
            citation="Pafilis et al., PLoS ONE 8(6):e65390, 2013",
        ),
    ]
}

#: Every registered dataset, by name (relation extraction sets join this table).
DATASETS: dict[str, DatasetSpec] = dict(NER_DATASETS)


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
        raise DatasetUnavailableError(f"data folder not found: {folder}")
    found: dict[str, Path] = {}
    for split, stems in (("train", ("train",)), ("dev", DEV_SPLIT_NAMES), ("test", ("test",))):
        for stem in stems:
            for suffix in SPLIT_SUFFIXES:
                candidate = folder / f"{stem}{suffix}"
                if candidate.is_file():
                    found[split] = candidate
                    break
            if split in found:
                break
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


def _unavailable_message(spec: DatasetSpec, target: Path, reason: str) -> str:
    return (
        f"dataset {spec.name!r} ({spec.title}) is not available: {reason}.\n"
        f"  Expected files: train.tsv, devel.tsv (or dev.tsv), test.tsv in {target}\n"
        f"  or pass --data-dir DIR pointing at a folder holding them.\n"
        f"  Source: {spec.archive_url} (folder {spec.archive_member}/ inside the archive); "
        f"original corpus: {spec.original_url}"
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
                if "/" in rel or rel.startswith("."):
                    continue
                with tar.extractfile(member) as src, open(staging / rel, "wb") as dst:  # type: ignore[union-attr]
                    shutil.copyfileobj(src, dst)
                extracted += 1
        if extracted == 0:
            raise DownstreamError(f"{spec.archive_url}: no files under {prefix} in the archive")
        verify_checksums(spec, staging)
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
    if not download:
        raise DatasetUnavailableError(_unavailable_message(spec, cached, "not in the cache"))
    return find_split_files(download_dataset(spec, cached))
