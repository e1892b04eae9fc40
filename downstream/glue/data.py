"""GLUE data: the TSV files of each task as GLUE's download script lays them out, read into examples.

A task's folder holds ``train.tsv``, ``dev.tsv`` (MNLI: ``dev_matched.tsv`` and ``dev_mismatched.tsv``) and
``test.tsv`` (MNLI: ``test_matched.tsv`` / ``test_mismatched.tsv``); the test file is optional (the original
ELECTRA layout, ``finetuning_data/<task>/``, has train and dev only). Columns per task:
:mod:`downstream.glue.spec`.

Reading: tab-separated, UTF-8 (a byte-order mark, as MRPC's files start with, is dropped), quoting off
(``csv.QUOTE_NONE``): GLUE's text holds unbalanced double quotes (MRPC's ``" extremely heartrending "``
rows, SST-2's phrases), which a quoting reader would merge with the following lines. A labelled file's first
line is its header (CoLA's have none); every row must have the header's number of fields. Test files have no
labels (GLUE hides them): their examples get the first label (0.0 for STS-B) as a placeholder, and
:attr:`GlueSplit.labelled` is false.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from downstream.errors import DataFormatError, DatasetUnavailableError
from downstream.glue.spec import GLUE_SOURCES, GlueSpec


@dataclass
class GlueExample:
    """One example: ``text_b`` ``None`` for single-sentence tasks; ``label`` a class name, or the score
    (a float) for STS-B; ``index`` the file's id (test files' ``index`` / ``id`` column; else the data row's
    number from 0); ``line`` its line in the file (1-based); ``swapped`` for the reversed copies of
    ``double_unordered``."""

    index: str
    text_a: str
    text_b: str | None
    label: str | float
    line: int
    swapped: bool = False


@dataclass
class GlueSplit:
    """The examples of one file; ``labelled`` false for GLUE's test files (no labels)."""

    path: Path | None
    examples: list[GlueExample]
    labelled: bool = True
    note: str | None = None
    extra: dict[str, int] = field(default_factory=dict)

    def label_counts(self) -> dict[str, int]:
        """Examples per label (labelled classification splits); ``{}`` otherwise."""
        if not self.labelled or not self.examples or isinstance(self.examples[0].label, float):
            return {}
        return dict(sorted(Counter(str(e.label) for e in self.examples).items()))


