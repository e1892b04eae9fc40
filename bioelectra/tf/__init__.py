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
prints or exits. Modules: ``crc32c``, ``bundle`` (the reader), ``mapping`` (names), ``plan`` (sizes), ``convert``,
``write`` (the output folders).
"""

from bioelectra.tf.bundle import TensorEntry, TFCheckpointReader, find_checkpoint, is_tf_checkpoint_dir
from bioelectra.tf.convert import (
    EXPORTS,
    ORIGINAL_HPARAMS,
    ConversionReport,
    build_state_dict,
    check_variables,
    convert_tf_checkpoint,
)
from bioelectra.tf.crc32c import crc32c, mask_crc32c, masked_crc32c
from bioelectra.tf.errors import TFCheckpointError
from bioelectra.tf.mapping import (
    BOOKKEEPING_VARIABLES,
    OPTIMIZER_SLOT_SUFFIXES,
    Source,
    discriminator_mapping,
    generator_mapping,
)
from bioelectra.tf.plan import CONFIG_KEYS

__all__ = [
    "BOOKKEEPING_VARIABLES", "CONFIG_KEYS", "EXPORTS", "OPTIMIZER_SLOT_SUFFIXES", "ORIGINAL_HPARAMS", "ConversionReport",
    "Source", "TFCheckpointError", "TFCheckpointReader", "TensorEntry", "build_state_dict", "check_variables",
    "convert_tf_checkpoint", "crc32c", "discriminator_mapping", "find_checkpoint", "generator_mapping",
    "is_tf_checkpoint_dir", "mask_crc32c", "masked_crc32c",
]  # fmt: skip
