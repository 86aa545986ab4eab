"""No import cycle among our modules (builder, runner, execrepobench_dataset, execrepobench_metric).

Every import statement counts, wherever it stands: at module level, inside a function, under
`if TYPE_CHECKING:`.  An import inside a function only hides a cycle from the interpreter; the two
modules still cannot be understood, tested or moved apart.  The graph is read from the source (ast),
nothing is imported.  `from P import N` depends on P and, when P.N is one of our modules, on P.N too.

A cycle that is known and being removed is listed in KNOWN_CYCLES with the issue that removes it; the
entry must go when the cycle does (`test_known_cycles_are_still_cycles` fails otherwise).
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# folder -> the package it installs as (setup.cfg package_dir)
PACKAGES = {"builder": "execrepobench.builder", "runner": "execrepobench.runner",
            "execrepobench_dataset": "execrepobench_dataset", "execrepobench_metric": "execrepobench_metric"}
# a folder of plain modules put on a judged run's PYTHONPATH, not part of the package's import graph
NOT_PACKAGES = ("pytest_plugin",)

KNOWN_CYCLES: dict[frozenset[str], str] = {}


def module_files(root: Path = ROOT, packages: dict[str, str] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of `packages` (folder -> package name)."""
    out = {}
    for folder, package in packages.items():
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root / folder)
            if any(part in NOT_PACKAGES for part in rel.parts):
                continue
            parts = rel.with_suffix("").parts
            name = ".".join((package, *parts))
            out[name.removesuffix(".__init__")] = path
    return out


def _imported(node: ast.AST, name: str, is_package: bool) -> list[str]:
    """The dotted names an import statement in module `name` may load."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target, *(f"{target}.{alias.name}" for alias in node.names)]


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {module it imports: line of the first such import}, our modules only."""
    graph: dict[str, dict[str, int]] = defaultdict(dict)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):  # every statement: module level, functions, TYPE_CHECKING blocks
            for target in _imported(node, name, path.name == "__init__.py"):
                if target in modules and target != name:
                    graph[name].setdefault(target, node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    nodes = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            step = next(targets, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def cycle_path(graph: dict[str, dict[str, int]], component: frozenset[str]) -> list[str]:
    """One loop through `component`, as `a -> b` steps naming the line of each import."""
    start = min(component)
    previous = {start: None}
    queue = [start]
    while queue:  # breadth-first inside the component, back to `start`
        node = queue.pop(0)
        for target in sorted(graph.get(node, ())):
            if target == start:
                steps, at = [(node, start)], node
                while previous[at] is not None:
                    steps.append((previous[at], at))
                    at = previous[at]
                return [f"{a} -> {b} (line {graph[a][b]})" for a, b in reversed(steps)]
            if target in component and target not in previous:
                previous[target] = node
                queue.append(target)
    return sorted(component)


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    return import_graph(module_files())


def test_every_package_folder_is_read():
    modules = module_files()
    for package in PACKAGES.values():
        assert package in modules, f"{package}: no __init__.py found"
    assert "execrepobench_metric.execution.judge" in modules and "execrepobench.runner.cli" in modules


def test_no_import_cycle(graph):
    unknown = [c for c in cycles(graph) if c not in KNOWN_CYCLES]
    report = ["\n  ".join(cycle_path(graph, c)) for c in unknown]
    assert not unknown, "import cycles (imports inside functions and under TYPE_CHECKING count):\n  " + \
        "\n\n  ".join(report)


def test_known_cycles_are_still_cycles(graph):
    found = cycles(graph)
    gone = [f"{' <-> '.join(sorted(c))} ({KNOWN_CYCLES[c]})" for c in KNOWN_CYCLES if c not in found]
    assert not gone, f"no longer cycles: remove their entries from KNOWN_CYCLES: {'; '.join(gone)}"


def test_a_cycle_hidden_in_a_function_or_under_type_checking_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A package."""\n')
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n    return g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    (pkg / "d.py").write_text("import pkg.a\n")  # imports into the cycle, is not part of it
    modules = module_files(tmp_path, {"pkg": "pkg"})
    graph = import_graph(modules)
    assert graph["pkg.a"] == {"pkg.sub": 1, "pkg.sub.b": 1}
    assert cycles(graph) == [frozenset({"pkg.a", "pkg.sub.b", "pkg.c"})]
    assert cycle_path(graph, cycles(graph)[0]) == ["pkg.a -> pkg.sub.b (line 1)", "pkg.sub.b -> pkg.c (line 2)",
                                                   "pkg.c -> pkg.a (line 3)"]
    (pkg / "c.py").write_text("import json\n")  # the cycle broken: nothing left
    assert cycles(import_graph(module_files(tmp_path, {"pkg": "pkg"}))) == []
