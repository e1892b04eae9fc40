"""The import graph of ``bioelectra`` and ``downstream``: no cycle, and the library never imports the application.

Every import counts: module level, inside functions and under ``TYPE_CHECKING``; relative imports are
resolved. The commands (``bioelectra.cli``) are the top floor: they may import ``downstream``, nothing in
the library below them may, and no module imports the commands.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bioelectra", "downstream")
#: The command line: the top floor, the one part of ``bioelectra/`` that may import ``downstream``.
COMMANDS = "bioelectra.cli"


def module_files() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package ``__init__``)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            modules[".".join(parts)] = (path, is_package)
    return modules


def imported_names(path: Path, module: str, is_package: bool) -> set[str]:
    """Every dotted name ``path`` imports (``from a import b`` gives ``a`` and ``a.b``), relative ones resolved."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (a name resolves to its longest project module prefix)."""
    modules = module_files()
    graph = {}
    for module, (path, is_package) in modules.items():
        targets = set()
        for name in imported_names(path, module, is_package):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or ``None`` (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(child) == 1:
                return path[path.index(child) :] + [child]
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append(iter(sorted(graph[child])))
    return None


def is_command(module: str) -> bool:
    return module == COMMANDS or module.startswith(COMMANDS + ".")


def test_the_graph_is_read():
    graph = import_graph()
    assert "downstream.settings" in graph and "bioelectra.modeling" in graph
    assert sum(len(targets) for targets in graph.values()) > 100


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_find_cycle_reports_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_library_never_imports_the_application():
    edges = [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if module.startswith("bioelectra") and not is_command(module)
        for target in targets
        if target.startswith("downstream") or is_command(target)
    ]
    assert not edges, "the bioelectra library imports the application: " + ", ".join(sorted(edges))


def test_nothing_imports_the_commands():
    edges = [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if not is_command(module)
        for target in targets
        if is_command(target)
    ]
    assert not edges, "the commands are the top floor, yet imported by: " + ", ".join(sorted(edges))


#: The task kinds' folders: each holds one kind, which never imports another.
KIND_PACKAGES = ("downstream.ner", "downstream.relation", "downstream.qa", "downstream.yesno", "downstream.glue", "downstream.pico",
                 "downstream.similarity", "downstream.doc_classification", "downstream.linking")


def kind_of(module: str) -> str | None:
    return next((k for k in KIND_PACKAGES if module == k or module.startswith(k + ".")), None)


def test_a_kind_never_imports_another_and_settings_imports_none():
    graph = import_graph()
    crossing = [
        f"{module} -> {target}"
        for module, targets in graph.items()
        if kind_of(module)
        for target in targets
        if kind_of(target) not in (None, kind_of(module))
    ]
    assert not crossing, "a task kind imports another: " + ", ".join(sorted(crossing))
    into_kinds = sorted(t for t in graph["downstream.settings"] | graph["downstream.task"] if kind_of(t) or t == "downstream.kinds")
    assert not into_kinds, f"settings.py / task.py import task kinds: {into_kinds}"


def kind_comparisons(path: Path, kinds: set[str]) -> list[str]:
    """``x.kind == "ner"``, ``task != "re"``, ``kind in ("ner", "re")`` ...: comparisons of a name or attribute
    called ``kind`` / ``task`` with a task kind's name, as ``line: source``."""
    source = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        left = node.left  # the kind on the left: ``"qa" in task`` is a test on a task's name, not on a kind
        named = (isinstance(left, ast.Name) and left.id in ("kind", "task")) or (isinstance(left, ast.Attribute) and left.attr in ("kind", "task"))
        literals = {e.value for s in sides for e in ([s] if isinstance(s, ast.Constant) else getattr(s, "elts", [])) if isinstance(e, ast.Constant)}
        if named and literals & kinds:
            found.append(f"{node.lineno}: {ast.get_source_segment(source, node)}")
    return found


def test_no_branch_on_the_task_kind_outside_the_kinds_folders():
    """Everything a kind does differently is its Task's (or its folder's): no ``if kind == "ner"`` in the
    shared code (the one table of kinds, kinds.py, may name them)."""
    from downstream.kinds import TASKS

    kinds = set(TASKS)
    assert {"ner", "re", "qa", "yesno", "glue", "linking"} <= kinds
    assert kind_comparisons(Path(__file__), kinds) == []  # the check itself names them only in sets
    branches = []
    for module, (path, _) in module_files().items():
        if kind_of(module) or module == "downstream.kinds":
            continue
        branches += [f"{module}:{hit}" for hit in kind_comparisons(path, kinds)]
    assert not branches, "branches on the task kind outside its folder: " + "; ".join(branches)


def test_the_kind_branch_check_finds_one(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('if spec.task == "ner":\n    pass\nok = kind in ("ner", "re")\nfine = mode == "ner" or "qa" in task\n')
    assert kind_comparisons(sample, {"ner", "re"}) == ['1: spec.task == "ner"', '3: kind in ("ner", "re")']
