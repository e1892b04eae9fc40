"""The relation predictor of ``bioelectra predict``: a sequence classification model on sentences.

RE: each input is one sentence whose two arguments are replaced by the dataset's placeholders
(``@CHEMICAL$ inhibits @GENE$ .``); it is encoded exactly as in fine-tuning
(:func:`downstream.relation.data.encode_re_split`) and gets the arg-max label and the softmax over all labels.

"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from downstream.errors import DownstreamError
from downstream.predict.base import Predictor, _as_documents, chunked
from downstream.predict.formats import Document, input_format_for
from downstream.predict.results import RelationPrediction
from downstream.predict.writers import render_relation_jsonl

logger = logging.getLogger(__name__)


class RelationClassifier(Predictor):
    """A sequence classification (RE) model: :meth:`classify` on sentences with entity placeholders."""

    kind = "re"
    predictions_name = "sentences classified"
    description = "relation classification"
    renderers = {"jsonl": render_relation_jsonl}

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
        for chunk in chunked(_as_documents(sentences), self.chunk_sentences):
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
        widths = [len(encoded[i]["input_ids"]) for i in range(len(encoded))]
        order = sorted(range(len(encoded)), key=widths.__getitem__)
        batches = self._batches(order, widths)

        def forward(batch: list[int]):  # (batch, num_labels) probabilities
            return self._forward([encoded[i]["input_ids"] for i in batch])

        for batch, probabilities in zip(batches, self._map_batches(forward, batches), strict=True):
            for row, i in enumerate(batch):
                position = encoded.example_index[i]
                probs = {label: float(p) for label, p in zip(self.labels, probabilities[row].tolist(), strict=True)}
                document = chunk[position]
                results[position] = RelationPrediction(document.id, document.text, max(probs, key=probs.get), probs)
        yield from results  # type: ignore[misc]


