"""Reading and writing files: plain or gzip-compressed text read with errors that name the file (every
reader uses it: NER and RE TSV, the pre-training corpus readers), and the atomic writes (temporary name,
then rename) of every writer of a file or a folder.

- A UTF-8 byte-order mark at the start is dropped (``utf-8-sig``): Windows editors write one, and left in
  place it turns a header line into data or ``-DOCSTART-`` into a word.
- A ``.gz`` file that is truncated, corrupted, fails its CRC or is not gzip at all raises the caller's error
  type with the file and what is wrong, never ``EOFError`` (which click shows as a bare ``Aborted.``),
  ``zlib.error`` or ``gzip.BadGzipFile`` without a name.
- Text that is not UTF-8 names the file, the line and the byte offset.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import os
import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path

BOM = codecs.BOM_UTF8.decode("utf-8")  # "\ufeff"


class TextFileError(ValueError):
    """A file that cannot be read as text; the message names the file and what is wrong."""


def is_gzip_name(path: str | os.PathLike) -> bool:
    return str(path).endswith(".gz")


def gzip_problem(path: Path, exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return f"{path}: truncated gzip file (the compressed stream ends early); download or copy it again"
    if isinstance(exc, gzip.BadGzipFile):
        text = str(exc)
        if "Not a gzipped file" in text:
            return f"{path}: not a gzip file ({text}); a .gz name needs gzip-compressed content"
        return f"{path}: corrupted gzip file ({text})"
    if isinstance(exc, zlib.error):
        return f"{path}: corrupted gzip data ({exc})"
    return f"{path}: cannot read ({type(exc).__name__}: {exc})"


#: What decompressing a damaged gzip file raises.
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def read_bytes(path: str | os.PathLike, *, error: type[Exception] = TextFileError) -> bytes:
    """The file's bytes, gunzipped when its name ends in ``.gz``.

    Raises:
        error: a damaged or non-gzip ``.gz`` file (named).
    """
    path = Path(path)
    data = path.read_bytes()
    if is_gzip_name(path):
        try:
            data = gzip.decompress(data)
        except GZIP_ERRORS as exc:
            raise error(gzip_problem(path, exc)) from None
    return data


def decode_utf8(data: bytes, path: str | os.PathLike, *, error: type[Exception] = TextFileError) -> str:
    """``data`` as UTF-8 text without a leading byte-order mark.

    Raises:
        error: bytes that are not UTF-8 (file, line and byte offset named).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            f"{path}:{line}: expected UTF-8 text, got undecodable bytes at byte {exc.start} ({exc.reason})"
        ) from None
    return text[1:] if text.startswith(BOM) else text


def read_text(path: str | os.PathLike, *, error: type[Exception] = TextFileError) -> str:
    """A whole text file (``.gz`` decompressed, BOM dropped).

    Raises:
        error: damaged gzip, or not UTF-8 (see :func:`read_bytes`, :func:`decode_utf8`).
    """
    return decode_utf8(read_bytes(path, error=error), path, error=error)


def iter_lines(path: str | os.PathLike, *, error: type[Exception] = TextFileError) -> Iterator[str]:
    """The lines of a text file, streamed (memory stays flat), ``.gz`` decompressed on the fly, BOM
    dropped, universal newlines.

    Raises:
        error: damaged gzip, found while streaming (named).
        UnicodeDecodeError: bytes that are not UTF-8 (the caller knows how to name the line).
    """
    path = Path(path)
    raw = gzip.open(path, "rb") if is_gzip_name(path) else open(path, "rb")
    try:
        with io.TextIOWrapper(raw, encoding="utf-8-sig", errors="strict") as handle:
            yield from handle
    except GZIP_ERRORS as exc:
        raise error(gzip_problem(path, exc)) from None


def open_binary(path: str | os.PathLike):
    """A binary handle on the file's (decompressed) content, for parsers that read bytes (XML)."""
    path = Path(path)
    return gzip.open(path, "rb") if is_gzip_name(path) else open(path, "rb")


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """Open ``path`` for writing through a temporary name in the same folder, renamed onto ``path`` when the
    block ends without an error (removed when it raises): a reader never sees half a file, and a kill leaves
    the old file (or none), never a truncated one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_open`)."""
    with atomic_open(path) as handle:
        handle.write(text)


def replace_dir(tmp: str | os.PathLike, target: str | os.PathLike) -> None:
    """Put the finished folder ``tmp`` in place of ``target`` (which may exist): the old folder is renamed
    aside first and removed after, so ``target`` is at every moment either the old or the new one, whole."""
    tmp, target = Path(tmp), Path(target)
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, target)
