"""What relation extraction, yes/no question answering, GLUE, sentence similarity and document classification
share: sentence (pair) classification and regression.

These kinds import this module, never the reverse, and none imports another.

Encoded splits: :class:`EncodedReSplit`, one feature row per example plus the statistics of the encoding;
:func:`encode_sentence_pairs` makes one from single sentences or sentence pairs (GLUE, sentence similarity,
document classification's sentences).

Regression (GLUE's STS-B, sentence similarity): one output, ``problem_type="regression"``, the mean squared
error; :func:`first_output` keeps that output of the logits, :func:`regression_scores` gives Pearson and
Spearman correlation. Multi-label classification (document classification): ``problem_type=
"multi_label_classification"``, one sigmoid per label, the binary cross-entropy.

Heads (``RE_HEADS``, ``--re-head``):

``hf``: transformers' ``ElectraForSequenceClassification`` (``ElectraClassificationHead``: dropout, dense
H->H, GELU, dropout, linear H->num_labels over the first token), loadable with
``AutoModelForSequenceClassification``.

``electra``: the original ELECTRA fine-tuning head (google-research/electra,
``finetune/classification/classification_tasks.py``: ``reprs = bert_model.get_pooled_output()``,
``tf.nn.dropout(reprs, keep_prob=0.9)`` in training, ``tf.layers.dense(reprs, num_labels)``; and
``model/modeling.py``: ``pooled_output = sequence_output[:, 0]``, no pooler layer), i.e. dropout + linear
over the final hidden state of ``[CLS]``: :class:`ElectraForRelationClassification`, loadable with its own
``from_pretrained`` (``AutoModelForSequenceClassification`` would build the ``hf`` head instead).

Metrics (:func:`re_metrics`): micro-averaged precision / recall / F1 over the POSITIVE relation labels only, as the benchmarks
define them (BLURB, Gu et al. 2021, section 2.3 / Table 2; BLUE, Peng et al. 2019; BioBERT, Lee et al.
2020): ChemProt over ``CPR:3, CPR:4, CPR:5, CPR:6, CPR:9`` (Krallinger et al. 2017), the negative
``false`` left out; DDI over ``DDI-mechanism, DDI-effect, DDI-advise, DDI-int`` (Segura-Bedmar et al.
2013), ``DDI-false`` left out; GAD the binary precision / recall / F1 of the positive class ``1``, which is
the same formula with one positive label. With ``P`` the positive labels::

    tp = #{i : pred_i = gold_i, gold_i in P}
    precision = tp / #{i : pred_i in P}      recall = tp / #{i : gold_i in P}      F1 = 2PR / (P + R)

A positive example predicted as another positive label counts as a false positive AND a false negative.
Accuracy is over all examples (negatives included). Zero denominators give 0, not NaN.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from transformers import ElectraModel, ElectraPreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

logger = logging.getLogger(__name__)


class ElectraForRelationClassification(ElectraPreTrainedModel):
    """ELECTRA encoder + dropout + linear over ``[CLS]`` (ELECTRA's own fine-tuning head).

    The dropout is ``config.classifier_dropout`` when set, else ``config.hidden_dropout_prob`` (0.1).
    The loss is the mean cross-entropy over the batch (``config.problem_type == "regression"``, one output:
    the mean squared error, as the original's ``RegressionTask``; ``"multi_label_classification"``: the binary
    cross-entropy of one sigmoid per label, averaged over batch and labels, as transformers'
    ``ElectraForSequenceClassification``); ``forward`` takes no ``**kwargs``, so the Trainer
    divides by gradient accumulation steps as it should (the Trainer skips that division for a model
    whose forward takes ``**kwargs``, assuming it normalises by ``num_items_in_batch`` itself).
    """

    accepts_loss_kwargs = False

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.electra = ElectraModel(config)
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.LongTensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        labels: torch.LongTensor | None = None,
    ) -> SequenceClassifierOutput:
        """Args: ``input_ids``, ``attention_mask``, ``token_type_ids`` of shape ``(batch_size, sequence_length)``;
        ``labels`` of shape ``(batch_size,)`` (class ids; float targets for a regression), or
        ``(batch_size, num_labels)`` of 0.0 / 1.0 for a multi-label classification.

        Returns:
            ``SequenceClassifierOutput`` with ``logits`` of shape ``(batch_size, num_labels)`` and ``loss``
            (a scalar) when ``labels`` are given.
        """
        hidden = self.electra(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)[0]
        cls = self.dropout(hidden[:, 0])  # (batch_size, hidden_size)
        logits = self.classifier(cls)  # (batch_size, num_labels)
        loss = None
        if labels is not None and self.config.problem_type == "regression":  # one output, e.g. GLUE's STS-B
            loss = nn.functional.mse_loss(logits.view(-1), labels.view(-1).to(logits.dtype))
        elif labels is not None and self.config.problem_type == "multi_label_classification":
            loss = nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
        elif labels is not None:
            loss = nn.functional.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return SequenceClassifierOutput(loss=loss, logits=logits)


def load_sequence_classifier(checkpoint: str, *, head: str, labels: list[str], vocab_size: int | None = None, **config_overrides):
    """A fresh sequence classifier from ``checkpoint`` (relation extraction, yes/no QA): ``head`` ``electra``
    (:class:`ElectraForRelationClassification`) or ``hf`` (``AutoModelForSequenceClassification``), with
    ``labels`` in id order, fp32 weights (bf16 is autocast), the new head initialised from the current torch
    seed, and the embeddings resized to ``vocab_size`` when given (tokens added to the tokenizer).

    Raises:
        DownstreamError: ``head="electra"`` on a non-ELECTRA checkpoint.
    """
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from downstream.checkpoints import quiet_transformers
    from downstream.errors import DownstreamError

    kwargs = dict(dtype=torch.float32, num_labels=len(labels), id2label=dict(enumerate(labels)),
                  label2id={label: i for i, label in enumerate(labels)}, ignore_mismatched_sizes=True, **config_overrides)  # fmt: skip
    with quiet_transformers():
        if head == "electra":
            model_type = AutoConfig.from_pretrained(checkpoint).model_type
            if model_type != "electra":
                raise DownstreamError(f"--re-head electra needs an ELECTRA checkpoint, {checkpoint} is {model_type!r} (use --re-head hf)")
            model = ElectraForRelationClassification.from_pretrained(checkpoint, **kwargs)
        else:
            model = AutoModelForSequenceClassification.from_pretrained(checkpoint, **kwargs)
        if vocab_size is not None and model.get_input_embeddings().weight.shape[0] != vocab_size:
            model.resize_token_embeddings(vocab_size)
    # A plain mean loss: see NerTask.build_model (the Trainer's loss-scaling trap).
    model.accepts_loss_kwargs = False
    return model


def re_metrics(gold: Sequence[str], predicted: Sequence[str], *, positive_labels: Sequence[str], labels: Sequence[str] | None = None) -> dict:
    """Micro precision / recall / F1 over ``positive_labels``, accuracy, per-class report, confusion matrix.

    Args:
        gold: gold label of each example.
        predicted: predicted label of each example, same length.
        positive_labels: the labels that count (see the module docstring); the others (``false``,
            ``DDI-false``, ``0``) are negatives.
        labels: every label, in report order (default: the positive labels and the labels seen in ``gold``
            and ``predicted``, sorted).

    Returns:
        ``{"precision", "recall", "f1", "accuracy", "num_examples", "num_gold_positive",
        "num_predicted_positive", "true_positives", "positive_labels", "per_class": {label: {"precision",
        "recall", "f1", "support"}}, "confusion": {gold: {predicted: count}}, "mode"}``.

    Raises:
        ValueError: different lengths, or no positive label.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predicted")
    positive = list(positive_labels)
    if not positive:
        raise ValueError("no positive labels: the micro-averaged scores would be undefined")
    order = list(labels) if labels is not None else sorted(set(gold) | set(predicted) | set(positive))
    for label in set(gold) | set(predicted):
        if label not in order:
            order.append(label)
    confusion = {g: {p: 0 for p in order} for g in order}
    for g, p in zip(gold, predicted, strict=True):
        confusion[g][p] += 1

    def ratio(num: int, den: int) -> float:
        return num / den if den else 0.0

    def f1(p: float, r: float) -> float:
        return 2 * p * r / (p + r) if p + r else 0.0

    per_class = {}
    for label in order:
        tp = confusion[label][label]
        pred_n = sum(confusion[g][label] for g in order)
        gold_n = sum(confusion[label].values())
        p, r = ratio(tp, pred_n), ratio(tp, gold_n)
        per_class[label] = {"precision": p, "recall": r, "f1": f1(p, r), "support": gold_n}
    tp = sum(confusion[label][label] for label in positive if label in confusion)
    pred_pos = sum(1 for p in predicted if p in positive)
    gold_pos = sum(1 for g in gold if g in positive)
    precision, recall = ratio(tp, pred_pos), ratio(tp, gold_pos)
    correct = sum(1 for g, p in zip(gold, predicted, strict=True) if g == p)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1(precision, recall),
        "accuracy": ratio(correct, len(gold)),
        "num_examples": len(gold),
        "num_gold_positive": gold_pos,
        "num_predicted_positive": pred_pos,
        "true_positives": tp,
        "positive_labels": positive,
        "per_class": per_class,
        "confusion": confusion,
        "mode": re_metric_mode(positive),
    }


