"""The machine a benchmark's figures were measured on, named the same way in every report under ``bench/``.

``platform.processor()`` is empty on most Linux machines (it reads ``uname -p``), so reports used to say ``cpu``
or ``x86_64``; the processor's model name is in ``/proc/cpuinfo``. Needs no torch.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def processor_name(cpuinfo: Path = CPUINFO) -> str:
    """The processor's model name (``"AMD EPYC"``, ``"Intel(R) Xeon(R) Platinum 8480+"``): the first
    ``model name`` line of ``cpuinfo`` (Linux), else ``platform.processor()``, else ``platform.machine()``
    (``"x86_64"``), else ``"cpu"``."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def cpu_device_name(cpuinfo: Path = CPUINFO) -> str:
    """A CPU as a benchmark's ``device``: its model name and the cores this process may use
    (``"AMD EPYC, 2 cores"``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return f"{processor_name(cpuinfo)}, {cores} core{'s' if cores != 1 else ''}"


def device_name(device) -> str:
    """A ``torch.device`` as a benchmark's ``device``: the GPU's name (``"NVIDIA H200"``) or
    :func:`cpu_device_name`."""
    if getattr(device, "type", str(device)) == "cuda":
        import torch

        return torch.cuda.get_device_name(device)
    return cpu_device_name()
