"""A saved fine-tuned model on raw text (``bioelectra predict``): entities with character offsets from a NER
model, relation labels with class probabilities from a RE model.

NER, per document:

1. sentences: :func:`split_sentences` (rule-based; a line break always ends a sentence);
2. words: the model's own fast tokenizer pre-tokenizes each sentence (BERT: whitespace and punctuation), and
   each word's character span is read from the sub-tokens' offset mapping, so offsets point into the
   ORIGINAL text whatever the normalisation (lower-casing, accent stripping) does;
3. windows: a sentence longer than ``max_seq_length - 2`` sub-tokens is cut at word boundaries into
   consecutive windows (:func:`downstream.ner.data.window_spans`, as in fine-tuning), so every word gets exactly
   one prediction and no text is skipped;
4. tags: a word takes the label predicted at its FIRST sub-token (:data:`downstream.ner.data.PIPELINE_AGGREGATION`), the only
   sub-token with a label in training; its score is the softmax probability of that label there;
5. entities: :func:`downstream.predict.results.decode_entities`, the chunking of seqeval's default mode (conlleval): ``B-x I-x ...`` is
   one entity, and an ``I-x`` that does not continue an entity of type ``x`` starts a new one. Its score is
   the mean of its words' scores.

RE: each input is one sentence whose two arguments are replaced by the dataset's placeholders
(``@CHEMICAL$ inhibits @GENE$ .``); it is encoded exactly as in fine-tuning
(:func:`downstream.relation.data.encode_re_split`) and gets the arg-max label and the softmax over all labels.

Input and output formats live in :mod:`downstream.predict.formats`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from downstream.errors import DownstreamError
from downstream.predict.formats import (
    Document,
    input_format_for,
    write_conll,
    write_entities_jsonl,
    write_relations_jsonl,
)
from downstream.predict.results import (
    UNTYPED_ENTITY,
    DocumentEntities,
    Entity,
    RelationPrediction,
    TaggedSentence,
    TaggedWord,
    decode_entities,
)

logger = logging.getLogger(__name__)


from downstream.predict.sentences import split_sentences  # noqa: E402

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


def check_model_dir(model_dir: str | Path) -> str:
    """The task kind of a saved fine-tuned model: ``"ner"`` (token classification) or ``"re"`` (sequence
    classification), from its ``config.json``.

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
            if str(arch).endswith(suffix) and kind in ("ner", "re"):  # predict reads NER and RE models
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

    def predict_entities(self, documents: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator[DocumentEntities]:
        raise DownstreamError(f"--model {self.model_dir}: a relation classification model; it classifies sentences, it does not tag entities")

    def classify(self, sentences: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator[RelationPrediction]:
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

    def predict(self, documents: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator:
        """This kind's predictions over ``documents`` (:meth:`EntityTagger.predict_entities` or
        :meth:`RelationClassifier.classify`)."""
        raise NotImplementedError

    @staticmethod
    def count(prediction) -> int:
        """The predictions one item holds (entities of a document, or one sentence's label)."""
        raise NotImplementedError

    @staticmethod
    def writer(output_format: str) -> Callable:
        """The writer of ``output_format`` (not ``brat``) for this kind's predictions."""
        raise NotImplementedError

    def _forward(self, rows: Sequence[Sequence[int]]):
        """Softmax over the labels for a batch of unpadded ``input_ids`` rows.

        Returns:
            probabilities (`torch.FloatTensor` of shape `(batch_size, sequence_length, num_labels)` for NER,
            `(batch_size, num_labels)` for RE), on the CPU.
        """
        import torch

        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)  # (batch, width)
        attention_mask = torch.zeros((len(rows), width), dtype=torch.long)  # (batch, width)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            attention_mask[i, : len(row)] = 1
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device),
                                token_type_ids=torch.zeros_like(input_ids).to(self.device)).logits  # fmt: skip
            return torch.softmax(logits.float(), dim=-1).cpu()


def _as_documents(items: Iterable[Document | str]) -> Iterator[Document]:
    for index, item in enumerate(items):
        yield item if isinstance(item, Document) else Document(str(index), item)


