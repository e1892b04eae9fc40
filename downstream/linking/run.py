"""A linking run (``finetune --loader linking``): the benchmark read and preprocessed once, the dictionaries
built, the linker chosen on the development set and scored on the test set, the reports written.

Protocol (BioSyn's, ``dmis-lab/BioSyn`` ``preprocess/README.md`` and ``eval.py``; see
:mod:`downstream.linking.preprocess`): the development queries are linked against the vocabulary plus the
training mentions, the test queries against the vocabulary plus the training and development mentions;
mentions whose ids the dictionary lacks are dropped (their number is reported); accuracy@1 and @5 over the
remaining gold mentions, every occurrence counted.

``--train-on train+dev`` (BioSyn's protocol for its published figures: "we use development (dev) set to search
the hyperparameters, and train on traindev (train+dev) set to report the final performance", its README): each
trained trial is fitted on the training mentions and scored on dev, where the dense linker's sparse weight is
chosen (the development figures reported); then fitted again from the checkpoint, with the same seed, on the
training and development mentions, and that fit (with the chosen weight and n-gram range; the ``biosyn``
linker: the weight it learns) is scored on the test set.

The dense linker's sparse score is chosen with its weight: every character n-gram range of
:data:`SPARSE_NGRAM_RANGES` against every weight of :data:`downstream.linking.dense.SPARSE_WEIGHTS`, on the
development set, by ``--metric`` (a tie keeps the earlier: BioSyn's ``(1, 2)`` first, then the smaller weight).
BioSyn fixes its sparse encoder at ``(1, 2)``; the longer n-grams the sparse linker prefers on dev serve the
hybrid score too (development accuracy@1 of one trained encoder, ``docs/guides/entity-linking.md``). The
``biosyn`` linker keeps ``(1, 2)``: its sparse score is part of what it trains.

The sparse linker (:mod:`downstream.linking.sparse`) has no weights and no seed: its character n-gram range
is chosen on the development set among :data:`SPARSE_NGRAM_RANGES` (BioSyn's ``(1, 2)`` first; a tie keeps
the earlier) by ``--metric`` (accuracy@1 unless told), and one deterministic trial is run.

Written to ``output_dir``: ``results.json`` and ``results.md`` (settings, counts, per-trial dev / test
metrics, the summary), ``trial-<i>/test_predictions.tsv`` (each query's top-5 names and ids) and
``trial-<i>/errors.tsv`` (each wrong test mention: the mention, the gold concept, the predicted concept, their
names and the score).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bioelectra.textio import atomic_write_text
from downstream.linking.corpus import read_corpus
from downstream.linking.dictionary import Dictionary, add_queries, build_dictionary, linkable
from downstream.linking.metrics import REPORTED_K, accuracy_at_k, is_correct
from downstream.linking.preprocess import Query, document_queries, read_typos
from downstream.linking.spec import LinkingSpec, data_root, linking_spec, locate
from downstream.linking.vocabulary import read_medic

logger = logging.getLogger(__name__)

#: The character n-gram ranges the sparse linker tries on the development set (BioSyn's first).
SPARSE_NGRAM_RANGES = ((1, 2), (1, 3), (2, 3), (2, 4))

#: What each trained linker is, as its record and card say.
METHODS = {
    "dense": "SapBERT self-alignment (multi-similarity loss), BioSyn hybrid score",
    "biosyn": "SapBERT self-alignment, then BioSyn synonym marginalisation (learned sparse weight)",
}

#: Candidates kept per query (the largest k reported).
NUM_CANDIDATES = max(REPORTED_K)


@dataclass
class LinkingData:
    """A benchmark ready to link: the queries of each split (linkable ones), the dictionaries (``train``,
    ``dev``, ``test``: what each split is trained against or linked to; ``train+dev``: what a fit on both is
    trained against), the counts."""

    spec: LinkingSpec
    queries: dict[str, list[Query]]
    dictionaries: dict[str, Dictionary]
    counts: dict[str, dict[str, Any]]


def load_linking_data(dataset: str, data_dir: Path | None, *, max_eval_examples: int | None = None) -> LinkingData:
    """Read, preprocess and count ``dataset`` (module docstring).

    Raises:
        DownstreamError: unknown dataset; DatasetUnavailableError: files missing; DataFormatError: a bad line.
    """
    spec = linking_spec(dataset)
    files = locate(spec, data_root(data_dir))
    typos = read_typos(files["typos"]) if "typos" in files else None
    concepts = read_medic(files["vocabulary"]) if "vocabulary" in files else []
    raw = {
        split: document_queries(read_corpus(files[split], entity_type=spec.entity_type), typos=typos)
        for split in ("train", "dev", "test")
    }
    # BioSyn's chain: train filtered by the vocabulary's dictionary; dev by that plus the kept training mentions;
    # test by that plus the kept development mentions. Without a vocabulary (chemicals), the dictionary is the
    # annotations' own: every training and development mention with an id adds its name.
    vocabulary = build_dictionary(concepts)
    queries, dropped = {}, {}
    queries["train"], dropped["train"] = linkable(raw["train"], vocabulary if concepts else None)
    dev_dictionary = vocabulary.copy()
    add_queries(dev_dictionary, queries["train"])
    queries["dev"], dropped["dev"] = linkable(raw["dev"], dev_dictionary)
    test_dictionary = dev_dictionary.copy()
    add_queries(test_dictionary, queries["dev"] if concepts else linkable(raw["dev"], None)[0])
    queries["test"], dropped["test"] = linkable(raw["test"], test_dictionary)
    # what a fit on train + dev trains against (--train-on train+dev): the vocabulary, or the annotations' names
    dictionaries = {"train": vocabulary if concepts else dev_dictionary, "dev": dev_dictionary, "test": test_dictionary,
                    "train+dev": vocabulary if concepts else test_dictionary}  # fmt: skip
    counts = {}
    for split in ("train", "dev", "test"):
        if split != "train" and max_eval_examples is not None:
            queries[split] = queries[split][:max_eval_examples]
        kept = queries[split]
        counts[split] = {
            "file": str(files[split]), "mentions": len(raw[split]), "queries": len(kept), "dropped": dropped[split],
            "composite": sum(len(q.parts) > 1 for q in kept), "dictionary_names": len(dictionaries[split]),
            "dictionary_concepts": len(dictionaries[split].id_set()),
        }  # fmt: skip
    return LinkingData(spec=spec, queries=queries, dictionaries=dictionaries, counts=counts)


@dataclass
class Linked:
    """The linking of one split's queries: per query, per part, the candidates (dictionary indices and
    scores, best first), and the metrics."""

    queries: list[Query]
    indices: list[list[list[int]]]
    scores: list[list[list[float]]]
    metrics: dict[str, float]


def link_queries(search, queries: list[Query], dictionary: Dictionary, k: int = NUM_CANDIDATES) -> Linked:
    """Link every part of ``queries`` with ``search(texts, k) -> (indices, scores)`` (a linker's ``search``)
    and score them (:func:`downstream.linking.metrics.accuracy_at_k`)."""
    texts = [part for q in queries for part in q.parts]
    found_indices, found_scores = search(texts, k)
    indices, scores, i = [], [], 0
    for q in queries:
        n = len(q.parts)
        indices.append(found_indices[i : i + n].tolist())
        scores.append(found_scores[i : i + n].tolist())
        i += n
    candidates = [[[dictionary.concept_ids[j] for j in part] for part in parts] for parts in indices]
    return Linked(queries=queries, indices=indices, scores=scores, metrics=accuracy_at_k(queries, candidates))


def write_predictions(path: Path, linked: Linked, dictionary: Dictionary) -> None:
    """``test_predictions.tsv``: per query part, ``pmid, start, end, mention, part, gold ids, correct@1``, then
    the ranked candidates as ``ids:name:score``."""
    lines = ["pmid\tstart\tend\tmention\tpart\tgold_ids\tcorrect_at_1\tcandidates"]
    for q, parts, scores in zip(linked.queries, linked.indices, linked.scores, strict=True):
        for text, cand, score in zip(q.parts, parts, scores, strict=True):
            ok = is_correct(dictionary.concept_ids[cand[0]], q.concept_ids)
            shown = " ; ".join(f"{'|'.join(dictionary.concept_ids[j])}:{dictionary.names[j]}:{s:.4f}" for j, s in zip(cand, score, strict=True))
            lines.append(f"{q.pmid}\t{q.start}\t{q.end}\t{q.text}\t{text}\t{'|'.join(q.concept_ids)}\t{int(ok)}\t{shown}")
    atomic_write_text(path, "\n".join(lines) + "\n")


def write_errors(path: Path, linked: Linked, dictionary: Dictionary) -> int:
    """``errors.tsv``: each query part whose first candidate is wrong: the mention and part, the gold concept(s)
    and their names, the predicted concept(s), the dictionary name matched, their names and the score.

    Returns:
        The number of wrong parts written.
    """
    name = dictionary.preferred
    lines = ["pmid\tstart\tend\tmention\tpart\tgold_ids\tgold_names\tpredicted_ids\tpredicted_names\tmatched_name\tscore"]
    for q, parts, scores in zip(linked.queries, linked.indices, linked.scores, strict=True):
        for text, cand, score in zip(q.parts, parts, scores, strict=True):
            predicted = dictionary.concept_ids[cand[0]]
            if is_correct(predicted, q.concept_ids):
                continue
            lines.append("\t".join([
                q.pmid, str(q.start), str(q.end), q.text, text, "|".join(q.concept_ids),
                " | ".join(name.get(c, "?") for c in q.concept_ids), "|".join(predicted),
                " | ".join(name.get(c, "?") for c in predicted), dictionary.names[cand[0]], f"{score[0]:.4f}",
            ]))  # fmt: skip
    atomic_write_text(path, "\n".join(lines) + "\n")
    return len(lines) - 1


def run_sparse(settings, data: LinkingData) -> list[dict[str, Any]]:
    """The sparse linker's one trial: the n-gram range chosen on dev, then the test set (module docstring)."""
    from downstream.linking.saved import save_linker
    from downstream.linking.sparse import SparseLinker

    started = time.perf_counter()
    tried = []
    for ngram_range in SPARSE_NGRAM_RANGES:
        linker = SparseLinker(data.dictionaries["dev"].names, ngram_range=ngram_range)
        dev = link_queries(linker.search, data.queries["dev"], data.dictionaries["dev"])
        tried.append({"ngram_range": list(ngram_range), "dev": dev.metrics})
        logger.info("sparse, character %d-%d-grams: dev accuracy@1 %.4f", *ngram_range, dev.metrics["accuracy_at_1"])
    metric = settings.metric.removeprefix("eval_")  # --metric: accuracy_at_1 (default) or accuracy_at_5
    best = max(range(len(tried)), key=lambda i: (tried[i]["dev"][metric], -i))
    ngram_range = SPARSE_NGRAM_RANGES[best]
    dev_seconds = time.perf_counter() - started
    started = time.perf_counter()
    linker = SparseLinker(data.dictionaries["test"].names, ngram_range=ngram_range)
    test = link_queries(linker.search, data.queries["test"], data.dictionaries["test"])
    test_seconds = time.perf_counter() - started
    trial_dir = Path(settings.output_dir) / "trial-0"
    trial_dir.mkdir(parents=True, exist_ok=True)
    write_predictions(trial_dir / "test_predictions.tsv", test, data.dictionaries["test"])
    errors = write_errors(trial_dir / "errors.tsv", test, data.dictionaries["test"])
    record = {
        "trial_index": 0, "seed": "-", "best_epoch": None, "linker": "sparse", "ngram_range": list(ngram_range),
        "selection": tried, "dev": tried[best]["dev"], "test": test.metrics, "test_errors": errors,
        "dev_seconds": round(dev_seconds, 2), "test_seconds": round(test_seconds, 2),
        "test_queries_per_second": round(len(test.queries) / test_seconds, 1) if test_seconds else None,
        "predictions_file": str(trial_dir / "test_predictions.tsv"), "errors_file": str(trial_dir / "errors.tsv"),
        "method": "sparse: TF-IDF over character n-grams (BioSyn's sparse score)",
    }  # fmt: skip
    record["linker_dir"] = str(save_linker(trial_dir / "linker", data.dictionaries["test"], data.spec, record, ngram_range=ngram_range,
                                           sparse=linker))  # fmt: skip
    atomic_write_text(trial_dir / "trial.json", json.dumps(record, indent=2))
    return [record]


def _search_grid(encoder, name_embeddings: np.ndarray, sparses: dict, texts: list[str], weights, k: int) -> dict:
    """The ``k`` best names of ``texts`` under ``dense + w * sparse`` for each sparse linker of ``sparses`` (keyed
    by its n-gram range) and each ``w`` of ``weights``; the dense block is computed once per chunk.

    Args:
        encoder: the :class:`~downstream.linking.dense.DenseEncoder`.
        name_embeddings: ``(num_names, hidden)``, the dictionary's names embedded.
        sparses: ``{ngram_range: SparseLinker}``, each over the same names.

    Returns:
        ``{(ngram_range, w): (indices, scores)}``, each ``(len(texts), k)``.
    """
    from downstream.linking.metrics import top_k
    from downstream.linking.sparse import CHUNK

    found: dict[tuple, list] = {(r, w): [] for r in sparses for w in weights}
    embeddings = encoder.embed(texts)  # (len(texts), hidden): as HybridLinker.search embeds them
    for i in range(0, len(texts), CHUNK):
        chunk = texts[i : i + CHUNK]
        dense = embeddings[i : i + CHUNK] @ name_embeddings.T  # (chunk, num_names)
        for ngram_range, sparse in sparses.items():
            scores = sparse.scores(chunk)  # (chunk, num_names)
            for w in weights:
                found[ngram_range, w].append(top_k(dense + w * scores, k))
    return {key: (np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])) for key, blocks in found.items()}


