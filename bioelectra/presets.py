"""Original ELECTRA model sizes and randomly initialised checkpoints built from them.

The sizes are those of the original code (google-research/electra, ``configure_pretraining.py`` and
``model/modeling.py``; paper Table 6): small H=256 L=12 A=4 FFN=1024 E=128, base H=768 L=12 A=12
FFN=3072, large H=1024 L=24 A=16 FFN=4096. The vocabulary is Bio-ELECTRA's cased 31,620-entry PubMed
WordPiece vocabulary shipped in ``bioelectra/assets`` (see its NOTICE.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from bioelectra.textio import replace_dir

logger = logging.getLogger(__name__)

#: Discriminator shapes of the original ELECTRA sizes.
ELECTRA_SIZES: dict[str, dict[str, int]] = {
    "small": {
        "hidden_size": 256,
        "num_hidden_layers": 12,
        "num_attention_heads": 4,
        "intermediate_size": 1024,
        "embedding_size": 128,
    },
    "base": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "embedding_size": 768,
    },
    "large": {
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "embedding_size": 1024,
    },
}

#: ``--ckpt`` names that build an untrained model of an original size.
PRESETS: dict[str, str] = {"electra-small": "small", "electra-base": "base", "electra-large": "large"}

#: Pre-trained discriminators shipped inside the package (``bioelectra/assets/models/<name>``, with a model
#: card), loaded offline by name: ``--ckpt bioelectra-mini``, ``--ckpt bioelectra-small``.
SHIPPED_MODELS: tuple[str, ...] = ("bioelectra-mini", "bioelectra-small")

#: ``--ckpt`` names that build a randomly initialised model with a shipped model's shape and tokenizer: the
#: "no pre-training" control of a comparison run with the same command.
UNTRAINED_TWINS: dict[str, str] = {
    "bioelectra-mini-untrained": "bioelectra-mini",
    "bioelectra-small-untrained": "bioelectra-small",
}

#: ``finetune``'s learning rate for a shipped model and its untrained twin when ``--learning-rate`` is not
#: given: the rate of the model card's comparison (bioelectra-mini, 128 wide, wants more than Base-size
#: models' 1e-4: docs/results/pretraining-findings.md, "A small encoder wants a higher fine-tuning rate";
#: bioelectra-small takes ELECTRA-Small's fine-tuning rate 3e-4, which won against 1e-3 on NCBI-disease
#: development F1, 70.44 against 60.00, one trial each: its model card).
SHIPPED_MODEL_LEARNING_RATES: dict[str, float] = {"bioelectra-mini": 1e-3, "bioelectra-small": 3e-4}

#: ``finetune``'s learning rate for any other checkpoint: ELECTRA's fine-tuning default
#: (``configure_finetuning.py``, ``learning_rate=1e-4``).
DEFAULT_FINETUNE_LEARNING_RATE = 1e-4

#: Bio-ELECTRA's vocabulary is cased (its pre-training configs set do_lower_case false).
BIO_ELECTRA_VOCAB_LOWER_CASE = False


def bio_electra_vocab_file() -> Path:
    """Path of the shipped Bio-ELECTRA ``vocab.txt`` (31,620 WordPiece entries, cased)."""
    return Path(str(resources.files("bioelectra") / "assets" / "vocab" / "bio-electra-pmc2017" / "vocab.txt"))


def default_learning_rate(ckpt: str) -> float:
    """``finetune``'s peak learning rate for ``--ckpt ckpt`` when none is given.

    A shipped model and its untrained twin get the same rate (:data:`SHIPPED_MODEL_LEARNING_RATES`), so
    that the default command compares them fairly; anything else gets :data:`DEFAULT_FINETUNE_LEARNING_RATE`.
    """
    shipped = UNTRAINED_TWINS.get(ckpt, ckpt)
    return SHIPPED_MODEL_LEARNING_RATES.get(shipped, DEFAULT_FINETUNE_LEARNING_RATE)


def shipped_model_dir(name: str) -> Path:
    """Directory of a shipped pre-trained model (``save_pretrained`` layout, tokenizer files, README.md).

    Usable with any ``from_pretrained``, e.g.
    ``AutoModelForTokenClassification.from_pretrained(shipped_model_dir("bioelectra-mini"), num_labels=3)``.

    Raises:
        ValueError: ``name`` is not in :data:`SHIPPED_MODELS`.
        FileNotFoundError: the package was installed without its model files.
    """
    if name not in SHIPPED_MODELS:
        raise ValueError(f"unknown shipped model {name!r}; expected one of {list(SHIPPED_MODELS)}")
    path = Path(str(resources.files("bioelectra") / "assets" / "models" / name))
    if not (path / "config.json").is_file() or not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"{path}: the shipped model {name} is missing (config.json, model.safetensors)")
    return path


def load_wordpiece_tokenizer(vocab_file: str | os.PathLike, *, do_lower_case: bool, strip_accents: bool | None = None):
    """A fast BERT-style WordPiece tokenizer for ``vocab_file``.

    ``strip_accents`` None follows ``do_lower_case``, as BERT's and ELECTRA's ``BasicTokenizer`` do.

    Uses ``ElectraTokenizerFast(vocab=...)``: ``ElectraTokenizer(vocab_file=...)`` silently builds a
    5-token vocabulary in transformers 5 (everything becomes [UNK]).

    Raises:
        FileNotFoundError: ``vocab_file`` does not exist.
        ValueError: the vocabulary lacks one of [PAD] [UNK] [CLS] [SEP] [MASK].
    """
    from transformers import ElectraTokenizerFast

    vocab_file = Path(vocab_file)
    if not vocab_file.is_file():
        raise FileNotFoundError(f"vocabulary file not found: {vocab_file}")
    vocab = vocab_file.read_text(encoding="utf-8").splitlines()
    missing = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t not in vocab]
    if missing:
        raise ValueError(f"{vocab_file}: WordPiece vocabulary lacks special tokens {missing}")
    tokenizer = ElectraTokenizerFast(
        vocab=str(vocab_file), do_lower_case=do_lower_case, strip_accents=strip_accents
    )
    if len(tokenizer) != len(set(vocab)):
        raise ValueError(f"{vocab_file}: tokenizer has {len(tokenizer)} entries, file has {len(vocab)}")
    return tokenizer


def preset_config(size: str, *, vocab_size: int, **overrides):
    """``ElectraConfig`` of a discriminator of the original ``size`` (small|base|large).

    Raises:
        ValueError: unknown size.
    """
    from transformers import ElectraConfig

    if size not in ELECTRA_SIZES:
        raise ValueError(f"unknown ELECTRA size {size!r}; expected one of {sorted(ELECTRA_SIZES)}")
    kwargs = dict(ELECTRA_SIZES[size])
    kwargs.update(
        vocab_size=vocab_size,
        max_position_embeddings=512,
        type_vocab_size=2,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
    )
    kwargs.update(overrides)
    return ElectraConfig(**kwargs)


def build_preset_checkpoint(name: str, output_dir: str | os.PathLike, *, seed: int = 0) -> Path:
    """Write a randomly initialised ``ElectraForPreTraining`` of preset ``name`` with tokenizer files.

    ``name`` is an original size (:data:`PRESETS`, Bio-ELECTRA vocabulary) or the untrained twin of a
    shipped model (:data:`UNTRAINED_TWINS`, built by :func:`build_untrained_twin`). The directory is
    reused when it already holds the same preset. It is written under a temporary name and renamed, so an
    interrupted build leaves nothing behind.

    Args:
        name: ``electra-small``, ``electra-base``, ``electra-large`` or ``bioelectra-mini-untrained``.
        output_dir: target directory.
        seed: seed of the random initialisation (the same seed gives the same weights).

    Returns:
        The directory, loadable with ``AutoModelForTokenClassification.from_pretrained``.

    Raises:
        ValueError: unknown preset name.
    """
    if name in UNTRAINED_TWINS:
        return build_untrained_twin(shipped_model_dir(UNTRAINED_TWINS[name]), output_dir, seed=seed)
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; expected one of {sorted(PRESETS) + sorted(UNTRAINED_TWINS)}")
    output_dir = Path(output_dir)
    stamp = {"preset": name, "seed": seed, "vocab": "bio-electra-pmc2017"}
    if _holds_stamp(output_dir, stamp):
        return output_dir
    tokenizer = load_wordpiece_tokenizer(bio_electra_vocab_file(), do_lower_case=BIO_ELECTRA_VOCAB_LOWER_CASE)
    config = preset_config(PRESETS[name], vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    return _write_untrained_checkpoint(config, tokenizer, stamp, output_dir, seed=seed)


def build_untrained_twin(source: str | os.PathLike, output_dir: str | os.PathLike, *, seed: int = 0) -> Path:
    """Write the "no pre-training" control of a checkpoint: its configuration and tokenizer, fresh weights.

    The weights are ``ElectraForPreTraining``'s initialisation after ``torch.manual_seed(seed)``, in float32
    whatever the source's storage dtype. The directory is reused when it already holds the twin of the same
    configuration (SHA-256 of ``config.json``) and seed, and is written under a temporary name and renamed.

    Args:
        source: a ``save_pretrained`` directory of an ELECTRA discriminator, with its tokenizer files.
        output_dir: target directory.
        seed: seed of the random initialisation.

    Returns:
        ``output_dir``.

    Raises:
        FileNotFoundError: ``source`` has no ``config.json``.
    """
    from transformers import AutoTokenizer, ElectraConfig

    source, output_dir = Path(source), Path(output_dir)
    config_file = source / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{source}: no config.json (expected a save_pretrained checkpoint directory)")
    stamp = {"untrained_twin_of": source.name, "seed": seed,
             "config_sha256": hashlib.sha256(config_file.read_bytes()).hexdigest()}
    if _holds_stamp(output_dir, stamp):
        return output_dir
    config = ElectraConfig.from_pretrained(source)
    config.dtype = "float32"
    return _write_untrained_checkpoint(config, AutoTokenizer.from_pretrained(source), stamp, output_dir, seed=seed)


#: The stamp that marks a directory written by this module (what was built, from what): rebuilt when it differs.
STAMP_FILE = "bioelectra_preset.json"


def _holds_stamp(output_dir: Path, stamp: dict) -> bool:
    marker = output_dir / STAMP_FILE
    return marker.is_file() and json.loads(marker.read_text()) == stamp


def _write_untrained_checkpoint(config, tokenizer, stamp: dict, output_dir: Path, *, seed: int) -> Path:
    """Initialise ``ElectraForPreTraining(config)`` under ``seed`` and write it, the tokenizer and ``stamp``
    atomically to ``output_dir`` (replacing what is there)."""
    import torch
    from transformers import ElectraForPreTraining

    torch.manual_seed(seed)
    model = ElectraForPreTraining(config).float()
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / STAMP_FILE).write_text(json.dumps(stamp))
        replace_dir(tmp, output_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("built an untrained checkpoint (%.1fM parameters) in %s", model.num_parameters() / 1e6, output_dir)
    return output_dir
