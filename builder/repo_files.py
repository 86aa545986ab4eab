"""A repository tree's Python files (the masking and context pool) and the builder's atomic writes."""
from __future__ import annotations

import os
from pathlib import Path

_SKIP_DIRS = {".git", ".hg", ".tox", ".nox", ".venv", "venv", "build", "dist", "node_modules", "__pycache__"}


def python_files(root: Path) -> list[str]:
    """Every .py file of the repository (the context pool), repo-relative POSIX, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in filenames:
            if name.endswith(".py"):
                found.append((Path(dirpath) / name).relative_to(root).as_posix())
    return sorted(found)


def read_pool(root: Path) -> dict[str, str]:
    return {f: (root / f).read_text(encoding="utf-8", errors="replace") for f in python_files(root)}


def write_atomic(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)
