"""Original TensorFlow ELECTRA / Bio-ELECTRA checkpoints: reading without TensorFlow, and conversion.

Three layers, each usable alone:

1. ``crc32c`` / ``masked_crc32c``: CRC-32C (Castagnoli) in numpy, used to verify every tensor read.
2. ``TFCheckpointReader``: a TensorFlow "tensor bundle" (the V2 checkpoint of ``tf.compat.v1.train.Saver``)
   read with numpy alone. Sources: TensorFlow ``tensorflow/core/protobuf/tensor_bundle.proto``
   (``BundleHeaderProto``, ``BundleEntryProto``), ``tensorflow/core/util/tensor_bundle/tensor_bundle.cc``
   (masked crc32c of each tensor's bytes, raw little-endian shards) and the LevelDB-derived table format of
   ``tensorflow/core/lib/io/table_builder.cc`` / ``format.cc`` / ``block_builder.cc`` (the ``.index`` file).
3. ``convert_tf_checkpoint``: original variable names (google-research/electra ``model/modeling.py``,
   ``run_pretraining.py``, ``model/optimization.py``) mapped onto ``ElectraForPreTraining`` /
   ``ElectraForMaskedLM``, written with tokenizer files built from ``vocab.txt``. Any variable that is
   neither mapped nor known optimizer/bookkeeping state is an error, as is any parameter left unfilled;
   output is written under a temporary name and renamed, so no partial conversion is ever left behind.

This is a library: it raises (``TFCheckpointError``, a ``ValueError``; ``FileNotFoundError``) and never
prints or exits.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import struct
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bioelectra.hparams import ORIGINAL_PRETRAINING_HPARAMS

logger = logging.getLogger(__name__)


class TFCheckpointError(ValueError):
    """A checkpoint that cannot be read or converted faithfully (the message names the file and problem)."""


# ==================================================================================================
# CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), vectorised with numpy
# ==================================================================================================
#
# A CRC register is updated linearly over GF(2): processing a block B from register r gives
# Z_|B|(r) xor crc0(B), where Z_n is the linear map "append n zero bytes" and crc0(B) the register after
# B from 0. So a buffer is cut into K equal lanes processed in lock-step (one numpy operation handles one
# 32-bit word of every lane), and the lane registers are combined pairwise with Z_n. Each 4-byte step is
# r = Z_4(r xor word), done with two 65536-entry tables (low and high half of the register).

_POLY = 0x82F63B78
_MASK_DELTA = 0xA282EAD8
_PY_LOOP_BYTES = 512  # below this a plain table loop is faster than numpy's per-call overhead
_MAX_LANES = 65536  # measured: 65536 lanes ~15-25% faster than 16384 on a base checkpoint


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_TABLE = _byte_table()
_TABLE_LIST = [int(v) for v in _TABLE]


def _op_byte_tables(columns: np.ndarray) -> np.ndarray:
    """A linear map on 32-bit values, given by the images of its 32 unit bits, as 4 byte tables (4, 256)."""
    idx = np.arange(256, dtype=np.uint32)
    tables = np.zeros((4, 256), dtype=np.uint32)
    for k in range(4):
        for j in range(8):
            tables[k] ^= np.where(
                (idx >> np.uint32(j)) & np.uint32(1), columns[8 * k + j], np.uint32(0)
            ).astype(np.uint32)
    return tables


def _op_apply(tables: np.ndarray, x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint32, copy=False)
    return (
        tables[0][x & 0xFF]
        ^ tables[1][(x >> np.uint32(8)) & 0xFF]
        ^ tables[2][(x >> np.uint32(16)) & 0xFF]
        ^ tables[3][x >> np.uint32(24)]
    )


_UNIT_BITS = (np.uint32(1) << np.arange(32, dtype=np.uint32)).astype(np.uint32)
# Z_1: one zero byte. r -> TABLE[r & 0xff] ^ (r >> 8)
_ZERO_OPS: list[np.ndarray] = [_op_byte_tables(_TABLE[_UNIT_BITS & 0xFF] ^ (_UNIT_BITS >> np.uint32(8)))]


def _zeros_op(log2_bytes: int) -> np.ndarray:
    """Byte tables of Z_{2**log2_bytes} (append 2**log2_bytes zero bytes), built by squaring and cached."""
    while len(_ZERO_OPS) <= log2_bytes:
        last = _ZERO_OPS[-1]
        _ZERO_OPS.append(_op_byte_tables(_op_apply(last, _op_apply(last, _UNIT_BITS))))
    return _ZERO_OPS[log2_bytes]


_STEP_TABLES: tuple[np.ndarray, np.ndarray] | None = None


def _step_tables() -> tuple[np.ndarray, np.ndarray]:
    global _STEP_TABLES
    if _STEP_TABLES is None:
        z4 = _zeros_op(2)
        low = np.arange(65536, dtype=np.uint32)
        _STEP_TABLES = (_op_apply(z4, low), _op_apply(z4, low << np.uint32(16)))
    return _STEP_TABLES


def _crc_update(register: int, data: np.ndarray) -> int:
    """Register after ``data`` (uint8, 1-D), CRC-32C without the initial/final inversion."""
    n = data.size
    if n < _PY_LOOP_BYTES:
        table = _TABLE_LIST
        for byte in data.tobytes():
            register = table[(register ^ byte) & 0xFF] ^ (register >> 8)
        return register
    # lane length: a power of two (combine maps are cached), >= 64 bytes, at most _MAX_LANES lanes
    log2_lane = max(6, (max(1, -(-n // _MAX_LANES)) - 1).bit_length())
    lane_bytes = 1 << log2_lane
    lanes = n // lane_bytes
    if lanes < 2:
        log2_lane -= 1
        lane_bytes >>= 1
        lanes = n // lane_bytes
    head = lanes * lane_bytes
    words = data[:head].view(np.dtype("<u4")).reshape(lanes, lane_bytes // 4)  # (lanes, words_per_lane)
    low_table, high_table = _step_tables()
    regs = np.zeros(lanes, dtype=np.uint32)
    regs[0] = register
    lo = np.empty(lanes, dtype=np.uint32)
    hi = np.empty(lanes, dtype=np.uint32)
    block = 256  # words per lane transposed at a time, so that each step reads a contiguous row
    for start in range(0, words.shape[1], block):
        rows = np.ascontiguousarray(words[:, start : start + block].T)  # (block, lanes)
        for row in rows:
            np.bitwise_xor(regs, row, out=regs)
            np.bitwise_and(regs, 0xFFFF, out=lo)
            np.right_shift(regs, 16, out=hi)
            np.take(low_table, lo, out=regs)
            np.take(high_table, hi, out=lo)
            np.bitwise_xor(regs, lo, out=regs)
    # combine lanes pairwise: reg(A || B) = Z_|B|(reg(A)) ^ reg0(B); odd leftovers kept for the end
    pending: list[tuple[int, int]] = []  # (register, log2 length), in reverse sequence order
    level = log2_lane
    while regs.size > 1:
        if regs.size % 2:
            pending.append((int(regs[-1]), level))
            regs = regs[:-1]
        regs = _op_apply(_zeros_op(level), regs[0::2]) ^ regs[1::2]
        level += 1
    register = int(regs[0])
    for value, log2_len in reversed(pending):
        register = int(_op_apply(_zeros_op(log2_len), np.array([register], dtype=np.uint32))[0]) ^ value
    return _crc_update(register, data[head:])


def _as_uint8(data: Any) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return (
            data.reshape(-1).view(np.uint8)
            if data.flags.c_contiguous
            else np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        )
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)


def crc32c(data: Any, crc: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data`` (bytes-like or a contiguous numpy array), continuing from ``crc``.

    ``crc32c(b"123456789") == 0xE3069283`` (the standard check value). Runs at numpy speed: a buffer is
    split into up to 65536 lanes processed in lock-step, then combined (see the comment above).
    """
    return _crc_update((crc ^ 0xFFFFFFFF) & 0xFFFFFFFF, _as_uint8(data)) ^ 0xFFFFFFFF


