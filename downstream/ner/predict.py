"""The NER predictor of ``bioelectra predict``: a token classification model on whole documents.

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

"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from downstream.errors import DownstreamError
from downstream.predict.base import Predictor, _as_documents, chunked
from downstream.predict.formats import Document
from downstream.predict.results import DocumentEntities, Entity, TaggedSentence, TaggedWord, decode_entities
from downstream.predict.sentences import split_sentences
from downstream.predict.writers import (
    render_bioc,
    render_brat_ann,
    render_conll,
    render_entities_jsonl,
    render_pubtator,
)


@dataclass(slots=True)
class _Window:
    document: int  # index in the chunk
    sentence: int
    word_start: int
    input_ids: list[int]
    first_positions: list[int]  # index in input_ids of each word's first sub-token


@dataclass(slots=True)
class _Words:
    """One sentence's words as the tokenizer pre-tokenizes them."""

    ids: list[int]  # the sentence's sub-token ids, no special tokens
    firsts: list[int]  # index in ``ids`` of each word's first sub-token
    spans: list[tuple[int, int]]  # each word's character span in the document (end exclusive)


class EntityTagger(Predictor):
    """A token classification (NER) model: :meth:`predict_entities` on whole documents."""

    kind = "ner"
    predictions_name = "entities"
    description = "token classification (NER)"
    renderers = {"jsonl": render_entities_jsonl, "conll": render_conll, "brat": render_brat_ann, "pubtator": render_pubtator,
                 "bioc": render_bioc}  # fmt: skip

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

    #: Documents gathered before their windows are sorted by length and batched together: the longer the
    #: chunk, the less padding (abstracts of ~10 sentences: ~2,500 windows per chunk).
    chunk_documents = 256

    def predict_entities(self, documents: Iterable[Document | str], *, progress: Callable[[int], None] | None = None) -> Iterator[DocumentEntities]:
        """Entities of each document, in input order (see the module docstring for the steps).

        Args:
            documents: :class:`~downstream.predict.formats.Document` objects, or strings (ids ``"0"``, ``"1"`` ...).
            progress: called with the number of documents finished after each chunk.
        """
        for chunk in chunked(_as_documents(documents), self.chunk_documents):
            yield from self._tag_chunk(chunk)
            if progress is not None:
                progress(len(chunk))

    def sentence_words(self, text: str, spans: Sequence[tuple[int, int]]) -> list[list[tuple[int, int, list[int]]]]:
        """The words of each sentence span of ``text`` as the tokenizer pre-tokenizes them:
        ``[[(start, end, sub_token_ids), ...], ...]`` with offsets into ``text``."""
        result = []
        for words in self._words([text[s:e] for s, e in spans], [s for s, _ in spans]):
            ends = [*words.firsts[1:], len(words.ids)]
            result.append([(*span, words.ids[f:e]) for span, f, e in zip(words.spans, words.firsts, ends, strict=True)])
        return result

    def _words(self, sentences: list[str], starts: list[int]) -> list[_Words]:
        """The words of each sentence, offsets shifted by the sentence's start: one call of the fast
        tokenizer's backend for all sentences of a chunk (no truncation, no padding). A word is the sub-tokens
        of one pre-tokenizer word id (a sub-token without one is a word of its own); its span runs from the
        smallest start offset of its sub-tokens to the largest end."""
        if not sentences:
            return []
        backend = self.tokenizer.backend_tokenizer
        if backend.truncation is not None:  # a tokenizer.json saved after a truncating call keeps it
            backend.no_truncation()
        if backend.padding is not None:
            backend.no_padding()
        result = []
        for encoding, shift in zip(backend.encode_batch(sentences, add_special_tokens=False), starts, strict=True):
            word_ids, offsets = encoding.word_ids, encoding.offsets
            firsts = [i for i, (w, previous) in enumerate(zip(word_ids, [None, *word_ids][:-1], strict=True)) if w is None or w != previous]
            spans = []
            for first, end in zip(firsts, [*firsts[1:], len(word_ids)], strict=True):
                if end == first + 1:  # most words: one sub-token
                    spans.append((shift + offsets[first][0], shift + offsets[first][1]))
                else:
                    pieces = offsets[first:end]
                    spans.append((shift + min(o[0] for o in pieces), shift + max(o[1] for o in pieces)))
            result.append(_Words(encoding.ids, firsts, spans))
        return result

    def _windows(self, words: list[list[_Words]]) -> list[_Window]:
        """The model inputs of a chunk: ``[CLS] words [SEP]`` per sentence, cut into windows of at most
        ``max_seq_length - 2`` sub-tokens at word boundaries. A window's words are consecutive sub-tokens of
        the sentence; a word longer than a window is alone in its window (``window_spans``) and keeps its
        first ``max_seq_length - 2`` sub-tokens."""
        from downstream.ner.data import window_spans

        budget = self.max_seq_length - 2
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        windows: list[_Window] = []
        for d, doc_words in enumerate(words):
            for s, sentence in enumerate(doc_words):
                firsts = sentence.firsts
                bounds = [*firsts, len(sentence.ids)]
                lengths = [bounds[w + 1] - bounds[w] for w in range(len(firsts))]
                for first, end in window_spans(lengths, budget):
                    begin = firsts[first]
                    ids = sentence.ids[begin : min(bounds[end], begin + budget)]
                    windows.append(_Window(d, s, first, [cls_id, *ids, sep_id], [1 + f - begin for f in firsts[first:end]]))
        return windows

    def _tag_chunk(self, chunk: list[Document]) -> Iterator[DocumentEntities]:
        spans = [split_sentences(d.text) for d in chunk]
        flat = [(d.text[s:e], s) for d, doc_spans in zip(chunk, spans, strict=True) for s, e in doc_spans]
        flat_words = self._words([t for t, _ in flat], [s for _, s in flat])
        words, position = [], 0
        for doc_spans in spans:
            words.append(flat_words[position : position + len(doc_spans)])
            position += len(doc_spans)
        windows = self._windows(words)
        tags = [[["O"] * len(sentence.firsts) for sentence in doc_words] for doc_words in words]
        scores = [[[0.0] * len(sentence.firsts) for sentence in doc_words] for doc_words in words]
        widths = [len(w.input_ids) for w in windows]
        order = sorted(range(len(windows)), key=widths.__getitem__)
        labels = self.labels
        batches = [[windows[i] for i in batch] for batch in self._batches(order, widths)]
        for batch, (best, label_ids) in zip(batches, self._map_batches(self._best_labels, batches), strict=True):
            for row, window in enumerate(batch):
                tag_row, score_row = tags[window.document][window.sentence], scores[window.document][window.sentence]
                row_labels, row_best = label_ids[row], best[row]
                for offset, position in enumerate(window.first_positions):
                    tag_row[window.word_start + offset] = labels[row_labels[position]]
                    score_row[window.word_start + offset] = row_best[position]
        for d, document in enumerate(chunk):
            yield self._document_entities(document, spans[d], words[d], tags[d], scores[d])

    def _best_labels(self, batch: list[_Window]) -> tuple[list[list[float]], list[list[int]]]:
        """The highest probability and its label id at every position of each window: two ``(batch, width)``
        nested lists."""
        best, label_ids = self._forward([w.input_ids for w in batch]).max(dim=-1)
        return best.tolist(), label_ids.tolist()

    def _document_entities(self, document: Document, spans, words, tags, scores) -> DocumentEntities:
        """The tagged sentences of one document and the entities decoded from them."""
        sentences, entities = [], []
        for s, (start, end) in enumerate(spans):
            tagged = tuple(TaggedWord(b, e, tag, score) for (b, e), tag, score in zip(words[s].spans, tags[s], scores[s], strict=True))
            sentences.append(TaggedSentence(start, end, tagged))
            if all(tag == "O" for tag in tags[s]):
                continue  # most sentences: no entity to decode
            for kind, first, last in decode_entities(tags[s], untyped=self.untyped_entity):
                begin, finish = tagged[first].start, tagged[last - 1].end
                score = sum(w.score for w in tagged[first:last]) / (last - first)
                entities.append(Entity(document.id, begin, finish, document.text[begin:finish], kind, score))
        return DocumentEntities(document, tuple(sentences), tuple(entities))
