"""Conversion of an original TensorFlow ELECTRA / Bio-ELECTRA checkpoint: sizes read from the tensors and
checked against ``config.json`` / ``--hparams``, the state dicts built through the name mapping, and the
``save_pretrained`` folders written under a temporary name and renamed (no partial conversion is ever left).
Any variable that is neither mapped nor known optimizer/bookkeeping state is an error, as is any parameter
left unfilled."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bioelectra.hparams import ORIGINAL_PRETRAINING_HPARAMS, load_json_object
from bioelectra.tf.bundle import _STEP_RE, TFCheckpointReader, find_checkpoint
from bioelectra.tf.errors import TFCheckpointError
from bioelectra.tf.mapping import (
    BOOKKEEPING_VARIABLES,
    OPTIMIZER_SLOT_SUFFIXES,
    Source,
)
from bioelectra.tf.plan import CONFIG_KEYS, _infer_lower_case, _plan
from bioelectra.tf.write import _write_outputs

logger = logging.getLogger(__name__)

# ==================================================================================================
# sizes, settings and conversion
# ==================================================================================================

#: Keys of the original ``--hparams``: the one definition, :data:`bioelectra.hparams.ORIGINAL_PRETRAINING_HPARAMS`.
ORIGINAL_HPARAMS = frozenset(ORIGINAL_PRETRAINING_HPARAMS)

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


def _load_settings(
    home: Path, config: str | os.PathLike | Mapping | None, hparams: str | os.PathLike | Mapping | None
) -> tuple[dict, str, dict, str]:
    """``(config, its source, hparams, their source)``: the given ones, else ``home``'s ``config.json`` /
    ``hparams.json`` when present; an unknown key in either is a :class:`TFCheckpointError`."""
    if config is None and (home / "config.json").is_file():
        config = home / "config.json"
    if hparams is None and (home / "hparams.json").is_file():
        hparams = home / "hparams.json"
    config_d, config_src = load_json_object(config, what="config")
    hparams_d, hparams_src = load_json_object(hparams, what="hparams")
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
    return config_d, config_src, hparams_d, hparams_src


def _load_tokenizer(
    home: Path,
    vocab_file: str | os.PathLike | None,
    do_lower_case: bool | None,
    *,
    config_d: dict,
    config_src: str,
    hparams_d: dict,
    hparams_src: str,
):
    """``(tokenizer, vocab path, do_lower_case, where it came from)``: the vocabulary is ``vocab_file``, else
    ``home/vocab.txt``; the casing the flag > hparams > config > inferred from ``vocab.txt``."""
    from bioelectra.presets import load_wordpiece_tokenizer

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
    return load_wordpiece_tokenizer(vocab_path, do_lower_case=lower), vocab_path, lower, lower_src


def _read_tensors(
    reader: TFCheckpointReader, needed: list[str], *, where: str
) -> tuple[dict[str, np.ndarray], dict[str, int], int]:
    """``(tensors by name, variables per dtype, bytes read)`` of the ``needed`` variables; a missing one is a
    :class:`TFCheckpointError`."""
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
    return tensors, dtypes, bytes_read


def _checkpoint_step(reader: TFCheckpointReader, prefix: Path) -> int | None:
    """The checkpoint's ``global_step`` variable, else the ``N`` of ``model.ckpt-N``, else None."""
    step = None
    if "global_step" in reader:
        step = int(np.asarray(reader.read("global_step")).reshape(-1)[0])
    elif (m := _STEP_RE.search(prefix.name)) is not None:
        step = int(m.group(1))
    return step


def _report_sizes(report: ConversionReport, plan) -> None:
    """The sizes of each converted model's config into ``report.discriminator`` / ``report.generator``."""
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


def _convert_and_write(
    reader: TFCheckpointReader,
    plan,
    *,
    prefix: Path,
    export: str,
    tokenizer,
    vocab_path: Path,
    do_lower_case: tuple[bool, str],
    output_dir: Path,
    started: float,
) -> ConversionReport:
    """The second half of :func:`convert_tf_checkpoint`, once the sizes are planned: check every variable,
    build the state dicts of the models ``export`` asks for, and write them with their report."""
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    where = str(reader.index_path)
    lower, lower_src = do_lower_case
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
    tensors, dtypes, bytes_read = _read_tensors(reader, needed, where=where)
    states = {}
    for part, cfg, mapping, cls in wanted:
        states[part] = build_state_dict(tensors, mapping, _expected_parameters(cls, cfg), where=where)
    used = set(needed)
    unused = sorted({src.name for m in mappings for src in m.values()} - used)

    step = _checkpoint_step(reader, prefix)

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
    _report_sizes(report, plan)
    if len(tokenizer) < plan.disc_config.vocab_size:
        report.vocab_note = (
            f"{vocab_path.name} has {len(tokenizer)} entries, the embeddings "
            f"{plan.disc_config.vocab_size} rows (the extra rows are never produced by the tokenizer)"
        )

    _write_outputs(
        output_dir,
        export=export,
        wanted=wanted,
        states=states,
        tokenizer=tokenizer,
        untied="generator/embeddings/word_embeddings" in reader,
        report=report,
        started=started,
    )
    return report


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
    started = time.perf_counter()
    if export not in EXPORTS:
        raise TFCheckpointError(f"export {export!r}: expected one of {', '.join(EXPORTS)}")
    tf_dir = Path(tf_dir)
    output_dir = Path(output_dir)
    if output_dir.exists() and any(output_dir.iterdir()) and not overwrite:
        raise TFCheckpointError(
            f"output directory {output_dir} exists and is not empty (--overwrite, or overwrite=True from Python, replaces it)"
        )
    prefix = find_checkpoint(tf_dir)
    home = tf_dir if tf_dir.is_dir() else prefix.parent
    reader = TFCheckpointReader(prefix)

    config_d, config_src, hparams_d, hparams_src = _load_settings(home, config, hparams)

    tokenizer, vocab_path, lower, lower_src = _load_tokenizer(
        home,
        vocab_file,
        do_lower_case,
        config_d=config_d,
        config_src=config_src,
        hparams_d=hparams_d,
        hparams_src=hparams_src,
    )

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
    report = _convert_and_write(
        reader,
        plan,
        prefix=prefix,
        export=export,
        tokenizer=tokenizer,
        vocab_path=vocab_path,
        do_lower_case=(lower, lower_src),
        output_dir=output_dir,
        started=started,
    )
    logger.info("converted %s (step %s) to %s in %.1f s", prefix, report.step, output_dir, report.seconds)
    return report
