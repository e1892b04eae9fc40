"""A saved fine-tuned model on raw text (``bioelectra predict``): entities with character offsets from a NER
model, relation labels with class probabilities from a RE model.

Each kind's predictor lives in its own folder: :class:`downstream.ner.predict.EntityTagger`,
:class:`downstream.relation.predict.RelationClassifier` (the shared base: :mod:`downstream.predict.base`).

Inputs are read by :mod:`downstream.predict.formats`, outputs rendered by :mod:`downstream.predict.writers`; a
whole run (streaming, workers, resuming) is :func:`downstream.predict.files.predict_files`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from downstream.errors import DownstreamError
from downstream.ner.predict import EntityTagger
from downstream.predict.base import Predictor, check_model_dir, inference_dtype, resolve_device
from downstream.predict.results import UNTYPED_ENTITY
from downstream.relation.predict import RelationClassifier

logger = logging.getLogger(__name__)

__all__ = ["PREDICTORS", "EntityTagger", "RelationClassifier", "check_model_dir", "entity_types", "load_predictor", "resolve_device",
           "untyped_entity_of"]


#: Model kind (:func:`check_model_dir`) -> its predictor class.
PREDICTORS: dict[str, type[Predictor]] = {cls.kind: cls for cls in (EntityTagger, RelationClassifier)}


def load_predictor(
    model_dir: str | Path, *, device: str = "auto", max_seq_length: int = 512, batch_size: int = 32
) -> EntityTagger | RelationClassifier:
    """Load a saved fine-tuned model for prediction.

    Args:
        model_dir: a ``save_pretrained`` folder with its tokenizer (a trial's ``model/``).
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda``; on CUDA the weights are bfloat16
            (:func:`~downstream.predict.base.inference_dtype`).
        max_seq_length: sub-tokens per model input, capped at the model's ``max_position_embeddings``.
        batch_size: model inputs per forward pass.

    Returns:
        An :class:`EntityTagger` (token classification) or a :class:`RelationClassifier` (sequence
        classification: ``AutoModelForSequenceClassification``, or :class:`downstream.classification.ElectraForRelationClassification`
        for ``ElectraForRelationClassification`` folders, finetune's default RE head), in evaluation mode on
        ``device``.

    Raises:
        DownstreamError: not a fine-tuned NER or RE model (see :func:`check_model_dir`), labels that are not
            IOB2 for a NER model, a config ``entity_type`` that is not a type name, no fast tokenizer, weights
            of the model class missing from the folder (they would be initialised at random),
            ``max_seq_length`` < 8 or ``batch_size`` < 1.
    """
    from downstream.checkpoints import load_tokenizer, quiet_transformers
    from downstream.trial.evaluate import model_labels

    model_dir = Path(model_dir)
    predictor_class = PREDICTORS[check_model_dir(model_dir, PREDICTORS)]
    if max_seq_length < 8:
        raise DownstreamError(f"--max-seq-length {max_seq_length}: expected at least 8 sub-tokens")
    if batch_size < 1:
        raise DownstreamError(f"--batch-size {batch_size}: expected at least 1")
    labels = model_labels(model_dir)
    predictor_class.check_labels(labels, model_dir)
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    untyped_entity = untyped_entity_of(config, model_dir)
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int) and max_seq_length > positions:
        logger.info("--max-seq-length %d is more than the model's %d positions: using %d", max_seq_length, positions, positions)
        max_seq_length = positions
    tokenizer = load_tokenizer(str(model_dir))
    model_class = predictor_class.auto_model_class()
    if any(str(arch).endswith("ForRelationClassification") for arch in config.get("architectures") or []):
        # finetune's default RE head (--re-head electra): dropout + linear over [CLS]. The Auto class would
        # build transformers' two-layer head instead and initialise it at random.
        from downstream.classification import ElectraForRelationClassification as model_class
    torch_device = resolve_device(device)
    try:
        with quiet_transformers():
            model, info = model_class.from_pretrained(model_dir, output_loading_info=True)
    except (OSError, ValueError) as exc:
        raise DownstreamError(f"--model {model_dir}: cannot load the model ({exc})") from exc
    if info.get("missing_keys"):
        # transformers only warns (here muted) and initialises them at random: the predictions would be noise.
        raise DownstreamError(f"--model {model_dir}: {type(model).__name__} found no saved weights for "
                              f"{sorted(info['missing_keys'])} (they would be random); expected a folder saved by "
                              f"that class, architectures {config.get('architectures')}")  # fmt: skip
    model.to(torch_device, dtype=inference_dtype(torch_device)).eval()  # bfloat16 on CUDA
    return predictor_class(model_dir, model, tokenizer, labels, device=torch_device, max_seq_length=max_seq_length, batch_size=batch_size,
               untyped_entity=untyped_entity)  # fmt: skip


def untyped_entity_of(config: dict, model_dir: str | Path) -> str:
    """The entity type of a NER model's bare ``B`` / ``I`` labels: its ``config.json``'s ``entity_type`` (set by
    whoever saved the model; not required), else :data:`~downstream.predict.results.UNTYPED_ENTITY`.

    Raises:
        DownstreamError: an ``entity_type`` that is not a type name (the folder and the value named).
    """
    from downstream.settings import check_entity_type

    untyped_entity = config.get("entity_type") or UNTYPED_ENTITY
    try:
        if not isinstance(untyped_entity, str):
            raise ValueError("expected a string")
        check_entity_type(untyped_entity)
    except ValueError as exc:
        raise DownstreamError(f"--model {model_dir}: config.json entity_type {untyped_entity!r}: {exc}") from None
    return untyped_entity


def entity_types(model_dir: str | Path) -> list[str]:
    """The entity types a saved NER model finds, in label order, each once: ``Disease`` for ``B-Disease`` /
    ``I-Disease``; for bare ``B`` / ``I`` labels :func:`untyped_entity_of`.

    Raises:
        DownstreamError: no ``config.json`` or ``id2label`` (:func:`~downstream.trial.evaluate.model_labels`), a
            bad ``entity_type`` in it.
    """
    from downstream.trial.evaluate import model_labels

    model_dir = Path(model_dir)
    labels = model_labels(model_dir)
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    found: dict[str, None] = {}
    for label in labels:
        prefix, _, kind = label.partition("-")
        if prefix in ("B", "I"):
            found[kind or untyped_entity_of(config, model_dir)] = None
    return list(found)
