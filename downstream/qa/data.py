"""Extractive question answering, from files to the model and back: reading SQuAD 1.1 / 2.0 files
(COVID-QA, BioASQ in SQuAD form) and a seeded split by document. The windows over long contexts and the
answers taken back from start / end logits are in :mod:`downstream.qa.spans`; the metrics in
:mod:`downstream.qa.metrics`.
"""


from __future__ import annotations

import json
import logging
import math
import os
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bioelectra.textio import read_text
from downstream.errors import DataFormatError

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------- reading


@dataclass
class QaExample:
    """One question on one context.

    Attributes:
        id: the question's ``id`` (as a string; COVID-QA's are integers in the file).
        question: the question text.
        context: the paragraph (COVID-QA: the whole article).
        answers: ``(text, start)`` pairs with ``context[start:start + len(text)] == text`` (characters).
        is_impossible: SQuAD 2.0 unanswerable question (``answers`` is then empty).
        document_id: the paragraph's ``document_id``, else the article's ``title``, else the article index.
        question_id: the question this example answers; several examples (BioASQ: one per snippet) with the
            same one are scored as one question (:func:`pool_by_question`). Default: ``id``.
        scored_answers: the texts scored against, where they are not the ``answers``' texts (MRQA: its
            ``answers`` list, which ``mrqa_official_eval.py`` reads; ``answers`` are the spans trained on).

    An answer whose start is -1 comes from a golden answers file: scored, never trained on.
    """

    id: str
    question: str
    context: str
    answers: list[tuple[str, int]]
    is_impossible: bool = False
    document_id: str = ""
    question_id: str = ""
    scored_answers: list[str] | None = None

    def __post_init__(self) -> None:
        if not self.question_id:
            self.question_id = self.id

    @property
    def gold_texts(self) -> list[str]:
        """The gold answer texts for scoring (``[""]`` for an impossible question)."""
        if self.is_impossible:
            return [""]
        return list(self.scored_answers) if self.scored_answers else [text for text, _ in self.answers]


@dataclass
class QaSplit:
    """The examples of one SQuAD-format file (or a part of one, see :func:`split_by_document`).

    ``num_relocated``: answers whose text was not at ``answer_start`` and was found elsewhere in the context;
    ``num_dropped``: answers whose text is nowhere in the context; ``dropped_example_ids``: answerable
    questions left without any answer by that (removed from ``examples``, so never trained on a wrong span).
    """

    path: Path
    examples: list[QaExample]
    version_2: bool = False
    num_questions: int = 0
    num_relocated: int = 0
    num_dropped: int = 0
    dropped_example_ids: list[str] = field(default_factory=list)
    pooled: bool = False

    def questions(self) -> list[QaExample]:
        """The first example of each question (``question_id``), in file order: the units scored."""
        first: dict[str, QaExample] = {}
        for example in self.examples:
            first.setdefault(example.question_id, example)
        return list(first.values())

    @property
    def document_ids(self) -> list[str]:
        """The distinct document ids, in file order."""
        return list(dict.fromkeys(e.document_id for e in self.examples))

    def gold(self) -> dict[str, list[str]]:
        """Question id -> gold texts (``qa_metrics.squad_metrics``' ``gold``; pooled splits: by ``question_id``)."""
        return {e.question_id: e.gold_texts for e in self.questions()}


