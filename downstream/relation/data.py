"""Relation extraction: readers for the benchmark files, the DDI 2013 XML conversion, entity placeholders,
model inputs with truncation bookkeeping.

One example is one candidate entity pair in one sentence, with both arguments anonymised by placeholders.
Formats read (plain tab-separated text, never CSV quoting: some sentences contain a literal ``"``):

- BLURB / BLUE / BioBERT test form: header ``index<TAB>sentence<TAB>label``, 3 columns;
- BioBERT train form (GAD ``train.tsv``): no header, ``sentence<TAB>label``;
- Bio-ELECTRA's ChemProt: header ``sentence<TAB>label``, 2 columns (``BC6ENTC`` / ``BC6ENTG`` /
  ``BC6OTHER``, negative label ``False``);
- a headerless 3-column ``index<TAB>sentence<TAB>label`` file;
- the original DDI 2013 corpus (Segura-Bedmar et al., SemEval-2013 Task 9; Herrero-Zazo et al., J Biomed
  Inform 46(5), 2013) as its XML zip, converted by :func:`read_ddi_zip` (see there for the exact rules).

Every line of a file must have the same number of columns as its first line (after the header), or the
reader raises :class:`~downstream.errors.DataFormatError` naming the file and line; so does an empty split
(unless the caller allows it, for GAD's empty ``dev.tsv``) and, in :class:`downstream.kinds.ReTask`, a
test label that training and development never showed.

Placeholders: the anonymised entity markers (:data:`PLACEHOLDERS`) are added to the tokenizer as single
special tokens and the model's embeddings are resized (new rows start at the mean of the old ones,
transformers' ``resize_token_embeddings`` default). Why not map them to the vocabulary's own tokens:
Bio-ELECTRA's vocabulary has no ``[unused*]`` slots, and mapping ``@GENE$`` to an existing word such as
``gene`` would mix the argument marker with the real word that occurs in the same sentences. Without
either, WordPiece splits ``@GENE$`` into ``@ GE ##NE $`` and ``BC6ENTC`` into several pieces.

Missing markers: examples whose text has fewer than two argument placeholders (Bio-ELECTRA's ChemProt has
24 / 6 / 15 such lines in train / dev / test, see SOURCES.md 3c) are counted (``marker_missing``), not dropped.

Truncation: an example longer than ``max_seq_length`` sub-tokens keeps its first ``max_seq_length - 1``
sub-tokens and a final ``[SEP]``. Examples where this cuts away a placeholder are counted
(``marker_lost``) and the first few listed by index, never dropped or hidden.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bioelectra.textio import read_text
from downstream.classification import EncodedReSplit
from downstream.errors import DataFormatError, DatasetUnavailableError, DownstreamError

logger = logging.getLogger(__name__)

#: Entity placeholders of the supported formats: BLURB/BLUE/BioBERT (``@GENE$`` ..., ``@CHEM-GENE$`` and
#: ``@DRUG-DRUG$`` where the two arguments overlap) and Bio-ELECTRA's ChemProt (``BC6ENTC`` chemical
#: argument, ``BC6ENTG`` gene argument, ``BC6OTHER`` any other chemical or gene mention).
PLACEHOLDERS = (
    "@GENE$",
    "@DISEASE$",
    "@CHEMICAL$",
    "@DRUG$",
    "@CHEM-GENE$",
    "@DRUG-DRUG$",
    "BC6ENTC",
    "BC6ENTG",
    "BC6OTHER",
)

#: Placeholders that stand for one of the two arguments (``BC6OTHER`` marks any other mention), and those
#: that stand for both at once (overlapping arguments).
ARGUMENT_PLACEHOLDERS = tuple(t for t in PLACEHOLDERS if t != "BC6OTHER")
OVERLAP_PLACEHOLDERS = ("@CHEM-GENE$", "@DRUG-DRUG$")

#: Labels meaning "no relation" in the supported benchmarks; they are left out of the micro-averaged
#: scores (ChemProt ``false``/``False``, DDI ``DDI-false``; GAD's ``0`` is the negative class of its binary F1).
NEGATIVE_LABELS = ("false", "False", "DDI-false", "0")

#: Headers recognised on the first line.
_HEADERS = {("index", "sentence", "label"): 3, ("sentence", "label"): 2}


@dataclass(frozen=True)
class ReExample:
    """One candidate pair.

    Attributes:
        sentence: the sentence with both arguments replaced by placeholders.
        label: the relation label as written in the file (``CPR:3``, ``DDI-effect``, ``1``, ``False`` ...).
        index: the file's ``index`` column, the DDI pair id, or the 0-based example number in its file.
        line: 1-based line number in the file (0 for examples built from XML).
    """

    sentence: str
    label: str
    index: str
    line: int


@dataclass
class ReSplit:
    """The examples of one split.

    Attributes:
        path: the file (or ``zip!part``) the examples come from.
        examples: examples in file order.
        header: whether the file had a header line.
        note: how the split was made when it is not a plain file (e.g. cut from train).
    """

    path: str
    examples: list[ReExample]
    header: bool = False
    note: str | None = None

    def label_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(e.label for e in self.examples).items()))

    def counts(self) -> dict[str, object]:
        return {"examples": len(self.examples), "labels": self.label_counts()}


def _read_text(path: Path) -> str:
    """The file's text: ``.gz`` decompressed, a byte-order mark dropped, damage named (bioelectra.textio)."""
    return read_text(path, error=DataFormatError)