def _fixed_search(found: tuple[np.ndarray, np.ndarray]):
    """A ``search`` that returns already found candidates (the texts are those they were found for)."""
    return lambda texts, k: (found[0][:, :k], found[1][:, :k])


def _finished_trial(trial_dir: Path, fingerprint: str) -> dict[str, Any] | None:
    """The record of a finished dense trial in ``trial_dir`` made with the same settings (its linker still
    there), else None: the same command run again trains only the trials it lacks, as the trial runner does."""
    path = trial_dir / "trial.json"
    try:
        previous = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (ValueError, OSError) as exc:
        logger.warning("%s: unreadable (%s); running the trial again", path, exc)
        return None
    if previous.get("fingerprint") == fingerprint and Path(previous.get("linker_dir", "")).is_dir():
        return previous
    return None


def _fit(settings, dictionary: Dictionary, queries: list[Query], *, seed: int):
    """The dense linker's first stage (:func:`downstream.linking.dense.train_encoder`): a fresh encoder from
    ``settings.checkpoint`` trained by self-alignment on ``dictionary``'s synonyms and ``queries``.

    Returns:
        ``(encoder, number of training pairs, {"steps", "train_loss"})``.
    """
    import torch

    from downstream.linking.dense import DenseEncoder, train_encoder, training_pairs

    torch.manual_seed(seed)
    encoder = DenseEncoder(str(settings.checkpoint))
    pairs = training_pairs(dictionary, queries, seed=seed)
    trained = train_encoder(encoder, pairs, seed=seed, learning_rate=settings.learning_rate,
                            batch_size=settings.per_device_train_batch_size, num_epochs=settings.num_train_epochs,
                            max_steps=settings.max_steps, weight_decay=settings.weight_decay)  # fmt: skip
    return encoder, len(pairs), trained


