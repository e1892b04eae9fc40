"""Pre-training examples: corpus documents -> WordPiece ids -> packed ELECTRA examples -> sharded Arrow.

Packing follows the original ``build_pretraining_dataset.py`` (google-research/electra), class
``ExampleBuilder``:

1. Sentences (lines) of ONE document are accumulated until their token count reaches the *target length*;
   an example is never built across documents, and the end of a document flushes what is left.
2. The target length is ``max_seq_length``, or with probability ``RANDOM_LENGTH_PROB`` = 0.05 a uniform
   integer in ``[MIN_RANDOM_LENGTH, max_seq_length]`` = [5, max_seq_length] (``_create_example``: drawn
   after each example; here also drawn at the start of each document, which has the same distribution).
3. With probability ``SINGLE_SEGMENT_PROB`` = 0.1 the example has one segment; otherwise sentences go to
   segment A while it stays under ``(target - 3) // 2`` tokens (the first sentence always goes to A; a
   sentence that would cross that length goes to A with probability 0.5 if B is still empty), the rest to B.
4. A is cut to ``max_seq_length - 2`` tokens and B to ``max_seq_length - len(A) - 3``; the example is
   ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``; ``token_type_ids`` are 0 through the first
   ``[SEP]``, 1 after.

OVERFLOW RULE (where we differ, ``carry_overflow=True``, the default): the original throws away the tokens
cut in step 4 (about 11% of OHSUMED with max_seq_length 128, more for long lines). We carry them instead,
as (at most two) leading sentences of the next example *of the same document*: the cut tail of A, then the
cut tail of B, in that order. The next example goes through the same steps 2-4 (and if the carried tokens
already reach its target, it is built at once). Every example is still produced by the original's
procedure from whole or carried sentences, so the single-segment and random-length rates are unchanged,
while no token is lost: ``tokens_lost`` in ``build_info.json`` is 0. With ``carry_overflow=False`` the cut
tokens are dropped as in the original and counted in ``tokens_lost``. Lines that tokenize to nothing are
ignored.

Randomness: each document has its own ``random.Random`` seeded from ``(seed, document index)``, so the
output depends only on the corpus, the options and ``seed``, not on ``num_processes``.

Validation: a document goes to the ``validation`` split when a seeded uniform draw for it is below
``eval_fraction``; if no draw is and the corpus has at least 2 documents, its last document does (while no
validation document has been drawn, the latest document's examples are held back in memory, so the order
of ``train`` is the corpus order whatever the chunking).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bioelectra.build_worker import ChunkResult, _chunks, _init_worker, _process_chunk, document_rng
from bioelectra.packing import (
    MIN_RANDOM_LENGTH,
    RANDOM_LENGTH_PROB,
    SINGLE_SEGMENT_PROB,
    PackStats,
)
from bioelectra.shards import FORMAT_VERSION, _SplitWriter, id_dtype_for
from bioelectra.textio import replace_dir

logger = logging.getLogger(__name__)


EXAMPLES_DIRNAME = "examples"
TOKENIZER_DIRNAME = "tokenizer"
BUILD_INFO_FILENAME = "build_info.json"
SPLITS = ("train", "validation")


# --------------------------------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BuildDataSettings:
    """Options of ``build_pretraining_data`` (the original ``build_pretraining_dataset.py`` flags and ours).

    Attributes:
        corpus_dir: corpus directory or file (formats: ``bioelectra.corpus``).
        vocab_file: WordPiece ``vocab.txt``.
        output_dir: gets ``examples/``, ``tokenizer/``, ``build_info.json``.
        max_seq_length (defaults to 128): tokens per example, [CLS]/[SEP] included (original default 128).
        num_processes (defaults to 1): tokenizing/packing worker processes (1 = in the main process).
        blanks_separate_docs (defaults to True): blank lines end documents in plain text.
        do_lower_case (defaults to True, the original default; Bio-ELECTRA used False with its cased vocab).
        strip_accents (defaults to True): only applied when lower-casing (original ``BasicTokenizer``).
        seed (defaults to 42): seed of packing randomness and of the validation split.
        eval_fraction (defaults to 0.01): fraction of documents held out for ``validation``.
        text_field (defaults to "text"): JSONL field with the text.
        carry_overflow (defaults to True): carry cut tokens forward instead of dropping them.
        examples_per_shard (defaults to 500_000): a new Arrow shard is started after this many examples.
        chunk_chars (defaults to 1_000_000): characters of text sent to a worker at once.
        on_unknown (defaults to "skip"): "skip" (counted) or "error" for files no reader handles.
        overwrite (defaults to False): replace an existing non-empty ``output_dir``.
        progress (defaults to False): show a tqdm progress bar on stderr.
    """

    corpus_dir: Path
    vocab_file: Path
    output_dir: Path
    max_seq_length: int = 128
    num_processes: int = 1
    blanks_separate_docs: bool = True
    do_lower_case: bool = True
    strip_accents: bool = True
    seed: int = 42
    eval_fraction: float = 0.01
    text_field: str = "text"
    carry_overflow: bool = True
    examples_per_shard: int = 500_000
    chunk_chars: int = 1_000_000
    on_unknown: str = "skip"
    overwrite: bool = False
    progress: bool = False

    def validate(self) -> None:
        """Raises ValueError naming the bad option and what was expected."""
        if self.max_seq_length < MIN_RANDOM_LENGTH:
            raise ValueError(f"max_seq_length must be >= {MIN_RANDOM_LENGTH}, got {self.max_seq_length}")
        if self.num_processes < 1:
            raise ValueError(f"num_processes must be >= 1, got {self.num_processes}")
        if not 0.0 <= self.eval_fraction < 1.0:
            raise ValueError(f"eval_fraction must be in [0, 1), got {self.eval_fraction}")
        if self.examples_per_shard < 1 or self.chunk_chars < 1:
            raise ValueError("examples_per_shard and chunk_chars must be >= 1")


# --------------------------------------------------------------------------------------------------
# the build
# --------------------------------------------------------------------------------------------------


def _eval_draw(seed: int, doc_index: int) -> float:
    return document_rng(seed, doc_index, "eval").random()


def _slice_docs(result: ChunkResult, doc_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Examples of the documents selected by ``doc_mask`` (bool, shape ``(num_docs,)``)."""
    example_mask = np.repeat(doc_mask, result.doc_example_counts)
    token_mask = np.repeat(example_mask, result.example_lengths)
    return (
        result.input_ids[token_mask],
        result.example_lengths[example_mask],
        result.first_lengths[example_mask],
    )