@dataclass
class _Window:
    document: int  # index in the chunk
    sentence: int
    word_start: int
    input_ids: list[int]
    first_positions: list[int] = field(default_factory=list)


class EntityTagger(Predictor):
    """A token classification (NER) model: :meth:`predict_entities` on whole documents."""

    kind = "ner"

    @classmethod
    def auto_model_class(cls):
        from transformers import AutoModelForTokenClassification

        return AutoModelForTokenClassification

    @classmethod
    def check_labels(cls, labels: list[str], model_dir: Path) -> None:
        from downstream.ner.data import parse_tag

        for label in labels:
            try:
                parse_tag(label)
            except ValueError as exc:
                raise DownstreamError(f"--model {model_dir}: label {label!r} of config.id2label is not an IOB2 tag ({exc})") from None

    def predict(self, documents: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator[DocumentEntities]:
        return self.predict_entities(documents, progress=progress)

    @staticmethod
    def count(prediction: DocumentEntities) -> int:
        return len(prediction.entities)

    @staticmethod
    def writer(output_format: str) -> Callable:
        return write_entities_jsonl if output_format == "jsonl" else write_conll

    #: Documents gathered before their windows are batched together (sorted by length within the chunk).
    chunk_documents = 64

    def predict_entities(self, documents: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator[DocumentEntities]:
        """Entities of each document, in input order (see the module docstring for the steps).

        Args:
            documents: :class:`~downstream.predict.formats.Document` objects, or strings (ids ``"0"``, ``"1"`` ...).
            progress: called with the number of documents finished after each chunk.
        """
        chunk: list[Document] = []
        for document in _as_documents(documents):
            chunk.append(document)
            if len(chunk) >= self.chunk_documents:
                yield from self._tag_chunk(chunk)
                if progress is not None:
                    progress(len(chunk))
                chunk = []
        if chunk:
            yield from self._tag_chunk(chunk)
            if progress is not None:
                progress(len(chunk))

    def sentence_words(self, text: str, spans: Sequence[tuple[int, int]]) -> list[list[tuple[int, int, list[int]]]]:
        """The words of each sentence span of ``text`` as the tokenizer pre-tokenizes them:
        ``[[(start, end, sub_token_ids), ...], ...]`` with offsets into ``text``."""
        if not spans:
            return []
        encoded = self.tokenizer([text[s:e] for s, e in spans], add_special_tokens=False,
                                 return_offsets_mapping=True, verbose=False)  # fmt: skip
        result = []
        for i, (sentence_start, _) in enumerate(spans):
            words: list[tuple[int, int, list[int]]] = []
            previous = object()
            for token_id, word_id, (start, end) in zip(encoded["input_ids"][i], encoded.word_ids(i), encoded["offset_mapping"][i], strict=True):
                if word_id is not None and word_id == previous and words:
                    s, e, pieces = words[-1]
                    words[-1] = (min(s, sentence_start + start), max(e, sentence_start + end), pieces + [token_id])
                else:
                    words.append((sentence_start + start, sentence_start + end, [token_id]))
                previous = word_id
            result.append(words)
        return result

    def _tag_chunk(self, chunk: list[Document]) -> Iterator[DocumentEntities]:
        from downstream.ner.data import window_spans

        budget = self.max_seq_length - 2
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        spans = [split_sentences(d.text) for d in chunk]
        words = [self.sentence_words(d.text, s) for d, s in zip(chunk, spans, strict=True)]
        windows: list[_Window] = []
        for d, doc_words in enumerate(words):
            for s, sentence in enumerate(doc_words):
                for first, end in window_spans([len(w[2]) for w in sentence], budget):
                    window = _Window(d, s, first, [cls_id])
                    for _, _, pieces in sentence[first:end]:
                        window.first_positions.append(len(window.input_ids))
                        window.input_ids.extend(pieces[:budget])  # a word longer than a window keeps its first sub-tokens
                    window.input_ids.append(sep_id)
                    windows.append(window)
        tags = [[[""] * len(sentence) for sentence in doc_words] for doc_words in words]
        scores = [[[0.0] * len(sentence) for sentence in doc_words] for doc_words in words]
        order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids))
        for b in range(0, len(order), self.batch_size):
            batch = [windows[i] for i in order[b : b + self.batch_size]]
            probabilities = self._forward([w.input_ids for w in batch])  # (batch, width, num_labels)
            best, label_ids = probabilities.max(dim=-1)  # (batch, width) each
            for row, window in enumerate(batch):
                for offset, position in enumerate(window.first_positions):
                    tags[window.document][window.sentence][window.word_start + offset] = self.labels[int(label_ids[row, position])]
                    scores[window.document][window.sentence][window.word_start + offset] = float(best[row, position])
        for d, document in enumerate(chunk):
            sentences, entities = [], []
            for s, (start, end) in enumerate(spans[d]):
                tagged = tuple(TaggedWord(w[0], w[1], tags[d][s][i], scores[d][s][i]) for i, w in enumerate(words[d][s]))
                sentences.append(TaggedSentence(start, end, tagged))
                for kind, first, last in decode_entities([w.tag for w in tagged], untyped=self.untyped_entity):
                    begin, finish = tagged[first].start, tagged[last - 1].end
                    score = sum(w.score for w in tagged[first:last]) / (last - first)
                    entities.append(Entity(document.id, begin, finish, document.text[begin:finish], kind, score))
            yield DocumentEntities(document, tuple(sentences), tuple(entities))


