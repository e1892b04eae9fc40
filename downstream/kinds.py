"""The task kinds the trial runner knows: ``TASKS`` (kind -> class implementing ``downstream.task.Task``).

Adding a task kind: a module with a class implementing :class:`downstream.task.Task`, and its entry here.
"""

from __future__ import annotations

from pathlib import Path

from downstream.errors import DownstreamError
from downstream.ner.task import NerTask
from downstream.qa.task import QaTask
from downstream.relation.task import ReTask
from downstream.yesno.task import YesNoTask

#: Task kind (``--loader``) -> its class.
TASKS: dict[str, type] = {cls.kind: cls for cls in (NerTask, ReTask, QaTask, YesNoTask)}


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