def re_metric_mode(positive_labels: Sequence[str]) -> str:
    """How the RE scores were computed, stated in every RE result."""
    if len(positive_labels) == 1:
        return f"binary precision/recall/F1 of the positive class {positive_labels[0]!r}"
    return f"micro-averaged precision/recall/F1 over the positive labels {', '.join(positive_labels)} (negative label excluded)"


#: ``--re-head`` choices -> the model class used.
RE_HEADS = {"electra": "ElectraForRelationClassification", "hf": "AutoModelForSequenceClassification"}


@dataclass
class EncodedReSplit:
    """Model inputs of one split: one feature per example.

    Attributes:
        features: dicts with ``input_ids``, ``token_type_ids`` (lists of ints, unpadded) and ``labels`` (an int).
        example_index: for each feature, the position of its example in the split (features may be sorted
            by length).
        stats: ``examples``, ``truncated`` (longer than ``max_seq_length``), ``marker_lost`` (a placeholder
            cut away by truncation), ``marker_lost_indices`` (the first 20 such examples' indices),
            ``marker_missing`` (fewer than two argument placeholders in the file's text, before any
            truncation), ``marker_missing_indices`` (the first 20), ``subtokens``.
    """

    features: list[dict]
    example_index: list[int]
    stats: dict[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> dict:
        return self.features[index]


def encode_sentence_pairs(examples: Sequence, tokenizer, target_of: Callable[[Any], Any], *, max_seq_length: int,
                          sort_by_length: bool) -> EncodedReSplit:  # fmt: skip
    """``[CLS] a [SEP]`` or ``[CLS] a [SEP] b [SEP]`` per example, at most ``max_seq_length`` sub-tokens (a pair
    loses tokens from its longer segment first, ``truncation="longest_first"``, as BERT's
    ``_truncate_seq_pair`` in the original ELECTRA code's ``classification_tasks.py``).

    Args:
        examples: objects with ``text_a``, ``text_b`` (``None``: a single sentence) and ``label``.
        tokenizer: a fast tokenizer.
        target_of: the training target of an example's ``label`` (a class id, a score, a list of 0.0 / 1.0).
        max_seq_length: sub-tokens per input, ``[CLS]`` and ``[SEP]`` included.
        sort_by_length: put the features in length order (``example_index`` maps them back to ``examples``).

    Returns:
        An :class:`EncodedReSplit`; ``stats``: ``examples``, ``truncated`` (examples cut), ``subtokens``.
    """
    rows, truncated = [], 0
    for example in examples:
        encoded = tokenizer(example.text_a, example.text_b, truncation="longest_first", max_length=max_seq_length, verbose=False)
        if len(encoded["input_ids"]) == max_seq_length:
            full = tokenizer(example.text_a, example.text_b, truncation=False, verbose=False)
            truncated += len(full["input_ids"]) > max_seq_length
        rows.append({"input_ids": encoded["input_ids"], "token_type_ids": encoded["token_type_ids"], "labels": target_of(example.label)})
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]["input_ids"])) if sort_by_length else list(range(len(rows)))
    stats = {"examples": len(rows), "truncated": truncated, "subtokens": sum(len(r["input_ids"]) for r in rows)}
    return EncodedReSplit(features=[rows[i] for i in order], example_index=order, stats=stats)


