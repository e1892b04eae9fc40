"""The entity-linking benchmarks (``finetune --loader linking --dataset NAME``): their corpus files, entity
type, vocabulary and where the files are found.

The registry of the other kinds (``downstream.dataset_specs``) is keyed by name alone and already holds
``ncbi-disease`` as an NER benchmark (BioBERT's IOB files, which carry no concept ids): the linking
benchmarks live in this table of their own, as GLUE's tasks live in ``downstream.glue.spec``.

Files are never downloaded (the corpora's and MEDIC's hosts need a browser or an account): the folder is
``--data-dir DIR``, else ``$BIOELECTRA_CACHE/datasets/linking/`` (default ``~/.cache/bioelectra``), laid out
as::

    ncbi-disease/NCBI{train,develop,test}set_corpus.txt     (Doğan et al. 2014; spyysalo/ncbi-disease original-data/)
    bc5cdr/CDR_{Training,Development,Test}Set.PubTator.txt  (CDR.Corpus.v010516; Li et al. 2016)
    medic/medic_06Jul2012.txt, medic/ncbi-spell-check.txt   (dmis-lab/BioSyn preprocess/resources/)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from downstream.errors import DatasetUnavailableError, DownstreamError


@dataclass(frozen=True)
class LinkingSpec:
    """One linking benchmark.

    Attributes:
        name: ``--dataset``.
        title: human-readable name.
        files: split -> the corpus file, relative to the data folder.
        entity_type: the mentions kept (``Disease``, ``Chemical``); ``None``: all (NCBI-disease's four types).
        vocabulary: the MEDIC file (BioSyn's form), relative to the data folder; ``None``: no vocabulary, the
            dictionary holds the names of the annotated training (and development) mentions only.
        typos: BioSyn's typo list applied to this benchmark's mentions (NCBI-disease only), or ``None``.
        citation: whom to cite.
        get_from: where the files come from.
    """

    name: str
    title: str
    files: dict[str, str]
    entity_type: str | None
    vocabulary: str | None
    typos: str | None
    citation: str
    get_from: str = field(default="")

    @property
    def linked_type(self) -> str:
        """The entity type its linkers link (``entity_type``; NCBI-disease's four types are all ``Disease``)."""
        return self.entity_type or "Disease"


_MEDIC = "medic/medic_06Jul2012.txt"
_BIOSYN = "https://github.com/dmis-lab/BioSyn (preprocess/resources/)"
_CDR_FILES = {
    "train": "bc5cdr/CDR_TrainingSet.PubTator.txt",
    "dev": "bc5cdr/CDR_DevelopmentSet.PubTator.txt",
    "test": "bc5cdr/CDR_TestSet.PubTator.txt",
}
_CDR = "Li et al., Database 2016:baw068 (BioCreative V CDR); MEDIC: Davis et al., Database 2012 (CTD)"
_CDR_FROM = "https://biocreative.bioinformatics.udel.edu/tasks/biocreative-v/track-3-cdr/ (CDR_Data.zip)"

LINKING_DATASETS: dict[str, LinkingSpec] = {
    spec.name: spec
    for spec in [
        LinkingSpec(
            name="ncbi-disease",
            title="NCBI-disease, concept normalisation (MEDIC)",
            files={
                "train": "ncbi-disease/NCBItrainset_corpus.txt",
                "dev": "ncbi-disease/NCBIdevelopset_corpus.txt",
                "test": "ncbi-disease/NCBItestset_corpus.txt",
            },
            entity_type=None,
            vocabulary=_MEDIC,
            typos="medic/ncbi-spell-check.txt",
            citation="Doğan, Leaman & Lu, J Biomed Inform 2014; MEDIC: Davis et al., Database 2012 (CTD)",
            get_from=f"https://www.ncbi.nlm.nih.gov/CBBresearch/Dogan/DISEASE/; MEDIC and the typo list: {_BIOSYN}",
        ),
        LinkingSpec(
            name="bc5cdr-disease",
            title="BC5CDR diseases, concept normalisation (MEDIC)",
            files=_CDR_FILES,
            entity_type="Disease",
            vocabulary=_MEDIC,
            typos=None,
            citation=_CDR,
            get_from=f"{_CDR_FROM}; MEDIC: {_BIOSYN}",
        ),
        LinkingSpec(
            name="bc5cdr-chemical",
            title="BC5CDR chemicals, concept normalisation (annotation-only dictionary)",
            files=_CDR_FILES,
            entity_type="Chemical",
            vocabulary=None,
            typos=None,
            citation="Li et al., Database 2016:baw068 (BioCreative V CDR)",
            get_from=_CDR_FROM,
        ),
    ]
}


def linking_spec(name: str | None) -> LinkingSpec:
    """The linking benchmark ``name``.

    Raises:
        DownstreamError: no name, or an unknown one (the known ones listed).
    """
    spec = LINKING_DATASETS.get((name or "").lower())
    if spec is None:
        raise DownstreamError(
            f"--loader linking: unknown dataset {name!r}; expected one of {', '.join(LINKING_DATASETS)} "
            "(with --data-dir DIR holding their files, see docs/guides/entity-linking.md)"
        )
    return spec


def data_root(data_dir: Path | None) -> Path:
    """``data_dir``, else ``$BIOELECTRA_CACHE/datasets/linking``."""
    from downstream.registry import cache_root

    return Path(data_dir) if data_dir is not None else cache_root() / "datasets" / "linking"


def locate(spec: LinkingSpec, root: Path, keys: tuple[str, ...] | None = None) -> dict[str, Path]:
    """The files of ``spec`` under ``root``: each split, ``vocabulary`` and ``typos`` where the spec has them.

    Args:
        keys: only these files (``("test",)``: the test corpus alone); ``None``: all.

    Raises:
        DownstreamError: ``keys`` names a file the benchmark does not have (its files named).
        DatasetUnavailableError: ``root`` a file, or a file missing (the paths expected and where to get them
            named).
    """
    wanted = {**spec.files, **({"vocabulary": spec.vocabulary} if spec.vocabulary else {}),
              **({"typos": spec.typos} if spec.typos else {})}  # fmt: skip
    if keys is not None:
        lacking = [k for k in keys if k not in wanted]
        if lacking:
            raise DownstreamError(f"{spec.name}: no {' or '.join(lacking)} file (it has {', '.join(wanted)})")
        wanted = {k: wanted[k] for k in keys}
    if root.exists() and not root.is_dir():
        raise DatasetUnavailableError(f"{root}: a file, expected a folder laid out as {', '.join(wanted.values())}")
    files = {key: root / rel for key, rel in wanted.items()}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise DatasetUnavailableError(
            f"{spec.name}: missing {', '.join(missing)}. Put the files under {root} (or give --data-dir DIR) "
            f"laid out as {', '.join(wanted.values())}; get them from {spec.get_from}"
        )
    return files
