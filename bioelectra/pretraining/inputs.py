"""The pre-training examples a run reads (a ``build-data`` folder, or the original layout's
``DATA_DIR/pretrain_tfrecords``) and the masking collator."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bioelectra.masking import ElectraMaskingCollator
from bioelectra.pretraining.settings import PretrainingHparams

logger = logging.getLogger(__name__)


#: Where the original layout keeps the examples under ``--data-dir`` (``configure_pretraining.py``'s
#: ``pretrain_tfrecords``).
ORIGINAL_DATA_SUBDIR = "pretrain_tfrecords"


@dataclass
class PretrainingData:
    """A ``build-data`` directory: ``examples/`` (DatasetDict), ``tokenizer/``, ``build_info.json``."""

    train: Any
    validation: Any
    tokenizer: Any
    build_info: dict[str, Any]
    path: Path


def load_pretraining_data(data_dir: str | os.PathLike) -> PretrainingData:
    """Open the pre-training examples written by ``pretrain build-data``.

    ``data_dir`` is that output, or the original layout's ``--data-dir`` that holds it as
    ``pretrain_tfrecords/`` (the original ``build_pretraining_dataset.py --output-dir
    $DATA_DIR/pretrain_tfrecords``, then ``run_pretraining.py --data-dir $DATA_DIR``).

    Raises:
        FileNotFoundError: a missing ``examples/``, ``tokenizer/`` or ``build_info.json``.
        ValueError: a missing split or column, or a tokenizer whose size disagrees with ``build_info.json``.
    """
    from transformers import AutoTokenizer

    from bioelectra.data import (
        BUILD_INFO_FILENAME,
        EXAMPLES_DIRNAME,
        TOKENIZER_DIRNAME,
        load_build_info,
        load_examples,
    )

    data_dir = Path(data_dir)
    original = data_dir / ORIGINAL_DATA_SUBDIR
    if not (data_dir / BUILD_INFO_FILENAME).exists() and (original / BUILD_INFO_FILENAME).is_file():
        logger.info("%s: reading the examples in %s (the original layout)", data_dir, original)
        data_dir = original
    for part in (EXAMPLES_DIRNAME, TOKENIZER_DIRNAME, BUILD_INFO_FILENAME):
        if not (data_dir / part).exists():
            raise FileNotFoundError(
                f"{data_dir / part} not found: expected the output of `pretrain build-data`"
            )
    build_info = load_build_info(data_dir)
    for key in ("max_seq_length", "vocab_size"):
        if key not in build_info:
            raise ValueError(f"{data_dir / BUILD_INFO_FILENAME}: missing {key!r}")
    examples = load_examples(data_dir)
    for split in ("train", "validation"):
        if split not in examples:
            raise ValueError(f"{data_dir / EXAMPLES_DIRNAME}: no {split!r} split (found {sorted(examples)})")
        if "input_ids" not in examples[split].column_names:
            raise ValueError(f"{data_dir / EXAMPLES_DIRNAME}[{split}]: no 'input_ids' column")
    columns = set(examples["train"].column_names)
    if "segment_a_length" not in columns:
        logger.info(
            "%s: examples in build-data format 1 (int32 ids, per-token segment ids: 5 bytes per token), written "
            "by an earlier version; they load as before (build-data again for format 2, 2 bytes per token)",
            data_dir,
        )
    tokenizer = AutoTokenizer.from_pretrained(str(data_dir / TOKENIZER_DIRNAME))
    if len(tokenizer) != int(build_info["vocab_size"]):
        raise ValueError(
            f"{data_dir / TOKENIZER_DIRNAME} has {len(tokenizer)} entries but {BUILD_INFO_FILENAME} says "
            f"vocab_size={build_info['vocab_size']}"
        )
    return PretrainingData(examples["train"], examples["validation"], tokenizer, build_info, data_dir)


def make_collator(tokenizer: Any, hparams: PretrainingHparams, **kwargs: Any) -> ElectraMaskingCollator:
    """The masking collator for resolved ``hparams`` (``mask_prob``, ``max_seq_length``, padding)."""
    return ElectraMaskingCollator.from_tokenizer(
        tokenizer,
        mask_prob=hparams.mask_prob,
        max_seq_length=hparams.max_seq_length,
        pad_to_multiple_of=hparams.pad_to_multiple_of or None,
        **kwargs,
    )