def _get(obj: Any, key: str, kind: type | tuple[type, ...], path: Path, where: str, *, default: Any = ...) -> Any:
    """``obj[key]`` checked to be of ``kind``; raises :class:`DataFormatError` naming the file and JSON path."""
    if not isinstance(obj, dict):
        raise DataFormatError(f"{path}: {where}: expected a JSON object, got {type(obj).__name__}")
    if key not in obj:
        if default is not ...:
            return default
        raise DataFormatError(f"{path}: {where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, (str, int))):
        expected = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise DataFormatError(f"{path}: {where}.{key}: expected {expected}, got {type(value).__name__} {value!r:.60}")
    return value


def locate_answer(context: str, text: str, start: int) -> int | None:
    """Where ``text`` is in ``context``: ``start`` when it is there, else the occurrence nearest to ``start``
    (case-sensitive first, then case-insensitive; ties to the earlier one), else ``None``."""
    if 0 <= start and context[start : start + len(text)] == text:
        return start
    pattern = re.escape(text)
    for flags in (0, re.IGNORECASE):
        # overlapping occurrences too: a lookahead match is zero-width, so finditer advances by one character
        starts = [m.start() for m in re.finditer(f"(?={pattern})", context, flags)]
        if starts:
            return min(starts, key=lambda s: (abs(s - start), s))
    return None


def read_golden_factoid(path: str | os.PathLike) -> dict[str, list[str]]:
    """BioASQ golden answers (``{"questions": [{"id", "type", "exact_answer"}]}``): question id -> the
    synonyms of its one answer, for the ``factoid`` questions (``exact_answer``: a list of synonym lists, or
    one list, or one string).

    Raises:
        DataFormatError: not JSON or no ``questions`` list (file named).
    """
    path = Path(path)
    try:
        root = json.loads(read_text(path, error=DataFormatError))
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    questions = root.get("questions") if isinstance(root, dict) else None
    if not isinstance(questions, list):
        raise DataFormatError(f"{path}: expected BioASQ golden answers: an object with a 'questions' list")
    gold: dict[str, list[str]] = {}
    for q in questions:
        if isinstance(q, dict) and q.get("type") == "factoid":
            answer = q.get("exact_answer")
            flat = [answer] if isinstance(answer, str) else [a for item in answer or [] for a in (item if isinstance(item, list) else [item])]
            gold[str(q.get("id"))] = [a for a in flat if isinstance(a, str) and a.strip()]
    return gold


def read_squad_file(path: str | os.PathLike, *, golden: dict[str, list[str]] | None = None) -> QaSplit:
    """Read a SQuAD 1.1 / 2.0 JSON file (``.gz`` allowed): ``{"data": [{"title"?, "paragraphs": [{"context",
    "document_id"?, "qas": [{"id", "question", "answers": [{"text", "answer_start"}], "is_impossible"?}]}]}]}``.

    An answer whose text is not at its ``answer_start`` is moved to the nearest occurrence of its text
    (:func:`locate_answer`; counted in ``num_relocated``) or dropped when the text is not in the context
    (``num_dropped``); an answerable question left without an answer is removed (``dropped_example_ids``).
    Both are logged. The file is SQuAD 2.0 when its ``version`` starts with ``v2`` / ``2`` or any question is
    impossible.

    With ``golden`` (BioBERT's BioASQ files: one paragraph per question and snippet, ids ``<question id>_<n>``),
    examples are grouped by question id (the id up to its last ``_``; ``pooled``), and a question without
    answers in the file takes the golden synonyms as its gold texts (start -1: scored, not trained on).

    Raises:
        DataFormatError: not JSON, or a missing / mistyped field (file and JSON path named, e.g.
            ``data[3].paragraphs[0].qas[5]: missing field 'question'``), an empty answer text, a duplicate
            question id, or an answerable (``is_impossible`` false) question with no answer in the file.
    """
    path = Path(path)
    text = read_text(path, error=DataFormatError)
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    articles = _get(root, "data", list, path, "<root>")
    version = str(root.get("version", ""))
    examples: list[QaExample] = []
    seen: dict[str, str] = {}
    relocated = dropped = questions = 0
    dropped_ids: list[str] = []
    for a, article in enumerate(articles):
        where_a = f"data[{a}]"
        title = _get(article, "title", (str, int), path, where_a, default=None)
        for p, paragraph in enumerate(_get(article, "paragraphs", list, path, where_a)):
            where_p = f"{where_a}.paragraphs[{p}]"
            context = _get(paragraph, "context", str, path, where_p)
            document = _get(paragraph, "document_id", (str, int), path, where_p, default=None)
            document_id = str(document if document is not None else title if title is not None else a)
            for q, qa in enumerate(_get(paragraph, "qas", list, path, where_p)):
                where_q = f"{where_p}.qas[{q}]"
                qid = str(_get(qa, "id", (str, int), path, where_q))
                question = _get(qa, "question", str, path, where_q)
                impossible = _get(qa, "is_impossible", bool, path, where_q, default=False)
                question_id = qid.rsplit("_", 1)[0] if golden is not None else qid
                if golden is not None and not qa.get("answers") and not impossible:
                    if question_id not in golden:
                        raise DataFormatError(f"{path}: {where_q}: question {question_id!r} has no answer in the file nor in the golden answers")
                    if qid in seen:
                        raise DataFormatError(f"{path}: {where_q}: duplicate question id {qid!r} (first at {seen[qid]})")
                    seen[qid] = where_q
                    questions += 1
                    gold_answers = [(text, -1) for text in golden[question_id]]
                    examples.append(QaExample(qid, question, context, gold_answers, False, document_id, question_id))
                    continue
                if qid in seen:
                    raise DataFormatError(f"{path}: {where_q}: duplicate question id {qid!r} (first at {seen[qid]})")
                seen[qid] = where_q
                questions += 1
                answers: list[tuple[str, int]] = []
                raw_answers = [] if impossible else _get(qa, "answers", list, path, where_q)
                if not impossible and not raw_answers:
                    raise DataFormatError(f"{path}: {where_q}: no answers for a question that is not is_impossible")
                for n, answer in enumerate(raw_answers):
                    where_n = f"{where_q}.answers[{n}]"
                    answer_text = _get(answer, "text", str, path, where_n)
                    start = _get(answer, "answer_start", int, path, where_n)
                    if not answer_text:
                        raise DataFormatError(f"{path}: {where_n}.text: empty answer text")
                    found = locate_answer(context, answer_text, start)
                    if found is None:
                        dropped += 1
                        logger.debug("%s: %s: answer %r not in the context; dropped", path, where_n, answer_text[:60])
                        continue
                    if found != start or context[found : found + len(answer_text)] != answer_text:
                        relocated += 1
                        answer_text = context[found : found + len(answer_text)]  # the context's own casing
                    answers.append((answer_text, found))
                if not impossible and not answers:
                    dropped_ids.append(qid)
                    continue
                examples.append(QaExample(qid, question, context, answers, impossible, document_id, question_id))
    version_2 = version.lstrip("v").startswith("2") or any(e.is_impossible for e in examples)
    if relocated or dropped:
        logger.warning(
            "%s: %d questions: %d answers relocated (text not at answer_start), %d dropped (text not in the "
            "context), %d questions removed for lack of an answer",
            path, questions, relocated, dropped, len(dropped_ids),
        )
    return QaSplit(path, examples, version_2, questions, relocated, dropped, dropped_ids, pooled=golden is not None)


# ---------------------------------------------------------------------------------------------- splitting


def split_by_document(
    split: QaSplit,
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 42,
    *,
    names: Sequence[str] = ("train", "dev", "test"),
    by: str = "document_id",
) -> dict[str, QaSplit]:
    """Cut ``split`` into parts by document, so that no document's questions are in two parts (``by=
    "question_id"``: by question, so that no question's snippets are in two parts).

    The distinct documents (file order) are shuffled with ``random.Random(seed)`` and dealt out in that order
    so that each part gets about its fraction of the *questions* (documents differ a lot in how many
    questions they have; COVID-QA: 1 to 113): a document goes to the part whose share of the cumulative
    question count holds the middle of the document's questions. Examples keep their file order.
    Deterministic for a given file and seed. The counts (``num_relocated`` ...) stay on the parent split;
    the parts carry only their examples.

    Raises:
        ValueError: fractions not positive, not summing to 1, not one per name, or a part left without a
            document (too few documents).
    """
    if len(fractions) != len(names):
        raise ValueError(f"{len(fractions)} fractions for {len(names)} parts {list(names)}")
    if any(f <= 0 for f in fractions) or not math.isclose(sum(fractions), 1.0, abs_tol=1e-6):
        raise ValueError(f"fractions must be positive and sum to 1, got {list(fractions)}")
    size: dict[str, int] = {}
    for example in split.examples:
        key = getattr(example, by)
        size[key] = size.get(key, 0) + 1
    documents = list(size)
    random.Random(seed).shuffle(documents)
    total = sum(size.values())
    targets = [total * sum(fractions[: i + 1]) for i in range(len(fractions))]
    part_of: dict[str, int] = {}
    running = 0
    for document in documents:
        middle = running + size[document] / 2
        part_of[document] = next((i for i, target in enumerate(targets) if middle <= target), len(targets) - 1)
        running += size[document]
    parts: dict[str, QaSplit] = {}
    for i, name in enumerate(names):
        examples = [e for e in split.examples if part_of[getattr(e, by)] == i]
        if not examples:
            raise ValueError(f"{split.path}: part {name!r} gets no document ({len(documents)} documents, fractions {list(fractions)})")
        parts[name] = replace(
            split, examples=examples, num_questions=len(examples), num_relocated=0, num_dropped=0, dropped_example_ids=[]
        )
    return parts

