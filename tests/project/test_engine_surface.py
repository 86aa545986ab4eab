"""The builder and the runner use the engine (`execrepobench_metric.execution`) through its declared surface
alone (`execution/surface.py`, its `__all__`): read from their sources (ast, every import statement, in
functions too), nothing imported."""
from __future__ import annotations

import ast
from pathlib import Path

import execrepobench_metric.execution.surface as surface
from test_import_cycles import ROOT

ENGINE = "execrepobench_metric.execution"
SURFACE = f"{ENGINE}.surface"
ABOVE = ("builder", "runner")  # the rooms above the metric


def engine_imports(folder: Path) -> list[tuple[str, int, str, tuple[str, ...]]]:
    """(file, line, module, names) of every import of an engine module in `folder`'s sources."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [(str(path), node.lineno, a.name, ()) for a in node.names
                          if a.name == ENGINE or a.name.startswith(ENGINE + ".")]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                    (node.module == ENGINE or node.module.startswith(ENGINE + ".")):
                found.append((str(path), node.lineno, node.module, tuple(a.name for a in node.names)))
    return found


def off_surface(folder: Path) -> list[str]:
    """Each engine import of `folder` that is not `from <surface> import <declared names>`."""
    bad = []
    for path, line, module, names in engine_imports(folder):
        if module != SURFACE or not names:
            bad.append(f"{path}:{line}: imports {module} (use {SURFACE})")
        elif undeclared := [n for n in names if n not in surface.__all__]:
            bad.append(f"{path}:{line}: {', '.join(undeclared)} not in {SURFACE}.__all__")
    return bad


def test_the_builder_and_runner_use_the_engine_through_its_surface():
    for room in ABOVE:
        assert engine_imports(ROOT / room), f"{room}: no engine import found (is the reader broken?)"
        assert not off_surface(ROOT / room), "\n".join(off_surface(ROOT / room))


def test_the_surface_declares_what_it_offers():
    assert sorted(surface.__all__) == sorted(set(surface.__all__))
    for name in surface.__all__:
        assert hasattr(surface, name), name


def test_an_import_around_the_surface_is_found(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    from execrepobench_metric.execution.judge import judge\n")
    (tmp_path / "b.py").write_text("import execrepobench_metric.execution.sandbox as sb\n")
    (tmp_path / "c.py").write_text("from execrepobench_metric.execution.surface import judge_safely, _private\n")
    (tmp_path / "d.py").write_text("from execrepobench_metric.execution.surface import JudgeConfig\n")
    bad = off_surface(tmp_path)
    assert len(bad) == 3 and "a.py:2" in bad[0] and "b.py:1" in bad[1] and "_private not in" in bad[2]
