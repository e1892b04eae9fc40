"""Where ``bioelectra predict`` writes: a file written document by document and resumable after a kill
(:class:`FileOutput`), a BRAT folder (:class:`BratOutput`), or a stream such as standard output
(:class:`StreamOutput`). Each takes the rendered text of a chunk of documents (:mod:`downstream.predict.writers`)
in input order.

Resuming. A file output is written to ``.<name>.partial`` beside ``<name>`` and renamed onto it when the last
document is written, so ``<name>`` is never a partial result. After each chunk the partial file is flushed to
disk and a ledger, ``.<name>.progress.json``, records the documents written and the partial file's size
(written atomically, after the data). A run killed at any moment leaves a ledger that undercounts or
matches the file, never one that overcounts: started again with the same command, the run cuts the partial
file back to the ledger's size (dropping a half-written document or line), skips that many input documents
and goes on. A BRAT folder keeps its ledger inside (``.predict-progress.json``); each document's two files are
written atomically.

Nothing lost. An existing output file is replaced only when the user says so (``overwrite``); a partial run of
another command is refused, naming what changed and how to start over (``overwrite``, or removing the named
files), and discarded with ``overwrite``. A run that fails before its first document is written removes what it
made (the partial file, its ledger, a folder it created), so a corrected command starts afresh.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from bioelectra.textio import atomic_write_text
from downstream.errors import DownstreamError
from downstream.predict.formats import Document
from downstream.predict.writers import safe_file_stem

logger = logging.getLogger(__name__)


def _read_ledger(path: Path) -> dict | None:
    try:
        ledger = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return ledger if isinstance(ledger, dict) and isinstance(ledger.get("documents"), int) else None


def _same_command(ledger: dict, fingerprint: dict, ledger_path: Path, files: Sequence[Path], *, overwrite: bool) -> bool:
    """Whether ``ledger`` is a partial run of the command of ``fingerprint`` (then it is resumed). A partial
    run of another command is discarded (``files`` removed) with ``overwrite``, else refused.

    Raises:
        DownstreamError: a partial run of another command without ``overwrite``: what changed, and how to
            start over.
    """
    before = ledger.get("fingerprint") or {}
    changed = sorted(k for k in set(before) | set(fingerprint) if before.get(k) != fingerprint.get(k))
    if not changed:
        return True
    if overwrite:
        logger.warning("%s: a partial run of another command, discarded (--overwrite)", ledger_path)
        for path in files:
            path.unlink(missing_ok=True)
        return False
    details = "; ".join(f"{k}: {before.get(k)!r} then, {fingerprint.get(k)!r} now" for k in changed)
    raise DownstreamError(f"{ledger_path}: a partial run of another command ({details}); to start over with this "
                          f"command pass --overwrite, or remove {' and '.join(map(str, files))}; to resume it, "
                          "run that command again")  # fmt: skip


def _cannot_write(output: Path, folder: Path, exc: OSError) -> DownstreamError:
    """An error of the files written in ``folder`` (a read-only folder ...) in ``--output``'s words: the user
    named ``output``, not the hidden partial file or ledger."""
    return DownstreamError(f"--output {output}: cannot write in {folder} ({exc.strerror or exc})")


def _remove_made_folders(folders: list[Path]) -> None:
    """Remove the folders a run made, innermost first, where they are still empty."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:
            return


def _make_folder(folder: Path) -> list[Path]:
    """``mkdir -p folder``; returns the folders it made, outermost first."""
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    folder.mkdir(parents=True, exist_ok=True)
    return list(reversed(missing))


