"""From command-line options to :class:`downstream.settings.FinetuneSettings`: the one place ``finetune``
and ``evaluate`` build their settings (the kind's defaults, then a protocol, then the options given), and
the rule that an option only one task kind takes is refused for the others."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from downstream.errors import DownstreamError
from downstream.kinds import TASKS, task_class
from downstream.settings import FinetuneSettings, check_layerwise_lr_decay, check_metric, protocol_settings


def check_kind_options(task: str, given: dict[str, Any]) -> None:
    """Refuse an option that only another task kind takes (``exclusive_options`` of each kind).

    Raises:
        DownstreamError: the first such option, with the kind it belongs to.
    """
    for kind_class in TASKS.values():
        if kind_class.kind == task:
            continue
        for key, message in kind_class.exclusive_options.items():
            if given.get(key) is not None:
                raise DownstreamError(message)


def check_kind_metric(task: str, metric: str) -> None:
    """Refuse a ``--metric`` that task kind ``task`` does not report (``--loader ner --metric mrr``).

    Raises:
        DownstreamError: the metric, with the kind's own metrics; or an unknown task kind.
    """
    check_metric(metric, task_class(task).selection_metrics(), task)


def settings_from_options(
    task: str,
    *,
    given: dict[str, Any],
    fixed: dict[str, Any],
    protocol: str | None = None,
    checkpoint: Callable[[], str],
    default_learning_rate: Callable[[], float] | None = None,
    on_default_learning_rate: Callable[[float], None] | None = None,
    checked: dict[str, Any] | None = None,
) -> FinetuneSettings:
    """The settings of a run of task kind ``task``.

    Args:
        task: the task kind (``--loader``).
        given: the options a kind's defaults or a protocol may also set (``FinetuneSettings`` field names;
            ``None``: not given). Those given override the protocol's, which override the kind's defaults
            (its ``default_settings``, then its ``dataset_defaults`` for the dataset named).
        fixed: the other settings (field names), taken as they are; a ``None`` kind-only option is absent.
        protocol: a named protocol (``--protocol``), or ``None``.
        checkpoint: gives the checkpoint path, called once the options are known good (it may build one).
        default_learning_rate: gives the rate when neither an option nor a protocol set one.
        on_default_learning_rate: told the default rate when it is used (the command prints it).
        checked: options that are no setting but belong to one kind (``--folds``), checked with the others.

    Raises:
        DownstreamError: an option of another task kind, a ``--metric`` the kind does not report, or an
            unknown task kind.
        ValueError: a bad value (the option named).
    """
    check_kind_options(task, {**given, **fixed, **(checked or {})})
    chosen_given = {k: v for k, v in given.items() if v is not None}
    kind_class = task_class(task)
    chosen = {
        **kind_class.default_settings,
        **kind_class.dataset_defaults(fixed.get("dataset"), fixed.get("data_dir")),
        **protocol_settings(protocol, chosen_given, fixed.get("dataset")),
    }
    check_layerwise_lr_decay(chosen.get("layerwise_lr_decay", 1.0))  # before any checkpoint is built
    metric = chosen.get("metric", fixed.get("metric"))
    if metric is not None:
        check_kind_metric(task, metric)
    path = checkpoint()
    if "learning_rate" not in chosen and default_learning_rate is not None:
        chosen["learning_rate"] = default_learning_rate()
        if on_default_learning_rate is not None:
            on_default_learning_rate(chosen["learning_rate"])
    return FinetuneSettings(task=task, checkpoint=path, **fixed, **chosen)
