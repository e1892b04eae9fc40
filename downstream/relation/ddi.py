"""DDI 2013 (the corpus authors' XML release, ``DDICorpus-2013.zip``) -> sentence-level pair examples in the
BLURB / BLUE form: one example per candidate drug pair with both mentions replaced by placeholders, the pair
type (advise, effect, mechanism, int) or false as the label, built once into TSV files (cached)."""

from __future__ import annotations

import hashlib
import logging
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from downstream.errors import DataFormatError
from downstream.relation.data import ReExample, ReSplit, write_re_file

logger = logging.getLogger(__name__)


#: DDI 2013 zip folders: training documents, and the test set of the DDI extraction task (not the NER task's).
DDI_TRAIN_PREFIX = "DDICorpus/Train/"


DDI_TEST_PREFIX = "DDICorpus/Test/Test for DDI Extraction task/"


#: The placeholder for a DDI target drug (BLURB / BLUE), and for two target mentions that overlap.
DDI_PLACEHOLDER = "@DRUG$"


DDI_OVERLAP_PLACEHOLDER = "@DRUG-DRUG$"


@dataclass
class DdiStats:
    """What the DDI conversion did, for the report.

    Attributes:
        documents, sentences, pairs: read from the XML.
        discontinuous_mentions: target mentions with several ``charOffset`` ranges, counted once per pair
            they take part in (only the first range is replaced, see :func:`ddi_examples_from_xml`).
        overlapping_pairs: pairs whose two target mentions overlap (one ``@DRUG-DRUG$`` replaces both).
        untyped_true_pairs: pairs with ``ddi="true"`` and no ``type``, left out (pair ids listed).
    """

    documents: int = 0
    sentences: int = 0
    pairs: int = 0
    discontinuous_mentions: int = 0
    overlapping_pairs: int = 0
    untyped_true_pairs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "documents": self.documents,
            "sentences": self.sentences,
            "pairs": self.pairs,
            "discontinuous_mentions": self.discontinuous_mentions,
            "overlapping_pairs": self.overlapping_pairs,
            "untyped_true_pairs": list(self.untyped_true_pairs),
        }


def parse_char_offset(value: str, *, where: str) -> list[tuple[int, int]]:
    """``"12-18"`` or ``"0-3;10-17"`` (inclusive ends, DDI 2013) -> ``[(start, end_exclusive), ...]``.

    Raises:
        DataFormatError: not ``start-end`` ranges with ``start <= end``.
    """
    spans = []
    for part in value.split(";"):
        try:
            start, end = (int(x) for x in part.strip().split("-"))
        except ValueError:
            raise DataFormatError(f"{where}: bad charOffset {value!r} (expected 'start-end[;start-end]')") from None
        if end < start:
            raise DataFormatError(f"{where}: bad charOffset {value!r} (end before start)")
        spans.append((start, end + 1))
    return spans


def ddi_pair_sentence(text: str, first: tuple[int, int], second: tuple[int, int]) -> tuple[str, bool]:
    """The sentence with the two target mentions replaced by ``@DRUG$``; other drugs stay as text.

    Args:
        text: the sentence text.
        first, second: ``(start, end_exclusive)`` character spans of the two targets.

    Returns:
        ``(sentence, overlapped)``: when the spans overlap (nested mentions), their union becomes one
        ``@DRUG-DRUG$`` (BLUE's marker for overlapping arguments) and ``overlapped`` is True.
    """
    (a0, a1), (b0, b1) = sorted([first, second])
    if b0 < a1:
        return text[:a0] + DDI_OVERLAP_PLACEHOLDER + text[max(a1, b1):], True
    return text[:a0] + DDI_PLACEHOLDER + text[a1:b0] + DDI_PLACEHOLDER + text[b1:], False


