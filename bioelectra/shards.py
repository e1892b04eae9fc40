"""The examples on disk: Arrow shards written in the ``datasets.save_to_disk`` layout, one split at a time,
with memory flat whatever the corpus size."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

#: The on-disk format of the examples (``build_info.json`` ``format_version``). 1 (earlier versions):
#: ``input_ids`` int32 and per-token ``token_type_ids`` int8, 5 bytes per token. 2: ``input_ids`` uint16 when
#: the vocabulary has at most 65,536 entries (int32 otherwise) and ``segment_a_length``, the number of
#: tokens of segment A (``[CLS]`` and its ``[SEP]`` included; the example's length for a single segment):
#: about 2.05 bytes per token, Megatron-LM's indexed-dataset size. The collator rebuilds ``token_type_ids``.
FORMAT_VERSION = 2
UINT16_VOCAB_LIMIT = 65536


def id_dtype_for(vocab_size: int) -> str:
    """``uint16`` when every id of a ``vocab_size``-entry vocabulary fits, else ``int32``."""
    return "uint16" if vocab_size <= UINT16_VOCAB_LIMIT else "int32"


def features(id_dtype: str) -> dict:
    """The ``datasets`` features of format :data:`FORMAT_VERSION`."""
    return {
        "input_ids": {"feature": {"dtype": id_dtype, "_type": "Value"}, "_type": "List"},
        "segment_a_length": {"dtype": "int16", "_type": "Value"},
    }


def _arrow_schema(id_dtype: str = "uint16"):
    import pyarrow as pa

    meta = {"huggingface": json.dumps({"info": {"features": features(id_dtype)}})}
    return pa.schema(
        [pa.field("input_ids", pa.list_(getattr(pa, id_dtype)())), pa.field("segment_a_length", pa.int16())],
        metadata=meta,
    )


class _SplitWriter:
    """Streams record batches into ``data-NNNNN-of-MMMMM.arrow`` + ``state.json``, ``dataset_info.json``."""

    def __init__(self, split_dir: Path, split: str, examples_per_shard: int, id_dtype: str = "uint16") -> None:
        self.split_dir = split_dir
        self.split = split
        self.examples_per_shard = examples_per_shard
        self.id_dtype = id_dtype
        self.schema = _arrow_schema(id_dtype)
        self.shards: list[Path] = []
        self._writer = None
        self._sink = None
        self._rows_in_shard = 0
        self.num_examples = 0
        self.num_tokens = 0
        self._hash = hashlib.sha256()
        split_dir.mkdir(parents=True)

    def _open(self) -> None:
        import pyarrow as pa

        path = self.split_dir / f"part-{len(self.shards):05d}.arrow"
        self.shards.append(path)
        self._sink = pa.OSFile(str(path), "wb")
        self._writer = pa.ipc.new_stream(self._sink, self.schema)
        self._rows_in_shard = 0

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = self._sink = None

    def write(self, input_ids: np.ndarray, lengths: np.ndarray, first_lengths: np.ndarray) -> None:
        """Append examples given as flat ids (int32), lengths and segment-A lengths (see ``ChunkResult``)."""
        import pyarrow as pa

        if len(lengths) == 0:
            return
        if self._writer is None or self._rows_in_shard >= self.examples_per_shard:
            self._close()
            self._open()
        offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        ids = input_ids.astype(np.dtype(self.id_dtype), copy=False)
        segment_a = np.minimum(first_lengths, lengths).astype(np.int16)
        batch = pa.record_batch(
            [
                pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids, getattr(pa, self.id_dtype)())),
                pa.array(segment_a, pa.int16()),
            ],
            schema=self.schema,
        )
        self._writer.write_batch(batch)
        self._rows_in_shard += len(lengths)
        self.num_examples += len(lengths)
        self.num_tokens += len(input_ids)
        self._hash.update(input_ids.tobytes())
        self._hash.update(lengths.tobytes())

    def finish(self) -> None:
        """Close the last shard, give shards their final names and write the ``datasets`` metadata."""
        self._close()
        if not self.shards:  # an empty split still needs one (empty) file for load_from_disk
            self._open()
            self._close()
        n = len(self.shards)
        names = []
        for i, path in enumerate(self.shards):
            name = f"data-{i:05d}-of-{n:05d}.arrow"
            os.replace(path, self.split_dir / name)
            names.append(name)
        state = {
            "_data_files": [{"filename": name} for name in names],
            "_fingerprint": self._hash.hexdigest()[:16],
            "_format_columns": None,
            "_format_kwargs": {},
            "_format_type": None,
            "_output_all_columns": False,
            "_split": self.split,
        }
        info = {
            "citation": "",
            "description": "ELECTRA pre-training examples (bioelectra build-data)",
            "features": features(self.id_dtype),
            "homepage": "",
            "license": "",
        }
        (self.split_dir / "state.json").write_text(json.dumps(state, indent=2))
        (self.split_dir / "dataset_info.json").write_text(json.dumps(info, indent=2))
