"""A TensorFlow "tensor bundle" (the V2 checkpoint of ``tf.compat.v1.train.Saver``) read with numpy alone,
and finding the checkpoint in a directory.

Sources: TensorFlow ``tensorflow/core/protobuf/tensor_bundle.proto`` (``BundleHeaderProto``,
``BundleEntryProto``), ``tensorflow/core/util/tensor_bundle/tensor_bundle.cc`` (masked crc32c of each
tensor's bytes, raw little-endian shards) and the LevelDB-derived table format of
``tensorflow/core/lib/io/table_builder.cc`` / ``format.cc`` / ``block_builder.cc`` (the ``.index`` file).
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bioelectra.tf.crc32c import masked_crc32c
from bioelectra.tf.errors import TFCheckpointError

# ==================================================================================================
# protobuf wire format (just what BundleHeaderProto / BundleEntryProto need)
# ==================================================================================================


def _varint(buf: bytes, pos: int, where: str) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise TFCheckpointError(f"{where}: truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise TFCheckpointError(f"{where}: varint longer than 10 bytes")


def _proto_fields(buf: bytes, where: str) -> dict[int, list[Any]]:
    """Field number -> values (ints for varint/fixed, bytes for length-delimited), in order."""
    fields: dict[int, list[Any]] = {}
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos, where)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos, where)
        elif wire == 1:
            value = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos, where)
            value = bytes(buf[pos : pos + length])
            if len(value) != length:
                raise TFCheckpointError(f"{where}: truncated field {number}")
            pos += length
        elif wire == 5:
            value = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise TFCheckpointError(f"{where}: unsupported protobuf wire type {wire} (field {number})")
        fields.setdefault(number, []).append(value)
    return fields


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# ==================================================================================================
# the .index table (LevelDB format: data blocks, index block, 48-byte footer)
# ==================================================================================================

_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER_BYTES = 48
_BLOCK_TRAILER_BYTES = 5  # 1 byte compression type + 4 bytes masked crc32c


def _read_block(data: bytes, handle: bytes, path: Path) -> bytes:
    offset, pos = _varint(handle, 0, str(path))
    size, _ = _varint(handle, pos, str(path))
    end = offset + size
    if end + _BLOCK_TRAILER_BYTES > len(data):
        raise TFCheckpointError(
            f"{path}: block at offset {offset} (+{size} bytes) runs past the end of the file"
        )
    contents = data[offset:end]
    kind = data[end]
    stored = struct.unpack_from("<I", data, end + 1)[0]
    actual = masked_crc32c(data[offset : end + 1])
    if stored != actual:
        raise TFCheckpointError(
            f"{path}: block at offset {offset}: crc32c mismatch "
            f"(stored {stored:#010x}, computed {actual:#010x}); "
            "the index file is corrupted"
        )
    if kind != 0:
        raise TFCheckpointError(
            f"{path}: block at offset {offset} is compressed (type {kind}); expected none (0)"
        )
    return contents


def _block_entries(block: bytes, path: Path) -> Iterable[tuple[bytes, bytes]]:
    """(key, value) pairs of a block: prefix-compressed keys, restart array at the end."""
    where = str(path)
    if len(block) < 4:
        raise TFCheckpointError(f"{path}: block of {len(block)} bytes is too short")
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    limit = len(block) - 4 - 4 * num_restarts
    if limit < 0:
        raise TFCheckpointError(f"{path}: block claims {num_restarts} restart points in {len(block)} bytes")
    pos = 0
    key = b""
    while pos < limit:
        shared, pos = _varint(block, pos, where)
        unshared, pos = _varint(block, pos, where)
        value_len, pos = _varint(block, pos, where)
        if shared > len(key) or pos + unshared + value_len > limit:
            raise TFCheckpointError(f"{path}: malformed block entry at byte {pos}")
        key = key[:shared] + block[pos : pos + unshared]
        pos += unshared
        yield key, block[pos : pos + value_len]
        pos += value_len


def _table_entries(path: Path) -> Iterable[tuple[bytes, bytes]]:
    data = path.read_bytes()
    if len(data) < _FOOTER_BYTES:
        raise TFCheckpointError(
            f"{path}: {len(data)} bytes is too short for a checkpoint index (footer is 48)"
        )
    footer = data[-_FOOTER_BYTES:]
    magic = struct.unpack_from("<Q", footer, 40)[0]
    if magic != _TABLE_MAGIC:
        raise TFCheckpointError(f"{path}: not a TensorFlow checkpoint index (bad table magic {magic:#x})")
    _, pos = _varint(footer, 0, str(path))  # metaindex offset
    _, pos = _varint(footer, pos, str(path))  # metaindex size
    index_handle = footer[pos:40]
    for _, handle in _block_entries(_read_block(data, index_handle, path), path):
        yield from _block_entries(_read_block(data, handle, path), path)


# ==================================================================================================
# the bundle
# ==================================================================================================

#: TensorFlow ``DataType`` enum values (``tensorflow/core/framework/types.proto``) -> (name, numpy dtype).
_DTYPES: dict[int, tuple[str, str]] = {
    1: ("float32", "<f4"),
    2: ("float64", "<f8"),
    3: ("int32", "<i4"),
    4: ("uint8", "u1"),
    5: ("int16", "<i2"),
    6: ("int8", "i1"),
    9: ("int64", "<i8"),
    10: ("bool", "?"),
    14: ("bfloat16", "<u2"),  # read as raw 16-bit words, widened to float32
    17: ("uint16", "<u2"),
    19: ("float16", "<f2"),
    22: ("uint32", "<u4"),
    23: ("uint64", "<u8"),
}
_UNSUPPORTED_DTYPES = {7: "string", 8: "complex64", 18: "complex128", 20: "resource", 21: "variant"}


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a bundle (a decoded ``BundleEntryProto``).

    Attributes:
        name: variable name, e.g. ``electra/encoder/layer_0/attention/self/query/kernel``.
        dtype: numpy-style name (``float32``, ``bfloat16``, ...) or the unsupported TF type's name.
        shape: dimensions, ``()`` for scalars.
        shard_id: index of the ``.data-<shard>-of-<n>`` file.
        offset: byte offset in that shard.
        size: bytes in that shard.
        crc32c: masked CRC-32C of those bytes, as stored.
        partitioned: the variable was saved in slices (``BundleEntryProto.slices``): not supported.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    crc32c: int
    partitioned: bool
    dtype_code: int


def _decode_entry(name: str, value: bytes, where: str) -> TensorEntry:
    f = _proto_fields(value, where)
    code = f.get(1, [0])[-1]
    shape: list[int] = []
    for shape_bytes in f.get(2, []):
        shape_fields = _proto_fields(shape_bytes, where)
        if shape_fields.get(3, [0])[-1]:
            raise TFCheckpointError(f"{where}: tensor {name!r} has unknown rank")
        for dim in shape_fields.get(2, []):
            shape.append(_int64(_proto_fields(dim, where).get(1, [0])[-1]))
    if code in _DTYPES:
        dtype = _DTYPES[code][0]
    else:
        dtype = _UNSUPPORTED_DTYPES.get(code, f"DataType {code}")
    return TensorEntry(
        name=name,
        dtype=dtype,
        shape=tuple(shape),
        shard_id=f.get(3, [0])[-1],
        offset=_int64(f.get(4, [0])[-1]),
        size=_int64(f.get(5, [0])[-1]),
        crc32c=f.get(6, [0])[-1],
        partitioned=bool(f.get(7)),
        dtype_code=code,
    )


class TFCheckpointReader:
    """A TensorFlow V2 checkpoint (tensor bundle) read with numpy, memory-mapped, crc-verified.

    Args:
        prefix: the checkpoint prefix (``dir/model.ckpt-1000``, as in the ``checkpoint`` file), or the
            ``.index`` file itself.

    Attributes:
        prefix: the prefix as a path.
        entries: variable name -> ``TensorEntry``, in the index's (sorted) order.
        num_shards: number of ``.data-*-of-*`` files.

    Raises:
        FileNotFoundError: the ``.index`` file or a data shard is missing.
        TFCheckpointError: a malformed index (bad magic, bad block crc32c, compressed blocks, big-endian
            bundle).
    """

    def __init__(self, prefix: str | os.PathLike):
        prefix = Path(prefix)
        if prefix.suffix == ".index":
            prefix = prefix.with_suffix("")
        self.prefix = prefix
        self.index_path = Path(f"{prefix}.index")
        if not self.index_path.is_file():
            raise FileNotFoundError(f"checkpoint index not found: {self.index_path}")
        self.entries: dict[str, TensorEntry] = {}
        self.num_shards = 1
        self.version: int | None = None
        saw_header = False
        where = str(self.index_path)
        for key, value in _table_entries(self.index_path):
            if key == b"":
                header = _proto_fields(value, where)
                self.num_shards = header.get(1, [1])[-1]
                if header.get(2, [0])[-1] != 0:
                    raise TFCheckpointError(f"{where}: big-endian bundle; expected little-endian")
                if 3 in header:
                    self.version = _proto_fields(header[3][-1], where).get(1, [0])[-1]
                saw_header = True
                continue
            if key[:1] == b"\x00":
                continue  # a slice of a partitioned variable; its full entry says `partitioned`
            name = key.decode("utf-8")
            self.entries[name] = _decode_entry(name, value, where)
        if not saw_header:
            raise TFCheckpointError(
                f"{where}: no bundle header entry; is this a TensorFlow V2 checkpoint index?"
            )
        self._shards: dict[int, np.memmap] = {}

    def shard_path(self, shard_id: int) -> Path:
        """``<prefix>.data-<shard_id, 5 digits>-of-<num_shards, 5 digits>``."""
        return Path(f"{self.prefix}.data-{shard_id:05d}-of-{self.num_shards:05d}")

    def _shard(self, shard_id: int) -> np.ndarray:
        if shard_id not in self._shards:
            path = self.shard_path(shard_id)
            if not path.is_file():
                raise FileNotFoundError(f"checkpoint data shard not found: {path} (index {self.index_path})")
            if path.stat().st_size == 0:
                self._shards[shard_id] = np.zeros(0, dtype=np.uint8)
            else:
                self._shards[shard_id] = np.memmap(path, dtype=np.uint8, mode="r")
        return self._shards[shard_id]

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def variable_names(self) -> list[str]:
        """All variable names, sorted."""
        return sorted(self.entries)

    def read(self, name: str, *, verify: bool = True) -> np.ndarray:
        """The tensor ``name`` as numpy, exactly as TensorFlow wrote it.

        Returns:
            An array of the entry's shape. float32/float64/float16/int*/uint*/bool come back in their own
            dtype (read-only views of the memory-mapped shard, little-endian); bfloat16 comes back widened
            to float32 (exact: bfloat16 is the upper half of a float32).

        Raises:
            KeyError: no such variable.
            TFCheckpointError: partitioned variable, unsupported dtype (string, complex, ...), size that
                does not match dtype x shape, or a crc32c mismatch (corrupted shard) when ``verify``.
        """
        entry = self.entries[name]
        if entry.partitioned:
            raise TFCheckpointError(
                f"{self.index_path}: variable {name!r} was saved partitioned (in slices); partitioned "
                "variables are not supported"
            )
        if entry.dtype_code not in _DTYPES:
            raise TFCheckpointError(
                f"{self.index_path}: variable {name!r} has dtype {entry.dtype}; supported: "
                f"{', '.join(n for n, _ in _DTYPES.values())}"
            )
        np_dtype = np.dtype(_DTYPES[entry.dtype_code][1])
        count = int(np.prod(entry.shape, dtype=np.int64))
        if entry.size != count * np_dtype.itemsize:
            raise TFCheckpointError(
                f"{self.index_path}: variable {name!r}: {entry.size} bytes stored, "
                f"expected {count * np_dtype.itemsize} "
                f"for {entry.dtype} {list(entry.shape)}"
            )
        shard = self._shard(entry.shard_id)
        if entry.offset + entry.size > shard.size:
            raise TFCheckpointError(
                f"{self.shard_path(entry.shard_id)}: variable {name!r} at bytes "
                f"{entry.offset}..{entry.offset + entry.size} "
                f"runs past the end of the file ({shard.size} bytes); the shard is truncated"
            )
        raw = shard[entry.offset : entry.offset + entry.size]
        if verify:
            actual = masked_crc32c(raw)
            if actual != entry.crc32c:
                raise TFCheckpointError(
                    f"{self.shard_path(entry.shard_id)}: variable {name!r}: crc32c mismatch (stored "
                    f"{entry.crc32c:#010x}, computed {actual:#010x}); the data shard is corrupted"
                )
        array = raw.view(np_dtype).reshape(entry.shape)
        if entry.dtype == "bfloat16":
            array = (array.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return array


# ==================================================================================================
# finding the checkpoint in a directory
# ==================================================================================================

_STEP_RE = re.compile(r"-(\d+)$")


def _has_data_shard(index_file: Path) -> bool:
    prefix = str(index_file)[: -len(".index")]
    return any(Path(prefix).parent.glob(f"{Path(prefix).name}.data-00000-of-*"))


def is_tf_checkpoint_dir(path: str | os.PathLike) -> bool:
    """True when ``path`` is a directory holding a TF checkpoint (``*.index`` with its first data shard)."""
    path = Path(path)
    if not path.is_dir():
        return False
    return any(_has_data_shard(index) for index in path.glob("*.index"))


def find_checkpoint(tf_dir: str | os.PathLike) -> Path:
    """The checkpoint prefix to convert in ``tf_dir``.

    The ``checkpoint`` file's ``model_checkpoint_path`` wins (only its base name is used: TPU-trained
    releases hold ``gs://`` paths); without one, the ``model.ckpt-N.index`` with the largest N.
    ``tf_dir`` may also be a prefix (``dir/model.ckpt-1000``) or an ``.index`` file.

    Raises:
        FileNotFoundError: no checkpoint there, or the one the ``checkpoint`` file names is missing.
        TFCheckpointError: several candidates without step numbers.
    """
    tf_dir = Path(tf_dir)
    if not tf_dir.is_dir():
        candidate = tf_dir.with_suffix("") if tf_dir.suffix == ".index" else tf_dir
        if Path(f"{candidate}.index").is_file():
            return candidate
        raise FileNotFoundError(f"{tf_dir}: not a directory and no {tf_dir}.index next to it")
    indexes = sorted(p for p in tf_dir.glob("*.index") if _has_data_shard(p))
    state = tf_dir / "checkpoint"
    if state.is_file():
        match = re.search(r'^model_checkpoint_path:\s*"(.*)"\s*$', state.read_text(encoding="utf-8"), re.M)
        if match:
            name = re.split(r"[/\\]", match.group(1))[-1]
            if Path(tf_dir / f"{name}.index").is_file():
                return tf_dir / name
            raise FileNotFoundError(
                f"{state}: names checkpoint {match.group(1)!r} but "
                f"{tf_dir / (name + '.index')} does not exist "
                f"(present: {', '.join(p.name for p in indexes) or 'none'})"
            )
    if not indexes:
        raise FileNotFoundError(
            f"{tf_dir}: no TensorFlow checkpoint (*.index with its .data-00000-of-* shard)"
        )
    steps = {p: _STEP_RE.search(p.name[: -len(".index")]) for p in indexes}
    if len(indexes) > 1 and not all(steps.values()):
        raise TFCheckpointError(
            f"{tf_dir}: several checkpoints without step numbers ({', '.join(p.name for p in indexes)}); "
            "pass the prefix of the one to convert"
        )
    best = max(indexes, key=lambda p: int(steps[p].group(1)) if steps[p] else -1)
    return best.with_suffix("")