def _write_atomically(tmp: Path, output_dir: Path, overwrite: bool) -> None:
    if output_dir.exists():
        if not overwrite and (not output_dir.is_dir() or any(output_dir.iterdir())):
            raise FileExistsError(f"{output_dir} exists and is not empty; pass overwrite=True (--overwrite)")
    replace_dir(tmp, output_dir)


def cased_vocab_entries(vocab_file: str | os.PathLike) -> int:
    """Number of entries of a WordPiece ``vocab.txt`` with a capital letter, special tokens (``[CLS]`` ...)
    aside: more than 0 means the vocabulary was built from cased text."""
    count = 0
    with open(vocab_file, encoding="utf-8") as f:
        for line in f:
            token = line.rstrip("\n")
            if token.startswith("[") and token.endswith("]"):
                continue
            count += token != token.lower()
    return count


def corpus_warnings(counts: dict, settings: BuildDataSettings) -> list[str]:
    """What a finished build should tell its user about the corpus's shape (logged, and kept in
    ``build_info.json`` under ``warnings``): a corpus read as one document (examples never span documents, and
    the validation split is made of whole documents), and a build without validation examples (``pretrain
    train`` then computes no pre-training metrics). Each names the option that changes it."""
    warnings = []
    if counts["documents"] == 1:
        warnings.append(
            f"{settings.corpus_dir}: the whole corpus is one document ({counts['sentences']:,} sentences). In text "
            "files a blank line ends a document (--blanks-separate-docs), so a file of one abstract per line "
            "without blank lines is read as one document: put a blank line between documents, or give JSONL "
            "(one document per record)"
        )
    if counts["examples"]["validation"] == 0:
        warnings.append(
            f"no validation examples ({counts['validation_documents']} of {counts['documents']:,} documents held "
            "out): pretrain train will compute no pre-training metrics (masked-LM accuracy, disc_auc); give more "
            f"documents or a larger --eval-fraction (now {settings.eval_fraction:g})"
        )
    return warnings


