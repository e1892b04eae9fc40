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
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

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


def _check_fingerprint(ledger: dict, fingerprint: dict, ledger_path: Path) -> None:
    """Refuse to resume a partial run of another command, naming what differs."""
    before = ledger.get("fingerprint") or {}
    changed = sorted(k for k in set(before) | set(fingerprint) if before.get(k) != fingerprint.get(k))
    if changed:
        details = "; ".join(f"{k}: {before.get(k)!r} then, {fingerprint.get(k)!r} now" for k in changed)
        raise DownstreamError(f"{ledger_path}: a partial run of another command ({details}); run the same command "
                              f"to resume it, or delete {ledger_path} to start again")  # fmt: skip


class FileOutput:
    """A file (``jsonl``, ``conll``, ``pubtator``, ``bioc``) written chunk by chunk, resumable (module docstring).

    Args:
        path: the final file.
        header, footer: text before the first document and after the last (BioC's collection element).
        fingerprint: what makes a run the same command (model, inputs, options); stored in the ledger.
    """

    def __init__(self, path: str | os.PathLike, *, header: str = "", footer: str = "", fingerprint: dict):
        self.path = Path(path)
        if self.path.is_dir():
            raise DownstreamError(f"--output {self.path}: a folder; this format writes a file")
        self.partial = self.path.with_name(f".{self.path.name}.partial")
        self.ledger = self.path.with_name(f".{self.path.name}.progress.json")
        self.header, self.footer, self.fingerprint = header, footer, fingerprint
        self.documents = 0
        self._handle: TextIO | None = None

    def start(self) -> int:
        """Open the partial file; returns the documents a killed run of the same command already wrote
        (0 for a new run).

        Raises:
            DownstreamError: the ledger belongs to a run of another command.
        """
        ledger = _read_ledger(self.ledger)
        if ledger is not None and self.partial.is_file():
            _check_fingerprint(ledger, self.fingerprint, self.ledger)
            size = int(ledger.get("bytes", -1))
            if 0 <= size <= self.partial.stat().st_size:
                self._handle = open(self.partial, "r+b")  # noqa: SIM115 (closed in finish / close)
                self._handle.truncate(size)  # a half-written chunk of the killed run goes
                self._handle.seek(size)
                self.documents = ledger["documents"]
                return self.documents
            logger.warning("%s is shorter than its ledger says (%d bytes): starting again", self.partial, size)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.partial, "wb")  # noqa: SIM115
        self._write_chunk(0, self.header)
        return 0

    def write(self, documents: Sequence[Document], texts: Sequence[str]) -> None:
        """Append one chunk's text, put it on disk, then record it in the ledger."""
        self._write_chunk(len(documents), "".join(texts))

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

    def close(self) -> None:
        """After an error: close the partial file, keeping it and its ledger for a resumed run."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def note_skipped(self, document: Document) -> None:
        """A document of a resumed run already written (nothing to do for a file)."""


class BratOutput:
    """A BRAT folder: ``<safe id>.txt`` and ``<safe id>.ann`` per document, each written atomically; two ids
    with the same safe stem get ``-2``, ``-3`` ... appended, in input order (also when resumed)."""

    def __init__(self, folder: str | os.PathLike, *, fingerprint: dict):
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise DownstreamError(f"--output {self.folder}: BRAT output needs a folder, and this is a file")
        self.ledger = self.folder / ".predict-progress.json"
        self.fingerprint = fingerprint
        self.documents = 0
        self._used: set[str] = set()

    def start(self) -> int:
        ledger = _read_ledger(self.ledger)
        self.folder.mkdir(parents=True, exist_ok=True)
        if ledger is None:
            return 0
        _check_fingerprint(ledger, self.fingerprint, self.ledger)
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
        for document, ann in zip(documents, texts, strict=True):
            stem = self._stem(document)
            atomic_write_text(self.folder / f"{stem}.txt", document.text)
            atomic_write_text(self.folder / f"{stem}.ann", ann)
        self.documents += len(documents)
        atomic_write_text(self.ledger, json.dumps({"documents": self.documents, "fingerprint": self.fingerprint}) + "\n")

    def finish(self) -> None:
        self.ledger.unlink(missing_ok=True)

    def close(self) -> None:
        pass


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