def mask_crc32c(crc: int) -> int:
    """TensorFlow's / LevelDB's masked CRC (``crc32c::Mask`` in ``tensorflow/core/lib/hash/crc32c.h``)."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data: Any) -> int:
    """``mask_crc32c(crc32c(data))``: the value stored in ``BundleEntryProto.crc32c`` and block trailers."""
    return mask_crc32c(crc32c(data))


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


# ==================================================================================================
# name mapping: original ELECTRA -> transformers' Electra
# ==================================================================================================

#: Variables that are optimizer state or bookkeeping, never model weights. Suffixes are the slots of the
#: original AdamWeightDecayOptimizer (``model/optimization.py``: ``adam_m``, ``adam_v``) and of TF's own
#: optimizers (``Adam``, ``Adam_1``, ``Momentum``, ``lamb_m``/``lamb_v`` of LAMB variants).
OPTIMIZER_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1", "/Momentum", "/lamb_m", "/lamb_v")
BOOKKEEPING_VARIABLES = frozenset(
    {"global_step", "beta1_power", "beta2_power", "current_loss_scale", "good_steps", "loss_scale"}
)

_LAYER_RE = re.compile(r"^(electra|generator)/encoder/layer_(\d+)/")

#: Within one encoder layer: original sub-path -> transformers sub-module.
_LAYER_PARTS = {
    "attention/self/query": "attention.self.query",
    "attention/self/key": "attention.self.key",
    "attention/self/value": "attention.self.value",
    "attention/output/dense": "attention.output.dense",
    "attention/output/LayerNorm": "attention.output.LayerNorm",
    "intermediate/dense": "intermediate.dense",
    "output/dense": "output.dense",
    "output/LayerNorm": "output.LayerNorm",
}


def _is_ignored(name: str) -> bool:
    return name in BOOKKEEPING_VARIABLES or name.endswith(OPTIMIZER_SLOT_SUFFIXES)


@dataclass(frozen=True)
class Source:
    """Where one transformers parameter comes from: TF variable ``name``, transposed or not."""

    name: str
    transpose: bool


def _linear(mapping: dict[str, Source], tf_scope: str, hf_module: str) -> None:
    mapping[f"{hf_module}.weight"] = Source(f"{tf_scope}/kernel", True)  # TF (in, out) -> torch (out, in)
    mapping[f"{hf_module}.bias"] = Source(f"{tf_scope}/bias", False)


def _layer_norm(mapping: dict[str, Source], tf_scope: str, hf_module: str) -> None:
    mapping[f"{hf_module}.weight"] = Source(f"{tf_scope}/gamma", False)
    mapping[f"{hf_module}.bias"] = Source(f"{tf_scope}/beta", False)


def _encoder_mapping(
    *, embeddings_scope: str, encoder_scope: str, num_layers: int, project: bool
) -> dict[str, Source]:
    """``electra.*`` parameters of a transformers Electra model from the original scopes."""
    m: dict[str, Source] = {}
    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        m[f"electra.embeddings.{table}.weight"] = Source(f"{embeddings_scope}/{table}", False)
    _layer_norm(m, f"{embeddings_scope}/LayerNorm", "electra.embeddings.LayerNorm")
    if project:
        _linear(m, f"{encoder_scope}/embeddings_project", "electra.embeddings_project")
    for i in range(num_layers):
        for tf_part, hf_part in _LAYER_PARTS.items():
            tf_scope = f"{encoder_scope}/encoder/layer_{i}/{tf_part}"
            hf_module = f"electra.encoder.layer.{i}.{hf_part}"
            (_layer_norm if tf_part.endswith("LayerNorm") else _linear)(m, tf_scope, hf_module)
    return m


def discriminator_mapping(num_layers: int, *, project: bool) -> dict[str, Source]:
    """``ElectraForPreTraining`` parameter -> original variable.

    ``electra/embeddings/*`` (word, position, token type, LayerNorm gamma/beta),
    ``electra/embeddings_project``
    (when embedding size != hidden size), ``electra/encoder/layer_N/...``, and the replaced-token-detection
    head ``discriminator_predictions/dense`` (H -> H) and ``dense_1`` (H -> 1, transformers'
    ``dense_prediction``). Kernels are transposed.
    """
    m = _encoder_mapping(
        embeddings_scope="electra/embeddings", encoder_scope="electra", num_layers=num_layers, project=project
    )
    _linear(m, "discriminator_predictions/dense", "discriminator_predictions.dense")
    _linear(m, "discriminator_predictions/dense_1", "discriminator_predictions.dense_prediction")
    return m


def generator_mapping(
    num_layers: int, *, project: bool, untied_embeddings: bool, shared_encoder: bool
) -> dict[str, Source]:
    """``ElectraForMaskedLM`` parameter -> original variable.

    The original generator reads the discriminator's ``electra/embeddings/*`` unless
    ``untied_generator_embeddings`` (then ``generator/embeddings/*``); ``generator/embeddings_project`` when
    its hidden size differs from the embedding size; ``generator/encoder/layer_N/...`` (or the
    discriminator's encoder when ``untied_generator`` was false); the head ``generator_predictions/dense``
    (H_gen -> E), ``generator_predictions/LayerNorm`` and ``generator_predictions/output_bias``
    (transformers' ``generator_lm_head.bias``; its weight is tied to the word embeddings).
    """
    scope = "electra" if shared_encoder else "generator"
    m = _encoder_mapping(
        embeddings_scope="generator/embeddings" if untied_embeddings else "electra/embeddings",
        encoder_scope=scope,
        num_layers=num_layers,
        project=project,
    )
    _linear(m, "generator_predictions/dense", "generator_predictions.dense")
    _layer_norm(m, "generator_predictions/LayerNorm", "generator_predictions.LayerNorm")
    m["generator_lm_head.bias"] = Source("generator_predictions/output_bias", False)
    return m


# ==================================================================================================
# sizes, settings and conversion
# ==================================================================================================

#: Keys of the original ``--hparams``: the one definition, :data:`bioelectra.hparams.ORIGINAL_PRETRAINING_HPARAMS`.
ORIGINAL_HPARAMS = frozenset(ORIGINAL_PRETRAINING_HPARAMS)
#: Keys accepted in a ``config.json`` next to the checkpoint: Bio-ELECTRA's format (its README) and the keys
#: of a transformers ``ElectraConfig`` (5.x, plus 4.x's ``position_embedding_type`` / ``torch_dtype``).
CONFIG_KEYS = frozenset(
    """model_type model_size vocab_size embedding_size hidden_size num_hidden_layers num_attention_heads
    intermediate_size generator_size hidden_act hidden_dropout_prob attention_probs_dropout_prob
    max_position_embeddings type_vocab_size initializer_range layer_norm_eps do_lower_case architectures
    pad_token_id summary_type summary_use_proj summary_activation summary_last_dropout position_embedding_type
    use_cache classifier_dropout transformers_version torch_dtype dtype _name_or_path add_cross_attention
    bos_token_id eos_token_id chunk_size_feed_forward id2label label2id is_decoder is_encoder_decoder
    output_attentions output_hidden_states problem_type return_dict tie_word_embeddings""".split()
)
#: Sizes whose given value must equal what the tensors say.
_SHAPE_KEYS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)
_SIZES = {"small": 256, "base": 768, "large": 1024}  # hidden size of the original model sizes

EXPORTS = ("discriminator", "generator", "both")


@dataclass
class ConversionReport:
    """What a conversion did (also written as ``conversion_report.json``).

    Attributes:
        checkpoint: the prefix converted (``dir/model.ckpt-N``).
        step: ``global_step`` of the checkpoint (else the N of the file name; None if neither).
        export: ``discriminator``, ``generator`` or ``both``.
        outputs: export -> directory written (a ``save_pretrained`` directory with tokenizer files).
        mapped: export -> number of TF variables mapped onto parameters.
        ignored_optimizer_slots: number of optimizer slot variables left out (``*/adam_m``, ...).
        ignored_bookkeeping: bookkeeping variables left out (``global_step``, ...).
        unused_model_variables: model variables of the part not exported (e.g. the generator's when only
            the discriminator is exported).
        dtypes: dtype -> number of variables read.
        discriminator / generator: the sizes used (hidden, layers, heads, embedding, vocabulary, ...).
        do_lower_case: tokenizer casing and ``do_lower_case_source`` where it came from.
        vocab_note: set when ``vocab.txt`` has fewer entries than the embedding matrix.
        seconds: wall time of the conversion.
        bytes_read: bytes of tensor data read and crc-verified.
    """

    checkpoint: str
    step: int | None
    export: str
    outputs: dict[str, str] = field(default_factory=dict)
    mapped: dict[str, int] = field(default_factory=dict)
    ignored_optimizer_slots: int = 0
    ignored_bookkeeping: list[str] = field(default_factory=list)
    unused_model_variables: list[str] = field(default_factory=list)
    dtypes: dict[str, int] = field(default_factory=dict)
    discriminator: dict[str, Any] = field(default_factory=dict)
    generator: dict[str, Any] = field(default_factory=dict)
    do_lower_case: bool = False
    do_lower_case_source: str = ""
    vocab_note: str | None = None
    seconds: float = 0.0
    bytes_read: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _load_json_arg(value: str | os.PathLike | Mapping | None, what: str) -> tuple[dict, str]:
    if value is None:
        return {}, ""
    if isinstance(value, Mapping):
        return dict(value), what
    text = str(value)
    if text.lstrip().startswith("{"):
        source = f"{what} (inline JSON)"
    else:
        path = Path(text)
        if not path.is_file():
            raise FileNotFoundError(f"{what} file not found: {path}")
        source, text = str(path), path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TFCheckpointError(f"{source}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise TFCheckpointError(f"{source}: expected a JSON object, got {type(data).__name__}")
    return data, source


def _infer_lower_case(vocab: list[str]) -> bool:
    """Cased when >= 1% of the word pieces hold capitals (``[unused]``/special tokens aside)."""
    pieces = [t for t in vocab if not (t.startswith("[") and t.endswith("]"))]
    cased = sum(1 for t in pieces if any(c.isupper() for c in t))
    return cased < max(1, 0.01 * len(pieces))


def _layers(names: Iterable[str], scope: str, where: str) -> int:
    found = sorted({int(m.group(2)) for n in names if (m := _LAYER_RE.match(n)) and m.group(1) == scope})
    if found and found != list(range(len(found))):
        raise TFCheckpointError(f"{where}: {scope} encoder layers are not numbered 0..N-1: {found}")
    return len(found)


def _shape(reader: TFCheckpointReader, name: str) -> tuple[int, ...]:
    if name not in reader:
        raise TFCheckpointError(f"{reader.index_path}: expected variable {name!r} is missing")
    return reader.entries[name].shape


@dataclass
class _Plan:
    disc_config: Any
    gen_config: Any | None
    disc_map: dict[str, Source]
    gen_map: dict[str, Source] | None


def _plan(
    reader: TFCheckpointReader,
    *,
    config: dict,
    config_src: str,
    hparams: dict,
    hparams_src: str,
    model_size: str | None,
    num_attention_heads: int | None,
    vocab_size_tokenizer: int,
    pad_token_id: int,
) -> _Plan:
    """Sizes from the tensors, checked against ``config.json`` / ``--hparams``; both name mappings."""
    from transformers import ElectraConfig

    where = str(reader.index_path)
    names = reader.variable_names()
    overrides = dict(hparams.get("model_hparam_overrides") or {})

    vocab, emb = _shape(reader, "electra/embeddings/word_embeddings")
    max_pos, _ = _shape(reader, "electra/embeddings/position_embeddings")
    type_vocab, _ = _shape(reader, "electra/embeddings/token_type_embeddings")
    layers = _layers(names, "electra", where)
    if layers == 0:
        raise TFCheckpointError(f"{where}: no electra/encoder/layer_N variables; not an ELECTRA checkpoint?")
    hidden = _shape(reader, "electra/encoder/layer_0/attention/self/query/kernel")[1]
    ffn = _shape(reader, "electra/encoder/layer_0/intermediate/dense/kernel")[1]
    sizes = {
        "vocab_size": vocab,
        "embedding_size": emb,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": ffn,
        "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab,
    }

    # given sizes must agree with the tensors
    for source, values in ((config_src, config), (hparams_src, {**hparams, **overrides})):
        for key in _SHAPE_KEYS:
            if values.get(key) is not None and int(values[key]) != sizes[key]:
                raise TFCheckpointError(
                    f"{source}: {key} = {values[key]}, but the checkpoint's tensors say {sizes[key]}"
                )
    # a model size must agree with the hidden size (the original sizes, or the hparams' own overrides)
    if model_size is not None:
        size_name, size_src, size_hidden = model_size, "--model-size", None
    elif config.get("model_size") is not None:
        size_name, size_src, size_hidden = config["model_size"], config_src, None
    elif hparams.get("model_size") is not None:
        size_name, size_src, size_hidden = hparams["model_size"], hparams_src, overrides.get("hidden_size")
    else:
        size_name = size_src = size_hidden = None
    if size_name is not None:
        if size_name not in _SIZES:
            raise TFCheckpointError(f"{size_src}: model size {size_name!r}; expected one of {sorted(_SIZES)}")
        expected_hidden = int(size_hidden) if size_hidden is not None else _SIZES[size_name]
        if expected_hidden != hidden:
            raise TFCheckpointError(
                f"{size_src}: model size {size_name!r} has hidden size {expected_hidden}, "
                f"but the checkpoint's "
                f"tensors say {hidden}"
            )
    # heads: flag > config.json > hparams overrides > the original default max(1, H // 64)
    # (google-research/electra util/training_utils.py get_bert_config)
    if num_attention_heads is not None:
        heads, heads_src = num_attention_heads, "--num-attention-heads"
    elif config.get("num_attention_heads") is not None:
        heads, heads_src = int(config["num_attention_heads"]), config_src
    elif overrides.get("num_attention_heads") is not None:
        heads, heads_src = int(overrides["num_attention_heads"]), hparams_src
    else:
        heads, heads_src = max(1, hidden // 64), "max(1, hidden_size // 64) (original default)"
    if heads < 1 or hidden % heads:
        raise TFCheckpointError(f"{heads_src}: {heads} attention heads do not divide hidden size {hidden}")
    if vocab_size_tokenizer > vocab:
        raise TFCheckpointError(
            f"vocab.txt has {vocab_size_tokenizer} entries but the word embeddings have {vocab} rows: "
            "the vocabulary does not belong to this checkpoint"
        )
    common = {
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab,
        "hidden_act": config.get("hidden_act", overrides.get("hidden_act", "gelu")),
        "hidden_dropout_prob": float(
            config.get("hidden_dropout_prob", overrides.get("hidden_dropout_prob", 0.1))
        ),
        "attention_probs_dropout_prob": float(
            config.get("attention_probs_dropout_prob", overrides.get("attention_probs_dropout_prob", 0.1))
        ),
        "initializer_range": float(config.get("initializer_range", overrides.get("initializer_range", 0.02))),
        "layer_norm_eps": float(config.get("layer_norm_eps", 1e-12)),  # TF contrib layer_norm's epsilon
        "pad_token_id": pad_token_id,
    }
    disc_config = ElectraConfig(
        embedding_size=emb,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn,
        **common,
    )
    disc_map = discriminator_mapping(layers, project="electra/embeddings_project/kernel" in reader)

    gen_config = gen_map = None
    gen_layers = _layers(names, "generator", where)
    has_head = "generator_predictions/output_bias" in reader
    if has_head:
        shared_encoder = (
            gen_layers == 0
        )  # untied_generator = False: generator and discriminator share weights
        untied = "generator/embeddings/word_embeddings" in reader
        scope = "electra" if shared_encoder else "generator"
        g_layers = layers if shared_encoder else gen_layers
        g_hidden = _shape(reader, f"{scope}/encoder/layer_0/attention/self/query/kernel")[1]
        g_ffn = _shape(reader, f"{scope}/encoder/layer_0/intermediate/dense/kernel")[1]
        g_emb = _shape(reader, "generator/embeddings/word_embeddings")[1] if untied else emb
        gen_size = config.get("generator_size", hparams.get("generator_hidden_size"))
        if gen_size is not None and not shared_encoder and round(hidden * float(gen_size)) != g_hidden:
            raise TFCheckpointError(
                f"{config_src if 'generator_size' in config else hparams_src}: "
                f"generator size {gen_size} x hidden "
                f"{hidden} != the generator's hidden size {g_hidden} in the tensors"
            )
        gen_layers_frac = hparams.get("generator_layers")
        if (
            gen_layers_frac is not None
            and not shared_encoder
            and round(layers * float(gen_layers_frac)) != g_layers
        ):
            raise TFCheckpointError(
                f"{hparams_src}: generator_layers {gen_layers_frac} x {layers} layers != the generator's "
                f"{g_layers} layers in the tensors"
            )
        # original get_generator_config: heads = max(1, generator hidden // 64)
        g_heads = heads if shared_encoder else max(1, g_hidden // 64)
        gen_config = ElectraConfig(
            embedding_size=g_emb,
            hidden_size=g_hidden,
            num_hidden_layers=g_layers,
            num_attention_heads=g_heads,
            intermediate_size=g_ffn,
            tie_word_embeddings=True,
            **common,
        )
        gen_map = generator_mapping(
            g_layers,
            project=f"{scope}/embeddings_project/kernel" in reader,
            untied_embeddings=untied,
            shared_encoder=shared_encoder,
        )
    elif gen_layers:
        raise TFCheckpointError(
            f"{where}: generator/encoder variables but no generator_predictions/output_bias"
        )
    return _Plan(disc_config, gen_config, disc_map, gen_map)


def _expected_parameters(model_cls, config) -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes of ``model_cls(config)`` (built on the meta device: no memory, no init)."""
    import torch

    with torch.device("meta"):
        model = model_cls(config)
    tied = set(getattr(model, "_tied_weights_keys", None) or {}) if config.tie_word_embeddings else set()
    return {k: tuple(v.shape) for k, v in model.state_dict().items() if k not in tied}


