"""The task kinds the trial runner knows: ``TASKS`` (kind -> class implementing ``downstream.task.Task``).

Adding a task kind: a module with a class implementing :class:`downstream.task.Task`, and its entry here.
"""

from __future__ import annotations

from pathlib import Path

from downstream.checkpoints import check_max_seq_length, load_tokenizer
from downstream.doc_classification.task import DocClassificationTask
from downstream.errors import DownstreamError
from downstream.glue.task import GlueTask
from downstream.linking.task import LinkingTask
from downstream.ner.task import NerTask
from downstream.pico.task import PicoTask
from downstream.qa.task import QaTask
from downstream.relation.task import ReTask
from downstream.similarity.task import SimilarityTask
from downstream.yesno.task import YesNoTask

#: Task kind (``--loader``) -> its class.
TASKS: dict[str, type] = {
    cls.kind: cls for cls in (NerTask, ReTask, QaTask, YesNoTask, GlueTask, SimilarityTask, DocClassificationTask, LinkingTask, PicoTask)
}


def task_class(kind: str) -> type:
    """The class of task kind ``kind``.

    Raises:
        DownstreamError: unknown task kind.
    """
    try:
        return TASKS[kind]
    except KeyError:
        raise DownstreamError(f"task kind {kind!r} is not supported (expected one of {', '.join(TASKS)})") from None


def build_task(kind: str, files: dict[str, Path], **options):
    """The task adapter for ``kind``, given that kind's options.

    Raises:
        DownstreamError: unknown task kind.
    """
    return task_class(kind)(files, **options)


def prepare_task(settings, *, labels: list[str] | None = None, training: bool = True):
    """The task of ``settings``' data (a :class:`downstream.settings.FinetuneSettings`), every split
    tokenised with the checkpoint's tokenizer: what a trial run, an evaluation, a search and a range test
    all start from.

    Args:
        settings: the run's settings (``task``, the data, ``checkpoint``, ``max_seq_length``).
        labels: a saved model's label order, taken before encoding (evaluation of a fine-tuned model).
        training: whether the task will be trained on (a trial, a search, a range test); ``False`` for an
            evaluation, which needs no training split.

    Returns:
        ``(task, tokenizer)``.

    Raises:
        DownstreamError: unknown task kind, missing or bad data, labels that do not match the data's, a
            ``max_seq_length`` the checkpoint cannot take; for ``training``, data a kind can score but not train
            on (its ``not_trainable`` says why: EBM PICO without its training file).
    """
    kind_class = task_class(settings.task)
    task = build_task(settings.task, kind_class.locate_files(settings), **kind_class.options(settings))
    if training and getattr(task, "not_trainable", None):
        raise DownstreamError(task.not_trainable)
    if labels is not None:
        task.use_labels(labels)
    tokenizer = load_tokenizer(str(settings.checkpoint))
    check_max_seq_length(str(settings.checkpoint), settings.max_seq_length)
    task.encode(tokenizer, max_seq_length=settings.max_seq_length)
    return task, tokenizer