class RelationClassifier(Predictor):
    """A sequence classification (RE) model: :meth:`classify` on sentences with entity placeholders."""

    kind = "re"

    @classmethod
    def auto_model_class(cls):
        from transformers import AutoModelForSequenceClassification

        return AutoModelForSequenceClassification

    @classmethod
    def check_request(cls, model_dir: Path, *, output_format: str, sources: Sequence[str | Path], input_format: str | None,
                      document_per_file: bool) -> None:  # fmt: skip
        if output_format != "jsonl":
            raise DownstreamError(f"--format {output_format}: {model_dir} is a relation classification model; its "
                                  "predictions (a label per sentence) are written as jsonl only")  # fmt: skip
        if document_per_file or any(input_format_for(s, input_format) == "pubmed-xml" for s in sources or ["-"]):
            raise DownstreamError(f"--model {model_dir} is a relation classification model: it reads one sentence per "
                                  "line (text), per JSONL record or per TSV row, not whole documents (--document-per-file, PubMed XML)")  # fmt: skip

    def predict(self, documents: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator[RelationPrediction]:
        return self.classify(documents, progress=progress)

    @staticmethod
    def count(prediction: RelationPrediction) -> int:
        return 1

    @staticmethod
    def writer(output_format: str) -> Callable:
        return write_relations_jsonl

    #: Sentences encoded and batched together.
    chunk_sentences = 256

    def placeholders(self) -> list[str]:
        """The entity placeholders the tokenizer was given in fine-tuning: its added tokens among
        :data:`downstream.relation.data.PLACEHOLDERS`, in that order."""
        from downstream.relation.data import PLACEHOLDERS

        added = set(self.tokenizer.get_added_vocab())
        return [t for t in PLACEHOLDERS if t in added]

    def classify(self, sentences: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator[RelationPrediction]:
        """The relation label of each sentence, in input order, encoded as in fine-tuning
        (``[CLS] sentence [SEP]``, cut to ``max_seq_length`` sub-tokens keeping the final ``[SEP]``).

        Logs a warning naming the sentences that contain none of the model's placeholders (the model then
        sees no marked arguments), and one naming sentences with a tab (a TSV file read as plain text?).

        Args:
            sentences: :class:`~downstream.predict.formats.Document` objects or strings.
            progress: called with the number of sentences finished after each chunk.
        """
        chunk: list[Document] = []
        for sentence in _as_documents(sentences):
            chunk.append(sentence)
            if len(chunk) >= self.chunk_sentences:
                yield from self._classify_chunk(chunk)
                if progress is not None:
                    progress(len(chunk))
                chunk = []
        if chunk:
            yield from self._classify_chunk(chunk)
            if progress is not None:
                progress(len(chunk))

    def _classify_chunk(self, chunk: list[Document]) -> Iterator[RelationPrediction]:
        from downstream.relation.data import ReExample, ReSplit, add_placeholder_tokens, encode_re_split

        placeholders = self.placeholders()
        if placeholders:
            without = [d.id for d in chunk if not any(t in d.text for t in placeholders)]
            if without:
                logger.warning("%d sentence(s) contain none of the model's entity placeholders (%s), e.g. %s; "
                               "the model expects its two arguments marked this way",
                               len(without), " ".join(placeholders), ", ".join(without[:5]))  # fmt: skip
        tabbed = [d.id for d in chunk if "\t" in d.text]
        if tabbed:
            logger.warning("%d sentence(s) contain a tab, e.g. %s: a TSV file (index<TAB>sentence<TAB>label) read as "
                           "plain text? Name it .tsv or pass --input-format tsv", len(tabbed), ", ".join(tabbed[:5]))  # fmt: skip
        # Encoding as in training: the labels are placeholders (the first label), never read.
        split = ReSplit(path="input sentences", examples=[ReExample(d.text, self.labels[0], d.id, i + 1) for i, d in enumerate(chunk)])
        encoded = encode_re_split(split, self.tokenizer, {self.labels[0]: 0}, max_seq_length=self.max_seq_length,
                                  placeholder_ids=add_placeholder_tokens(self.tokenizer, placeholders) if placeholders else ())  # fmt: skip
        results: list[RelationPrediction | None] = [None] * len(chunk)
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]["input_ids"]))
        for b in range(0, len(order), self.batch_size):
            batch = order[b : b + self.batch_size]
            probabilities = self._forward([encoded[i]["input_ids"] for i in batch])  # (batch, num_labels)
            for row, i in enumerate(batch):
                position = encoded.example_index[i]
                probs = {label: float(p) for label, p in zip(self.labels, probabilities[row].tolist(), strict=True)}
                document = chunk[position]
                results[position] = RelationPrediction(document.id, document.text, max(probs, key=probs.get), probs)
        yield from results  # type: ignore[misc]