def build_state_dict(
    tensors: Mapping[str, np.ndarray],
    mapping: Mapping[str, Source],
    expected: Mapping[str, tuple[int, ...]],
    *,
    where: str,
) -> dict[str, Any]:
    """Torch state dict (float32, contiguous) from original tensors through ``mapping``.

    Args:
        tensors: TF variable name -> array (as read; ``(in, out)`` kernels).
        mapping: transformers parameter -> ``Source``.
        expected: transformers parameter -> shape, every parameter the model has.
        where: file named in errors.

    Raises:
        TFCheckpointError: a parameter without a source, a source variable missing from ``tensors``, or a
            shape that differs from the model's after transposition.
    """
    import torch

    unfilled = sorted(set(expected) - set(mapping))
    if unfilled:
        raise TFCheckpointError(
            f"{where}: model parameters with no checkpoint variable: {', '.join(unfilled)}"
        )
    extra = sorted(set(mapping) - set(expected))
    if extra:
        raise TFCheckpointError(
            f"{where}: mapping targets parameters the model does not have: {', '.join(extra)}"
        )
    missing = sorted({src.name for src in mapping.values()} - set(tensors))
    if missing:
        raise TFCheckpointError(f"{where}: variables expected by the model are missing: {', '.join(missing)}")
    state: dict[str, Any] = {}
    for hf_name, src in mapping.items():
        array = np.asarray(tensors[src.name])
        if src.transpose:
            if array.ndim != 2:
                raise TFCheckpointError(
                    f"{where}: {src.name}: expected a 2-D kernel, got shape {list(array.shape)}"
                )
            array = array.T
        if tuple(array.shape) != tuple(expected[hf_name]):
            raise TFCheckpointError(
                f"{where}: {src.name} has shape {list(array.shape)}"
                f"{' (transposed)' if src.transpose else ''}, "
                f"but {hf_name} expects {list(expected[hf_name])}"
            )
        state[hf_name] = torch.from_numpy(np.array(array, dtype=np.float32, order="C", copy=True))
    return state


