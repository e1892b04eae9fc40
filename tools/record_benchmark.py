"""Record a ``bioelectra benchmark`` run's ``benchmark.json`` as a result file of the documentation, with the
command, date, device, load and versions it ran with (the run's own file has none of them), then regenerate
the pages that show it (``tools/docs_pages.py``: the BLURB table of the results page and the guide).

    python tools/record_benchmark.py runs/benchmark-bioelectra-small-blurb-default \\
        --command "bioelectra benchmark --ckpt bioelectra-small --suite blurb --data-root ../shared/data --trials 3" \\
        --load "idle" --write

The record is ``docs/results/data/benchmark/<checkpoint>-<suite>-<protocol>.json``. A run still going (or
stopped, and to be resumed) can be recorded: its ``benchmark.json`` is rewritten after each dataset, and the
pages say over how many of BLURB's 13 datasets the score is. Run it with the virtual environment that ran the
benchmark: the versions recorded are this interpreter's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RECORDS = REPO / "docs" / "results" / "data" / "benchmark"

#: The keys of ``benchmark.json`` a record keeps (a row's ``output_dir`` is a path on the machine that ran it).
KEPT = ("checkpoint", "suite", "protocol", "protocol_source", "num_trials", "limits", "rows", "missing", "failed",
        "models", "sources", "blurb")  # fmt: skip


def versions() -> dict[str, str]:
    """Python's and the stack's versions in this interpreter."""
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}


def make_record(bench_dir: Path, *, command: str, load: str, date: str | None = None, device: str | None = None) -> dict:
    """The record of ``bench_dir/benchmark.json`` (module docstring).

    Raises:
        FileNotFoundError: no ``benchmark.json`` in ``bench_dir``.
        ValueError: a limited run (steps or examples cut): its figures are not results.
    """
    sys.path.insert(0, str(REPO / "bench"))
    from machine import cpu_device_name

    report = json.loads((bench_dir / "benchmark.json").read_text(encoding="utf-8"))
    if report.get("limits"):
        raise ValueError(f"{bench_dir}: a limited run ({report['limits']}): not recorded as a result")
    record = {k: report.get(k) for k in KEPT}
    for row in record["rows"]:
        where = Path(row.pop("output_dir", "") or bench_dir / row["dataset"])
        if row.get("seconds") is None:  # a benchmark.json of a version that did not record the time: its trials have it
            row["seconds"] = dataset_seconds(where)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {
        "command": command,
        "date": date or datetime.datetime.now(datetime.UTC).date().isoformat(),
        "device": device or f"{cpu_device_name()}, {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GB",
        "load": load,
        "versions": versions(),
        "commit": commit,
        **record,
    }


def dataset_seconds(dataset_dir: Path) -> float | None:
    """``downstream.benchmark.run_seconds`` of a dataset's ``results.json`` (``None`` without one)."""
    from downstream.benchmark import run_seconds

    path = dataset_dir / "results.json"
    return run_seconds(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None


def record_path(record: dict) -> Path:
    """Where ``record`` is kept: one file per checkpoint, suite and protocol."""
    return RECORDS / f"{Path(str(record['checkpoint'])).name}-{record['suite']}-{record['protocol']}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench_dir", type=Path, help="the benchmark's --output-dir (holding benchmark.json)")
    parser.add_argument("--command", required=True, help="the command that ran it, as a user types it")
    parser.add_argument("--load", required=True, help="what else ran on the machine meanwhile, e.g. 'idle'")
    parser.add_argument("--date", help="the day it ran (default: today, UTC)")
    parser.add_argument("--device", help="the machine (default: this one's processor, cores and memory)")
    parser.add_argument("--write", action="store_true", help="write the record and regenerate the pages (else print it)")
    args = parser.parse_args(argv)
    record = make_record(args.bench_dir, command=args.command, load=args.load, date=args.date, device=args.device)
    text = json.dumps(record, indent=2) + "\n"
    if not args.write:
        print(text, end="")
        return 0
    path = record_path(record)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as tmp:
        tmp.write(text)
    os.replace(tmp.name, path)
    print(f"recorded {path.relative_to(REPO)}")
    import docs_pages

    for written in docs_pages.write():
        print(f"regenerated {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
