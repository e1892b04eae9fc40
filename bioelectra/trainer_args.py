"""``TrainingArguments`` shared by pre-training and fine-tuning: the settings that keep the host from waiting
for the device in every training step."""

from __future__ import annotations

from typing import Any


def asynchronous_step_arguments(cuda: bool) -> dict[str, Any]:
    """``TrainingArguments`` keyword arguments under which a training step makes the host wait for the
    device only where the loop reads a value (the logs, an evaluation):

    - ``logging_nan_inf_filter=False``: the Trainer's default filter checks every step's loss
      (``torch.isnan(loss) or torch.isinf(loss)``, a wait on the device) and replaces a nan / inf by the
      running mean in the logs, which hides a diverging run.
    - on CUDA, batches in pinned memory (``dataloader_pin_memory``) copied with ``non_blocking`` (Accelerate's
      ``accelerator_config``), so the copy does not wait for the device either. Off the GPU neither applies.

    Args:
        cuda: whether training runs on a CUDA device.
    """
    kwargs: dict[str, Any] = {"logging_nan_inf_filter": False, "dataloader_pin_memory": cuda}
    if cuda:
        kwargs["accelerator_config"] = {"non_blocking": True}
    return kwargs