def _check_build_inputs(settings: BuildDataSettings) -> None:
    """Raise before any work on a missing corpus or an occupied output; warn of a cased vocabulary that a
    lower-casing build can never produce."""
    corpus_dir, output_dir = Path(settings.corpus_dir), Path(settings.output_dir)
    if not corpus_dir.exists():
        raise FileNotFoundError(f"corpus directory not found: {corpus_dir}")
    if (
        output_dir.exists()
        and not settings.overwrite
        and (not output_dir.is_dir() or any(output_dir.iterdir()))
    ):
        raise FileExistsError(f"{output_dir} exists and is not empty; pass overwrite=True (--overwrite)")
    if settings.do_lower_case:
        cased = cased_vocab_entries(settings.vocab_file)
        if cased:
            logger.warning(
                "%s: %d entries contain capital letters (a cased vocabulary), but the text is lower-cased "
                "(do_lower_case), so they can never be produced; pass --no-lower-case for a cased vocabulary "
                "(Bio-ELECTRA's is cased)",
                settings.vocab_file,
                cased,
            )


def _fresh_tmp_dir(output_dir: Path) -> Path:
    """A new temporary folder beside ``output_dir`` (the stale ones of killed builds removed), with the
    permissions of an ordinary folder."""
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    for stale in output_dir.parent.glob(f".{output_dir.name}.tmp-*"):  # left by a killed build of this output
        logger.warning("removing %s, the half-written output of an earlier build-data that was stopped", stale)
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.tmp-", dir=output_dir.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; the output is an ordinary folder
    return tmp


class _SplitRouter:
    """Writes each chunk's documents to ``train`` or ``validation`` (seeded draws), holding back the latest
    train document while no validation document has been drawn, and sums the packing counts."""

    def __init__(self, writers: dict, settings: BuildDataSettings, bar, start_time: float) -> None:
        self.writers, self.settings, self.bar, self.start_time = writers, settings, bar, start_time
        self.held: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # latest doc, while no eval doc
        self.eval_docs = 0
        self.totals = PackStats()

    def consume(self, first_doc: int, result: ChunkResult) -> None:
        settings, writers, totals = self.settings, self.writers, self.totals
        n_docs = len(result.doc_example_counts)
        draws = np.array([_eval_draw(settings.seed, first_doc + i) for i in range(n_docs)])
        is_eval = draws < settings.eval_fraction
        self.eval_docs += int(is_eval.sum())
        is_train = ~is_eval
        if self.held is not None:  # the previous chunk's last train document, in its place
            writers["train"].write(*self.held)
            self.held = None
        if settings.eval_fraction > 0 and self.eval_docs == 0 and is_train.any():
            # no validation document drawn yet: delay the latest document, it may have to be the one
            last = np.zeros(n_docs, dtype=bool)
            last[np.flatnonzero(is_train)[-1]] = True
            self.held = _slice_docs(result, last)
            is_train &= ~last
        writers["train"].write(*_slice_docs(result, is_train))
        writers["validation"].write(*_slice_docs(result, is_eval))
        for name in ("sentences", "tokens", "tokens_in_examples", "tokens_lost", "examples"):
            setattr(totals, name, getattr(totals, name) + getattr(result.stats, name))
        totals.single_segment_examples += result.stats.single_segment_examples
        self.bar.update(n_docs)
        elapsed = time.perf_counter() - self.start_time
        self.bar.set_postfix(examples=totals.examples, tok_s=f"{totals.tokens / max(elapsed, 1e-9):,.0f}")

    def flush(self, documents: int) -> None:
        """The held document goes to ``validation`` if none was drawn and the corpus has 2 or more."""
        if self.held is not None:
            split = "validation" if documents >= 2 and self.eval_docs == 0 else "train"
            self.writers[split].write(*self.held)
            self.eval_docs += split == "validation"


