"""Output formats of ``bioelectra predict``, rendered one prediction at a time so that a run streams them to
disk as they are ready (and a worker process can render its own): :data:`OUTPUT_FORMATS`.

==============  =========================================================================================
``jsonl``       NER: one JSON object per entity (``document, start, end, text, type, score``, and with
                ``--linker`` ``concept_id, concept_name, concept_score`` for the entities linked); RE: one per
                sentence (``document, sentence, label, probabilities``).
``conll``       ``word<TAB>tag`` per word, a blank line after each sentence, ``-DOCSTART- <id>`` and a blank
                line before each document (what :func:`downstream.ner.data.read_ner_file` reads).
``brat``        a folder: ``<safe id>.txt`` (the text) and ``<safe id>.ann`` (``T1<TAB>Disease 10 37<TAB>...``).
``pubtator``    PubTator / BioCreative: ``<id>|t|<title>``, ``<id>|a|<abstract>``, then one
                ``<id><TAB>start<TAB>end<TAB>mention<TAB>type<TAB>concept`` line per entity (the sixth
                column, the concept id, is the linker's, or ``-`` for an entity not linked), a blank line
                after each document.
``bioc``        BioC XML (encoded by the ``bioc`` package): a ``<collection>`` of ``<document>`` elements with a
                ``title`` and an ``abstract`` passage, each entity an ``<annotation>`` (infons ``type`` and
                ``score``, and for a linked entity ``identifier``, ``identifier_name`` and
                ``identifier_score``; a ``<location>`` with offset and length).
==============  =========================================================================================

Offsets are Python string indices (Unicode code points) into the document's text exactly as read, end
exclusive. PubTator and BioC split a document into a title (its first line) and an abstract (the rest, its
further line breaks written as spaces, the same length), so a PubTator or BioC offset is the same number as
ours: the abstract starts one character after the title, as in PubTator. A document of one line is a title
with an empty abstract. A PubTator id cannot hold ``|``, tabs or line breaks: they are written as ``_``.
"""

from __future__ import annotations

import datetime
import json
import re

OUTPUT_FORMATS = ("jsonl", "conll", "brat", "pubtator", "bioc")


def entity_record(entity) -> dict:
    """The JSON object of one entity: ``{"document", "start", "end", "text", "type", "score"}``, and
    ``"concept_id", "concept_name", "concept_score"`` for a linked one."""
    record = {"document": entity.document, "start": entity.start, "end": entity.end, "text": entity.text,
              "type": entity.type, "score": round(float(entity.score), 6)}  # fmt: skip
    if entity.concept_id is not None:
        record.update(concept_id=entity.concept_id, concept_name=entity.concept_name, concept_score=round(float(entity.concept_score), 6))
    return record


def render_entities_jsonl(prediction) -> str:
    """One JSON line per entity of a :class:`~downstream.predict.results.DocumentEntities`."""
    return "".join(json.dumps(entity_record(e), ensure_ascii=False) + "\n" for e in prediction.entities)


def render_conll(prediction) -> str:
    """``-DOCSTART- <id>``, a blank line, then ``word<TAB>tag`` lines with a blank line after each sentence."""
    text = prediction.document.text
    parts = [f"-DOCSTART- {prediction.document.id}\n\n"]
    for sentence in prediction.sentences:
        if sentence.words:
            parts.append("".join(f"{text[w.start:w.end]}\t{w.tag}\n" for w in sentence.words) + "\n")
    return "".join(parts)


def render_brat_ann(prediction) -> str:
    """The ``.ann`` file of one document: ``T<n><TAB><type> <start> <end><TAB><mention>`` per entity."""
    return "".join(f"T{i}\t{e.type} {e.start} {e.end}\t{e.text}\n" for i, e in enumerate(prediction.entities, start=1))


def render_relation_jsonl(prediction) -> str:
    """One JSON line per sentence: ``{"document", "sentence", "label", "probabilities": {label: p}}``."""
    record = {"document": prediction.document, "sentence": prediction.sentence, "label": prediction.label,
              "probabilities": {k: round(float(v), 6) for k, v in prediction.probabilities.items()}}  # fmt: skip
    return json.dumps(record, ensure_ascii=False) + "\n"


