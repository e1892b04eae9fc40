"""Size limits of the whole project outside tests: no module over 500 lines, no function over 100 lines.

Checked for the ``bioelectra`` library and its commands, ``downstream``, ``bench``, ``recipes`` and the entry
scripts (``finetune.py``, ``pretrain.py``, ``convert_tf_checkpoint.py``, ``run_finetuning.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED = (
    ROOT / "bioelectra",
    ROOT / "downstream",
    ROOT / "bench",
    ROOT / "recipes",
    ROOT / "finetune.py",
    ROOT / "pretrain.py",
    ROOT / "convert_tf_checkpoint.py",
    ROOT / "run_finetuning.py",
)
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 100


def checked_files() -> list[Path]:
    return sorted(p for path in CHECKED for p in ([path] if path.is_file() else path.rglob("*.py")))


def test_no_module_over_the_limit():
    long = {str(p.relative_to(ROOT)): n for p in checked_files() if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_the_limit():
    long = {}
    for path in checked_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