def check_variables(
    names: Iterable[str], mappings: Iterable[Mapping[str, Source]], *, where: str
) -> tuple[list[str], list[str]]:
    """Split variable names into (optimizer slots, bookkeeping); anything neither mapped nor known raises.

    Raises:
        TFCheckpointError: listing every variable that is neither a model weight of ``mappings`` nor a known
            optimizer slot / bookkeeping variable (``OPTIMIZER_SLOT_SUFFIXES``, ``BOOKKEEPING_VARIABLES``).
    """
    used = {src.name for m in mappings for src in m.values()}
    slots, books, unknown = [], [], []
    for name in names:
        if name in used:
            continue
        if name in BOOKKEEPING_VARIABLES:
            books.append(name)
        elif name.endswith(OPTIMIZER_SLOT_SUFFIXES):
            slots.append(name)
        else:
            unknown.append(name)
    if unknown:
        raise TFCheckpointError(
            f"{where}: {len(unknown)} variable(s) are neither ELECTRA weights nor optimizer/bookkeeping "
            "state, "
            f"refusing a partial conversion: {', '.join(sorted(unknown))}"
        )
    return slots, books


def _write_model(directory: Path, config, state: dict, tokenizer, *, architecture: str) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True)
    config.architectures = [architecture]
    config.save_pretrained(directory)
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(directory)


