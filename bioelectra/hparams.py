"""The original ELECTRA pre-training hyper-parameters: the one definition in this package.

Every attribute that google-research/electra's ``configure_pretraining.py`` (``PretrainingConfig``, at its
last release, with the Electric objective) sets, with its default, and what this package does with each when
it arrives in a ``--hparams`` JSON: ``pretrain train`` maps it onto :class:`bioelectra.pretraining.PretrainingHparams`,
the TensorFlow converter reads the model's shape from it. Both import :func:`classify_original_hparams`,
so a key the one accepts the other accepts too.

Each original key is one of:

- ``RENAMED``: a ``PretrainingHparams`` field under ``TrainingArguments``' name (``num_train_steps`` ->
  ``max_steps``, ...);
- ``SAME_NAME``: a ``PretrainingHparams`` field with the original's name (``mask_prob``, ``disc_weight``, ...);
- ``IGNORED``: TensorFlow / TPU settings and file locations that have no meaning here (``use_tpu``,
  ``pretrain_tfrecords``, ...): accepted and reported as ignored;
- ``CHECKED``: settings fixed by something else here (``vocab_size`` by the data's tokenizer, ``model_size``
  by ``--model-size``, ``do_lower_case`` by ``build-data``): accepted when they agree, an error when not;
- ``ONLY``: options of the original that this package implements with one value only (``electra_objective``
  true; ``electric_objective``, ``uniform_generator``, ``two_tower_generator`` false): any other value is
  an error that says so.

Anything else is an unknown hparam, an error, as in the original's ``PretrainingConfig.update``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: ``configure_pretraining.py``'s attributes and defaults (google-research/electra, last release). The path
#: defaults are derived there from ``data_dir`` / ``model_name``; ``max_predictions_per_seq`` from
#: ``mask_prob`` and ``max_seq_length``; ``embedding_size`` is 128 for small, else the hidden size.
ORIGINAL_PRETRAINING_HPARAMS: dict[str, Any] = {
    "model_name": None,
    "data_dir": None,
    "debug": False,
    "do_train": True,
    "do_eval": False,
    "electra_objective": True,
    "electric_objective": False,
    "gen_weight": 1.0,
    "disc_weight": 50.0,
    "mask_prob": 0.15,
    "learning_rate": 5e-4,
    "lr_decay_power": 1.0,
    "weight_decay_rate": 0.01,
    "num_warmup_steps": 10000,
    "iterations_per_loop": 200,
    "save_checkpoints_steps": 1000,
    "num_train_steps": 1000000,
    "num_eval_steps": 100,
    "keep_checkpoint_max": 5,
    "model_size": "small",
    "model_hparam_overrides": {},
    "embedding_size": None,
    "vocab_size": 30522,
    "do_lower_case": True,
    "uniform_generator": False,
    "two_tower_generator": False,
    "untied_generator_embeddings": False,
    "untied_generator": True,
    "generator_layers": 1.0,
    "generator_hidden_size": 0.25,
    "disallow_correct": False,
    "temperature": 1.0,
    "max_seq_length": 128,
    "train_batch_size": 128,
    "eval_batch_size": 128,
    "use_tpu": False,
    "num_tpu_cores": 1,
    "tpu_job_name": None,
    "tpu_name": None,
    "tpu_zone": None,
    "gcp_project": None,
    "pretrain_tfrecords": "<data_dir>/pretrain_tfrecords/pretrain_data.tfrecord*",
    "vocab_file": "<data_dir>/vocab.txt",
    "model_dir": "<data_dir>/models/<model_name>",
    "results_txt": "<model_dir>/results/unsup_results.txt",
    "results_pkl": "<model_dir>/results/unsup_results.pkl",
    "max_predictions_per_seq": "int((mask_prob + 0.005) * max_seq_length)",
}

#: Original name -> ``PretrainingHparams`` field (``TrainingArguments``' name).
RENAMED: dict[str, str] = {
    "num_train_steps": "max_steps",
    "eval_batch_size": "per_device_eval_batch_size",
    "num_warmup_steps": "warmup_steps",
    "weight_decay_rate": "weight_decay",
    "save_checkpoints_steps": "save_steps",
    "keep_checkpoint_max": "save_total_limit",
}
#: Original keys that are ``PretrainingHparams`` fields under the same name.
SAME_NAME: frozenset[str] = frozenset(
    """train_batch_size gen_weight disc_weight mask_prob learning_rate lr_decay_power num_eval_steps model_hparam_overrides
    embedding_size untied_generator_embeddings untied_generator generator_layers generator_hidden_size
    disallow_correct temperature max_seq_length""".split()
)
#: TensorFlow / TPU settings and file locations: accepted, reported as ignored.
IGNORED: frozenset[str] = frozenset(
    """model_name data_dir use_tpu num_tpu_cores tpu_job_name tpu_name tpu_zone gcp_project iterations_per_loop
    pretrain_tfrecords vocab_file model_dir results_txt results_pkl max_predictions_per_seq""".split()
)
#: Settings fixed by something else here: accepted when they agree with it.
CHECKED: frozenset[str] = frozenset({"model_size", "vocab_size", "do_lower_case", "do_train", "do_eval", "debug"})
#: Options implemented with one value only: key -> the value this package implements.
ONLY: dict[str, Any] = {
    "electra_objective": True,
    "electric_objective": False,
    "uniform_generator": False,
    "two_tower_generator": False,
}
#: ``debug: true`` in the original: these settings (``PretrainingConfig.__init__``), unless given too.
DEBUG_SETTINGS: dict[str, Any] = {
    "train_batch_size": 8,
    "num_train_steps": 20,
    "eval_batch_size": 4,
    "iterations_per_loop": 1,
    "num_eval_steps": 2,
}

#: Per-size defaults of the fields that differ by size (original ``configure_pretraining.py`` and paper
#: Table 6); ``PretrainingHparams`` leaves them ``None`` until a size is chosen. ``train_batch_size`` is the
#: global batch (all processes and accumulation steps together), as in the original.
SIZE_DEFAULTS: dict[str, dict[str, Any]] = {
    "small": {"learning_rate": 5e-4, "train_batch_size": 128, "max_steps": 1_000_000, "mask_prob": 0.15},
    "base": {"learning_rate": 2e-4, "train_batch_size": 256, "max_steps": 766_000, "mask_prob": 0.15},
    "large": {"learning_rate": 2e-4, "train_batch_size": 2048, "max_steps": 400_000, "mask_prob": 0.25},
}

def classify_original_hparams(values: Mapping[str, Any], *, where: str = "--hparams") -> dict[str, dict[str, Any]]:
    """Sort a ``--hparams`` mapping of original keys (and, for ``pretrain train``, field names) into
    ``{"renamed": {field: value}, "same": {...}, "ignored": {...}, "checked": {...}, "other": {...}}``.

    ``other`` holds the keys that are not original ones: the caller decides (``pretrain train`` accepts
    ``PretrainingHparams`` fields, the converter refuses them).

    Raises:
        ValueError: an ``ONLY`` key with another value (named, with the value this package implements).
    """
    out: dict[str, dict[str, Any]] = {"renamed": {}, "same": {}, "ignored": {}, "checked": {}, "other": {}}
    for key, value in values.items():
        if key in ONLY:
            if value != ONLY[key]:
                raise ValueError(
                    f"{where}: {key}={value!r} is not supported here (only {key}={ONLY[key]!r}: "
                    "ELECTRA's replaced token detection with a masked-LM generator)"
                )
            out["ignored"][key] = value
        elif key in RENAMED:
            out["renamed"][RENAMED[key]] = value
        elif key in SAME_NAME:
            out["same"][key] = value
        elif key in IGNORED:
            out["ignored"][key] = value
        elif key in CHECKED:
            out["checked"][key] = value
        else:
            out["other"][key] = value
    return out


def load_json_object(value: str | Path | Mapping | None, *, what: str = "--hparams") -> tuple[dict[str, Any], str]:
    """``(object, where it came from)`` of a JSON argument given inline (``'{"mask_prob": 0.2}'``), as the
    path of a ``.json`` file (the original scripts accept both), or already as a mapping; ``({}, "")`` for
    None or an empty string. The one parser of ``--hparams`` / ``config.json`` arguments.

    Raises:
        ValueError: not valid JSON, not an object, or neither inline JSON nor an existing file (``what``
            and the value or file named).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}, ""
    if isinstance(value, Mapping):
        return dict(value), what
    text = str(value)
    if text.lstrip().startswith("{"):
        source = f"{what} (inline JSON)"
    else:
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"{what} {text!r}: neither a JSON object nor an existing file")
        source, text = str(path), path.read_text(encoding="utf-8-sig")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: invalid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a JSON object, got {type(data).__name__}")
    return data, source


def value_type_problem(value: Any, annotation: str) -> str | None:
    """What is wrong with an ``--hparams`` value for a setting of type ``annotation`` (a dataclass field's, as
    a string: ``int``, ``float | None``, ``dict[str, Any]`` ...): ``"int, got str '32'"``, or ``None`` when it
    fits. ``float`` takes an int too; ``int`` and ``float`` never take a bool. Pre-training's and fine-tuning's
    ``--hparams`` both check with it."""
    allowed = {t.strip() for t in annotation.split("|")}
    if value is None:
        return None if "None" in allowed else "a value, not null"
    checks = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
    }
    for t in allowed:
        base = t.split("[")[0]
        if base == "dict" and isinstance(value, dict):
            return None
        if base in checks and checks[base](value):
            return None
    expected = " or ".join(sorted(t.split("[")[0].replace("dict", "a JSON object") for t in allowed if t != "None"))
    return f"{expected}, got {type(value).__name__} {value!r}"