class FileOutput:
    """A file (``jsonl``, ``conll``, ``pubtator``, ``bioc``) written chunk by chunk, resumable (module docstring).

    Args:
        path: the final file.
        header, footer: text before the first document and after the last (BioC's collection element).
        fingerprint: what makes a run the same command (model, inputs, options); stored in the ledger.
        overwrite: replace an existing ``path`` and discard a partial run of another command.

    Raises:
        DownstreamError: ``path`` is a folder, or exists and ``overwrite`` is false.
    """

    def __init__(self, path: str | os.PathLike, *, header: str = "", footer: str = "", fingerprint: dict, overwrite: bool = False):
        self.path = Path(path)
        if self.path.is_dir():
            raise DownstreamError(f"--output {self.path}: a folder; this format writes a file")
        if self.path.exists() and not overwrite:
            raise DownstreamError(f"--output {self.path}: exists; pass --overwrite to replace it, or give another --output")
        self.partial = self.path.with_name(f".{self.path.name}.partial")
        self.ledger = self.path.with_name(f".{self.path.name}.progress.json")
        self.header, self.footer, self.fingerprint, self.overwrite = header, footer, fingerprint, overwrite
        self.documents = 0
        self._handle: BinaryIO | None = None
        self._made: list[Path] = []
        self._finished = False

    def start(self) -> int:
        """Open the partial file; returns the documents a killed run of the same command already wrote
        (0 for a new run).

        Raises:
            DownstreamError: the ledger belongs to a run of another command (and ``overwrite`` is false); the
                folder cannot be written (``--output`` named, not the hidden partial file).
        """
        ledger = _read_ledger(self.ledger)
        if ledger is not None and ledger["documents"] > 0 and self.partial.is_file():  # none written: nothing to keep
            if _same_command(ledger, self.fingerprint, self.ledger, [self.partial, self.ledger], overwrite=self.overwrite):
                size = int(ledger.get("bytes", -1))
                if 0 <= size <= self.partial.stat().st_size:
                    try:
                        self._handle = open(self.partial, "r+b")  # noqa: SIM115 (closed in finish / close)
                    except OSError as exc:
                        raise _cannot_write(self.path, self.path.parent, exc) from None
                    self._handle.truncate(size)  # a half-written chunk of the killed run goes
                    self._handle.seek(size)
                    self.documents = ledger["documents"]
                    return self.documents
                logger.warning("%s is shorter than its ledger says (%d bytes): starting again", self.partial, size)
        try:
            self._made = _make_folder(self.path.parent)
            self._handle = open(self.partial, "wb")  # noqa: SIM115
            self._write_chunk(0, self.header)
        except OSError as exc:
            self.close()
            raise _cannot_write(self.path, self.path.parent, exc) from None
        return 0

    def write(self, documents: Sequence[Document], texts: Sequence[str]) -> None:
        """Append one chunk's text, put it on disk, then record it in the ledger.

        Raises:
            DownstreamError: the disk refused the write (full, read-only); what was written is kept for resuming.
        """
        try:
            self._write_chunk(len(documents), "".join(texts))
        except OSError as exc:
            raise DownstreamError(f"--output {self.path}: writing failed ({exc.strerror or exc}); the documents "
                                  f"written so far are kept, and the same command resumes after them") from None  # fmt: skip

    def _write_chunk(self, count: int, text: str) -> None:
        assert self._handle is not None, "start() first"
        self._handle.write(text.encode("utf-8"))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.documents += count
        ledger = {"documents": self.documents, "bytes": self._handle.tell(), "fingerprint": self.fingerprint}
        atomic_write_text(self.ledger, json.dumps(ledger, ensure_ascii=False) + "\n")

    def finish(self) -> None:
        """Write the footer, put the complete file in place of ``path`` and remove the ledger."""
        assert self._handle is not None, "start() first"
        self._handle.write(self.footer.encode("utf-8"))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()
        self._handle = None
        os.replace(self.partial, self.path)
        self.ledger.unlink(missing_ok=True)
        self._finished = True

    def close(self) -> None:
        """After an error: close the partial file, keeping it and its ledger for a resumed run when they hold
        a document; a run that wrote none leaves nothing (partial file, ledger, the folders it made)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if not self._finished and self.documents == 0:
            self.partial.unlink(missing_ok=True)
            self.ledger.unlink(missing_ok=True)
            _remove_made_folders(self._made)

    def note_skipped(self, document: Document) -> None:
        """A document of a resumed run already written (nothing to do for a file)."""


class BratOutput:
    """A BRAT folder: ``<safe id>.txt`` and ``<safe id>.ann`` per document, each written atomically; two ids
    with the same safe stem get ``-2``, ``-3`` ... appended, in input order (also when resumed)."""

    def __init__(self, folder: str | os.PathLike, *, fingerprint: dict, overwrite: bool = False):
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise DownstreamError(f"--output {self.folder}: BRAT output needs a folder, and this is a file")
        self.ledger = self.folder / ".predict-progress.json"
        self.fingerprint, self.overwrite = fingerprint, overwrite
        self.documents = 0
        self._used: set[str] = set()
        self._made: list[Path] = []

    def start(self) -> int:
        ledger = _read_ledger(self.ledger)
        try:
            self._made = _make_folder(self.folder)
        except OSError as exc:
            raise _cannot_write(self.folder, self.folder, exc) from None
        if not ledger or ledger["documents"] == 0:  # none written: nothing to keep
            return 0
        if not _same_command(ledger, self.fingerprint, self.ledger, [self.ledger], overwrite=self.overwrite):
            return 0
        self.documents = ledger["documents"]
        return self.documents

    def _stem(self, document: Document) -> str:
        stem = base = safe_file_stem(document.id)
        n = 1
        while stem.lower() in self._used:
            n += 1
            stem = f"{base}-{n}"
        self._used.add(stem.lower())
        return stem

    def note_skipped(self, document: Document) -> None:
        self._stem(document)  # its name was taken in the killed run

    def write(self, documents: Sequence[Document], texts: Sequence[str]) -> None:
        try:
            for document, ann in zip(documents, texts, strict=True):
                stem = self._stem(document)
                atomic_write_text(self.folder / f"{stem}.txt", document.text)
                atomic_write_text(self.folder / f"{stem}.ann", ann)
            self.documents += len(documents)
            atomic_write_text(self.ledger, json.dumps({"documents": self.documents, "fingerprint": self.fingerprint}) + "\n")
        except OSError as exc:
            raise _cannot_write(self.folder, self.folder, exc) from None

    def finish(self) -> None:
        self.ledger.unlink(missing_ok=True)

    def close(self) -> None:
        """After an error: a run that wrote no document removes the folders it made."""
        if self.documents == 0:
            _remove_made_folders(self._made)


class StreamOutput:
    """An open text stream (standard output): written as the chunks come, never resumed."""

    def __init__(self, handle: TextIO, *, header: str = "", footer: str = ""):
        self.handle, self.header, self.footer = handle, header, footer

    def start(self) -> int:
        self.handle.write(self.header)
        return 0

    def note_skipped(self, document: Document) -> None:
        pass

    def write(self, documents: Sequence[Document], texts: Sequence[str]) -> None:
        self.handle.write("".join(texts))
        self.handle.flush()

    def finish(self) -> None:
        self.handle.write(self.footer)
        self.handle.flush()

    def close(self) -> None:
        pass