def _pack_chunks(tasks: Iterator, init_args: tuple, consume, num_processes: int) -> None:
    """Pack each chunk of ``tasks`` in this process or in a pool of ``num_processes`` (at most
    ``2 * num_processes`` outstanding), handing the results to ``consume`` in corpus order."""
    if num_processes == 1:
        _init_worker(*init_args)
        for first_doc, chunk in tasks:
            consume(first_doc, _process_chunk((first_doc, chunk)))
        return
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(num_processes, initializer=_init_worker, initargs=init_args) as pool:
        pending: deque = deque()
        for first_doc, chunk in tasks:
            pending.append((first_doc, pool.apply_async(_process_chunk, ((first_doc, chunk),))))
            if len(pending) >= 2 * num_processes:  # bounded: memory stays flat
                doc0, res = pending.popleft()
                consume(doc0, res.get())
        while pending:
            doc0, res = pending.popleft()
            consume(doc0, res.get())


def _build_info(
    settings: BuildDataSettings,
    *,
    tokenizer,
    id_dtype: str,
    examples_dir: Path,
    writers: dict,
    corpus_stats,
    router: _SplitRouter,
    elapsed: float,
    setup_seconds: float,
) -> dict:
    """The ``build_info.json`` dict of a finished build (options, packing rules, counts, throughput)."""
    from bioelectra.vocab import effective_strip_accents

    totals = router.totals
    stored_tokens = sum(w.num_tokens for w in writers.values())
    stored_bytes = sum(f.stat().st_size for f in examples_dir.rglob("*.arrow"))
    return {
        "format_version": FORMAT_VERSION,
        "input_ids_dtype": id_dtype,
        "bytes_per_token": round(stored_bytes / stored_tokens, 4) if stored_tokens else None,
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(settings).items()},
        "vocab_file": str(settings.vocab_file),
        "vocab_size": len(tokenizer),
        "do_lower_case": settings.do_lower_case,
        "strip_accents": effective_strip_accents(settings.do_lower_case, settings.strip_accents),
        "max_seq_length": settings.max_seq_length,
        "seed": settings.seed,
        "carry_overflow": settings.carry_overflow,
        "packing": {
            "source": "google-research/electra build_pretraining_dataset.py ExampleBuilder",
            "single_segment_prob": SINGLE_SEGMENT_PROB,
            "random_length_prob": RANDOM_LENGTH_PROB,
            "min_random_length": MIN_RANDOM_LENGTH,
            "overflow": "carried into the next example of the same document"
            if settings.carry_overflow
            else "dropped (original behaviour)",
        },
        "counts": {
            "files": corpus_stats.files,
            "skipped_files": corpus_stats.skipped_files,
            "skipped_examples": corpus_stats.skipped_examples,
            "empty_records": corpus_stats.empty_records,
            "documents": corpus_stats.documents,
            "validation_documents": router.eval_docs,
            "sentences": totals.sentences,
            "tokens": totals.tokens,
            "tokens_in_examples": totals.tokens_in_examples,
            "tokens_lost": totals.tokens_lost,
            "examples": {s: writers[s].num_examples for s in SPLITS},
            "single_segment_examples": totals.single_segment_examples,
            "input_ids_with_special_tokens": sum(w.num_tokens for w in writers.values()),
            "shards": {s: len(writers[s].shards) for s in SPLITS},
        },
        "tokens_per_second": totals.tokens / elapsed if elapsed > 0 else 0.0,
        "elapsed_seconds": elapsed,
        "setup_seconds": setup_seconds,
    }


