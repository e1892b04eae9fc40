"""The entity type of a NER run's bare ``B`` / ``I`` tags (BioBERT's files have no type).

A model trained on bare tags has the labels ``B`` and ``I``: a token-classification pipeline then returns
fragments typed ``B`` and ``I``, not entities. So the type is found where it is known, in this order:

1. ``--entity-type`` (``settings.entity_type``);
2. ``--dataset NAME``, a registered NER dataset with one type (``bc5cdr-chem``: Chemical);
3. the data folder's name, or its parent's, when it is a registered NER dataset's name, case aside
   (``../shared/data/ner/bc5cdr-chem``, BioBERT's ``BC5CDR-chem``).

Typed files (``B-Chemical``) keep their own types whatever is found here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The tags of files without entity types.
BARE_TAGS = frozenset({"O", "B", "I"})

#: How the type was found when ``--entity-type`` named it (the user said so).
GIVEN = "--entity-type"

UNTYPED_WARNING = (
    "%s: the tags are bare B / I and their entity type is not known (no --entity-type, and neither --dataset nor "
    "the folder name is a registered NER dataset's): the model's labels will be B / I, and a token-classification "
    "pipeline returns B and I fragments, not typed entities. Give --entity-type TYPE (e.g. Disease, Chemical, Gene)."
)


def _registered_type(name: str) -> str | None:
    from downstream.dataset_specs import DATASETS

    spec = DATASETS.get(name.lower())
    return spec.tag_entity_type() if spec is not None and spec.task == "ner" else None


def entity_type_of(settings: Any) -> tuple[str | None, str]:
    """``(type, how it is known)`` for the bare tags of ``settings``' data (module docstring), or
    ``(None, "")`` when it is not known."""
    if settings.entity_type is not None:
        return settings.entity_type, GIVEN
    if settings.dataset:
        found = _registered_type(settings.dataset)
        if found is not None:
            return found, f"the dataset {settings.dataset}"
    if settings.data_dir is not None:
        folder = Path(settings.data_dir)
        for candidate in (folder, folder.parent):
            found = _registered_type(candidate.name)
            if found is not None:
                return found, f"the folder name {candidate.name}"
    return None, ""


def has_bare_labels(labels: list[str]) -> bool:
    """Whether a label list has untyped entity tags (``B`` / ``I``)."""
    return any(label in ("B", "I") for label in labels)