def ddi_examples_from_xml(data: bytes, *, source: str, stats: DdiStats | None = None) -> list[ReExample]:
    """The pair examples of one DDI 2013 XML document.

    Rules (BLURB / BLUE's sentence-level DDI task; Segura-Bedmar et al. 2013): every ``pair`` element is
    one example; the two target mentions become ``@DRUG$``, every other drug of the sentence stays as
    text; the label is ``DDI-<type>`` for ``ddi="true"`` (``DDI-mechanism``, ``DDI-effect``,
    ``DDI-advise``, ``DDI-int``) and ``DDI-false`` otherwise. A discontinuous mention
    (``charOffset="0-3;10-17"``, e.g. "loop ... diuretics" sharing its head with a coordinated mention)
    is replaced at its first range only. The one ``ddi="true"`` pair of the corpus without a type is left
    out and listed in ``stats.untyped_true_pairs``. Tabs and newlines inside sentences become spaces.

    Args:
        data: the XML bytes.
        source: file name for error messages.
        stats: counters to update, if given.

    Returns:
        Examples in document order, ``index`` = the pair id.

    Raises:
        DataFormatError: malformed XML, a pair naming an unknown entity, an unknown ``type``.
    """
    stats = stats if stats is not None else DdiStats()
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise DataFormatError(f"{source}: not well-formed XML ({exc})") from None
    stats.documents += 1
    examples: list[ReExample] = []
    for sentence in root.iter("sentence"):
        stats.sentences += 1
        sid = sentence.get("id", "?")
        text = sentence.get("text", "")
        where = f"{source}: sentence {sid}"
        mentions: dict[str, list[tuple[int, int]]] = {}
        for entity in sentence.iter("entity"):
            spans = parse_char_offset(entity.get("charOffset", ""), where=f"{where} entity {entity.get('id')}")
            if spans[-1][1] > len(text):
                raise DataFormatError(f"{where}: entity {entity.get('id')} charOffset beyond the sentence")
            mentions[entity.get("id", "")] = spans
        for pair in sentence.iter("pair"):
            stats.pairs += 1
            pid = pair.get("id", "?")
            try:
                first, second = mentions[pair.get("e1", "")], mentions[pair.get("e2", "")]
            except KeyError as exc:
                raise DataFormatError(f"{where}: pair {pid} names unknown entity {exc.args[0]!r}") from None
            if pair.get("ddi") == "true":
                kind = pair.get("type")
                if not kind:
                    stats.untyped_true_pairs.append(pid)
                    logger.warning("%s: pair %s is ddi=true without a type; left out", source, pid)
                    continue
                if kind not in ("mechanism", "effect", "advise", "int"):
                    raise DataFormatError(f"{where}: pair {pid} has unknown type {kind!r}")
                label = f"DDI-{kind}"
            elif pair.get("ddi") == "false":
                label = "DDI-false"
            else:
                raise DataFormatError(f"{where}: pair {pid} has ddi={pair.get('ddi')!r} (expected true/false)")
            stats.discontinuous_mentions += (len(first) > 1) + (len(second) > 1)
            replaced, overlapped = ddi_pair_sentence(text, first[0], second[0])
            stats.overlapping_pairs += overlapped
            replaced = " ".join(replaced.replace("\t", " ").replace("\r", " ").replace("\n", " ").split(" "))
            examples.append(ReExample(sentence=replaced, label=label, index=pid, line=0))
    return examples


def read_ddi_zip(path: str | Path) -> tuple[dict[str, ReSplit], DdiStats]:
    """Build the train and test splits from the DDI 2013 corpus zip.

    Train: every XML file under ``DDICorpus/Train/`` (DrugBank and MedLine). Test: the DDI extraction
    task's test set, ``DDICorpus/Test/Test for DDI Extraction task/`` (the DrugNER task's test folder has no
    interaction labels and is not used). Files are read in sorted name order; ``.DS_Store`` and other
    non-XML members are ignored.

    Returns:
        ``({"train": split, "test": split}, stats)``; there is no development part.

    Raises:
        DataFormatError: not a zip, a malformed document, or a part with no pairs.
    """
    path = Path(path)
    stats = DdiStats()
    parts: dict[str, list[ReExample]] = {"train": [], "test": []}
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise DataFormatError(f"{path}: not a zip file ({exc})") from None
    with archive:
        for name in sorted(archive.namelist()):
            if not name.endswith(".xml") or "/." in name or "__MACOSX" in name:
                continue
            part = "train" if name.startswith(DDI_TRAIN_PREFIX) else "test" if name.startswith(DDI_TEST_PREFIX) else None
            if part is None:
                continue
            parts[part].extend(ddi_examples_from_xml(archive.read(name), source=f"{path}!{name}", stats=stats))
    splits = {}
    for part, examples in parts.items():
        prefix = DDI_TRAIN_PREFIX if part == "train" else DDI_TEST_PREFIX
        if not examples:
            raise DataFormatError(f"{path}: no pairs under {prefix}")
        splits[part] = ReSplit(path=f"{path}!{prefix}", examples=examples)
    return splits, stats


def build_ddi_tsvs(zip_path: str | Path, cache_dir: str | Path) -> tuple[dict[str, Path], dict[str, object]]:
    """Convert the DDI zip once into BLURB-form ``train.tsv`` / ``test.tsv`` under ``cache_dir``.

    The files go to ``cache_dir/ddi-built-<first 16 hex of the zip's SHA-256>/`` with a ``stats.json``;
    a later call with the same zip reads them back instead of converting again.

    Returns:
        ``({"train": path, "test": path}, stats as JSON-ready dict)``.
    """
    import json
    import os

    zip_path = Path(zip_path)
    digest = hashlib.sha256(zip_path.read_bytes()).hexdigest()[:16]
    target = Path(cache_dir) / f"ddi-built-{digest}"
    files = {"train": target / "train.tsv", "test": target / "test.tsv"}
    stats_file = target / "stats.json"
    if all(p.is_file() for p in files.values()) and stats_file.is_file():
        return files, json.loads(stats_file.read_text())
    splits, stats = read_ddi_zip(zip_path)
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    staging.mkdir(parents=True, exist_ok=True)
    for name, split in splits.items():
        write_re_file(staging / f"{name}.tsv", split.examples)
    (staging / "stats.json").write_text(json.dumps({"source": str(zip_path), **stats.to_json()}, indent=2))
    if target.exists():
        import shutil

        shutil.rmtree(target)
    os.replace(staging, target)
    logger.info("DDI 2013: built %s from %s", target, zip_path)
    return files, json.loads(stats_file.read_text())


def ddi_document_of(index: str) -> str:
    """The DDI document id of a pair id (``DDI-DrugBank.d236.s29.p0`` -> ``DDI-DrugBank.d236``)."""
    return index.rsplit(".s", 1)[0] if ".s" in index else index