def encode_pair_splits(examples: Mapping[str, Sequence], tokenizer, target_of: Callable[[Any], Any], *,
                       max_seq_length: int, unit: str) -> dict[str, EncodedReSplit]:  # fmt: skip
    """:func:`encode_sentence_pairs` of every split: ``train`` in file order, the others in length order (evaluation
    batches of alike lengths); the examples cut to ``max_seq_length`` logged per split.

    Args:
        examples: split name -> its examples (``text_a``, ``text_b``, ``label``).
        tokenizer, target_of, max_seq_length: as :func:`encode_sentence_pairs`.
        unit: what an example is, for the log line (``"pairs"``, ``"sentences"``, ``"examples"``).

    Returns:
        split name -> its :class:`EncodedReSplit`.
    """
    encoded = {}
    for name, items in examples.items():
        encoded[name] = encode_sentence_pairs(items, tokenizer, target_of, max_seq_length=max_seq_length,
                                              sort_by_length=name != "train")  # fmt: skip
        if encoded[name].stats["truncated"]:
            logger.info("%s: %d of %d %s cut to %d sub-tokens", name, encoded[name].stats["truncated"], len(items), unit,
                        max_seq_length)  # fmt: skip
    return encoded


def first_output(logits, labels=None):
    """``preprocess_logits_for_metrics`` of a one-output regression: the output ``(batch_size,)`` of logits of
    shape ``(batch_size, 1)`` (the first of a tuple of outputs)."""
    logits = logits[0] if isinstance(logits, tuple | list) else logits
    return logits[..., 0]


