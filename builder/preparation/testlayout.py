"""Where a repository's tests are, when the manifest does not say and pytest's defaults miss them.

pytest collects `test_*.py` / `*_test.py` files (or what the repository configures with `testpaths`
/ `python_files`).  Real repositories also keep their tests in a root `tests.py` or `test.py`, in
unittest-style modules, or in folders whose files are not named `test_*.py`.  Files given on
pytest's command line are collected whatever their name, so when the defaults find nothing we pick
the files that define tests (module-level `test*` functions, `Test*` classes or `TestCase`
subclasses, found with `ast`) among the usual places, and pass them explicitly.  The choice is
reported (`test_layout`) and becomes the `test_paths` of the manifest entry the build reports.
"""
from __future__ import annotations

import ast
import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from execrepobench_dataset.files import read_ini

from ..errors import NoTestsFound
from .testconfig import read_toml

SKIP_DIRS = frozenset({".git", ".hg", ".tox", ".nox", ".venv", "venv", "build", "dist", "node_modules",
                       "__pycache__", "docs", "doc", "site-packages"})
TEST_DIRS = ("tests", "test", "testing")
ROOT_NAMES = ("tests.py", "test.py", "*_tests.py", "tests_*.py", "runtests.py")
CANDIDATES_TRIED = ("pytest's defaults (test_*.py, *_test.py)", "configured testpaths / python_files",
                    *(f"{n} (root or package)" for n in ROOT_NAMES),
                    *(f"any .py file under {d}/" for d in TEST_DIRS))


@dataclass(frozen=True)
class TestLayout:
    paths: tuple[str, ...]  # test paths to pass to pytest; () = pytest's own discovery
    found_by: str  # "manifest", "configured", "pytest defaults" or "search"

    def report(self) -> dict:
        return {"test_paths": list(self.paths), "found_by": self.found_by}


def _walk(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
                             and not d.startswith("."))
        rel = Path(dirpath).relative_to(root)
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield rel / name


def _configured(root: Path) -> bool:
    """The repository tells pytest where or what its tests are (`testpaths`, `python_files`)."""
    for name, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("tox.ini", "pytest"),
                          ("setup.cfg", "tool:pytest")):
        parser = read_ini(root / name)
        if parser is not None and parser.has_section(section) and (parser.has_option(section, "testpaths")
                                            or parser.has_option(section, "python_files")):
            return True
    tool = read_toml(root / "pyproject.toml").get("tool", {}).get("pytest", {})
    options = tool.get("ini_options", tool) if isinstance(tool, dict) else {}
    return bool(options.get("testpaths") or options.get("python_files"))


def defines_tests(path: Path) -> bool:
    """Module-level `def test*`, `class Test*`, or a class deriving from something named *TestCase."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            return True
        if isinstance(node, ast.ClassDef):
            if node.name.startswith("Test"):
                return True
            for base in node.bases:
                name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if name.endswith("TestCase"):
                    return True
    return False


def modules_with_tests(root: Path, paths: tuple[str, ...]) -> tuple[str, ...]:
    """The files under `paths` (files or folders, repo-relative) that define tests: what masking leaves
    alone.  A test path that also holds library code (a package whose doctests are collected, e.g.
    `src/pydash`) keeps its other modules maskable."""
    root, found = Path(root), []
    for p in paths:
        target = root / p
        files = [Path(p)] if target.is_file() else [Path(p) / rel for rel in _walk(target)] if target.is_dir() else []
        found += [f.as_posix() for f in files if defines_tests(root / f)]
    return tuple(dict.fromkeys(found))


def _is_candidate(rel: Path) -> bool:
    if any(part in TEST_DIRS for part in rel.parts[:-1]):
        return True
    return len(rel.parts) <= 2 and any(fnmatch.fnmatch(rel.name, pat) for pat in ROOT_NAMES)


def find_tests(root: Path, manifest_paths: tuple[str, ...] = (), repo: str = "") -> TestLayout:
    """The repository's test paths; raises `NoTestsFound` naming every candidate tried."""
    if manifest_paths:
        return TestLayout(tuple(manifest_paths), "manifest")
    if _configured(root):
        return TestLayout((), "configured")
    files = list(_walk(root))
    if any(fnmatch.fnmatch(f.name, "test_*.py") or fnmatch.fnmatch(f.name, "*_test.py") for f in files):
        return TestLayout((), "pytest defaults")
    candidates = [f for f in files if _is_candidate(f) and f.name not in ("__init__.py", "conftest.py", "setup.py")]
    chosen = tuple(f.as_posix() for f in candidates if defines_tests(root / f))
    if chosen:
        return TestLayout(chosen, "search")
    looked = ", ".join(f.as_posix() for f in candidates[:10]) or "none of these exist"
    raise NoTestsFound(f"{repo or root.name}: no tests found; tried {'; '.join(CANDIDATES_TRIED)} (candidate files: {looked}); "
                       "set test_paths in the manifest")
