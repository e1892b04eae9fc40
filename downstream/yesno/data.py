"""Yes/no question answering data: PubMedQA PQA-L and BioASQ yes/no (BioBERT's SQuAD-style files), its
official splits, and the question + passage pairs the classifier reads.

Formats:

- **PubMedQA** (Jin et al. 2019, ``pubmedqa/pubmedqa`` ``data/ori_pqal.json``): one JSON object keyed by
  PMID; each value has ``QUESTION``, ``CONTEXTS`` (the abstract's paragraphs without its conclusion),
  ``final_decision`` (``yes`` / ``no`` / ``maybe``) and more (``LONG_ANSWER``, the conclusion, is not read:
  the reasoning-required setting that BLURB uses). One example per question: question + the paragraphs
  joined by spaces.
- **BioASQ yes/no in BioBERT's form** (``datasets/QA/BioASQ/BioASQ-{train,test}-yesno-7b.json``): SQuAD-style
  ``data -> paragraphs -> {context, qas: [{id, question, answers, is_impossible?}]}``, one paragraph per
  (question, snippet); the id is the BioASQ question id, ``_`` and the snippet's number. ``answers`` is
  ``"yes"`` / ``"no"`` (or a list holding one such string, or SQuAD answer objects whose ``text`` is one);
  the test file has none and its answers come from BioASQ's golden file (``7B_golden.json``: ``questions``
  with ``id``, ``type`` and ``exact_answer``). A question is answered from all its snippets: the class
  probabilities of its snippets are averaged (BioBERT's yes/no prediction averages the snippets' scores).
- **BioASQ yes/no in BLURB's form** (the output of BLURB's data-generation pipeline, ``qa/bioasq-blurb/``):
  ``train.tsv``, ``dev.tsv``, ``test.tsv`` **without a header**, ``qid<TAB>question<TAB>passage<TAB>label``, one
  line per question (the passage is all its snippets joined), label ``yes`` / ``no``. Lines are split on tabs
  only: the passages hold raw ``"`` characters, and a CSV reader with a header row would alter them or take the
  first question for a header (``../shared/data/SOURCES.md``, section 12).

The PubMedQA split is the official one (``preprocess/split_dataset.py`` of ``pubmedqa/pubmedqa``, run as
``split_dataset.py pqal``), reproduced by :func:`pubmedqa_split`: 500 test questions and ten folds of the
other 500; BLURB (Gu et al. 2021) trains on fold 0's 450 and develops on its 50.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bioelectra.textio import read_text
from downstream.errors import DataFormatError, DatasetUnavailableError

logger = logging.getLogger(__name__)

#: The answer classes, in report order (BioASQ has no "maybe").
YESNO_LABELS = ("yes", "no", "maybe")

#: ``random.seed`` of PubMedQA's ``split_dataset.py`` (called once, at import).
PUBMEDQA_SPLIT_SEED = 0

#: The cross-validation fold BLURB trains and develops on (``pqal_fold0``).
PUBMEDQA_BLURB_FOLD = 0


@dataclass
class YesNoExample:
    """One question with one passage.

    Attributes:
        id: the example's id (PubMedQA: the PMID; BioASQ: the question id, ``_``, the snippet's number).
        question: the question text.
        context: the passage (PubMedQA: the abstract without its conclusion; BioASQ: one snippet).
        label: ``yes``, ``no`` or ``maybe``.
        question_id: the question it answers; examples with the same one are pooled at prediction.
    """

    id: str
    question: str
    context: str
    label: str
    question_id: str


@dataclass
class YesNoSplit:
    """The examples of one file or of one part of it, with a note on where the part comes from."""

    path: Path
    examples: list[YesNoExample]
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def question_labels(self) -> dict[str, str]:
        """Question id -> gold answer, in file order."""
        return {e.question_id: e.label for e in self.examples}

    def label_counts(self) -> dict[str, int]:
        """Questions per answer, in :data:`YESNO_LABELS` order."""
        counts = Counter(self.question_labels().values())
        return {label: counts[label] for label in YESNO_LABELS if counts[label]}


def _load_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path, error=DataFormatError))
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None


def _answer(value: Any, path: Path, where: str) -> str:
    """``yes`` / ``no`` / ``maybe`` from a string, a one-string list or SQuAD answer objects."""
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict):
        value = value.get("text")
    if isinstance(value, str) and value.strip().lower() in YESNO_LABELS:
        return value.strip().lower()
    raise DataFormatError(f"{path}: {where}: expected the answer yes, no or maybe, got {value!r:.60}")


def read_pubmedqa_file(path: str | os.PathLike) -> YesNoSplit:
    """A PubMedQA file (``ori_pqal.json`` or one of its parts: ``{pmid: {QUESTION, CONTEXTS, final_decision}}``),
    in the file's key order (the official split depends on it).

    Raises:
        DataFormatError: not JSON, not an object keyed by PMID, a record without a question, a list of
            context strings or a final decision of yes / no / maybe (the PMID and field named).
    """
    path = Path(path)
    root = _load_json(path)
    if not isinstance(root, dict) or not root:
        raise DataFormatError(f"{path}: expected a JSON object keyed by PMID (PubMedQA's ori_pqal.json), got {type(root).__name__}")
    examples = []
    for pmid, record in root.items():
        where = f"[{pmid!r}]"
        if not isinstance(record, dict):
            raise DataFormatError(f"{path}: {where}: expected an object, got {type(record).__name__}")
        question, contexts = record.get("QUESTION"), record.get("CONTEXTS")
        if not isinstance(question, str) or not question.strip():
            raise DataFormatError(f"{path}: {where}.QUESTION: expected the question text")
        if not isinstance(contexts, list) or not contexts or not all(isinstance(c, str) for c in contexts):
            raise DataFormatError(f"{path}: {where}.CONTEXTS: expected a list of paragraph strings")
        label = _answer(record.get("final_decision"), path, f"{where}.final_decision")
        examples.append(YesNoExample(str(pmid), question.strip(), " ".join(c.strip() for c in contexts), label, str(pmid)))
    return YesNoSplit(path, examples)


def read_golden_yesno(path: str | os.PathLike) -> dict[str, str]:
    """BioASQ golden answers (``{"questions": [{"id", "type", "exact_answer"}]}``): question id -> yes / no
    for the ``yesno`` questions.

    Raises:
        DataFormatError: not JSON or no ``questions`` list (file named).
    """
    path = Path(path)
    root = _load_json(path)
    questions = root.get("questions") if isinstance(root, dict) else None
    if not isinstance(questions, list):
        raise DataFormatError(f"{path}: expected BioASQ golden answers: an object with a 'questions' list")
    gold = {}
    for i, q in enumerate(questions):
        if isinstance(q, dict) and q.get("type") == "yesno":
            gold[str(q.get("id"))] = _answer(q.get("exact_answer"), path, f"questions[{i}].exact_answer")
    return gold


def read_bioasq_yesno_file(path: str | os.PathLike, golden: dict[str, str] | None = None) -> YesNoSplit:
    """BioASQ yes/no in BioBERT's SQuAD-style form; answers from the file, else from ``golden`` (question id ->
    answer; the question id is the example id up to its last ``_``).

    Raises:
        DataFormatError: not JSON, missing fields (JSON path named), or a question with neither an answer in
            the file nor in ``golden``.
    """
    path = Path(path)
    root = _load_json(path)
    articles = root.get("data") if isinstance(root, dict) else None
    if not isinstance(articles, list):
        raise DataFormatError(f"{path}: expected SQuAD-style JSON with a 'data' list (BioBERT's BioASQ yes/no files)")
    examples = []
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article.get("paragraphs", []) if isinstance(article, dict) else []):
            where_p = f"data[{a}].paragraphs[{p}]"
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            if not isinstance(context, str):
                raise DataFormatError(f"{path}: {where_p}: missing field 'context'")
            for q, qa in enumerate(paragraph.get("qas", [])):
                where = f"{where_p}.qas[{q}]"
                if not isinstance(qa, dict) or "id" not in qa or not isinstance(qa.get("question"), str):
                    raise DataFormatError(f"{path}: {where}: expected an object with 'id' and 'question'")
                example_id = str(qa["id"])
                question_id = example_id.rsplit("_", 1)[0] if "_" in example_id else example_id
                if qa.get("answers") not in (None, [], ""):
                    label = _answer(qa["answers"], path, f"{where}.answers")
                elif golden is not None and question_id in golden:
                    label = golden[question_id]
                else:
                    raise DataFormatError(
                        f"{path}: {where}: question {question_id!r} has no answer in the file"
                        + (" nor in the golden file" if golden is not None else " (give the golden answers file beside it)")
                    )
                examples.append(YesNoExample(example_id, qa["question"].strip(), context, label, question_id))
    if not examples:
        raise DataFormatError(f"{path}: no question")
    return YesNoSplit(path, examples)


#: The columns of BLURB's BioASQ files (which have no header line; one that names these is skipped).
BLURB_YESNO_COLUMNS = ("qid", "question", "passage", "label")


def read_blurb_yesno_tsv(path: str | os.PathLike) -> YesNoSplit:
    """BioASQ yes/no in BLURB's form (module docstring): one example per line, the question id its id.

    Raises:
        DataFormatError: a line without exactly four tab-separated columns, an empty question or passage, a
            label other than yes / no / maybe, a question id seen twice, or no line at all (file and line named).
    """
    path = Path(path)
    examples, seen = [], set()
    for lineno, line in enumerate(read_text(path, error=DataFormatError).split("\n"), start=1):
        line = line.rstrip("\r")
        if not line:
            continue
        columns = line.split("\t")
        if len(columns) != 4:
            raise DataFormatError(f"{path}:{lineno}: expected 'qid<TAB>question<TAB>passage<TAB>label' (4 tab-separated columns), got {len(columns)}")
        if lineno == 1 and columns[3].strip().lower() == "label":
            continue  # a header line (BLURB's own files have none)
        qid, question, passage, label = (c.strip() for c in columns)
        if not qid or not question or not passage:
            raise DataFormatError(f"{path}:{lineno}: empty {'question id' if not qid else 'question' if not question else 'passage'}")
        if qid in seen:
            raise DataFormatError(f"{path}:{lineno}: question {qid!r} a second time (BLURB's files have one line per question)")
        seen.add(qid)
        examples.append(YesNoExample(qid, question, passage, _answer(label, path, f"line {lineno}"), qid))
    if not examples:
        raise DataFormatError(f"{path}: no question (expected 'qid<TAB>question<TAB>passage<TAB>label' lines)")
    return YesNoSplit(path, examples)


def read_yesno_file(path: str | os.PathLike, golden: dict[str, str] | None = None) -> YesNoSplit:
    """A yes/no QA file of any of the formats: ``.tsv`` (``.tsv.gz``) is BLURB's BioASQ form; JSON is told apart
    by its content (a ``data`` list: BioBERT's BioASQ; otherwise PubMedQA).

    Raises:
        DataFormatError: see :func:`read_blurb_yesno_tsv`, :func:`read_pubmedqa_file` and :func:`read_bioasq_yesno_file`.
    """
    if Path(path).name.endswith((".tsv", ".tsv.gz")):
        return read_blurb_yesno_tsv(path)
    root = _load_json(Path(path))
    if isinstance(root, dict) and isinstance(root.get("data"), list):
        return read_bioasq_yesno_file(path, golden)
    return read_pubmedqa_file(path)


def _split_by_label(ids: list[str], labels: dict[str, str], folds: int, rng: random.Random) -> list[list[str]]:
    """One step of PubMedQA's ``split_dataset.py``: per answer (yes, no, maybe, in that order) shuffle its ids
    (kept in file order until then) and cut them into ``folds`` chunks of ``ceil(n / folds)`` (the last takes
    the rest); part i is the i-th chunk of each answer. When the last part is smaller than the first, one
    randomly chosen id of each other part moves to it."""
    parts: list[list[str]] = [[] for _ in range(folds)]
    for label in YESNO_LABELS:
        chosen = [i for i in ids if labels[i] == label]
        rng.shuffle(chosen)
        size = math.ceil(len(chosen) / folds)
        for k in range(folds):
            parts[k] += chosen[k * size :] if k == folds - 1 else chosen[k * size : (k + 1) * size]
    if not all(parts):
        raise ValueError(f"{len(ids)} questions are too few for PubMedQA's split into {folds} balanced parts")
    if len(parts[-1]) != len(parts[0]):
        for k in range(folds - 1):
            picked = rng.choice(parts[k])
            parts[k].remove(picked)
            parts[-1].append(picked)
    return parts


def pubmedqa_split(split: YesNoSplit, *, fold: int = PUBMEDQA_BLURB_FOLD, seed: int = PUBMEDQA_SPLIT_SEED) -> dict[str, YesNoSplit]:
    """PubMedQA's official split of PQA-L (``pubmedqa/pubmedqa`` ``preprocess/split_dataset.py pqal``): half
    the questions, balanced by answer, are the test set; the other half is cut into ten folds the same way,
    fold ``fold`` is the development set and the other nine the training set (fold 0: 450 / 50 / 500, BLURB's).

    One ``random.Random(seed)`` stream drives every step in the original's order (the test split, then the
    folds), so the result depends on the file's key order; for ``ori_pqal.json`` it gives the 500 PMIDs of
    the repository's ``data/test_ground_truth.json``.

    Raises:
        ValueError: ``fold`` not in 0..9, or a set too small to split.
    """
    if not 0 <= fold < 10:
        raise ValueError(f"PubMedQA fold {fold}: expected 0..9")
    labels = {e.id: e.label for e in split.examples}
    rng = random.Random(seed)
    try:
        pool, test = _split_by_label(list(labels), labels, 2, rng)
        folds = _split_by_label(pool, labels, 10, rng)
    except ValueError as exc:
        raise ValueError(f"{split.path}: {exc}") from None
    train = [i for k, part in enumerate(folds) if k != fold for i in part]
    by_id = {e.id: e for e in split.examples}
    how = f"PubMedQA's official split (split_dataset.py pqal, random.seed({seed}))"
    return {
        "train": YesNoSplit(split.path, [by_id[i] for i in train], note=f"{how}: the nine folds other than {fold}"),
        "dev": YesNoSplit(split.path, [by_id[i] for i in folds[fold]], note=f"{how}: fold {fold}"),
        "test": YesNoSplit(split.path, [by_id[i] for i in test], note=f"{how}: the test half"),
    }


def cut_by_question(split: YesNoSplit, fraction: float, seed: int) -> tuple[YesNoSplit, YesNoSplit]:
    """``(train, dev)``: ``fraction`` of the questions (all their snippets) of ``split`` cut off as a development
    part, chosen with ``random.Random(seed)`` over the questions in file order.

    Raises:
        ValueError: too few questions for a non-empty part on each side.
    """
    questions = list(dict.fromkeys(e.question_id for e in split.examples))
    count = round(len(questions) * fraction)
    if not 0 < count < len(questions):
        raise ValueError(f"{split.path}: {len(questions)} questions cannot give a development part of {fraction:g}")
    chosen = set(random.Random(seed).sample(questions, count))
    how = f"cut from {split.path.name}: {fraction:g} of its questions, random.Random({seed})"
    return (
        YesNoSplit(split.path, [e for e in split.examples if e.question_id not in chosen], note=f"{count} questions moved to development"),
        YesNoSplit(split.path, [e for e in split.examples if e.question_id in chosen], note=how),
    )


def find_yesno_files(folder: str | os.PathLike) -> dict[str, Path]:
    """The yes/no files of ``folder``: ``train`` / ``dev`` / ``test`` JSON (``train_set.json`` ... as PubMedQA's
    ``pqal_fold*`` folders; ``.json.gz`` accepted; dev optional), else the same as BLURB's TSV (``train.tsv`` ...),
    else BioBERT's BioASQ files
    (``*train*yesno*.json``, ``*test*yesno*.json`` and a ``*golden*.json``), else a single JSON file
    (``ori_pqal.json``: PubMedQA's official split is applied).

    Returns:
        ``{"train", "test"[, "dev"][, "golden"]}`` or ``{"all"}``.

    Raises:
        DatasetUnavailableError: no folder, or none of these layouts (what was expected is listed).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetUnavailableError(f"data folder not found: {folder}" if not folder.exists() else f"{folder}: is a file, not a folder")
    from downstream.registry import find_named_splits

    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith((".json", ".json.gz")))
    found = find_named_splits(folder, (".json", ".json.gz"))
    if "train" in found and "test" in found:
        return found
    found = find_named_splits(folder, (".tsv", ".tsv.gz"))  # BLURB's BioASQ form
    if "train" in found and "test" in found:
        return found
    train = [p for p in files if "train" in p.name.lower() and "yesno" in p.name.lower()]
    test = [p for p in files if "test" in p.name.lower() and "yesno" in p.name.lower()]
    golden = [p for p in files if "golden" in p.name.lower()]
    if len(train) == 1 and len(test) == 1:
        return {"train": train[0], "test": test[0], **({"golden": golden[0]} if len(golden) == 1 else {})}
    if len(files) == 1:
        return {"all": files[0]}
    raise DatasetUnavailableError(
        f"{folder}: expected train.json (or train_set.json), dev.json (optional) and test.json; or BLURB's BioASQ "
        "train.tsv, dev.tsv, test.tsv; or BioBERT's "
        "BioASQ-train-yesno-*.json, BioASQ-test-yesno-*.json and a *_golden.json; or one PubMedQA file "
        f"(ori_pqal.json); found {', '.join(p.name for p in files) or 'no JSON file'}"
    )