def regression_scores(gold: Sequence[float], predicted: Sequence[float]) -> dict[str, Any]:
    """``pearson``, ``spearman`` and ``mse`` of predicted against gold scores (GLUE's STS-B, BIOSSES):
    ``scipy.stats.pearsonr`` / ``spearmanr``, and the mean squared error on the scores' own scale, as the
    original ELECTRA code's ``RegressionScorer``. A correlation with a constant is undefined: 0.0 is reported
    with ``constant_predictions`` set, so that the best-epoch selection still compares numbers (NaN never
    compares).

    Raises:
        ValueError: different lengths, or fewer than two examples.
    """
    import numpy as np
    from scipy.stats import pearsonr, spearmanr

    if len(gold) != len(predicted) or len(gold) < 2:
        raise ValueError(f"{len(gold)} gold scores and {len(predicted)} predicted: expected the same number, at least two")
    g = np.asarray(gold, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    scores: dict[str, Any] = {"mse": float(np.mean((g - p) ** 2)), "num_examples": len(g)}
    if np.ptp(g) == 0 or np.ptp(p) == 0:  # a correlation with a constant is undefined
        scores.update(pearson=0.0, spearman=0.0, constant_predictions=True)
        return scores
    scores["pearson"] = float(pearsonr(g, p)[0])
    scores["spearman"] = float(spearmanr(g, p)[0])
    return scores