def read_re_file(path: str | Path, *, allow_empty: bool = False) -> ReSplit:
    """Read one relation extraction TSV file (any of the forms in the module docstring).

    The number of columns is fixed by the header, or by the first line when there is none (2:
    ``sentence<TAB>label``, 3: ``index<TAB>sentence<TAB>label``). Lines are split on tabs only; quotes are
    ordinary characters. CRLF line endings and ``.gz`` files are accepted.

    Args:
        path: the file.
        allow_empty: return an empty split for a file with no examples instead of raising (GAD ships a
            0-byte ``dev.tsv`` in every fold).

    Returns:
        The examples in file order.

    Raises:
        DataFormatError: a line with another number of columns, an empty sentence or label, a blank line
            between examples, or (unless ``allow_empty``) no examples; the message gives ``file:line``.
    """
    path = Path(path)
    lines = _read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    header = False
    num_columns = 0
    start = 0
    if lines:
        first = tuple(c.strip().lower() for c in lines[0].split("\t"))
        if first in _HEADERS:
            header, num_columns, start = True, _HEADERS[first], 1
        else:
            num_columns = len(lines[0].split("\t"))
            if num_columns not in (2, 3):
                raise DataFormatError(
                    f"{path}:1: expected 'sentence<TAB>label' or 'index<TAB>sentence<TAB>label', got {num_columns} column(s)"
                )
    expected = "'index<TAB>sentence<TAB>label'" if num_columns == 3 else "'sentence<TAB>label'"
    examples: list[ReExample] = []
    for offset, line in enumerate(lines[start:]):
        lineno = start + offset + 1
        columns = line.split("\t")
        if len(columns) != num_columns:
            what = "a blank line" if line.strip() == "" else f"{len(columns)} column(s)"
            raise DataFormatError(f"{path}:{lineno}: expected {expected} ({num_columns} tab-separated columns), got {what}")
        if num_columns == 3:
            index, sentence, label = columns
        else:
            (sentence, label), index = columns, str(len(examples))
        sentence, label = sentence.strip(), label.strip()
        if not sentence or not label:
            raise DataFormatError(f"{path}:{lineno}: empty {'sentence' if not sentence else 'label'}")
        examples.append(ReExample(sentence=sentence, label=label, index=index.strip(), line=lineno))
    if not examples and not allow_empty:
        raise DataFormatError(f"{path}: empty split (no examples)")
    return ReSplit(path=str(path), examples=examples, header=header)


