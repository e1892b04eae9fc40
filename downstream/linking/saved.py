"""A dense linker saved as a folder, and loaded back:

- ``encoder/``: the trained encoder (``save_pretrained``, safetensors) and its tokenizer;
- ``names.tsv``: the dictionary, one ``name<TAB>ids`` per line (ids joined by ``|``), in the embeddings' order;
- ``preferred.tsv``: ``id<TAB>readable name`` (what predictions show beside an id);
- ``name_embeddings.npy``: ``(num_names, hidden)`` float32, L2-normalised;
- ``linker.json``: the card's data: format version, entity type, sparse weight and n-gram range, method,
  dataset and its dev / test accuracy@k;
- ``README.md``: the card.

The sparse half is not stored: TF-IDF is refitted on ``names.tsv`` when loaded (deterministic). The folder is
written under a temporary name and renamed when whole.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from bioelectra.textio import replace_dir
from downstream.errors import DownstreamError
from downstream.linking.dictionary import Dictionary

#: ``linker.json``'s format version.
LINKER_FORMAT = 1


def save_linker(directory: Path, linker, dictionary: Dictionary, spec, record: dict[str, Any]) -> Path:
    """Write ``linker`` (a :class:`downstream.linking.dense.HybridLinker` over ``dictionary``) to ``directory``
    (module docstring); return the folder."""
    directory = Path(directory)
    tmp = directory.with_name(f".{directory.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "encoder").mkdir(parents=True)
    linker.encoder.model.save_pretrained(tmp / "encoder")
    linker.encoder.tokenizer.save_pretrained(tmp / "encoder")
    rows = [f"{name}\t{'|'.join(ids)}" for name, ids in zip(dictionary.names, dictionary.concept_ids, strict=True)]
    (tmp / "names.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    preferred = [f"{cid}\t{name}" for cid, name in dictionary.preferred.items()]
    (tmp / "preferred.tsv").write_text("\n".join(preferred) + "\n", encoding="utf-8")
    np.save(tmp / "name_embeddings.npy", linker.name_embeddings)
    card = {
        "format": LINKER_FORMAT, "kind": "linking", "dataset": spec.name, "entity_type": spec.entity_type or "Disease",
        "sparse_weight": linker.sparse_weight, "ngram_range": list(linker.sparse.ngram_range) if linker.sparse else None,
        "method": record.get("method"), "seed": record.get("seed"), "dev": record.get("dev"), "test": record.get("test"),
        "num_names": len(dictionary), "num_concepts": len(dictionary.id_set()),
    }  # fmt: skip
    (tmp / "linker.json").write_text(json.dumps(card, indent=2), encoding="utf-8")
    test = card["test"] or {}
    (tmp / "README.md").write_text(
        f"# Entity linker: {spec.title}\n\n{card['method']}. Links {card['entity_type']} mentions to "
        f"{card['num_concepts']} concept ids through {card['num_names']} names; score = dense + "
        f"{card['sparse_weight']} x sparse.\n\nTest accuracy@1 {100 * test.get('accuracy_at_1', 0):.2f}, "
        f"accuracy@5 {100 * test.get('accuracy_at_5', 0):.2f} (gold mentions, BioSyn's scoring).\n\n"
        f"Data: {spec.citation}.\n",
        encoding="utf-8",
    )
    replace_dir(tmp, directory)
    return directory


def load_linker(directory: str | Path):
    """The linker saved in ``directory`` and its dictionary: ``(linker, dictionary, card)``.

    Raises:
        DownstreamError: a missing file, another format version, or embeddings that do not match the names.
    """
    from downstream.linking.dense import DenseEncoder, HybridLinker
    from downstream.linking.sparse import SparseLinker

    directory = Path(directory)
    needed = ("linker.json", "names.tsv", "preferred.tsv", "name_embeddings.npy", "encoder")
    missing = [n for n in needed if not (directory / n).exists()]
    if missing:
        raise DownstreamError(f"{directory}: not a saved linker (missing {', '.join(missing)}; expected a trial's linker/ folder)")
    card = json.loads((directory / "linker.json").read_text(encoding="utf-8"))
    if card.get("format") != LINKER_FORMAT:
        raise DownstreamError(f"{directory}/linker.json: format {card.get('format')!r}, expected {LINKER_FORMAT}")
    dictionary = Dictionary()
    for lineno, line in enumerate((directory / "names.tsv").read_text(encoding="utf-8").splitlines(), start=1):
        name, sep, ids = line.partition("\t")
        if not sep or not ids:
            raise DownstreamError(f"{directory}/names.tsv:{lineno}: expected 'name<TAB>ids'")
        dictionary.add(name, ids.split("|"))
    for line in (directory / "preferred.tsv").read_text(encoding="utf-8").splitlines():
        cid, _, name = line.partition("\t")
        dictionary.preferred[cid] = name
    embeddings = np.load(directory / "name_embeddings.npy")
    if embeddings.shape[0] != len(dictionary):
        raise DownstreamError(f"{directory}: {embeddings.shape[0]} embeddings for {len(dictionary)} names")
    sparse = SparseLinker(dictionary.names, ngram_range=tuple(card["ngram_range"])) if card.get("ngram_range") else None
    linker = HybridLinker(DenseEncoder(str(directory / "encoder")), dictionary.names, sparse,
                          sparse_weight=card["sparse_weight"], name_embeddings=embeddings)  # fmt: skip
    return linker, dictionary, card
