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


def context_pool(pool: dict[str, str], root: Path, with_tests: bool = False) -> dict[str, str]:
    """The files a sample's context is ranked from: the paper's pool - the files it may mask (no `tests/`,
    `test/`, `docs/`, `build/`, `setup.py`, test modules: the official `is_valid_file`) - unless
    `with_tests` (then every .py file of `pool`).  Test files spell out the expected values of the code
    they test: ranked first where they name the masked code, they would hand a model its answer."""
    if with_tests:
        return dict(pool)
    from .masking import candidate_files

    allowed = set(candidate_files(root))
    return {path: code for path, code in pool.items() if path in allowed}


def write_atomic(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)
