"""A linker saved as a folder, and loaded back (``predict --linker DIR``):

- ``encoder/``: the trained encoder (``save_pretrained``, safetensors) and its tokenizer (dense linkers only);
- ``names.tsv``: the dictionary, one ``name<TAB>ids`` per line (ids joined by ``|``), in the embeddings' order;
- ``preferred.tsv``: ``id<TAB>readable name`` (what predictions show beside an id);
- ``name_embeddings.npy``: ``(num_names, hidden)`` float32, L2-normalised unless ``linker.json`` says
  ``"normalized": false`` (a ``biosyn`` linker: raw ``[CLS]`` vectors, inner-product scores);
- ``tfidf_vocabulary.json``, ``tfidf_idf.npy``, ``tfidf_names.npz``: the sparse score's fitted TF-IDF (its
  n-grams in column order, idf vector and the names' rows; :meth:`~downstream.linking.sparse.SparseLinker.save`),
  read back without fitting;
- ``linker.json``: the card's data: format version, ``sparse`` or ``dense`` (``biosyn`` included), entity type, sparse weight and
  n-gram range, method, dataset and its dev / test accuracy@k, and ``tfidf``: the TF-IDF files' format version
  and names;
- ``README.md``: the card.

A folder written before the TF-IDF was saved (no ``tfidf`` in ``linker.json``) is loaded by fitting the TF-IDF
on ``names.tsv`` again (deterministic: the same scores). The folder is written under a temporary name and
renamed when whole.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from bioelectra.textio import replace_dir
from downstream.errors import DownstreamError
from downstream.linking.dictionary import Dictionary

logger = logging.getLogger(__name__)

#: ``linker.json``'s format version.
LINKER_FORMAT = 1


def save_linker(directory: Path, dictionary: Dictionary, spec, record: dict[str, Any], *, ngram_range, encoder=None,
                name_embeddings: np.ndarray | None = None, sparse_weight: float = 1.0, sparse=None) -> Path:  # fmt: skip
    """Write a linker over ``dictionary`` to ``directory`` (module docstring); return the folder.

    Args:
        dictionary: the names it links to.
        spec: the benchmark's :class:`downstream.linking.spec.LinkingSpec` (its type, title, citation).
        record: the trial's record (method, seed, dev and test metrics).
        ngram_range: the sparse score's character n-gram range.
        encoder: the dense linker's :class:`downstream.linking.dense.DenseEncoder`; ``None``: a sparse linker.
        name_embeddings: the dense linker's ``(num_names, hidden)`` name embeddings.
        sparse_weight: the sparse score's weight beside the dense one.
        sparse: the :class:`~downstream.linking.sparse.SparseLinker` fitted on ``dictionary``'s names with
            ``ngram_range``, whose TF-IDF is saved; ``None``: one is fitted here.

    Raises:
        ValueError: a ``sparse`` linker of another n-gram range or number of names.
    """
    from downstream.linking.sparse import TFIDF_FORMAT, SparseLinker

    if sparse is None:
        sparse = SparseLinker(dictionary.names, ngram_range=ngram_range)
    if sparse.ngram_range != tuple(ngram_range) or sparse.name_vectors.shape[0] != len(dictionary):
        raise ValueError(f"a sparse linker of {sparse.name_vectors.shape[0]} names, {sparse.ngram_range}-grams to save "
                         f"with {len(dictionary)} names, {tuple(ngram_range)}-grams")  # fmt: skip
    directory = Path(directory)
    tmp = directory.with_name(f".{directory.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if encoder is not None:
        encoder.model.save_pretrained(tmp / "encoder")
        encoder.tokenizer.save_pretrained(tmp / "encoder")
        np.save(tmp / "name_embeddings.npy", name_embeddings)
    rows = [f"{name}\t{'|'.join(ids)}" for name, ids in zip(dictionary.names, dictionary.concept_ids, strict=True)]
    (tmp / "names.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    preferred = [f"{cid}\t{name}" for cid, name in dictionary.preferred.items()]
    (tmp / "preferred.tsv").write_text("\n".join(preferred) + "\n", encoding="utf-8")
    tfidf = {"format": TFIDF_FORMAT, **sparse.save(tmp)}
    card = {
        "format": LINKER_FORMAT, "kind": "linking", "linker": "dense" if encoder is not None else "sparse",
        "dataset": spec.name, "entity_type": spec.linked_type, "ngram_range": list(ngram_range),
        "sparse_weight": sparse_weight if encoder is not None else None, "method": record.get("method"),
        "seed": record.get("seed"), "dev": record.get("dev"), "test": record.get("test"),
        "num_names": len(dictionary), "num_concepts": len(dictionary.id_set()), "tfidf": tfidf,
        "normalized": encoder.normalize if encoder is not None else None, "train_on": record.get("train_on"),
    }  # fmt: skip
    (tmp / "linker.json").write_text(json.dumps(card, indent=2), encoding="utf-8")
    test = card["test"] or {}
    dense = "cosine" if encoder is not None and encoder.normalize else "inner product"
    grams = f"character {ngram_range[0]}-{ngram_range[1]}-grams"
    score = f"dense ({dense}) + {sparse_weight:.4g} x sparse ({grams})" if encoder is not None else f"sparse (TF-IDF over {grams})"
    trained = {"train": " Trained on the training mentions.", "train+dev": " Trained on the training and development mentions."}
    (tmp / "README.md").write_text(
        f"# Entity linker: {spec.title}\n\n{card['method']}. Links {card['entity_type']} mentions to "
        f"{card['num_concepts']} concept ids through {card['num_names']} names; score: {score}."
        f"{trained.get(card['train_on'] or '', '')}\n\n"
        f"Test accuracy@1 {100 * test.get('accuracy_at_1', 0):.2f}, accuracy@5 {100 * test.get('accuracy_at_5', 0):.2f} "
        f"(gold mentions, BioSyn's scoring).\n\nData: {spec.citation}.\n",
        encoding="utf-8",
    )
    replace_dir(tmp, directory)
    return directory


def read_linker_card(directory: str | Path) -> dict[str, Any]:
    """The card (``linker.json``) of the linker saved in ``directory``, without loading the linker: its
    ``entity_type``, ``dataset``, ``linker`` (``sparse`` / ``dense``) and the rest (module docstring).

    Raises:
        DownstreamError: a missing file (not a saved linker), a ``linker.json`` that is not a JSON object, or
            another format version.
    """
    directory = Path(directory)
    missing = [n for n in ("linker.json", "names.tsv", "preferred.tsv") if not (directory / n).exists()]
    if missing:
        raise DownstreamError(f"{directory}: not a saved linker (missing {', '.join(missing)}; expected a linking trial's linker/ folder)")
    try:
        card = json.loads((directory / "linker.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DownstreamError(f"{directory}/linker.json: not JSON ({exc})") from None
    if not isinstance(card, dict):
        raise DownstreamError(f"{directory}/linker.json: expected a JSON object, got {type(card).__name__}")
    if card.get("format") != LINKER_FORMAT:
        raise DownstreamError(f"{directory}/linker.json: format {card.get('format')!r}, expected {LINKER_FORMAT}")
    return card


def load_linker(directory: str | Path):
    """The linker saved in ``directory`` and its dictionary: ``(linker, dictionary, card)``; ``linker`` has
    ``search(texts, k) -> (indices, scores)`` (a :class:`~downstream.linking.sparse.SparseLinker` or a
    :class:`~downstream.linking.dense.HybridLinker`).

    The sparse score's TF-IDF is read from its files when ``linker.json`` names them, else fitted on the names.

    Raises:
        DownstreamError: a missing file, another format version, embeddings that do not match the names, or
            TF-IDF files named in ``linker.json`` that are missing, truncated, corrupt or of another dictionary
            (the file named; :meth:`~downstream.linking.sparse.SparseLinker.load`).
    """
    directory = Path(directory)
    card = read_linker_card(directory)
    dictionary = Dictionary()
    for lineno, line in enumerate((directory / "names.tsv").read_text(encoding="utf-8").splitlines(), start=1):
        name, sep, ids = line.partition("\t")
        if not sep or not ids:
            raise DownstreamError(f"{directory}/names.tsv:{lineno}: expected 'name<TAB>ids'")
        dictionary.add(name, ids.split("|"))
    for line in (directory / "preferred.tsv").read_text(encoding="utf-8").splitlines():
        cid, _, name = line.partition("\t")
        dictionary.preferred[cid] = name
    sparse = _load_sparse(directory, card, dictionary.names)
    if card.get("linker") != "dense":
        return sparse, dictionary, card
    from downstream.linking.dense import DenseEncoder, HybridLinker

    if not (directory / "encoder").is_dir() or not (directory / "name_embeddings.npy").is_file():
        raise DownstreamError(f"{directory}: a dense linker without its encoder/ or name_embeddings.npy")
    embeddings = np.load(directory / "name_embeddings.npy")
    if embeddings.shape[0] != len(dictionary):
        raise DownstreamError(f"{directory}: {embeddings.shape[0]} embeddings for {len(dictionary)} names")
    encoder = DenseEncoder(str(directory / "encoder"), normalize=card.get("normalized") is not False)
    linker = HybridLinker(encoder, dictionary.names, sparse,
                          sparse_weight=card["sparse_weight"], name_embeddings=embeddings)  # fmt: skip
    return linker, dictionary, card


def _load_sparse(directory: Path, card: dict[str, Any], names: list[str]):
    """The sparse linker of the folder: read from the TF-IDF files its card names, else fitted on ``names``."""
    from downstream.linking.sparse import TFIDF_FILES, TFIDF_FORMAT, SparseLinker

    ngram_range = tuple(card["ngram_range"])
    tfidf = card.get("tfidf")
    if tfidf is None:
        logger.info("%s: no saved TF-IDF (a linker saved before it was); fitting it on names.tsv", directory)
        return SparseLinker(names, ngram_range=ngram_range)
    if not isinstance(tfidf, dict) or tfidf.get("format") != TFIDF_FORMAT:
        found = tfidf.get("format") if isinstance(tfidf, dict) else tfidf
        raise DownstreamError(f"{directory}/linker.json: 'tfidf' format {found!r}, expected {TFIDF_FORMAT}")
    files = {key: tfidf.get(key) for key in TFIDF_FILES}
    for key, name in files.items():
        if not isinstance(name, str) or not name or Path(name).name != name:
            raise DownstreamError(f"{directory}/linker.json: 'tfidf' {key!r} is {name!r}, expected a file name in the folder")
    try:
        return SparseLinker.load(directory, names, ngram_range=ngram_range, files=files)
    except DownstreamError as exc:
        raise DownstreamError(f"{exc} (to fit the TF-IDF on names.tsv instead, remove 'tfidf' from linker.json)") from None
