"""The text blocks every kind's trial analysis shares (``classification_report.txt``): the precision /
recall / F1 / support table, the split titles and the best-epoch line; and the note that marks a limited
run's reports (:func:`limited_run_note`)."""

from __future__ import annotations

from typing import Any


def table(
    rows: dict[str, dict[str, float]], first: str, averages: dict[str, dict[str, float]] | None = None
) -> str:
    """A precision / recall / F1 / support table (seqeval's layout): ``rows``, then ``averages`` after a
    blank line."""
    averages = averages or {}
    width = max([len(first), *(len(k) for k in (*rows, *averages))]) + 2

    def line(name: str, v: dict[str, float]) -> str:
        return f"{name:<{width}}{v['precision']:>10.4f}{v['recall']:>10.4f}{v['f1']:>10.4f}{int(v['support']):>10d}"

    lines = [f"{first:<{width}}{'precision':>10}{'recall':>10}{'f1-score':>10}{'support':>10}"]
    lines += [line(name, v) for name, v in rows.items()]
    if averages:
        lines += ["", *(line(name, v) for name, v in averages.items())]
    return "\n".join(lines)


def split_title(name: str) -> str:
    return f"{name} (best epoch)" if name == "dev" else f"{name} (the best epoch's model)"


def epoch_lines(info: dict[str, Any]) -> str:
    def num(value):
        return f"{value:.4f}" if isinstance(value, int | float) else "-"

    epoch = info.get("best_epoch")
    return (
        f"best epoch: {epoch if epoch is not None else '-'}    training loss of that epoch: "
        f"{num(info.get('train_loss'))}    validation loss: {num(info.get('dev_loss'))}\n"
        "(the epoch kept by the development metric; training loss: the mean of the losses the Trainer logged\n"
        " after the previous evaluation up to this one, '-' when it logged none; validation loss: the\n"
        " development loss of that evaluation)"
    )


def limited_run_note(limits: dict[str, int]) -> str:
    """The Markdown line that opens every report of a limited run (``limits``:
    :func:`downstream.settings.run_limits`), empty for a full run: the options, what each cut, and that the
    scores are not comparable with published figures."""
    from downstream.settings import LIMIT_OPTIONS

    if not limits:
        return ""
    what = {
        "max_steps": "each trial stopped after {} optimizer steps, whatever its epochs",
        "max_train_examples": "trained on the first {} training examples only",
        "max_eval_examples": "dev and test scored on their first {} examples only",
    }
    options = ", ".join(f"{LIMIT_OPTIONS[k]} {v}" for k, v in limits.items())
    cuts = "; ".join(what[k].format(v) for k, v in limits.items())
    return (f"**Limited run** ({options}): {cuts}. A smoke test, not a result: its scores are not comparable "
            "with published figures or with full runs.")
