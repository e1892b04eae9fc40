"""bench/machine.py: every benchmark names the machine its figures were measured on the same way, the
processor's model name from /proc/cpuinfo (``platform.processor()`` is empty on Linux)."""

from __future__ import annotations

import platform

import torch
from conftest import REPO_ROOT, load_script

machine = load_script(REPO_ROOT / "bench" / "machine.py")


def test_the_processor_is_named_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"
                       "flags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n")  # fmt: skip
    assert machine.processor_name(cpuinfo) == "AMD EPYC 9654 96-Core Processor"
    device = machine.cpu_device_name(cpuinfo)
    assert device.startswith("AMD EPYC 9654 96-Core Processor, ") and device.split(", ")[-1].split()[1] in ("core", "cores")


def test_without_cpuinfo_or_a_model_name_it_falls_back_to_platform(tmp_path):
    expected = platform.processor() or platform.machine() or "cpu"
    assert machine.processor_name(tmp_path / "absent") == expected
    blank = tmp_path / "cpuinfo"
    blank.write_text("processor\t: 0\nmodel name\t: \n")
    assert machine.processor_name(blank) == expected


def test_a_cpu_device_is_named_by_its_processor():
    assert machine.device_name(torch.device("cpu")) == machine.cpu_device_name()
    assert machine.device_name(torch.device("cpu")).startswith(machine.processor_name())