def write_re_file(path: str | Path, examples: Iterable[ReExample]) -> None:
    """Write examples in the BLURB form: header ``index<TAB>sentence<TAB>label``, one example per line.

    Raises:
        ValueError: a field contains a tab or a newline (the file would not read back).
    """
    rows = ["index\tsentence\tlabel"]
    for e in examples:
        for value in (e.index, e.sentence, e.label):
            if "\t" in value or "\n" in value or "\r" in value:
                raise ValueError(f"example {e.index}: a tab or newline inside {value!r}")
        rows.append(f"{e.index}\t{e.sentence}\t{e.label}")
    Path(path).write_text("\n".join(rows) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------------------------------
# locating files: plain folders, GAD's fold folders, the DDI zip
# --------------------------------------------------------------------------------------------------

_SUFFIXES = (".tsv", ".tsv.gz", ".txt", ".txt.gz")


def list_folds(folder: str | Path) -> list[int]:
    """The numbered fold sub-folders of ``folder`` (``1/`` ... ``10/`` for BioBERT's GAD), sorted."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


def find_ddi_zip(folder: str | Path) -> Path | None:
    """The DDI 2013 corpus zip in ``folder`` (``DDICorpus*.zip``), or None."""
    folder = Path(folder)
    matches = sorted(p for p in folder.glob("DDICorpus*.zip") if p.is_file() and "BRAT" not in p.name)
    return matches[0] if matches else None


def find_re_files(folder: str | Path, *, fold: int | None = None) -> dict[str, Path]:
    """Locate a relation extraction dataset's files in ``folder``.

    Layouts, in order: a fold folder ``folder/<fold>/`` (when ``fold`` is given); ``train``, ``dev`` (or
    ``devel``, optional: a missing or empty one is cut from train later) and ``test`` files
    (``.tsv``, ``.tsv.gz``, ``.txt``); a DDI 2013 zip (``DDICorpus*.zip``), returned as ``{"ddi_zip": path}``.

    Returns:
        ``{"train": path, "test": path}`` plus ``"dev"`` when present, or ``{"ddi_zip": path}``.

    Raises:
        DatasetUnavailableError: missing folder, fold or files; a fold layout without ``fold`` given.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetUnavailableError(f"data folder not found: {folder}")
    if fold is not None:
        folds = list_folds(folder)
        if fold not in folds:
            raise DatasetUnavailableError(
                f"{folder}: no fold {fold} (fold folders found: {folds or 'none'}; expected {folder}/{fold}/train.tsv)"
            )
        folder = folder / str(fold)
    from downstream.registry import find_named_splits

    found = find_named_splits(folder, _SUFFIXES)
    if "train" in found and "test" in found:
        return found
    ddi_zip = find_ddi_zip(folder)
    if ddi_zip is not None:
        return {"ddi_zip": ddi_zip}
    folds = list_folds(folder)
    if folds and fold is None:
        raise DatasetUnavailableError(
            f"{folder}: holds cross-validation folds {folds[0]}..{folds[-1]}; choose one with --fold K or run all with --folds all"
        )
    raise DatasetUnavailableError(
        f"{folder}: expected train.tsv and test.tsv (dev.tsv optional), fold folders 1/ 2/ ..., or a DDICorpus-2013.zip"
    )


# --------------------------------------------------------------------------------------------------
# development split, labels
# --------------------------------------------------------------------------------------------------


def cut_dev_split(
    examples: Sequence[ReExample],
    *,
    fraction: float,
    seed: int,
    group_of: Callable[[ReExample], str] | None = None,
) -> tuple[list[ReExample], list[ReExample]]:
    """Cut a seeded development split from training examples.

    Groups (each example its own group unless ``group_of`` is given, e.g. the DDI document, so that pairs
    of one document never straddle train and dev) are shuffled with ``random.Random(seed)`` and taken in
    that order until the development part holds at least ``fraction`` of the examples. Both parts keep
    file order.

    Returns:
        ``(train, dev)``.

    Raises:
        ValueError: ``fraction`` not in (0, 1), or fewer than two groups.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"dev fraction must be in (0, 1), got {fraction}")
    keys = [group_of(e) if group_of else str(i) for i, e in enumerate(examples)]
    groups = sorted(set(keys))
    if len(groups) < 2:
        raise ValueError(f"cannot cut a development split from {len(groups)} group(s)")
    random.Random(seed).shuffle(groups)
    sizes = Counter(keys)
    wanted = fraction * len(examples)
    chosen: set[str] = set()
    taken = 0
    for key in groups[:-1]:
        if taken >= wanted:
            break
        chosen.add(key)
        taken += sizes[key]
    train = [e for e, k in zip(examples, keys, strict=True) if k not in chosen]
    dev = [e for e, k in zip(examples, keys, strict=True) if k in chosen]
    return train, dev


def build_re_label_list(splits: Iterable[ReSplit]) -> list[str]:
    """Labels seen in ``splits``: the negative label first (see :data:`NEGATIVE_LABELS`), then sorted.

    Raises:
        DownstreamError: fewer than two labels.
    """
    seen = {e.label for split in splits for e in split.examples}
    if len(seen) < 2:
        raise DownstreamError(f"relation extraction needs at least two labels, found {sorted(seen)}")
    negatives = sorted(label for label in seen if label in NEGATIVE_LABELS)
    return negatives + sorted(seen - set(negatives))


def check_labels(split: ReSplit, label2id: dict[str, int]) -> None:
    """Every label of ``split`` must be known.

    Raises:
        DataFormatError: the first unknown label, with ``file:line`` (or the example index).
    """
    for e in split.examples:
        if e.label not in label2id:
            where = f"{split.path}:{e.line}" if e.line else f"{split.path} (example {e.index})"
            raise DataFormatError(f"{where}: label {e.label!r} not among the training/development labels {list(label2id)}")


# --------------------------------------------------------------------------------------------------
# placeholders and model inputs
# --------------------------------------------------------------------------------------------------


def placeholders_in(splits: Iterable[ReSplit]) -> list[str]:
    """The :data:`PLACEHOLDERS` that occur in any sentence of ``splits``, in :data:`PLACEHOLDERS` order."""
    present = set()
    for split in splits:
        for e in split.examples:
            for token in PLACEHOLDERS:
                if token not in present and token in e.sentence:
                    present.add(token)
    return [t for t in PLACEHOLDERS if t in present]


def add_placeholder_tokens(tokenizer, placeholders: Sequence[str]) -> list[int]:
    """Add ``placeholders`` to ``tokenizer`` as single special tokens (matched on the raw text, never split
    or lower-cased); the model's embeddings must then be resized to ``len(tokenizer)``.

    Returns:
        The token id of each placeholder, in order.

    Raises:
        DownstreamError: a placeholder still does not come out as one token.
    """
    from tokenizers import AddedToken

    new = [AddedToken(t, special=True, normalized=False, single_word=False, lstrip=False, rstrip=False)
           for t in placeholders if t not in tokenizer.get_vocab()]
    if new:
        tokenizer.add_tokens(new, special_tokens=True)
    ids = []
    for token in placeholders:
        pieces = tokenizer(f"a {token} b", add_special_tokens=False)["input_ids"]
        token_id = tokenizer.convert_tokens_to_ids(token)
        if pieces.count(token_id) != 1:
            raise DownstreamError(f"placeholder {token!r} is not a single token after adding it: {tokenizer.convert_ids_to_tokens(pieces)}")
        ids.append(token_id)
    return ids


def argument_marker_count(sentence: str) -> int:
    """How many argument placeholders ``sentence`` holds (an overlap marker such as ``@DRUG-DRUG$`` counts 2).

    A well-formed example has 2; fewer means the file lost an argument marker.
    """
    return sum(sentence.count(t) * (2 if t in OVERLAP_PLACEHOLDERS else 1) for t in ARGUMENT_PLACEHOLDERS)


def encode_re_split(
    split: ReSplit,
    tokenizer,
    label2id: dict[str, int],
    *,
    max_seq_length: int,
    placeholder_ids: Sequence[int] = (),
    sort_by_length: bool = False,
) -> EncodedReSplit:
    """Tokenise a split: ``[CLS] sentence [SEP]``, truncated to ``max_seq_length`` sub-tokens.

    A longer example keeps its first ``max_seq_length - 1`` sub-tokens and a final ``[SEP]``; when that
    removes any placeholder token (``placeholder_ids``) the example is counted in ``marker_lost``.

    Raises:
        ValueError: ``max_seq_length`` < 3.
        DataFormatError: a label missing from ``label2id`` (with ``file:line``).
    """
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
    check_labels(split, label2id)
    marker_set = set(placeholder_ids)
    sep_id = tokenizer.sep_token_id
    encoded = tokenizer([e.sentence for e in split.examples], add_special_tokens=True, truncation=False,
                        return_token_type_ids=True, return_attention_mask=False, verbose=False)
    rows = []
    truncated = 0
    lost: list[str] = []
    for position, (example, ids, types) in enumerate(
        zip(split.examples, encoded["input_ids"], encoded["token_type_ids"], strict=True)
    ):
        if len(ids) > max_seq_length:
            truncated += 1
            kept = ids[: max_seq_length - 1] + [sep_id]
            if sum(1 for t in ids if t in marker_set) != sum(1 for t in kept if t in marker_set):
                lost.append(example.index)
            ids, types = kept, types[:max_seq_length]
        rows.append(({"input_ids": list(ids), "token_type_ids": list(types), "labels": label2id[example.label]}, position))
    if sort_by_length:
        rows.sort(key=lambda r: len(r[0]["input_ids"]))
    missing = [e.index for e in split.examples if argument_marker_count(e.sentence) < 2]
    if missing:
        logger.warning(
            "%s: %d example(s) have fewer than two argument placeholders in the file (e.g. %s); kept, counted as "
            "'marker_missing'", split.path, len(missing), ", ".join(missing[:5]),
        )
    stats: dict[str, object] = {
        "truncated": truncated,
        "marker_lost": len(lost),
        "marker_lost_indices": lost[:20],
        "marker_missing": len(missing),
        "marker_missing_indices": missing[:20],
        "subtokens": sum(len(r[0]["input_ids"]) for r in rows),
    }
    if lost:
        logger.warning(
            "%s: truncation to %d sub-tokens cut a placeholder from %d example(s) (e.g. %s); they are kept and "
            "counted as 'marker_lost'. A larger --max-seq-length avoids it.",
            split.path, max_seq_length, len(lost), ", ".join(lost[:5]),
        )
    return EncodedReSplit(features=[r[0] for r in rows], example_index=[r[1] for r in rows], stats=stats)


def write_re_predictions(path: str | Path, split: ReSplit, predicted: Sequence[str]) -> None:
    """``index<TAB>gold<TAB>predicted`` with a header, one line per example in file order (BLURB's
    prediction layout plus the gold label).

    Raises:
        ValueError: ``predicted`` and the split differ in length.
    """
    if len(predicted) != len(split.examples):
        raise ValueError(f"{len(predicted)} predictions for {len(split.examples)} examples")
    rows = ["index\tgold\tpredicted"]
    rows += [f"{e.index}\t{e.label}\t{p}" for e, p in zip(split.examples, predicted, strict=True)]
    Path(path).write_text("\n".join(rows) + "\n", encoding="utf-8")