def _write_pretraining_model(tmp: Path, tokenizer, *, untied: bool) -> None:
    """``tmp/pretraining/``: the joint ``ElectraPretrainingModel`` built from the converted pair.

    Pre-training continues from it (``pretrain train --init-from``) with the original's sharing: the
    generator reads the discriminator's embeddings unless the checkpoint had untied generator embeddings.
    """
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    from bioelectra.modeling import ElectraPretrainingModel

    discriminator = ElectraForPreTraining.from_pretrained(tmp / "discriminator")
    generator = ElectraForMaskedLM.from_pretrained(tmp / "generator")
    joint = ElectraPretrainingModel.from_pair(discriminator, generator, untied_generator_embeddings=untied)
    joint.save_pretrained(tmp / "pretraining")
    tokenizer.save_pretrained(tmp / "pretraining")


def convert_tf_checkpoint(
    tf_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    export: str = "discriminator",
    config: str | os.PathLike | Mapping | None = None,
    hparams: str | os.PathLike | Mapping | None = None,
    vocab_file: str | os.PathLike | None = None,
    model_size: str | None = None,
    num_attention_heads: int | None = None,
    do_lower_case: bool | None = None,
    overwrite: bool = False,
) -> ConversionReport:
    """Convert an original TF ELECTRA / Bio-ELECTRA checkpoint to transformers checkpoints.

    Args:
        tf_dir: directory with the checkpoint (``checkpoint`` file and/or ``model.ckpt-N.index`` +
            ``.data-*-of-*``; the newest step), ``vocab.txt`` and optionally ``config.json`` /
            ``hparams.json`` (used when ``config`` / ``hparams`` are not given). Also a prefix.
        output_dir: written atomically (temporary sibling, then renamed). ``export="discriminator"``:
            an ``ElectraForPreTraining`` directory; ``"generator"``: an ``ElectraForMaskedLM`` directory;
            ``"both"``: ``discriminator/`` and ``generator/`` inside it. Each has tokenizer files and
            ``conversion_report.json`` lies at the top.
        export: ``discriminator`` | ``generator`` | ``both``.
        config: Bio-ELECTRA-style ``config.json`` (path, inline JSON or dict); sizes in it are checked
            against the tensors, ``num_attention_heads``, ``hidden_act``, dropout and ``do_lower_case`` used.
        hparams: the original ``run_pretraining.py --hparams`` JSON (path, inline or dict); unknown keys are
            an error as in the original (``configure_pretraining.py``).
        vocab_file: defaults to ``tf_dir/vocab.txt``.
        model_size: ``small`` | ``base`` | ``large``, checked against the hidden size.
        num_attention_heads: discriminator heads (default: config, hparams overrides, else max(1, H // 64)
            as the original code). The generator has max(1, H_gen // 64) as in the original.
        do_lower_case: tokenizer casing (default: hparams / config ``do_lower_case``, else inferred from
            ``vocab.txt``: cased when >= 1% of its pieces hold capitals).
        overwrite: replace an existing ``output_dir`` (otherwise an existing non-empty one is an error).

    Returns:
        A ``ConversionReport`` (also saved as ``output_dir/conversion_report.json``).

    Raises:
        FileNotFoundError: no checkpoint, shard or ``vocab.txt``.
        TFCheckpointError: unknown variables, unfilled parameters, shape or size mismatches, crc32c
            mismatch, unsupported dtype, bad ``export``, existing output.
    """
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    from bioelectra.presets import load_wordpiece_tokenizer

    started = time.perf_counter()
    if export not in EXPORTS:
        raise TFCheckpointError(f"export {export!r}: expected one of {', '.join(EXPORTS)}")
    tf_dir = Path(tf_dir)
    output_dir = Path(output_dir)
    if output_dir.exists() and any(output_dir.iterdir()) and not overwrite:
        raise TFCheckpointError(
            f"output directory {output_dir} exists and is not empty (pass overwrite to replace it)"
        )
    prefix = find_checkpoint(tf_dir)
    home = tf_dir if tf_dir.is_dir() else prefix.parent
    reader = TFCheckpointReader(prefix)
    where = str(reader.index_path)

    if config is None and (home / "config.json").is_file():
        config = home / "config.json"
    if hparams is None and (home / "hparams.json").is_file():
        hparams = home / "hparams.json"
    config_d, config_src = _load_json_arg(config, "config")
    hparams_d, hparams_src = _load_json_arg(hparams, "hparams")
    bad = sorted(set(config_d) - CONFIG_KEYS)
    if bad:
        raise TFCheckpointError(
            f"{config_src}: unknown config key(s) {bad}; expected some of {sorted(CONFIG_KEYS)}"
        )
    bad = sorted(set(hparams_d) - ORIGINAL_HPARAMS)
    if bad:
        raise TFCheckpointError(
            f"{hparams_src}: unknown hparam(s) {bad} (not in the original configure_pretraining.py)"
        )

    vocab_path = Path(vocab_file) if vocab_file is not None else home / "vocab.txt"
    if not vocab_path.is_file():
        raise FileNotFoundError(f"vocabulary not found: {vocab_path} (pass vocab_file)")
    vocab = vocab_path.read_text(encoding="utf-8").splitlines()
    if do_lower_case is not None:
        lower, lower_src = do_lower_case, "flag"
    elif "do_lower_case" in hparams_d:
        lower, lower_src = bool(hparams_d["do_lower_case"]), hparams_src
    elif "do_lower_case" in config_d:
        lower, lower_src = bool(config_d["do_lower_case"]), config_src
    else:
        lower, lower_src = _infer_lower_case(vocab), f"inferred from {vocab_path.name}"
    tokenizer = load_wordpiece_tokenizer(vocab_path, do_lower_case=lower)

    plan = _plan(
        reader,
        config=config_d,
        config_src=config_src,
        hparams=hparams_d,
        hparams_src=hparams_src,
        model_size=model_size,
        num_attention_heads=num_attention_heads,
        vocab_size_tokenizer=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
    )
    if export in ("generator", "both") and plan.gen_map is None:
        raise TFCheckpointError(
            f"{where}: export {export!r} asks for a generator, but the checkpoint has none"
        )
    mappings = [plan.disc_map] + ([plan.gen_map] if plan.gen_map is not None else [])
    slots, books = check_variables(reader.variable_names(), mappings, where=where)

    wanted = (
        []
        if export == "generator"
        else [("discriminator", plan.disc_config, plan.disc_map, ElectraForPreTraining)]
    )
    if export in ("generator", "both"):
        wanted.append(("generator", plan.gen_config, plan.gen_map, ElectraForMaskedLM))
    needed = sorted({src.name for _, _, m, _ in wanted for src in m.values()})
    missing = [name for name in needed if name not in reader]
    if missing:
        raise TFCheckpointError(f"{where}: variables expected by the model are missing: {', '.join(missing)}")
    tensors: dict[str, np.ndarray] = {}
    dtypes: dict[str, int] = {}
    bytes_read = 0
    for name in needed:
        tensors[name] = reader.read(name)
        entry = reader.entries[name]
        dtypes[entry.dtype] = dtypes.get(entry.dtype, 0) + 1
        bytes_read += entry.size
    states = {}
    for part, cfg, mapping, cls in wanted:
        states[part] = build_state_dict(tensors, mapping, _expected_parameters(cls, cfg), where=where)
    used = set(needed)
    unused = sorted({src.name for m in mappings for src in m.values()} - used)

    step = None
    if "global_step" in reader:
        step = int(np.asarray(reader.read("global_step")).reshape(-1)[0])
    elif (m := _STEP_RE.search(prefix.name)) is not None:
        step = int(m.group(1))

    report = ConversionReport(
        checkpoint=str(prefix),
        step=step,
        export=export,
        mapped={part: len({src.name for src in mapping.values()}) for part, _, mapping, _ in wanted},
        ignored_optimizer_slots=len(slots),
        ignored_bookkeeping=books,
        unused_model_variables=unused,
        dtypes=dtypes,
        do_lower_case=lower,
        do_lower_case_source=lower_src,
        bytes_read=bytes_read,
    )
    for part, cfg in (("discriminator", plan.disc_config), ("generator", plan.gen_config)):
        if cfg is not None:
            setattr(
                report,
                part,
                {
                    k: getattr(cfg, k)
                    for k in (
                        "vocab_size",
                        "embedding_size",
                        "hidden_size",
                        "num_hidden_layers",
                        "num_attention_heads",
                        "intermediate_size",
                        "max_position_embeddings",
                        "type_vocab_size",
                    )
                },
            )
    if len(tokenizer) < plan.disc_config.vocab_size:
        report.vocab_note = (
            f"{vocab_path.name} has {len(tokenizer)} entries, the embeddings "
            f"{plan.disc_config.vocab_size} rows (the extra rows are never produced by the tokenizer)"
        )

    output_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.tmp-", dir=output_dir.parent))
    try:
        arch = {"discriminator": "ElectraForPreTraining", "generator": "ElectraForMaskedLM"}
        for part, cfg, _, _ in wanted:
            target = tmp / part if export == "both" else tmp
            if export == "both":
                report.outputs[part] = str(output_dir / part)
            else:
                report.outputs[part] = str(output_dir)
            if export != "both":
                target.rmdir()  # recreated by _write_model
            _write_model(target, cfg, states[part], tokenizer, architecture=arch[part])
        if export == "both":
            _write_pretraining_model(tmp, tokenizer, untied="generator/embeddings/word_embeddings" in reader)
            report.outputs["pretraining"] = str(output_dir / "pretraining")
        report.seconds = round(time.perf_counter() - started, 3)
        (tmp / "conversion_report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        if output_dir.exists():
            old = output_dir.with_name(f".{output_dir.name}.old-{os.getpid()}")
            os.replace(output_dir, old)
            os.replace(tmp, output_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, output_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("converted %s (step %s) to %s in %.1f s", prefix, step, output_dir, report.seconds)
    return report
