"""The MRQA 2019 shared task's files (Fisch et al., 2019) read as the QA kind's examples.

Format (``.jsonl``, ``.jsonl.gz`` as MRQA distributes them): a header line ``{"header": {"dataset", "split"}}``,
then one JSON object per line, a context and its questions::

    {"context": "...", "qas": [{"qid": "...", "question": "...", "answers": ["..."],
                                "detected_answers": [{"text": "...", "char_spans": [[start, end]], ...}]}]}

``char_spans`` are character offsets into ``context`` with an INCLUSIVE end (``context[start:end + 1]``).
Every span of every detected answer becomes a training answer ``(text, start)`` (the first one is trained
on, as the original ELECTRA code does). A span must hold its answer's ``text`` (case aside): one that does
not is moved to the nearest occurrence of the text, as the SQuAD reader moves an ``answer_start``
(:func:`downstream.qa.data.locate_answer`; counted in ``num_relocated``), or dropped when the text is not in
the context (``num_dropped``; a question left without an answer is removed, ``dropped_example_ids``); the scoring answers are the question's ``answers`` (what MRQA's
official ``mrqa_official_eval.py`` reads), else the detected answers' texts. MRQA has no unanswerable
questions (SQuAD 1.1 scoring: exact match and token F1, max over the answers, SQuAD's normalisation).

The original ELECTRA code reads ``finetuning_data/<task>/(train|dev).jsonl`` for its MRQA tasks (``newsqa``,
``naturalqs``, ``triviaqa``, ``searchqa``); the shared task's other sets (``hotpotqa``; out-of-domain dev
sets ``bioasq``, ``drop``, ``duorc``, ``race``, ``relationextraction``, ``textbookqa``) are read the same way.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from bioelectra.textio import read_text
from downstream.errors import DataFormatError
from downstream.qa.data import QaExample, QaSplit, _get, locate_answer

logger = logging.getLogger(__name__)

#: File name endings read as MRQA JSONL.
MRQA_SUFFIXES = (".jsonl", ".jsonl.gz")


def is_mrqa_name(path: str | os.PathLike) -> bool:
    """Whether ``path`` is named as an MRQA file (``.jsonl`` / ``.jsonl.gz``)."""
    return str(path).endswith(MRQA_SUFFIXES)


def _answers(qa: dict, context: str, path: Path, where: str, counts: dict[str, int]) -> list[tuple[str, int]]:
    """The ``(text, start)`` training answers of one MRQA question: every char span of every detected answer
    (inclusive ends), in file order, without repeats; a span that does not hold the answer's text (case
    aside) moved to the text's nearest occurrence (``counts["relocated"]``) or dropped when the text is not in
    the context (``counts["dropped"]``).

    Raises:
        DataFormatError: missing / mistyped fields, a span that is not ``[start, end]`` with
            ``0 <= start <= end < len(context)``.
    """
    answers: list[tuple[str, int]] = []
    detected = _get(qa, "detected_answers", list, path, where)
    if not detected:
        raise DataFormatError(f"{path}: {where}.detected_answers: empty (expected at least one answer with char_spans)")
    for n, answer in enumerate(detected):
        where_n = f"{where}.detected_answers[{n}]"
        text = _get(answer, "text", str, path, where_n)
        spans = _get(answer, "char_spans", list, path, where_n)
        for s, span in enumerate(spans):
            ok = isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in span)
            if not ok or not 0 <= span[0] <= span[1] < len(context):
                raise DataFormatError(
                    f"{path}: {where_n}.char_spans[{s}]: expected [start, end] with 0 <= start <= end < {len(context)} "
                    f"(the context's length; end inclusive), got {span!r:.60}"
                )
            pair = (context[span[0] : span[1] + 1], span[0])
            if text.strip() and pair[0].casefold() != text.casefold():
                found = locate_answer(context, text, span[0])
                if found is None:
                    counts["dropped"] += 1
                    logger.debug("%s: %s.char_spans[%d]: %r is not in the context; dropped", path, where_n, s, text[:60])
                    continue
                counts["relocated"] += 1
                logger.debug("%s: %s.char_spans[%d] reads %r, not %r; moved to %d", path, where_n, s, pair[0][:60], text[:60], found)
                pair = (context[found : found + len(text)], found)
            if pair not in answers:
                answers.append(pair)
    return answers


def _paragraph_examples(paragraph: Any, path: Path, lineno: int, seen: dict[str, str], counts: dict[str, int],
                        dropped_ids: list[str]) -> list[QaExample]:  # fmt: skip
    """The examples of one MRQA line (a context and its questions); ``seen``: question id -> where first seen;
    ``counts`` and ``dropped_ids`` (questions left without an answer) filled in place."""
    where = f"line {lineno}"
    context = _get(paragraph, "context", str, path, where)
    examples = []
    for q, qa in enumerate(_get(paragraph, "qas", list, path, where)):
        where_q = f"{where}: qas[{q}]"
        qid = str(_get(qa, "qid", (str, int), path, where_q))
        if qid in seen:
            raise DataFormatError(f"{path}: {where_q}: duplicate qid {qid!r} (first at {seen[qid]})")
        seen[qid] = where_q
        question = _get(qa, "question", str, path, where_q)
        answers = _answers(qa, context, path, where_q, counts)
        if not answers:
            dropped_ids.append(qid)
            continue
        scored = _get(qa, "answers", list, path, where_q, default=None)
        if scored is not None and not all(isinstance(a, str) for a in scored):
            raise DataFormatError(f"{path}: {where_q}.answers: expected a list of strings")
        examples.append(QaExample(qid, question, context, answers, False, f"{path.name}:{lineno}", qid, list(scored or []) or None))
    return examples


def read_mrqa_file(path: str | os.PathLike) -> QaSplit:
    """Read an MRQA shared-task file (``.jsonl``, ``.gz`` allowed): the header line skipped, one context and
    its questions per line (module docstring). Each context is a document of its own (its ``document_id``:
    file name and line).

    Raises:
        DataFormatError: a line that is not JSON, a missing or mistyped field, a duplicate ``qid``, a bad
            ``char_spans`` entry, or a file without questions; the message names the file, the line and the
            field (``train.jsonl: line 3: qas[0]: missing field 'qid'``).
    """
    path = Path(path)
    text = read_text(path, error=DataFormatError)
    examples: list[QaExample] = []
    seen: dict[str, str] = {}
    counts = {"relocated": 0, "dropped": 0}
    dropped_ids: list[str] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            paragraph = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno}); expected one MRQA object per line") from None
        if isinstance(paragraph, dict) and "header" in paragraph:
            continue
        examples.extend(_paragraph_examples(paragraph, path, lineno, seen, counts, dropped_ids))
    if not examples and not dropped_ids:
        raise DataFormatError(f"{path}: no questions found; expected a header line, then one {{\"context\", \"qas\"}} object per line")
    questions = len(examples) + len(dropped_ids)
    logger.info("%s: %d MRQA questions", path, questions)
    if counts["relocated"] or counts["dropped"]:
        logger.warning(
            "%s: %d questions: %d answers relocated (char_spans not on their text), %d dropped (text not in the "
            "context), %d questions removed for lack of an answer",
            path, questions, counts["relocated"], counts["dropped"], len(dropped_ids),
        )  # fmt: skip
    if not examples:
        raise DataFormatError(f"{path}: no question has an answer in its context ({len(dropped_ids)} questions; the "
                              "detected_answers' texts are not in the contexts)")  # fmt: skip
    return QaSplit(path, examples, False, questions, counts["relocated"], counts["dropped"], dropped_ids)


def read_qa_file(path: str | os.PathLike, *, golden: dict[str, list[str]] | None = None) -> QaSplit:
    """A QA file by its name: MRQA JSONL (``.jsonl`` / ``.jsonl.gz``, :func:`read_mrqa_file`) or SQuAD JSON
    (:func:`downstream.qa.data.read_squad_file`, with ``golden`` answers where given).

    Raises:
        DataFormatError: as the reader of the file's format.
    """
    from downstream.qa.data import read_squad_file

    return read_mrqa_file(path) if is_mrqa_name(path) else read_squad_file(path, golden=golden)