#: Model kind (:func:`check_model_dir`) -> its predictor class.
PREDICTORS: dict[str, type[Predictor]] = {cls.kind: cls for cls in (EntityTagger, RelationClassifier)}

def load_predictor(
    model_dir: str | Path, *, device: str = "auto", max_seq_length: int = 512, batch_size: int = 32
) -> EntityTagger | RelationClassifier:
    """Load a saved fine-tuned model for prediction.

    Args:
        model_dir: a ``save_pretrained`` folder with its tokenizer (a trial's ``model/``).
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
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
    from downstream.settings import check_entity_type
    from downstream.trial.evaluate import model_labels

    model_dir = Path(model_dir)
    predictor_class = PREDICTORS[check_model_dir(model_dir)]
    if max_seq_length < 8:
        raise DownstreamError(f"--max-seq-length {max_seq_length}: expected at least 8 sub-tokens")
    if batch_size < 1:
        raise DownstreamError(f"--batch-size {batch_size}: expected at least 1")
    labels = model_labels(model_dir)
    predictor_class.check_labels(labels, model_dir)
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    untyped_entity = config.get("entity_type") or UNTYPED_ENTITY  # set by whoever saved the model; not required
    try:
        if not isinstance(untyped_entity, str):
            raise ValueError("expected a string")
        check_entity_type(untyped_entity)
    except ValueError as exc:
        raise DownstreamError(f"--model {model_dir}: config.json entity_type {untyped_entity!r}: {exc}") from None
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
    model.to(torch_device).eval()
    return predictor_class(model_dir, model, tokenizer, labels, device=torch_device, max_seq_length=max_seq_length, batch_size=batch_size,
               untyped_entity=untyped_entity)  # fmt: skip