def _marginalize(encoder, train_dictionary: Dictionary, queries: list[Query], target: Dictionary, target_sparse, *,
                 seed: int, dev: list[Query] | None = None):  # fmt: skip
    """The ``biosyn`` linker's second stage (:mod:`downstream.linking.marginalization`) on ``queries`` against
    ``train_dictionary``, a linker over ``target`` (which starts with ``train_dictionary``'s names) built after
    each epoch and, given ``dev``, scored on it.

    Returns:
        ``(linker, record)``: the :class:`~downstream.linking.dense.HybridLinker` over ``target`` with the
        learned sparse weight, and ``{"marginalization_steps", "marginalization_loss", "marginalization_dev"``
        (per epoch: ``epoch``, ``sparse_weight`` and, given ``dev``, the ``dev`` metrics)``}``.

    Raises:
        ValueError: ``target`` does not start with ``train_dictionary``'s names.
    """
    from downstream.linking import marginalization
    from downstream.linking.dense import HybridLinker
    from downstream.linking.sparse import BIOSYN_NGRAM_RANGE, SparseLinker

    if target.names[: len(train_dictionary)] != train_dictionary.names:
        raise ValueError("the dictionary linked to does not start with the training one")
    encoder.normalize = False  # BioSyn's inner products from here on
    per_epoch, linkers = [], []

    def on_epoch(epoch: int, name_embeddings: np.ndarray, sparse_weight: float) -> None:
        extra = target.names[len(train_dictionary) :]
        embeddings = np.concatenate([name_embeddings, encoder.embed(extra)]) if extra else name_embeddings
        linker = HybridLinker(encoder, target.names, target_sparse, sparse_weight=sparse_weight, name_embeddings=embeddings)
        entry = {"epoch": epoch, "sparse_weight": round(sparse_weight, 4)}
        if dev is not None:
            entry["dev"] = link_queries(linker.search, dev, target).metrics
            logger.info("synonym marginalisation: epoch %d, sparse weight %.3f, dev accuracy@1 %.4f", epoch, sparse_weight,
                        entry["dev"]["accuracy_at_1"])  # fmt: skip
        per_epoch.append(entry)
        linkers[:] = [linker]

    sparse = SparseLinker(train_dictionary.names, ngram_range=BIOSYN_NGRAM_RANGE)
    result = marginalization.train_marginalization(encoder, train_dictionary.names, train_dictionary.concept_ids, sparse,
                                                   queries, seed=seed, epochs=marginalization.EPOCHS, on_epoch=on_epoch)  # fmt: skip
    record = {key: result[key] for key in ("marginalization_steps", "marginalization_loss")}
    return linkers[0], {**record, "marginalization_dev": per_epoch}


