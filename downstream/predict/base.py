"""What every kind's predictor shares (``bioelectra predict``): the device, the model folder check, the
:class:`Predictor` base class (loading, one batched forward pass). Each kind's own predictor lives in its folder
(:mod:`downstream.ner.predict`, :mod:`downstream.relation.predict`); :mod:`downstream.predict.predictor` loads them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import ClassVar

from downstream.errors import DownstreamError
from downstream.predict.formats import Document
from downstream.predict.results import UNTYPED_ENTITY
from downstream.threads import map_on_threads

# --- predictors -----------------------------------------------------------------------------------------------


def resolve_device(device: str):
    """``torch.device`` for ``auto`` (CUDA when available), ``cpu`` or ``cuda``.

    Raises:
        DownstreamError: ``cuda`` without a CUDA device, or another value.
    """
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise DownstreamError("--device cuda: no CUDA device is available (use --device cpu or auto)")
        return torch.device("cuda")
    raise DownstreamError(f"--device {device!r}: expected auto, cpu or cuda")


def check_model_dir(model_dir: str | Path, kinds: Iterable[str]) -> str:
    """The task kind of a saved fine-tuned model, one of ``kinds`` (those with a predictor: ``"ner"``, token
    classification, and ``"re"``, sequence classification), from its ``config.json``.

    Raises:
        DownstreamError: a missing folder, no ``config.json`` or one that does not parse, or an architecture
            that is neither (a pre-training discriminator, a question answering model, a base model), naming
            the folder, its architectures and what was expected.
    """
    from downstream.trial.evaluate import ARCHITECTURE_KINDS

    model_dir = Path(model_dir)
    expected = ("a fine-tuned model folder: save_pretrained of a token classification (NER) or sequence "
                "classification (RE) model, e.g. a trial's model/")  # fmt: skip
    if not model_dir.exists():
        raise DownstreamError(f"--model {model_dir}: no such folder; expected {expected}")
    if not model_dir.is_dir() or not (model_dir / "config.json").is_file():
        raise DownstreamError(f"--model {model_dir}: no config.json; expected {expected}")
    try:
        architectures = json.loads((model_dir / "config.json").read_text(encoding="utf-8")).get("architectures") or []
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
        raise DownstreamError(f"--model {model_dir}: config.json is not a JSON object ({exc}); expected {expected}") from None
    for arch in architectures:
        for suffix, kind in ARCHITECTURE_KINDS.items():
            if str(arch).endswith(suffix) and kind in kinds:
                return kind
    found = f"architectures {architectures}" if architectures else "config.json names no architectures"
    raise DownstreamError(f"--model {model_dir}: not a NER or RE model ({found}); expected {expected}")


class Predictor:
    """A loaded fine-tuned model (use :func:`load_predictor`).

    Attributes:
        model_dir: the folder it was loaded from.
        kind: ``"ner"`` or ``"re"``.
        labels: the model's labels in id order (``config.id2label``).
        untyped_entity: NER: the type of entities tagged with bare ``B`` / ``I`` labels (the config's
            ``entity_type``, else :data:`UNTYPED_ENTITY`).
        max_seq_length: sub-tokens per model input, ``[CLS]`` and ``[SEP]`` included.
        batch_size: model inputs per forward pass.
    """

    kind = ""
    #: What :attr:`PredictSummary.predictions` counts, for the console (``"entities"``).
    predictions_name: ClassVar[str] = "predictions"

    def __init__(self, model_dir: Path, model, tokenizer, labels: list[str], *, device, max_seq_length: int, batch_size: int,
                 untyped_entity: str = UNTYPED_ENTITY):  # fmt: skip
        self.model_dir = model_dir
        self.model = model
        self.tokenizer = tokenizer
        self.labels = labels
        self.untyped_entity = untyped_entity
        self.device = device
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.forward_threads = 1
        self._pool = None  # (threads, ThreadPoolExecutor) of _map_batches, made when first needed

    #: Output format -> the function rendering one prediction as that format's text (:mod:`downstream.predict.writers`).
    renderers: ClassVar[dict[str, Callable]] = {}

    def predict_entities(self, documents: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator:
        raise DownstreamError(f"--model {self.model_dir}: a relation classification model; it classifies sentences, it does not tag entities")

    def classify(self, sentences: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator:
        raise DownstreamError(f"--model {self.model_dir}: a token classification (NER) model; it tags entities, it does not classify sentences")

    @classmethod
    def auto_model_class(cls):
        """The ``AutoModelFor...`` class of this kind's saved models."""
        raise NotImplementedError

    @classmethod
    def check_labels(cls, labels: list[str], model_dir: Path) -> None:
        """Refuse a saved model whose labels this kind cannot read (raises ``DownstreamError``)."""

    @classmethod
    def check_request(cls, model_dir: Path, *, output_format: str, sources: Sequence[str | Path], input_format: str | None,
                      document_per_file: bool) -> None:  # fmt: skip
        """Refuse an output format or input this kind cannot take, before the model is loaded."""
        if output_format not in cls.renderers:
            raise DownstreamError(f"--format {output_format}: {model_dir} is a {cls.description} model; it writes "
                                  f"{', '.join(cls.renderers)}")  # fmt: skip

    #: What the kind's models are, in messages.
    description = ""

    def predict(self, documents: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator:
        """This kind's predictions over ``documents``, one per input, in input order
        (:meth:`EntityTagger.predict_entities` or :meth:`RelationClassifier.classify`)."""
        raise NotImplementedError

    @staticmethod
    def count(prediction) -> int:
        """The predictions one item holds (entities of a document, or one sentence's label)."""
        raise NotImplementedError

    def render(self, prediction, output_format: str) -> str:
        """One prediction as ``output_format``'s text (for ``brat``: the ``.ann`` file)."""
        return type(self).renderers[output_format](prediction)

    #: Sub-tokens per window above which a forward pass takes fewer than ``batch_size`` windows: a batch holds
    #: at most ``batch_size x BATCH_WIDTH`` sub-tokens, padding included (:meth:`_batches`).
    BATCH_WIDTH: ClassVar[int] = 128

    def _batches(self, order: Sequence[int], widths: Sequence[int]) -> list[list[int]]:
        """Consecutive batches of ``order`` (indices of model inputs sorted by ``widths[i]``, ascending): at most
        :attr:`batch_size` inputs and ``batch_size x BATCH_WIDTH`` sub-tokens each, padded to the widest.

        Why the second bound: the activations of a forward pass grow with its widest input, so that a batch
        of ``batch_size`` inputs of the longest sentences of a corpus set the peak memory, and the larger the
        corpus, the longer its longest sentence: the first 1,000 OHSUMED abstracts have windows of at most 146
        sub-tokens, the first 10,000 of up to 439. Most sentences are shorter than ``BATCH_WIDTH`` and are
        batched as before."""
        budget = self.batch_size * self.BATCH_WIDTH
        batches: list[list[int]] = []
        batch: list[int] = []
        for i in order:
            if batch and (len(batch) >= self.batch_size or (len(batch) + 1) * widths[i] > budget):
                batches.append(batch)
                batch = []
            batch.append(i)
        if batch:
            batches.append(batch)
        return batches

    def _map_batches(self, function: Callable, batches: Sequence) -> Iterator:
        """``function`` of each batch, in order: in this thread, or on :attr:`forward_threads` threads that run
        ahead (:func:`downstream.predict.stream.share_cores`). Each batch's result is its own whatever the
        thread, so the output does not depend on the threads."""
        results, self._pool = map_on_threads(function, batches, self.forward_threads, self._pool, "predict-forward")
        return results

    def _forward(self, rows: Sequence[Sequence[int]]):
        """Softmax over the labels for a batch of unpadded ``input_ids`` rows, padded to the longest.

        Returns:
            probabilities (`torch.FloatTensor` of shape `(batch_size, sequence_length, num_labels)` for NER,
            `(batch_size, num_labels)` for RE), float32 on the CPU.
        """
        import torch

        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows], dtype=torch.long)  # (batch, width)
        attention_mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], dtype=torch.long)  # (batch, width)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device),
                                token_type_ids=torch.zeros_like(input_ids).to(self.device)).logits  # fmt: skip
            return torch.softmax(logits.float(), dim=-1).cpu()


def inference_dtype(device):
    """The weights' dtype for inference on ``device``: bfloat16 on CUDA (tensor cores; the softmax is still
    taken in float32), float32 on the CPU (where bfloat16 matmuls are slower on most processors)."""
    import torch

    return torch.bfloat16 if getattr(device, "type", str(device)) == "cuda" else torch.float32


def chunked(documents: Iterable[Document], size: int) -> Iterator[list[Document]]:
    """``documents`` in lists of ``size`` (the last one shorter)."""
    chunk: list[Document] = []
    for document in documents:
        chunk.append(document)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _as_documents(items: Iterable[Document | str]) -> Iterator[Document]:
    for index, item in enumerate(items):
        yield item if isinstance(item, Document) else Document(str(index), item)

