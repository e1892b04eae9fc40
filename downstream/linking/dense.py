"""The dense linker: a bi-encoder trained by SapBERT's self-alignment (Liu et al., NAACL 2021, "Self-Alignment
Pretraining for Biomedical Entity Representations"; ``cambridgeltl/sapbert`` ``src/metric_learning.py``),
its score added to the sparse one as BioSyn does (Sung et al., ACL 2020, section 3.3).

- **Encoder**: the checkpoint's encoder (``AutoModel``), a name's embedding its ``[CLS]`` vector (SapBERT's
  ``agg_mode="cls"``), names cut to :data:`MAX_NAME_TOKENS` sub-tokens (SapBERT and BioSyn: 25).
- **Training pairs** (:func:`training_pairs`): SapBERT aligns synonyms of one concept; here each dictionary
  name is paired with another name of one of its concepts (drawn with the trial's seed), and each training
  mention, :data:`MENTION_REPEATS` times, with a name of its gold concept (the mentions BioSyn trains on).
  A batch of ``B`` pairs is ``2B`` names labelled by concept.
- **Loss** (:func:`multi_similarity_loss`): the multi-similarity loss (Wang et al., CVPR 2019, eq. 10) over
  the cosine similarities of the batch, on the pairs SapBERT's triplet miner keeps (``TripletMarginMiner``,
  margin 0.2, ``type_of_triplets="all"``); SapBERT's constants ``alpha=1, beta=60, base=0.5``
  (``losses.MultiSimilarityLoss(alpha=1, beta=60, base=0.5)``).
- **Score**: ``dense + sparse_weight * sparse`` (BioSyn's ``hybrid`` score mode; BioSyn learns
  ``sparse_weight`` and fixes the sparse score's character n-grams at 1-2; here both are chosen together on the
  development set, the weight among :data:`SPARSE_WEIGHTS`, the n-gram range among
  :data:`downstream.linking.run.SPARSE_NGRAM_RANGES`), both cosines. The search scores the dense half against
  every name and the sparse half exactly only where it can change the best names
  (:meth:`~downstream.linking.sparse.SparseLinker.hybrid_search`).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

import numpy as np

from downstream.linking.dictionary import Dictionary
from downstream.linking.preprocess import Query
from downstream.threads import map_on_threads

logger = logging.getLogger(__name__)

#: Sub-tokens kept of a name (SapBERT's and BioSyn's ``max_length``).
MAX_NAME_TOKENS = 25

#: Names run through the encoder at a time in a training step, grouped by length (:meth:`DenseEncoder.forward`):
#: small enough that a group pads little, large enough that its matrix products keep the cores busy
#: (``bench/dense_linker_step.py``).
TRAIN_LENGTH_GROUP = 32

#: Texts run through the encoder at a time by :meth:`DenseEncoder.embed`, at most; a batch holds texts of one
#: sub-token length, so nothing is padded. Sorted by characters instead, 256 mentions found in OHSUMED abstracts
#: (4.8 sub-tokens on average, 14 at most) padded to the longest took half again the time that batches of 64 did
#: (2-core machine: 0.96 s against 0.65 s for 1,739 mentions; 32: 0.78 s, 16: 1.1 s); of one length, batches of 32,
#: 64, 128 and 256 took 1.3-1.8 s each for 5,255 such mentions, no size ahead of the others from run to run.
EMBED_BATCH = 64

#: Pairs per training mention in an epoch (:func:`training_pairs`), each with a name of its concept drawn anew.
#: The vocabulary's synonyms outnumber the mentions about 14 to 1 (NCBI-disease: 71,924 names, 5,134 mentions),
#: while BioSyn trains on the mentions alone: repeated, the corpus's own ways of naming a concept weigh more.
#: Fitted on train, seeds 42-44, development accuracy@1 with one pair a mention and with four: NCBI-disease 89.50
#: and 89.88, BC5CDR-disease 88.68 and 88.83 (docs/guides/entity-linking.md, the dense linker's tables).
MENTION_REPEATS = 4

#: SapBERT's multi-similarity constants and miner margin (``src/metric_learning.py``).
MS_ALPHA, MS_BETA, MS_BASE, MINER_MARGIN = 1.0, 60.0, 0.5, 0.2

#: The sparse score's weights tried on the development set (0: dense alone; the larger ones for an encoder
#: trained little, whose cosines differ less from name to name than the sparse ones).
SPARSE_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def multi_similarity_loss(embeddings, labels, *, alpha: float = MS_ALPHA, beta: float = MS_BETA, base: float = MS_BASE,
                          margin: float = MINER_MARGIN):  # fmt: skip
    """SapBERT's loss: the multi-similarity loss on the pairs its triplet miner keeps.

    For anchor ``i`` with positives ``P_i`` (same label) and negatives ``N_i``, over cosine similarities ``S``:
    ``1/alpha log(1 + sum_{P_i} exp(-alpha (S_ik - base))) + 1/beta log(1 + sum_{N_i} exp(beta (S_ik - base)))``
    (Wang et al. 2019, eq. 10), averaged over the anchors. The miner (``type_of_triplets="all"``) keeps the
    triplets ``(i, p, n)`` with ``S_ip - S_in <= margin``: a positive pair is kept when some negative of ``i``
    has ``S_in >= S_ip - margin``, a negative pair when some positive has ``S_ip <= S_in + margin``.

    Args:
        embeddings: ``(n, hidden)`` float tensor.
        labels: ``(n,)`` integer tensor (the concept of each row).

    Returns:
        A scalar tensor (0 when no pair is kept).
    """
    import torch
    import torch.nn.functional as F

    normalized = F.normalize(embeddings, dim=-1)
    sim = normalized @ normalized.T  # (n, n)
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool, device=sim.device)
    pos, neg = same & ~eye, ~same
    inf = torch.finfo(sim.dtype).max
    max_neg = torch.where(neg, sim, -inf).max(dim=1, keepdim=True).values  # (n, 1)
    min_pos = torch.where(pos, sim, inf).min(dim=1, keepdim=True).values  # (n, 1)
    pos_kept = pos & (sim - margin <= max_neg)  # (n, n)
    neg_kept = neg & (sim + margin >= min_pos)
    zero = torch.zeros_like(sim[:, :1])
    pos_term = torch.logsumexp(torch.cat([zero, torch.where(pos_kept, -alpha * (sim - base), -inf)], dim=1), dim=1) / alpha
    neg_term = torch.logsumexp(torch.cat([zero, torch.where(neg_kept, beta * (sim - base), -inf)], dim=1), dim=1) / beta
    return (pos_term + neg_term).mean()


def training_pairs(dictionary: Dictionary, queries: Sequence[Query], *, seed: int,
                   mention_repeats: int = MENTION_REPEATS) -> list[tuple[str, str, str]]:  # fmt: skip
    """``(name, synonym, concept id)`` pairs (module docstring): each name of ``dictionary`` with another name
    of its first concept (names alone in their concept are left out), each training query's name
    ``mention_repeats`` times with a name of its first gold concept (each drawn anew); shuffled with ``seed``."""
    rng = random.Random(seed)
    by_concept: dict[str, list[str]] = {}
    for name, ids in zip(dictionary.names, dictionary.concept_ids, strict=True):
        by_concept.setdefault(ids[0], []).append(name)
    pairs = []
    for concept, names in by_concept.items():
        if len(names) > 1:
            for i, name in enumerate(names):
                other = rng.randrange(len(names) - 1)
                pairs.append((name, names[other + (other >= i)], concept))
    for query in queries:
        names = by_concept.get(query.concept_ids[0])
        if names:
            pairs.extend((query.name, rng.choice(names), query.concept_ids[0]) for _ in range(mention_repeats))
    rng.shuffle(pairs)
    return pairs


class DenseEncoder:
    """A checkpoint's encoder giving L2-normalised ``[CLS]`` embeddings of names.

    Args:
        checkpoint: a folder ``AutoModel`` and the fast tokenizer load. Its weights are loaded in float32 whatever
            the file's type (the shipped checkpoints are float16, in which AdamW's updates overflow to NaN).
        normalize: :meth:`embed` gives L2-normalised vectors (scores are cosines: SapBERT's); ``False``: the raw
            ``[CLS]`` vectors (scores are inner products: BioSyn's, :mod:`downstream.linking.marginalization`).
    """

    def __init__(self, checkpoint: str, *, normalize: bool = True) -> None:
        import torch
        from transformers import AutoModel

        from downstream.checkpoints import load_tokenizer

        self.tokenizer = load_tokenizer(checkpoint)
        self.model = AutoModel.from_pretrained(checkpoint, dtype=torch.float32)
        self.normalize = normalize
        self.threads = 1  # :meth:`embed`'s batches run at once on this many threads (``predict``: one a core)
        self._pool = None  # (threads, ThreadPoolExecutor) once :meth:`embed` has used threads

    def input_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's sub-token ids, ``[CLS]`` and ``[SEP]`` included, cut to :data:`MAX_NAME_TOKENS` (unpadded)."""
        return self.tokenizer(list(texts), truncation=True, max_length=MAX_NAME_TOKENS)["input_ids"]

    def forward(self, texts: Sequence[str], *, group_size: int | None = None):
        """``(len(texts), hidden)`` ``[CLS]`` vectors, with gradients (training).

        Args:
            texts: the names.
            group_size: when given, the texts are sorted by sub-token length and run through the encoder
                ``group_size`` at a time, each group padded to its own longest, and the vectors returned in
                the given order. A name's vector does not depend on its padding (the attention mask), so this
                gives the same vectors as one padded batch for less work: a batch of dictionary names drawn at
                random pads to about three times its real sub-tokens (``bench/dense_linker_step.py``).
        """
        import torch

        ids = self.input_ids(texts)
        size = group_size or len(texts)  # None: one batch, one group
        order = sorted(range(len(texts)), key=lambda i: len(ids[i])) if size < len(texts) else list(range(len(texts)))
        vectors = []
        for start in range(0, len(order), size):
            group = order[start : start + size]
            batch = self.tokenizer.pad({"input_ids": [ids[i] for i in group]}, return_tensors="pt")
            batch = {k: v.to(self.model.device) for k, v in batch.items()}
            vectors.append(self.model(**batch).last_hidden_state[:, 0])  # (group, hidden)
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        return torch.cat(vectors)[inverse.to(vectors[0].device)]  # back in the given order

    def embed(self, texts: Sequence[str], *, batch_size: int = EMBED_BATCH) -> np.ndarray:
        """``(len(texts), hidden)`` float32 embeddings, L2-normalised when the encoder ``normalize`` s (no
        gradients; returned in the given order).

        The texts are tokenized at once and run through the encoder in batches of at most ``batch_size`` texts of
        one sub-token length, with no padding and so no attention mask: a text's vector does not depend on the
        padding, which is work for nothing. Sorted by characters and padded to each batch's longest, the 5,255
        mentions ``predict`` searched in 2,000 OHSUMED abstracts ran through 40,738 positions for 26,053
        sub-tokens, and took 2.0-2.6 s where batches of one length took 1.3-1.8 s (2-core AMD EPYC, two threads, six runs each).

        With :attr:`threads` above 1, that many batches run at once, each on its own Python thread (torch
        releases the GIL inside its kernels): what ``predict`` does, whose torch runs one thread a forward pass
        (:func:`downstream.predict.stream.share_cores`). A batch's embeddings are the same whichever thread
        computes it. On the 2-core machine (AMD EPYC), with one torch thread, the 6,570 new mentions of 2,000
        OHSUMED abstracts took 5.81 s on one Python thread and 3.39 s on two (``mention_embedding_seconds`` of
        ``bench/results/predict-linking-dense-2core-epyc-2026-12-06-2000*.json``, the code before and after)."""
        import torch
        import torch.nn.functional as F

        self.model.eval()
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        if not len(texts):
            return out
        ids = self.input_ids(texts)
        by_length: dict[int, list[int]] = {}
        for i, row in enumerate(ids):
            by_length.setdefault(len(row), []).append(i)

        def run(rows: list[int]) -> None:
            with torch.no_grad():
                input_ids = torch.tensor([ids[i] for i in rows], device=self.model.device)  # (len(rows), length)
                vectors = self.model(input_ids=input_ids).last_hidden_state[:, 0]  # (len(rows), hidden)
                out[rows] = (F.normalize(vectors, dim=-1) if self.normalize else vectors).float().cpu().numpy()

        batches = [rows[start : start + batch_size] for _, rows in sorted(by_length.items())
                   for start in range(0, len(rows), batch_size)]  # fmt: skip
        results, self._pool = map_on_threads(run, batches, self.threads, self._pool, "linker-embed")
        for _ in results:  # each batch writes its own rows of out; an error is raised here
            pass
        return out


def optimizer_step(optimizer, loss, *, finite: bool = True, where: str, hint: str) -> float:
    """One optimizer step on ``loss`` (a scalar tensor): back-propagate, step, clear the gradients; return the
    loss's value. Shared by the dense linker's training loops (:func:`train_encoder`,
    :func:`downstream.linking.marginalization.train_marginalization`).

    Raises:
        ValueError: ``loss`` not finite, or ``finite`` false (the caller's own check), before any update;
            the message names ``where`` and ``hint``.
    """
    import torch

    if not finite or not torch.isfinite(loss):
        raise ValueError(f"{where}: the loss became {loss.item()} ({hint})")
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()


def train_encoder(encoder: DenseEncoder, pairs: list[tuple[str, str, str]], *, seed: int, learning_rate: float,
                  batch_size: int, num_epochs: float, max_steps: int = -1, weight_decay: float = 0.01,
                  length_group: int | None = TRAIN_LENGTH_GROUP) -> dict:  # fmt: skip
    """SapBERT's training loop (AdamW, constant learning rate, ``batch_size`` pairs a step) on ``pairs``.

    A step's ``2 * batch_size`` names go through the encoder ``length_group`` at a time, grouped by length
    (:meth:`DenseEncoder.forward`; ``None``: one padded batch); the loss is over the whole batch either way.

    Returns:
        ``{"steps", "train_loss"}`` (the mean loss of the last epoch's steps).

    Raises:
        ValueError: no pairs, or a loss that is not finite (the step named).
    """
    import torch

    if not pairs:
        raise ValueError("no training pairs: the dictionary has no concept with two names and no training mention")
    torch.manual_seed(seed)
    rng = random.Random(seed)
    labels_of = {c: i for i, c in enumerate(sorted({c for _, _, c in pairs}))}
    optimizer = torch.optim.AdamW(encoder.model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    steps_per_epoch = -(-len(pairs) // batch_size)
    total = max_steps if max_steps > 0 else max(1, round(num_epochs * steps_per_epoch))
    encoder.model.train()
    step, losses = 0, []
    while step < total:
        order = list(range(len(pairs)))
        rng.shuffle(order)
        losses = []
        for start in range(0, len(order), batch_size):
            batch = [pairs[i] for i in order[start : start + batch_size]]
            labels = torch.tensor([labels_of[c] for _, _, c in batch] * 2)  # (2B,)
            texts = [a for a, _, _ in batch] + [b for _, b, _ in batch]
            embeddings = encoder.forward(texts, group_size=length_group)  # (2B, hidden)
            loss = multi_similarity_loss(embeddings, labels.to(embeddings.device))
            finite = bool(torch.isfinite(embeddings).all())
            losses.append(optimizer_step(optimizer, loss, finite=finite, where=f"dense training: step {step}", hint="lower --learning-rate"))
            step += 1
            if step % 50 == 0:
                logger.info("dense training: step %d of %d, loss %.4f", step, total, float(np.mean(losses[-50:])))
            if step >= total:
                break
    return {"steps": step, "train_loss": float(np.mean(losses)) if losses else None}


class HybridLinker:
    """Nearest names by ``dense + sparse_weight * sparse`` (module docstring).

    Args:
        encoder: the trained encoder.
        names: the dictionary's names.
        sparse: a :class:`downstream.linking.sparse.SparseLinker` over the same names (``None``: dense alone).
        sparse_weight: the sparse score's weight.
        name_embeddings: the names' embeddings when already computed, ``(len(names), hidden)``.
    """

    def __init__(self, encoder: DenseEncoder, names: list[str], sparse=None, *, sparse_weight: float = 0.0,
                 name_embeddings: np.ndarray | None = None) -> None:  # fmt: skip
        self.encoder = encoder
        self.names = names
        self.sparse = sparse
        self.sparse_weight = sparse_weight
        self.name_embeddings = encoder.embed(names) if name_embeddings is None else name_embeddings
        self._block = None  # (2, CHUNK, num_names) float32: dense scores and the sparse bounds, reused by :meth:`search`

    @property
    def exact_match_score(self) -> float | None:
        """The score of a text that is one of the names with that name when it is the most any name can have, so
        that name is the text's best; ``None`` otherwise. With L2-normalised embeddings both scores are cosines,
        at most 1 each and 1 for the text itself, so the name scores ``1 + sparse_weight``, the most there is (for
        a weight of at least 0). With raw inner products (the biosyn linker's) another name can score more: ``None``."""
        if not self.encoder.normalize or self.sparse_weight < 0:
            return None
        return 1.0 + (self.sparse_weight if self.sparse is not None else 0.0)

    def scores(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), len(names))`` scores."""
        dense = self.encoder.embed(texts) @ self.name_embeddings.T  # (len(texts), num_names)
        if self.sparse is not None and self.sparse_weight:
            dense += self.sparse_weight * self.sparse.scores(texts)
        return dense

    def search(self, texts: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best names of each text, best first: ``(indices, scores)``, each ``(len(texts), k)``; the same
        as :func:`~downstream.linking.metrics.top_k` over :meth:`scores`, with the sparse score computed exactly
        only for the names that can be among the best (:meth:`~downstream.linking.sparse.SparseLinker.hybrid_search`),
        :data:`~downstream.linking.sparse.CHUNK` texts at a time."""
        from downstream.linking.metrics import top_k
        from downstream.linking.sparse import CHUNK

        if not texts:
            return np.zeros((0, k), dtype=np.int64), np.zeros((0, k), dtype=np.float32)
        embeddings = self.encoder.embed(texts)  # (len(texts), hidden), all at once: batches of like lengths
        if self._block is None:  # kept: new (CHUNK, num_names) blocks each chunk cost their pages' faults each time
            self._block = np.empty((2, CHUNK, len(self.names)), dtype=np.float32)
        blocks = []
        for i in range(0, len(texts), CHUNK):
            chunk = texts[i : i + CHUNK]
            dense = np.matmul(embeddings[i : i + CHUNK], self.name_embeddings.T, out=self._block[0, : len(chunk)])  # (chunk, num_names)
            if self.sparse is not None and self.sparse_weight > 0:
                vectors = self.sparse.vectorizer.transform(chunk)
                blocks.append(self.sparse.hybrid_search(vectors, k, dense=dense, weight=self.sparse_weight,
                                                        bounds=self._block[1]))  # fmt: skip
                continue
            if self.sparse is not None and self.sparse_weight:
                dense += self.sparse_weight * self.sparse.scores(chunk)
            blocks.append(top_k(dense, k))
        return np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])
