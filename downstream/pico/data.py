"""EBM PICO in BLURB's form: the reader, the files of a folder, and where the training file comes from.

Format (the output of BLURB's data-generation pipeline on EBM-NLP 2.00, ``../shared/data/pico/ebm-pico/``):
a document starts with ``-DOCSTART- (<PMID>)``; then ``token<TAB>tag`` lines, a blank line between
sentences. The tags are IO, without ``B-``: ``O``, ``I-PAR`` (participants), ``I-INT`` (interventions),
``I-OUT`` (outcomes), one per token (where EBM-NLP's spans overlap the pipeline kept one). Lines are split
on tabs only; a quote is an ordinary character.

EBM-NLP: Nye et al., A Corpus with Multi-Level Annotations of Patients, Interventions and Outcomes to
Support Language Processing for Medical Literature, ACL 2018 (https://github.com/bepnye/EBM-NLP). BLURB:
Gu et al. 2021 (Table 2: 3,842 / 960 / 191 abstracts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bioelectra.textio import atomic_open, read_text
from downstream.errors import DataFormatError, DatasetUnavailableError

#: The PICO elements BLURB scores, in report order, and their tags.
PICO_ELEMENTS = ("PAR", "INT", "OUT")
PICO_TAGS = tuple(f"I-{element}" for element in PICO_ELEMENTS)
#: Every tag of the files, ``O`` first (the model's label order).
PICO_LABELS = ("O", *PICO_TAGS)

#: Where the training file comes from when a folder has only dev and test (``../shared/data`` has no train).
TRAIN_FILE_HELP = (
    "BLURB's EBM PICO training file (train.tsv, 3,842 abstracts) is not distributed with the dev and test files. "
    "Build it from EBM-NLP 2.00 (ebm_nlp_2_00.tar.gz, https://github.com/bepnye/EBM-NLP, unpacked): "
    "downstream.pico.ebm_nlp.build_ebm_pico_file(DIR, read_pmid_list('split_pmids/train_pmid.tsv'), 'train.tsv') "
    "(EBM-NLP's models/lstm-crf/build_data.py rules, which BLURB's data generation follows; docs/guides/blurb.md), "
    "with train.tsv beside dev.tsv and test.tsv. Without it, `bioelectra evaluate --loader pico` still scores a "
    "model trained elsewhere on dev and test"
)

_DOCSTART = re.compile(r"^-DOCSTART-\s*\(?\s*([^)\s]*)\s*\)?\s*$")


@dataclass(frozen=True)
class PicoSentence:
    """One sentence: its tokens, one IO tag per token, the 1-based line of its first token, its document."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    line: int
    document: str


@dataclass
class PicoSplit:
    """The sentences of one file, in file order."""

    path: Path
    sentences: list[PicoSentence]

    @property
    def num_words(self) -> int:
        return sum(len(s.words) for s in self.sentences)

    def counts(self) -> dict[str, object]:
        """Documents, sentences, tokens, and tokens per tag (``tags``: ``O`` and the three elements)."""
        tags = {tag: 0 for tag in PICO_LABELS}
        for sentence in self.sentences:
            for tag in sentence.tags:
                tags[tag] += 1
        return {"documents": len({s.document for s in self.sentences}), "sentences": len(self.sentences),
                "tokens": self.num_words, "tags": tags}  # fmt: skip


