"""Canary test functions placed inside the judged test modules (`canaries.py`): a view copy of a judged
test file with the canaries appended, in the run's private view only.

Why there and not in files of their own: a canary module of its own differs from the repository's test
modules in what a completion can read of it - no imports, another inode (the overlay's upper layer),
a size and name of no file of the source tree - so a forger could tell canaries apart by their file and
keep their outcomes while rewriting the judged tests'.  A canary appended to a judged test module shares
that module's file, imports, globals, fixtures, markers and modification time: the file says nothing
about which of its tests are canaries.  And it is the only way to place canaries in a repository whose
`python_files` is one fixed name (lark's `__main__.py`, voluptuous's `tests.py`): no new file would be
collected there, a judged test module always is.

Whether a repository has such a host is decided here, before the run, from the tree and its
configuration alone (nothing a completion can change): a judged test file that `python_files` collects,
that parses, and that is not the masked file.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .canary_config import Collects


@dataclass(frozen=True)
class Host:
    path: str  # repo-relative
    text: str  # the module's own source
    names: frozenset[str]  # top-level names it binds (a canary must not rebind one)
    mtime: float | None


def hosts(root: Path, files: Sequence[str], collects: Collects, masked: str = "") -> tuple[Host, ...]:
    """The judged test files that can carry canaries, in the run's order of `files`."""
    found = []
    for rel in files:
        path = root / rel
        if not rel.endswith(".py") or rel == masked or not collects.collects_file(path):
            continue
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
            mtime = path.stat().st_mtime
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            continue
        found.append(Host(rel, text, frozenset(_bound_names(tree)), mtime))
    return tuple(found)


def _bound_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def with_canaries(host: Host, canary_text: str) -> str:
    """The host module's text with the canary functions appended (after everything it defines, so pytest
    collects them after its own tests: the one that must fail runs after the judged tests of its file)."""
    text = host.text if host.text.endswith("\n") else host.text + "\n"
    return f"{text}\n\n{canary_text}"
