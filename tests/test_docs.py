"""The documentation: generated pages are current, the README is a front page, and the product speaks of the
product alone (no session, loan or issue numbers; no dated anecdotes in code)."""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import REPO_ROOT, load_script

pages = load_script(REPO_ROOT / "tools" / "docs_pages.py")
reference = load_script(REPO_ROOT / "tools" / "docs_reference.py")


def test_every_generated_page_and_block_is_current():
    assert pages.stale() == [], "run: python tools/docs_pages.py --write"


def test_a_changed_figure_makes_its_page_stale(tmp_path, monkeypatch):
    """The check can fail: a results record changed on disk is a stale README and results page."""
    data = tmp_path / "data"
    data.mkdir()
    text = (pages.RESULTS / "finetune.json").read_text(encoding="utf-8")
    assert '"mean": 80.4,' in text
    (data / "finetune.json").write_text(text.replace('"mean": 80.4,', '"mean": 80.5,', 1), encoding="utf-8")
    (data / "tables.json").write_text((pages.RESULTS / "tables.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(pages, "RESULTS", data)
    stale = pages.stale()
    assert "README.md" in stale and "docs/results/index.md" in stale and "docs/index.md" in stale
    assert "**80.50 ± 0.21**" in pages.expected()["README.md"]


def test_a_block_without_its_markers_is_an_error():
    with pytest.raises(pages.StaleError, match="expected one line"):
        pages.replace_block("no markers here\n", "headline-results", "table", where="page.md")
    text = f"a\n{pages.begin('x')}\nold\n{pages.end('x')}\nb\n"
    assert pages.replace_block(text, "x", "new") == f"a\n{pages.begin('x')}\nnew\n{pages.end('x')}\nb\n"


def test_the_headline_gain_is_computed_from_the_two_records():
    runs = {(r["comparison"], r["checkpoint"]): r for r in pages.finetune_runs()}
    small = runs[("NCBI-disease, finetune's defaults", "bioelectra-small")]
    twin = runs[("NCBI-disease, finetune's defaults", "bioelectra-small-untrained")]
    row = next(line for line in pages.render_headline().splitlines() if line.startswith("| NCBI-disease, finetune's"))
    gain = small["test"]["mean"] - twin["test"]["mean"]
    assert f"/ {gain:+.2f} |" in row
    assert small["commit"] in row and small["date"] in row


def test_the_linking_bench_block_gives_the_collector_s_medians_only_when_timed():
    runs = {"without_linker": [{"seconds": 10, "gc_seconds": g} for g in (0.5, 0.9, 0.7)],
            "with_linker": [{"seconds": 12, "gc_seconds": g} for g in (1.4, 1.0, 1.2)]}  # fmt: skip
    assert pages._collector({"runs": runs}) == (
        " Python's garbage collector took 0.70 s of a run without the linker and 1.20 s of one with it (medians).")
    del runs["with_linker"][1]["gc_seconds"]  # a report made before the bench timed it
    assert pages._collector({"runs": runs}) == ""


def test_the_demo_record_and_the_results_data_agree():
    """The demo row of the results data is the demo run's own results.md."""
    demo = load_script(REPO_ROOT / "tools" / "readme_demo_table.py")
    parsed = demo.parse_results_md((REPO_ROOT / "docs" / "demo" / "results.md").read_text(encoding="utf-8"))
    runs = {(r["comparison"], r["checkpoint"]): r for r in pages.finetune_runs()}
    small = runs[("NCBI-disease, finetune's defaults", "bioelectra-small")]
    assert (f"{small['dev']['mean']:.2f}", f"{small['dev']['std']:.2f}") == parsed["dev"]
    assert (f"{small['test']['mean']:.2f}", f"{small['test']['std']:.2f}") == parsed["test"]


def test_the_cli_reference_lists_every_command_and_option():
    import typer

    from bioelectra.cli import app

    page = reference.render_cli()
    root = typer.main.get_command(app)
    for path, command in reference._walk(root, ["bioelectra"]):
        assert f"`{' '.join(path)}`" in page
        for param in command.params:
            if param.param_type_name == "option" and not param.hidden and param.name != "help":
                assert f"`{param.opts[0]}`" in page, (path, param.opts)


def test_help_text_is_split_into_help_default_and_range():
    assert reference._split_help("Seed of the first trial.  [default: 42; 0<=x<=4294967295]") == (
        "Seed of the first trial.", "42", "0<=x<=4294967295")
    assert reference._split_help("Training epochs per trial. [default: 3]  [x>=0.0]") == (
        "Training epochs per trial.", "3", "x>=0.0")
    assert reference._split_help("Where results go.") == ("Where results go.", "", "")


def test_the_datasets_reference_names_every_registered_dataset():
    from downstream.dataset_specs import DATASETS
    from downstream.glue.spec import GLUE_TASKS

    page = reference.render_datasets()
    for name in [*DATASETS, *GLUE_TASKS]:
        assert f"| `{name}` |" in page


def test_the_readme_is_a_front_page():
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    first = "\n".join(lines[:150])
    for heading in ("## Install", "## Quick start", "## Results", "## Commands"):
        assert heading in first, heading
    assert pages.begin("headline-results") in first and pages.end("headline-results") in first
    assert "make demo" in first and "make test" in first and "pipeline(" in first


def test_every_command_has_a_line_and_a_guide_in_the_readme():
    import typer

    from bioelectra.cli import app

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for name in typer.main.get_command(app).commands:
        line = next((x for x in readme.splitlines() if x.startswith(f"| `bioelectra {name}` |")), None)
        assert line is not None, name
        for target in re.findall(r"\]\(([^)#]+)", line):
            assert (REPO_ROOT / target).is_file(), target


def test_the_makefile_builds_the_docs_strictly_and_ci_runs_it():
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    assert "mkdocs build --strict" in makefile and "tools/docs_pages.py --check" in makefile
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci and "make docs" in ci


# --- the product speaks of the product ---------------------------------------------------------------------

#: Words of the team's own making, never in a tracked file outside tests/.
MAKING_WORDS = re.compile(r"\b(sessions?|loans?|lent)\b", re.IGNORECASE)
#: Issue numbers: "issue 45", "issues 14", "#45" (not MRPC's column names "#1 String", "#2 String").
ISSUE_NUMBERS = re.compile(r"\bissues? #?\d+\b|(?<![\w#&/])#\d{1,4}\b(?! String)", re.IGNORECASE)
#: An ISO date in a code comment or docstring that is not part of a result file's name.
DATED_ANECDOTE = re.compile(r"(?<![-\w])20\d\d-\d\d-\d\d(?![-\w])")
#: Files whose text is data, not prose: vocabularies, tokenizers, the benches' JSON and binaries.
NOT_PROSE = re.compile(r"(vocab\.txt|tokenizer\.json|\.json|\.safetensors|\.gz|\.xz|\.png|\.jsonl)$")


def _tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [p for p in out.splitlines() if not p.startswith("tests/") and not NOT_PROSE.search(p)]


def _hits(pattern: re.Pattern, files: list[str]) -> list[str]:
    hits = []
    for path in files:
        file = REPO_ROOT / path
        if not file.is_file():
            continue
        text = file.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path}:{number}: {line.strip()[:120]}")
    return hits


def test_no_file_speaks_of_sessions_loans_or_issue_numbers():
    files = _tracked_files()
    assert _hits(MAKING_WORDS, files) == []
    assert _hits(ISSUE_NUMBERS, files) == []


def test_code_comments_carry_no_dates():
    """A date belongs to a result file (its name) or the changelog, not to a comment or docstring."""
    files = [p for p in _tracked_files() if p.endswith(".py")]
    assert _hits(DATED_ANECDOTE, files) == []


def test_the_word_checks_can_fail():
    assert MAKING_WORDS.search("three lent GPU sessions") and MAKING_WORDS.search("the next loan")
    assert ISSUE_NUMBERS.search("as issue 45 asks") and ISSUE_NUMBERS.search("(#71)")
    assert not ISSUE_NUMBERS.search('"#1 String"') and not MAKING_WORDS.search("relentless talent")
    assert DATED_ANECDOTE.search("Until 2026-11-26 the peak") and not DATED_ANECDOTE.search(
        "bench/results/predict-2core-cpu-2026-11-28.json")
