"""BioSyn's synonym marginalisation (Sung et al., ACL 2020, "Biomedical Entity Representations with Synonym
Marginalization", section 3; ``dmis-lab/BioSyn`` ``train.py``, ``src/biosyn/rerankNet.py``,
``src/biosyn/data_loader.py``): the second stage of the ``biosyn`` linker, after SapBERT's self-alignment
(:mod:`downstream.linking.dense`), as BioSyn is trained from SapBERT in SapBERT's paper (Liu et al. 2021,
table 4).

- **Candidates** (:func:`candidates`): for each training mention, its :data:`TOPK` best dictionary names,
  the first ``TOPK * (1 - DENSE_RATIO)`` by the sparse score (found once: it never changes), the rest the
  best by the dense score not already taken, found again at the start of every epoch with the encoder as it
  is then (BioSyn's iterative candidate retrieval: the model's own hard negatives).
- **Score** of a candidate: ``dense + sparse_weight * sparse``, ``dense`` the inner product of the two
  ``[CLS]`` vectors (not normalised: BioSyn's ``torch.bmm`` of raw vectors), ``sparse`` the TF-IDF cosine,
  ``sparse_weight`` a learned scalar (BioSyn's ``--initial_sparse_weight 0``, its own learning rate
  :data:`SPARSE_WEIGHT_LR`).
- **Loss** (:func:`marginal_nll`): minus the log of the softmax probability summed over the candidates of the
  mention's concept (BioSyn's ``marginal_nll``, eq. 6); a mention with no such candidate adds nothing.
- **Optimiser**: Adam with L2 weight decay 0.01 (BioSyn's ``optim.Adam``), :data:`BATCH_QUERIES` mentions a step.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence

import numpy as np

from downstream.linking.dense import TRAIN_LENGTH_GROUP, optimizer_step
from downstream.linking.metrics import is_correct, top_k
from downstream.linking.preprocess import Query
from downstream.linking.sparse import CHUNK

logger = logging.getLogger(__name__)

#: Candidates per training mention and the share found by the dense score (BioSyn's ``--topk 20``,
#: ``--dense_ratio 0.5``).
TOPK, DENSE_RATIO = 20, 0.5

#: Mentions a step (BioSyn's ``--train_batch_size 16``).
BATCH_QUERIES = 16

#: The encoder's learning rate: BioSyn's 1e-5 for BERT-base, times the 5 that the SapBERT stage takes over
#: SapBERT's 2e-5 for this small encoder (:class:`downstream.linking.task.LinkingTask` ``default_settings``).
LEARNING_RATE = 5e-5

#: The sparse weight's own learning rate, no weight decay (BioSyn's ``RerankNet`` optimiser group).
SPARSE_WEIGHT_LR = 0.01

#: Adam's L2 weight decay (BioSyn's ``--weight_decay 0.01``).
WEIGHT_DECAY = 0.01

#: Epochs over the training mentions. BioSyn trains 10 from BioBERT; after SapBERT's stage, on NCBI-disease
#: (seed 42) a second epoch more than halved the training loss but not the development error (accuracy@1 89.07 after
#: one, 88.95 after two; docs/guides/entity-linking.md), and an epoch costs about 4.5 min on the 2-core CPU.
#: Each epoch's development accuracy is in the trial's record (``marginalization_dev``).
EPOCHS = 1


def training_queries(queries: Sequence[Query]) -> list[tuple[str, tuple[str, ...]]]:
    """``(text, gold ids)`` per part of each training mention (BioSyn trains on composite mentions split): a
    composite whose parts match its ids one to one gives each part its own id, else every part keeps all ids."""
    out = []
    for q in queries:
        one_each = len(q.parts) == len(q.concept_ids) > 1
        out.extend((part, (q.concept_ids[i],) if one_each else q.concept_ids) for i, part in enumerate(q.parts))
    return out


def candidates(sparse_top: np.ndarray, dense_top: np.ndarray, topk: int = TOPK, dense_ratio: float = DENSE_RATIO) -> np.ndarray:
    """BioSyn's candidate lists (``CandidateDataset.__getitem__``): the first ``topk - int(topk * dense_ratio)``
    sparse candidates, then dense ones in rank order, skipping any already taken, up to ``topk``.

    Args:
        sparse_top, dense_top: ``(num_queries, topk)`` dictionary indices, best first.

    Returns:
        ``(num_queries, topk)`` distinct dictionary indices per row.

    Raises:
        ValueError: a row that cannot be filled (fewer than ``topk`` distinct names between the two lists).
    """
    n_sparse = topk - int(topk * dense_ratio)
    out = np.empty((len(sparse_top), topk), dtype=np.int64)
    for row, (sparse, dense) in enumerate(zip(sparse_top, dense_top, strict=True)):
        taken = list(dict.fromkeys(int(i) for i in sparse[:n_sparse]))
        for i in dense:
            if len(taken) == topk:
                break
            if int(i) not in taken:
                taken.append(int(i))
        if len(taken) < topk:
            raise ValueError(f"candidates: query {row} has {len(taken)} distinct names, expected {topk}")
        out[row] = taken
    return out


def marginal_nll(scores, labels):
    """BioSyn's marginal negative log-likelihood (eq. 6, ``rerankNet.marginal_nll``).

    Args:
        scores: ``(num_queries, topk)`` float tensor, the candidates' scores.
        labels: ``(num_queries, topk)`` 0/1 float tensor, 1 for a candidate of the mention's concept.

    Returns:
        The mean over the mentions with at least one positive candidate of
        ``-log(sum_positive softmax(scores))``, its probability clamped to [1e-9, 1] as BioSyn does; a zero
        tensor when no mention has one.
    """
    import torch

    probability = (torch.softmax(scores, dim=-1) * labels).sum(dim=-1)  # (num_queries,)
    probability = probability[labels.sum(dim=-1) > 0]
    if len(probability) == 0:
        return scores.sum() * 0.0
    return -torch.log(probability.clamp(min=1e-9, max=1.0)).mean()


def train_marginalization(encoder, names: list[str], concept_ids: list[tuple[str, ...]], sparse, queries: Sequence[Query], *,
                          seed: int, epochs: int = EPOCHS, learning_rate: float = LEARNING_RATE, batch_queries: int = BATCH_QUERIES,
                          topk: int = TOPK, length_group: int | None = TRAIN_LENGTH_GROUP,
                          on_epoch: Callable[[int, np.ndarray, float], None] | None = None) -> dict:  # fmt: skip
    """Train ``encoder`` (a :class:`downstream.linking.dense.DenseEncoder` with ``normalize=False``) by synonym
    marginalisation (module docstring) on the parts of ``queries`` against the dictionary ``names``.

    Args:
        names, concept_ids: the dictionary searched for candidates.
        sparse: a :class:`downstream.linking.sparse.SparseLinker` over ``names``.
        length_group: names run through the encoder at a time, grouped by length
            (:meth:`~downstream.linking.dense.DenseEncoder.forward`).
        on_epoch: called after each epoch with ``(epoch, name_embeddings, sparse_weight)``, the names' embeddings
            ``(len(names), hidden)`` from the encoder as it then is (those the next epoch's candidates come from).

    Returns:
        ``{"marginalization_steps", "marginalization_loss"`` (the last epoch's mean), ``"sparse_weight"``,
        ``"name_embeddings"`` (the last, ``(len(names), hidden)``)``}``.

    Raises:
        ValueError: no training mention, an encoder that normalises, or a loss that is not finite.
    """
    import torch

    rows = training_queries(queries)
    if not rows:
        raise ValueError("synonym marginalisation: no training mention")
    if len(names) < topk:
        logger.warning("synonym marginalisation: %d dictionary names, fewer than %d candidates: taking them all", len(names), topk)
        topk = len(names)
    if encoder.normalize:
        raise ValueError("synonym marginalisation scores raw [CLS] inner products: give an encoder with normalize=False")
    texts = [text for text, _ in rows]
    chunks = range(0, len(texts), CHUNK)
    sparse_top = np.concatenate([top_k(sparse.scores(texts[i : i + CHUNK]), topk)[0] for i in chunks])  # (n, topk)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    sparse_weight = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([
        {"params": encoder.model.parameters()},
        {"params": [sparse_weight], "lr": SPARSE_WEIGHT_LR, "weight_decay": 0.0},
    ], lr=learning_rate, weight_decay=WEIGHT_DECAY)  # fmt: skip
    name_embeddings = encoder.embed(names)
    step, losses = 0, []
    for epoch in range(1, epochs + 1):
        query_embeddings = encoder.embed(texts)  # (n, hidden)
        dense_top = np.concatenate([top_k(query_embeddings[i : i + CHUNK] @ name_embeddings.T, topk)[0] for i in chunks])
        chosen = candidates(sparse_top, dense_top, topk)  # (n, topk)
        # the chosen names' sparse scores, a chunk of mentions at a time (the whole matrix would be n x names)
        chosen_sparse = np.concatenate([np.take_along_axis(sparse.scores(texts[i : i + CHUNK]), chosen[i : i + CHUNK], axis=1)
                                        for i in chunks]).astype(np.float32)  # fmt: skip
        order = list(range(len(rows)))
        rng.shuffle(order)
        encoder.model.train()
        losses = []
        for start in range(0, len(order), batch_queries):
            batch = order[start : start + batch_queries]
            cand = chosen[batch]  # (b, topk)
            labels = torch.tensor([[float(is_correct(concept_ids[j], rows[q][1])) for j in row] for q, row in zip(batch, cand, strict=True)])
            unique = list(dict.fromkeys(int(j) for j in cand.ravel()))  # each name through the encoder once
            position = {j: i for i, j in enumerate(unique)}
            vectors = encoder.forward([texts[q] for q in batch] + [names[j] for j in unique], group_size=length_group)
            query_vectors, name_vectors = vectors[: len(batch)], vectors[len(batch) :]
            picked = name_vectors[torch.tensor([[position[int(j)] for j in row] for row in cand])]  # (b, topk, hidden)
            dense = torch.einsum("bh,bkh->bk", query_vectors, picked)
            scores = dense + sparse_weight * torch.from_numpy(chosen_sparse[batch])
            where = f"synonym marginalisation: step {step}"
            losses.append(optimizer_step(optimizer, marginal_nll(scores, labels), where=where, hint="lower the learning rate"))
            step += 1
            if step % 50 == 0:
                logger.info("synonym marginalisation: epoch %d, step %d, loss %.4f, sparse weight %.3f", epoch, step,
                            float(np.mean(losses[-50:])), sparse_weight.item())  # fmt: skip
        name_embeddings = encoder.embed(names)
        if on_epoch is not None:
            on_epoch(epoch, name_embeddings, sparse_weight.item())
    return {"marginalization_steps": step, "marginalization_loss": float(np.mean(losses)) if losses else None,
            "sparse_weight": sparse_weight.item(), "name_embeddings": name_embeddings}  # fmt: skip