def build_pretraining_data(settings: BuildDataSettings) -> dict:
    """Build the pre-training dataset: stream, tokenize and pack the corpus, write sharded Arrow.

    Writes into a temporary directory beside ``settings.output_dir`` and renames it at the end:
    ``examples/`` (a ``datasets.DatasetDict`` in ``save_to_disk`` layout with splits ``train`` and
    ``validation``; columns ``input_ids`` list<int32> and ``token_type_ids`` list<int8>, unpadded, length
    <= max_seq_length), ``tokenizer/`` (``save_pretrained`` files) and ``build_info.json``.

    Memory: documents are read lazily and sent in chunks of about ``chunk_chars`` characters to at most
    ``2 * num_processes`` outstanding tasks; examples are written as Arrow record batches per chunk. Peak
    memory therefore depends on the chunk size and the longest document, not on the corpus size.

    Returns:
        The ``build_info`` dict (also written to ``build_info.json``).

    Raises:
        FileNotFoundError: corpus or vocabulary missing.
        FileExistsError: ``output_dir`` is not empty and ``overwrite`` is False.
        ValueError: bad settings, a malformed corpus file (``bioelectra.corpus.CorpusError``), or no text.
    """
    from tqdm.auto import tqdm

    from bioelectra.corpus import CorpusStats, iter_documents
    from bioelectra.vocab import make_tokenizer

    settings.validate()
    setup_start = time.perf_counter()
    corpus_dir, output_dir = Path(settings.corpus_dir), Path(settings.output_dir)
    _check_build_inputs(settings)
    tokenizer = make_tokenizer(
        settings.vocab_file, do_lower_case=settings.do_lower_case, strip_accents=settings.strip_accents
    )
    tokenizer_json = tokenizer.backend_tokenizer.to_str()
    start_time = time.perf_counter()  # throughput clock: reading, tokenizing, packing, writing
    setup_seconds = start_time - setup_start
    tmp = _fresh_tmp_dir(output_dir)
    try:
        tokenizer.save_pretrained(str(tmp / TOKENIZER_DIRNAME))
        shutil.copyfile(settings.vocab_file, tmp / TOKENIZER_DIRNAME / "vocab.txt")
        examples_dir = tmp / EXAMPLES_DIRNAME
        examples_dir.mkdir()
        id_dtype = id_dtype_for(len(tokenizer))
        writers = {s: _SplitWriter(examples_dir / s, s, settings.examples_per_shard, id_dtype) for s in SPLITS}
        corpus_stats = CorpusStats()
        docs = iter_documents(
            corpus_dir,
            blanks_separate_docs=settings.blanks_separate_docs,
            text_field=settings.text_field,
            on_unknown=settings.on_unknown,
            stats=corpus_stats,
        )
        tasks = _chunks(docs, settings.chunk_chars)
        init_args = (
            tokenizer_json,
            settings.max_seq_length,
            settings.seed,
            settings.carry_overflow,
            settings.do_lower_case,
        )
        bar = tqdm(unit=" docs", desc="build-data", disable=not settings.progress, dynamic_ncols=True)
        router = _SplitRouter(writers, settings, bar, start_time)
        _pack_chunks(tasks, init_args, router.consume, settings.num_processes)
        bar.close()
        router.flush(corpus_stats.documents)
        if corpus_stats.documents == 0:
            raise ValueError(
                f"{corpus_dir}: no documents found ({corpus_stats.files} files read, "
                f"{corpus_stats.skipped_files} skipped as unknown formats)"
            )
        for writer in writers.values():
            writer.finish()
        (examples_dir / "dataset_dict.json").write_text(json.dumps({"splits": list(SPLITS)}))
        elapsed = time.perf_counter() - start_time
        info = _build_info(
            settings,
            tokenizer=tokenizer,
            id_dtype=id_dtype,
            examples_dir=examples_dir,
            writers=writers,
            corpus_stats=corpus_stats,
            router=router,
            elapsed=elapsed,
            setup_seconds=setup_seconds,
        )
        info["warnings"] = corpus_warnings(info["counts"], settings)
        for warning in info["warnings"]:
            logger.warning("%s", warning)
        (tmp / BUILD_INFO_FILENAME).write_text(json.dumps(info, indent=2))
        _write_atomically(tmp, output_dir, settings.overwrite)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return info


def load_examples(data_dir: str | os.PathLike):
    """The ``datasets.DatasetDict`` (``train``, ``validation``) written by ``build_pretraining_data`` (the
    examples alone; ``bioelectra.pretraining.load_pretraining_data`` opens the whole folder for training).

    Rows: ``input_ids`` (list of int32, length <= max_seq_length, unpadded) and ``token_type_ids`` (int8).

    Raises:
        FileNotFoundError: ``data_dir/examples`` missing.
    """
    import datasets

    path = Path(data_dir) / EXAMPLES_DIRNAME
    if not (path / "dataset_dict.json").is_file():
        raise FileNotFoundError(f"{path}: no pre-training examples (expected the output of build-data)")
    return datasets.load_from_disk(str(path))


def load_build_info(data_dir: str | os.PathLike) -> dict:
    """``build_info.json`` of a ``build-data`` output directory (options, counts, throughput).

    Raises:
        FileNotFoundError: the file is missing.
    """
    path = Path(data_dir) / BUILD_INFO_FILENAME
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (expected the output of build-data)")
    return json.loads(path.read_text(encoding="utf-8"))