def read_pico_file(path: str | Path) -> PicoSplit:
    """Read an EBM PICO file in BLURB's form (module docstring). ``.gz`` is decompressed.

    Raises:
        DataFormatError: a line without exactly one tab, an empty token, a tag other than ``O``, ``I-PAR``,
            ``I-INT``, ``I-OUT``, a token before the first ``-DOCSTART-``, or no sentence at all (file and
            line named).
    """
    path = Path(path)
    sentences: list[PicoSentence] = []
    words: list[str] = []
    tags: list[str] = []
    document: str | None = None
    start = 0

    def flush() -> None:
        if words:
            sentences.append(PicoSentence(tuple(words), tuple(tags), start, document or ""))
            words.clear()
            tags.clear()

    for lineno, line in enumerate(read_text(path, error=DataFormatError).split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            flush()
            continue
        docstart = _DOCSTART.match(line)
        if docstart:
            flush()
            document = docstart.group(1) or f"line-{lineno}"
            continue
        columns = line.split("\t")
        if len(columns) != 2:
            raise DataFormatError(f"{path}:{lineno}: expected 'token<TAB>tag' (2 tab-separated columns), got {len(columns)} in {line[:60]!r}")
        token, tag = columns[0], columns[1].strip()
        if not token.strip():
            raise DataFormatError(f"{path}:{lineno}: empty token (expected 'token<TAB>tag')")
        if tag not in PICO_LABELS:
            raise DataFormatError(f"{path}:{lineno}: tag {tag!r} is not one of {', '.join(PICO_LABELS)} (BLURB's IO tags)")
        if document is None:
            raise DataFormatError(f"{path}:{lineno}: a token before the first '-DOCSTART- (<PMID>)' line")
        if not words:
            start = lineno
        words.append(token)
        tags.append(tag)
    flush()
    if not sentences:
        raise DataFormatError(f"{path}: no sentences found; expected '-DOCSTART- (<PMID>)' then 'token<TAB>tag' lines")
    return PicoSplit(path, sentences)


_SUFFIXES = (".tsv", ".tsv.gz", ".txt", ".txt.gz")


def find_pico_files(folder: str | Path) -> dict[str, Path]:
    """The EBM PICO files of ``folder``: ``dev`` (``dev.tsv`` or ``devel.tsv``) and ``test``, and ``train`` when
    present (``.tsv``, ``.txt``, ``.gz``).

    Returns:
        ``{"dev", "test"[, "train"]}``: without a train file a model trained elsewhere can still be scored.

    Raises:
        DatasetUnavailableError: no folder, or no dev or test file (what was expected is listed).
    """
    from downstream.registry import find_named_splits

    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetUnavailableError(f"data folder not found: {folder}" if not folder.exists() else f"{folder}: is a file, not a folder")
    found = find_named_splits(folder, _SUFFIXES)
    missing = [split for split in ("dev", "test") if split not in found]
    if missing:
        raise DatasetUnavailableError(f"{folder}: missing {' and '.join(missing)} (expected dev.tsv and test.tsv in BLURB's EBM PICO "
                                      "layout, train.tsv to fine-tune)")  # fmt: skip
    return found


def token_ids(split: PicoSplit) -> list[list[str]]:
    """An id for every token: ``<PMID>.<sentence in its document>.<token in its sentence>`` (0-based)."""
    ids, seen = [], {}
    for sentence in split.sentences:
        index = seen.get(sentence.document, 0)
        seen[sentence.document] = index + 1
        ids.append([f"{sentence.document}.{index}.{t}" for t in range(len(sentence.words))])
    return ids


def write_pico_predictions(path: str | Path, split: PicoSplit, predicted: list[list[str]]) -> None:
    """``id<TAB>token<TAB>gold<TAB>predicted`` with a header, one line per token in file order (ids: :func:`token_ids`).
    Written to a temporary name and renamed.

    Raises:
        ValueError: predictions and sentences differ in number or length.
    """
    if len(predicted) != len(split.sentences):
        raise ValueError(f"{len(predicted)} predicted sentences for {len(split.sentences)}")
    with atomic_open(path) as out:
        out.write("id\ttoken\tgold\tpredicted\n")
        for sentence, ids, tags in zip(split.sentences, token_ids(split), predicted, strict=True):
            if len(tags) != len(sentence.words):
                raise ValueError(f"{split.path}:{sentence.line}: {len(tags)} predictions for {len(sentence.words)} tokens")
            for token_id, word, gold, tag in zip(ids, sentence.words, sentence.tags, tags, strict=True):
                out.write(f"{token_id}\t{word}\t{gold}\t{tag}\n")