_LINE_BREAKS = re.compile(r"[\r\n]")
_PUBTATOR_ID_UNSAFE = re.compile(r"[|\t\r\n]")


def title_and_abstract(text: str) -> tuple[str, str]:
    """``text`` as PubTator's title (up to the first line break) and abstract (after it, its line breaks as
    spaces): ``title + " " + abstract`` has ``text``'s length, so offsets are unchanged."""
    cut = _LINE_BREAKS.search(text)
    if cut is None:
        return text, ""
    return text[: cut.start()], _LINE_BREAKS.sub(" ", text[cut.start() + 1 :])


def render_pubtator(prediction) -> str:
    """One PubTator document: title line, abstract line, one annotation line per entity, a blank line."""
    pmid = _PUBTATOR_ID_UNSAFE.sub("_", prediction.document.id)
    title, abstract = title_and_abstract(prediction.document.text)
    lines = [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
    for e in prediction.entities:
        mention = re.sub(r"\s", " ", e.text)
        lines.append(f"{pmid}\t{e.start}\t{e.end}\t{mention}\t{e.type}\t{e.concept_id or '-'}")
    return "\n".join(lines) + "\n\n"


def bioc_header() -> str:
    """The start of a BioC XML collection: declaration, ``source``, ``date`` (today, ``YYYYMMDD``), ``key``."""
    date = datetime.date.today().strftime("%Y%m%d")
    return ("<?xml version='1.0' encoding='UTF-8'?>\n<!DOCTYPE collection SYSTEM 'BioC.dtd'>\n"
            f"<collection><source>bioelectra predict</source><date>{date}</date><key>bioc.key</key>\n")  # fmt: skip


BIOC_FOOTER = "</collection>\n"


def render_bioc(prediction) -> str:
    """One ``<document>`` element, built with the ``bioc`` package's classes and encoder: passages ``title``
    (offset 0) and ``abstract`` (offset ``len(title) + 1``), each entity an annotation of its passage."""
    from bioc import BioCAnnotation, BioCDocument, BioCLocation, BioCPassage
    from bioc.biocxml.encoder import encode_document
    from lxml import etree

    document = BioCDocument()
    document.id = prediction.document.id
    title, abstract = title_and_abstract(prediction.document.text)
    passages = []
    for kind, offset, text in (("title", 0, title), ("abstract", len(title) + 1, abstract)):
        if text or kind == "title":
            passage = BioCPassage.of_text(text, offset)
            passage.infons["type"] = kind
            document.add_passage(passage)
            passages.append(passage)
    for i, e in enumerate(prediction.entities, start=1):
        annotation = BioCAnnotation()
        annotation.id = f"T{i}"
        annotation.infons["type"] = e.type
        annotation.infons["score"] = f"{float(e.score):.6f}"
        if e.concept_id is not None:
            annotation.infons["identifier"] = e.concept_id
            annotation.infons["identifier_name"] = e.concept_name or ""
            annotation.infons["identifier_score"] = f"{float(e.concept_score):.6f}"
        annotation.add_location(BioCLocation(e.start, e.end - e.start))
        annotation.text = e.text
        passages[0 if e.start <= len(title) or len(passages) == 1 else 1].add_annotation(annotation)
    return etree.tostring(encode_document(document), encoding="unicode", pretty_print=True)


#: Text written before the first document and after the last, per format (the others have none).
HEADERS = {"bioc": bioc_header}
FOOTERS = {"bioc": BIOC_FOOTER}

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_stem(document_id: str) -> str:
    """A file name stem for a document id: runs of characters other than letters, digits, ``.``, ``_`` and
    ``-`` become ``_`` (``data/a.txt:3`` -> ``data_a.txt_3``); never empty, never starting with a dot."""
    stem = _UNSAFE.sub("_", document_id).strip("_") or "document"
    return "_" + stem if stem.startswith(".") else stem