def run_dense(settings, data: LinkingData) -> list[dict[str, Any]]:
    """``settings.num_trials`` seeded trials of the dense linker (:mod:`downstream.linking.dense`): trial ``i``
    trains from ``settings.checkpoint`` with seed ``settings.seed + i``, chooses the sparse weight on dev (the
    ``biosyn`` linker: trains on by synonym marginalisation, :func:`_marginalize`, which learns it); with
    ``settings.train_on == "train+dev"`` trains again on the training and development mentions (module
    docstring); scores test and saves the scored linker in ``trial-<i>/linker/``
    (:func:`downstream.linking.saved.save_linker`). A trial already finished with the same settings is reused
    (:func:`_finished_trial`)."""
    from downstream.linking.dense import SPARSE_WEIGHTS, HybridLinker
    from downstream.linking.saved import save_linker
    from downstream.linking.sparse import BIOSYN_NGRAM_RANGE, SparseLinker

    records = []
    dev_dictionary, test_dictionary = data.dictionaries["dev"], data.dictionaries["test"]
    for trial_index in range(settings.num_trials):
        seed = settings.seed + trial_index
        previous = _finished_trial(Path(settings.output_dir) / f"trial-{trial_index}", settings.fingerprint())
        if previous is not None:
            logger.info("trial %d (seed %d): already done, reusing its trial.json", trial_index, seed)
            records.append(previous)
            continue
        started = time.perf_counter()
        encoder, num_pairs, trained = _fit(settings, data.dictionaries["train"], data.queries["train"], seed=seed)
        dev_sparse = SparseLinker(dev_dictionary.names, ngram_range=BIOSYN_NGRAM_RANGE)
        if settings.linker == "biosyn":
            linker, marginalization = _marginalize(encoder, data.dictionaries["train"], data.queries["train"], dev_dictionary,
                                                   dev_sparse, seed=seed, dev=data.queries["dev"])  # fmt: skip
            trained.update(marginalization)
            train_seconds = time.perf_counter() - started
            started = time.perf_counter()
            weight, ngram_range = linker.sparse_weight, BIOSYN_NGRAM_RANGE  # the weight learned
            name_embeddings = linker.name_embeddings
            tried, best = [{"sparse_weight": weight, "dev": marginalization["marginalization_dev"][-1]["dev"]}], 0
        else:
            train_seconds = time.perf_counter() - started
            started = time.perf_counter()
            name_embeddings = encoder.embed(dev_dictionary.names)  # (num_names, hidden), once for the whole grid
            sparses = {dev_sparse.ngram_range: dev_sparse}
            sparses.update({r: SparseLinker(dev_dictionary.names, ngram_range=r) for r in SPARSE_NGRAM_RANGES if r not in sparses})
            texts = [part for q in data.queries["dev"] for part in q.parts]
            found = _search_grid(encoder, name_embeddings, sparses, texts, SPARSE_WEIGHTS, NUM_CANDIDATES)
            tried = [{"ngram_range": list(r), "sparse_weight": w,
                      "dev": link_queries(_fixed_search(found[r, w]), data.queries["dev"], dev_dictionary).metrics}
                     for r in sparses for w in SPARSE_WEIGHTS]  # fmt: skip
            metric = settings.metric.removeprefix("eval_")
            best = max(range(len(tried)), key=lambda i: (tried[i]["dev"][metric], -i))
            weight, ngram_range = tried[best]["sparse_weight"], tuple(tried[best]["ngram_range"])
        dev_seconds = time.perf_counter() - started
        test_sparse = SparseLinker(test_dictionary.names, ngram_range=ngram_range)
        refit: dict[str, Any] = {}
        if settings.train_on == "train+dev":
            started = time.perf_counter()
            queries = data.queries["train"] + data.queries["dev"]
            logger.info("trial %d (seed %d): fitting again on train + dev (%d mentions)", trial_index, seed, len(queries))
            encoder, refit_pairs, refit = _fit(settings, data.dictionaries["train+dev"], queries, seed=seed)
            if settings.linker == "biosyn":
                test_linker, marginalization = _marginalize(encoder, data.dictionaries["train+dev"], queries, test_dictionary,
                                                            test_sparse, seed=seed)  # fmt: skip
                refit.update(marginalization)
                weight = test_linker.sparse_weight  # learned again
            else:
                test_linker = HybridLinker(encoder, test_dictionary.names, test_sparse, sparse_weight=weight)
            refit = {"training_pairs": refit_pairs, **refit, "train_seconds": round(time.perf_counter() - started, 2)}
        else:
            # the test dictionary is the development one with the development mentions' names after it
            extra = test_dictionary.names[len(dev_dictionary) :]
            embeddings = np.concatenate([name_embeddings, encoder.embed(extra)]) if extra else name_embeddings
            test_linker = HybridLinker(encoder, test_dictionary.names, test_sparse, sparse_weight=weight, name_embeddings=embeddings)
        started = time.perf_counter()
        test = link_queries(test_linker.search, data.queries["test"], test_dictionary)
        test_seconds = time.perf_counter() - started
        trial_dir = Path(settings.output_dir) / f"trial-{trial_index}"
        trial_dir.mkdir(parents=True, exist_ok=True)
        write_predictions(trial_dir / "test_predictions.tsv", test, test_dictionary)
        errors = write_errors(trial_dir / "errors.tsv", test, test_dictionary)
        record = {
            "trial_index": trial_index, "seed": seed, "best_epoch": None, "linker": settings.linker,
            "method": METHODS[settings.linker], "train_on": settings.train_on,
            "training_pairs": num_pairs, **trained, "sparse_weight": weight, "ngram_range": list(ngram_range),
            "selection": tried, "dev": tried[best]["dev"], "test": test.metrics, "test_errors": errors,
            "train_seconds": round(train_seconds, 2), "dev_seconds": round(dev_seconds, 2), "test_seconds": round(test_seconds, 2),
            **({"refit": refit} if refit else {}),
            "fingerprint": settings.fingerprint(),
            "predictions_file": str(trial_dir / "test_predictions.tsv"), "errors_file": str(trial_dir / "errors.tsv"),
        }  # fmt: skip
        record["linker_dir"] = str(save_linker(trial_dir / "linker", test_dictionary, data.spec, record, ngram_range=ngram_range,
                                               encoder=encoder, name_embeddings=test_linker.name_embeddings, sparse_weight=weight,
                                               sparse=test_sparse))  # fmt: skip
        atomic_write_text(trial_dir / "trial.json", json.dumps(record, indent=2))
        records.append(record)
    return records
