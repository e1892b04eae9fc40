"""The results page's `make demo` table is generated from the demo run's results.md (tools/readme_demo_table.py
through tools/docs_pages.py), and the results.md that finetune writes today still parses: a drift in either
fails here."""

from conftest import REPO_ROOT, load_script

from downstream.trial.reports import format_markdown

table = load_script(REPO_ROOT / "tools" / "readme_demo_table.py")


def test_the_results_page_demo_table_is_the_one_generated_from_the_recorded_results_md():
    parsed = table.parse_results_md((REPO_ROOT / "docs" / "demo" / "results.md").read_text(encoding="utf-8"))
    page = (REPO_ROOT / "docs" / "results" / "index.md").read_text(encoding="utf-8")
    assert f"\n{table.render(parsed)}\n<!-- end: demo-table -->" in page, "run: make demo-table (after make demo)"
    # the fine-tuning guide's prose quotes the same figures
    guide = (REPO_ROOT / "docs" / "guides" / "fine-tuning.md").read_text(encoding="utf-8")
    assert f"3 trials: {table.figures(parsed)}" in guide


def test_the_results_md_finetune_writes_today_parses(tmp_path):
    trials = [
        {"trial_index": i, "seed": 42 + i, "best_epoch": 3.0, "train_seconds": 100.0, "warnings": [],
         "dev": {"precision": 0.6 + i / 100, "recall": 0.7, "f1": 0.65}, "test": {"precision": 0.61, "recall": 0.71, "f1": 0.66 + i / 100}}
        for i in range(3)
    ]  # fmt: skip
    stats = {"mean": 0.6789, "std": 0.0123, "min": 0.6, "max": 0.7, "n": 3}
    report = {
        "dataset": "ncbi-disease", "task": "ner", "checkpoint": "bioelectra-small", "std_ddof": 1, "num_trials": 3,
        "trials": trials, "summary": {s: {m: stats for m in ("f1", "precision", "recall")} for s in ("dev", "test")},
        "counts": {s: {"file": "f"} for s in ("train", "dev", "test")}, "baseline": {},
        "trial_metrics": ["precision", "recall", "f1"], "report_metrics": ["f1", "precision", "recall"],
    }  # fmt: skip
    parsed = table.parse_results_md(format_markdown(report))
    assert [t["seed"] for t in parsed["trials"]] == ["42", "43", "44"]
    assert parsed["trials"][2]["test F1"] == "68.00" and parsed["trials"][1]["dev P"] == "61.00"
    assert parsed["dev"] == ("67.89", "1.23") and parsed["ddof"] == "1"
    rendered = table.render(parsed)
    assert rendered.splitlines()[-1] == "| **mean ± std** (ddof=1) | | | | **67.89 ± 1.23** | | | **67.89 ± 1.23** |"