def _rows(path: Path):
    """``(line number, fields)`` of each non-empty line of a GLUE TSV (quoting off, BOM dropped)."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE, strict=False)
        for fields in reader:
            if fields and any(f.strip() for f in fields):
                yield reader.line_num, fields


def _columns(path: Path, header: list[str], wanted: dict[str, str | None]) -> dict[str, int | None]:
    """The position of each wanted column in ``header``.

    Raises:
        DataFormatError: a column missing from the header (the file, the header and the expected names).
    """
    positions: dict[str, int | None] = {}
    for role, name in wanted.items():
        if name is None:
            positions[role] = None
        elif name in header:
            positions[role] = header.index(name)
        else:
            expected = ", ".join(n for n in wanted.values() if n)
            raise DataFormatError(
                f"{path}:1: header {header!r} lacks column {name!r} (expected columns {expected})"
            )
    return positions


def _label(spec: GlueSpec, value: str, path: Path, line: int) -> str | float:
    """A labelled row's label: one of ``spec.labels``, or a score within ``spec.score_range``.

    Raises:
        DataFormatError: an unknown label or a bad score (file, line, what was expected).
    """
    value = value.strip()
    if not spec.is_regression:
        if value not in spec.labels:
            raise DataFormatError(
                f"{path}:{line}: unknown label {value!r} for {spec.name} (expected one of {', '.join(spec.labels)})"
            )
        return value
    low, high = spec.score_range or (float("-inf"), float("inf"))
    try:
        score = float(value)
    except ValueError:
        raise DataFormatError(
            f"{path}:{line}: score {value!r} is not a number (expected {low:g} to {high:g})"
        ) from None
    if not low <= score <= high:
        raise DataFormatError(f"{path}:{line}: score {score:g} outside {low:g} to {high:g}")
    return score


def read_glue_file(path: str | os.PathLike, spec: GlueSpec, *, labelled: bool = True) -> GlueSplit:
    """The examples of one GLUE file of task ``spec``: a labelled (train / dev) or a test file.

    Raises:
        DatasetUnavailableError: no such file.
        DataFormatError: a row with another number of fields than the header (or than CoLA's 4), a missing
            column, an unknown label, a bad score, an empty file (file and line named).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetUnavailableError(
            f"{path}: no such file (a GLUE {spec.folder} file; GLUE is available from {GLUE_SOURCES})"
        )
    rows = _rows(path)
    if labelled and spec.headerless is not None:
        fields, text_a, label = spec.headerless
        positions: dict[str, int | None] = {"text_a": text_a, "text_b": None, "label": label, "index": None}
        expected = f"{fields} tab-separated fields (source, label, original label, sentence)"
    else:
        first = next(rows, None)
        if first is None:
            raise DataFormatError(f"{path}: empty file (expected a header line and {spec.folder} rows)")
        header = [h.strip() for h in first[1]]
        fields = len(header)
        wanted = {"text_a": spec.text_a, "text_b": spec.text_b}
        wanted.update(
            {"label": spec.label, "index": None} if labelled else {"label": None, "index": spec.test_index}
        )
        positions = _columns(path, header, wanted)
        expected = f"{fields} tab-separated fields as the header ({', '.join(header)})"
    placeholder: str | float = 0.0 if spec.is_regression else spec.labels[0]
    examples = []
    for line, row in rows:
        if len(row) != fields:
            raise DataFormatError(f"{path}:{line}: {len(row)} fields, expected {expected}")
        text_b = row[positions["text_b"]].strip() if positions["text_b"] is not None else None
        example_label = _label(spec, row[positions["label"]], path, line) if labelled else placeholder
        index = row[positions["index"]].strip() if positions["index"] is not None else str(len(examples))
        examples.append(GlueExample(index, row[positions["text_a"]].strip(), text_b, example_label, line))
    if not examples:
        raise DataFormatError(f"{path}: no examples (expected {expected})")
    return GlueSplit(path, examples, labelled=labelled)


def double_unordered_pairs(split: GlueSplit) -> GlueSplit:
    """The original ELECTRA code's ``double_unordered`` (``classification_tasks.py``, MRPC and STS): each
    training pair also in the other order, the reversed copies after the originals (so ``2n`` examples).

    Raises:
        ValueError: a split of single sentences.
    """
    if any(e.text_b is None for e in split.examples):
        raise ValueError(f"{split.path}: double_unordered needs sentence pairs")
    swapped = [
        GlueExample(e.index, e.text_b or "", e.text_a, e.label, e.line, swapped=True) for e in split.examples
    ]
    note = f"double_unordered: {len(split.examples)} pairs in both orders"
    return GlueSplit(split.path, [*split.examples, *swapped], labelled=split.labelled, note=note)


def find_glue_files(folder: str | os.PathLike, spec: GlueSpec) -> dict[str, Path]:
    """The files of task ``spec`` in ``folder``: ``train.tsv`` and the development file (``dev.tsv``; MNLI
    ``dev_matched.tsv`` / ``dev_mismatched.tsv``) required, the test file when present.

    Returns:
        ``{"train", "dev"[, "test"]}``.

    Raises:
        DatasetUnavailableError: no folder, or a required file missing (what was expected and where GLUE is).
    """
    folder = Path(folder)
    if not folder.is_dir():
        what = f"{folder}: is a file, not a folder" if folder.exists() else f"data folder not found: {folder}"
        raise DatasetUnavailableError(
            f"{what} (expected GLUE's {spec.folder} folder: train.tsv, {spec.dev_file}[, {spec.test_file}])"
        )
    files = {"train": folder / "train.tsv", "dev": folder / spec.dev_file, "test": folder / spec.test_file}
    missing = [p.name for name, p in files.items() if name != "test" and not p.is_file()]
    if missing:
        present = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
        raise DatasetUnavailableError(
            f"{folder}: missing {', '.join(missing)} for GLUE {spec.folder} (expected train.tsv, {spec.dev_file} and "
            f"optionally {spec.test_file}; found {present}). GLUE is available from {GLUE_SOURCES}"
        )
    return {name: p for name, p in files.items() if p.is_file()}
