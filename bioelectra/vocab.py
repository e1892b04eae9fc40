"""WordPiece vocabularies: training one with ``tokenizers``, and writing Hugging Face tokenizer files.

Special tokens and their ids follow Bio-ELECTRA's vocabulary (``bioelectra/assets/vocab``): ``[PAD]=0``,
``[UNK]=1``, ``[CLS]=2``, ``[SEP]=3``, ``[MASK]=4`` (BERT's original ``vocab.txt`` puts ``[UNK]`` at 100
and ``[CLS]``/``[SEP]``/``[MASK]`` at 101-103; any order loads, these are the ids we write).

Normalisation matches the original ELECTRA ``model/tokenization.py`` ``BasicTokenizer``: accents are
stripped only when lower-casing (``if do_lower_case: lower(); if strip_accents: strip``), so
``strip_accents`` has no effect with ``do_lower_case=False`` (Bio-ELECTRA's cased setting).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bioelectra.corpus import CorpusStats, iter_documents

logger = logging.getLogger(__name__)

#: In id order 0..4 (Bio-ELECTRA's ``vocab.txt``).
SPECIAL_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def effective_strip_accents(do_lower_case: bool, strip_accents: bool) -> bool:
    """Whether accents are really stripped: only when lower-casing (original ``BasicTokenizer.tokenize``)."""
    return bool(do_lower_case and strip_accents)


def make_tokenizer(vocab_file: str | os.PathLike, *, do_lower_case: bool, strip_accents: bool = True):
    """An ``ElectraTokenizerFast`` for ``vocab_file`` with the original's normalisation flags.

    Raises:
        FileNotFoundError: ``vocab_file`` does not exist.
        ValueError: the vocabulary lacks a special token, or has duplicate entries.
    """
    from bioelectra.presets import load_wordpiece_tokenizer

    strip = effective_strip_accents(do_lower_case, strip_accents)
    return load_wordpiece_tokenizer(vocab_file, do_lower_case=do_lower_case, strip_accents=strip)


def save_tokenizer_files(
    vocab_file: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    do_lower_case: bool,
    strip_accents: bool = True,
) -> Path:
    """Write ``vocab.txt``, ``tokenizer.json``, ``tokenizer_config.json`` for ``vocab_file``.

    The result loads with ``AutoTokenizer.from_pretrained(output_dir)``.

    Returns:
        ``output_dir``.
    """
    output_dir = Path(output_dir)
    tokenizer = make_tokenizer(vocab_file, do_lower_case=do_lower_case, strip_accents=strip_accents)
    output_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(output_dir))
    target = output_dir / "vocab.txt"  # transformers 5 writes tokenizer.json only
    if not target.exists() or not os.path.samefile(vocab_file, target):
        shutil.copyfile(vocab_file, target)
    return output_dir


def train_wordpiece_vocab(
    corpus_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    vocab_size: int = 30522,
    do_lower_case: bool = True,
    strip_accents: bool = True,
    min_frequency: int = 2,
    limit_alphabet: int = 1000,
    blanks_separate_docs: bool = True,
    text_field: str = "text",
    progress: bool = False,
) -> dict:
    """Train a BERT-style WordPiece vocabulary on a corpus and write ``vocab.txt`` + HF tokenizer files.

    Uses ``tokenizers.BertWordPieceTokenizer`` (BERT normaliser and pre-tokeniser, the same splitting as the
    original ``BasicTokenizer``), streaming the corpus documents of ``bioelectra.corpus.iter_documents``.
    ``vocab_size`` 30522 is BERT's / ELECTRA's; ``limit_alphabet`` 1000 and ``min_frequency`` 2 are the
    ``tokenizers`` BERT-recipe defaults.

    Args:
        corpus_dir: corpus directory or file (any format ``iter_documents`` reads).
        output_dir: gets ``vocab.txt`` (special tokens on lines 1-5, then the other entries sorted, so the
            same entries always get the same token ids) and ``tokenizer.json``,
            ``tokenizer_config.json``, ``special_tokens_map.json``; written in a temporary directory and
            moved into place, so an interrupted run leaves no half-written vocabulary.
        vocab_size: entries in ``vocab.txt``, special tokens included (an upper bound: a small corpus gives
            fewer).

    Returns:
        ``{"vocab_file", "vocab_size", "documents", "lines", "skipped_files", ...}``.

    Raises:
        ValueError: ``vocab_size`` too small, or the corpus has no text.
    """
    from tokenizers import BertWordPieceTokenizer

    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must exceed the {len(SPECIAL_TOKENS)} special tokens, got {vocab_size}")
    corpus_dir = Path(corpus_dir)
    output_dir = Path(output_dir)
    stats = CorpusStats()
    strip = effective_strip_accents(do_lower_case, strip_accents)
    wp = BertWordPieceTokenizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=strip, lowercase=do_lower_case
    )

    def lines() -> Iterator[str]:
        for doc in iter_documents(
            corpus_dir, blanks_separate_docs=blanks_separate_docs, text_field=text_field, stats=stats
        ):
            yield from doc

    wp.train_from_iterator(
        lines(),
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        limit_alphabet=limit_alphabet,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=progress,
    )
    if stats.lines == 0:
        raise ValueError(
            f"{corpus_dir}: no text found ({stats.files} files read, {stats.skipped_files} skipped)"
        )
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))
    try:
        wp.save_model(str(tmp))
        vocab_file = tmp / "vocab.txt"
        entries = vocab_file.read_text(encoding="utf-8").splitlines()
        head = entries[: len(SPECIAL_TOKENS)]
        if tuple(head) != SPECIAL_TOKENS:  # tokenizers' trainer puts special tokens first, in order
            raise RuntimeError(f"trained vocabulary starts with {head}, expected {list(SPECIAL_TOKENS)}")
        # The trainer does not return its entries in the same order on every run (its "##" alphabet comes out
        # of a hash map, and merges of equal count swap places), and the order is the token ids. Sorting the
        # non-special entries makes the ids a function of the entries alone. (When merges of equal count
        # straddle the vocab_size cut-off, the entries themselves can differ between runs.)
        vocab_file.write_text("\n".join([*head, *sorted(entries[len(SPECIAL_TOKENS):])]) + "\n", encoding="utf-8")
        save_tokenizer_files(vocab_file, tmp, do_lower_case=do_lower_case, strip_accents=strip_accents)
        if output_dir.exists():
            for child in tmp.iterdir():
                os.replace(child, output_dir / child.name)
        else:
            os.replace(tmp, output_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    size = len((output_dir / "vocab.txt").read_text(encoding="utf-8").splitlines())
    return {
        "vocab_file": str(output_dir / "vocab.txt"),
        "vocab_size": size,
        "do_lower_case": do_lower_case,
        "strip_accents": strip,
        "min_frequency": min_frequency,
        "files": stats.files,
        "skipped_files": stats.skipped_files,
        "documents": stats.documents,
        "lines": stats.lines,
    }
