"""The `make demo` table of the results page, generated from the demo run's ``results.md`` (never typed in).

    python tools/readme_demo_table.py runs/demo-bioelectra-small/results.md            # print the table
    python tools/readme_demo_table.py runs/demo-bioelectra-small/results.md --write    # record it, regenerate

``make demo-table`` runs the second form after ``make demo``: it checks the run's results.md parses, copies
it to ``docs/demo/results.md`` (the record the figures come from) and regenerates every page that shows it
(``tools/docs_pages.py``). tests/test_readme_demo.py checks that the results.md that ``finetune`` writes
today still parses: a format drift fails there.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLUMNS = ("dev P", "dev R", "dev F1", "test P", "test R", "test F1")


class FormatError(ValueError):
    """``results.md`` is not in the format this script reads (the format drifted)."""


def _table(lines: list[str], first_cells: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the first markdown table whose header starts with ``first_cells``."""
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if tuple(cells[: len(first_cells)]) == first_cells:
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return cells, rows
    raise FormatError(f"no table with header {' | '.join(first_cells)} ...")


def parse_results_md(text: str) -> dict:
    """The trials (seed and dev / test P, R, F1) and the dev / test F1 mean and std of a run's results.md.

    Raises:
        FormatError: a table or column missing.
    """
    lines = text.splitlines()
    header, rows = _table(lines, ("trial", "seed"))
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise FormatError(f"trial table without columns {missing}: {header}")
    trials = [{"trial": r[0], "seed": r[1], **{c: r[header.index(c)] for c in COLUMNS}} for r in rows]
    header, rows = _table(lines, ("split", "metric"))
    if "mean" not in header or "std" not in header:
        raise FormatError(f"summary table without mean / std: {header}")
    summary = {(r[0], r[1]): (r[header.index("mean")], r[header.index("std")]) for r in rows}
    ddof = re.search(r"ddof=(\d+)", text)
    if not trials or ("dev", "f1") not in summary or ("test", "f1") not in summary or ddof is None:
        raise FormatError("no trial, no dev / test f1 summary row, or no ddof")
    return {"trials": trials, "dev": summary[("dev", "f1")], "test": summary[("test", "f1")], "ddof": ddof.group(1)}


def render(parsed: dict) -> str:
    """The README table: one row per trial, then the F1 mean ± std."""
    lines = ["| trial | seed | " + " | ".join(COLUMNS) + " |", "|---:|---:|" + "---:|" * len(COLUMNS)]
    lines += [f"| {t['trial']} | {t['seed']} | " + " | ".join(t[c] for c in COLUMNS) + " |" for t in parsed["trials"]]
    dev, test = (f"**{m} ± {s}**" for m, s in (parsed["dev"], parsed["test"]))
    lines.append(f"| **mean ± std** (ddof={parsed['ddof']}) | | | | {dev} | | | {test} |")
    return "\n".join(lines)


def figures(parsed: dict) -> str:
    """``dev 70.28 ± 0.97, test 70.38 ± 2.11``: how the README's prose quotes the demo."""
    return f"dev {parsed['dev'][0]} ± {parsed['dev'][1]}, test {parsed['test'][0]} ± {parsed['test'][1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_md", type=Path)
    parser.add_argument("--write", action="store_true", help="copy results.md to docs/demo/, regenerate the pages")
    args = parser.parse_args(argv)
    try:
        parsed = parse_results_md(args.results_md.read_text(encoding="utf-8"))
        table = render(parsed)
        if args.write:
            target = REPO / "docs" / "demo" / "results.md"
            if args.results_md.resolve() != target.resolve():
                shutil.copyfile(args.results_md, target)
            sys.path.insert(0, str(REPO / "tools"))
            import docs_pages

            for path in docs_pages.write():
                print(f"wrote {path}")
    except (OSError, FormatError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table)
    print(f"\nfigures: {figures(parsed)}" + ("  (docs/results/data/finetune.json records them: update it if they changed)" if args.write else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
