"""Names for canary tests (`canaries.py`): files and functions the repository's own configuration
collects, made of words of the judged tests' ids, clashing with nothing in the tree; the module name
pytest gives a file, for canary doctests.
"""
from __future__ import annotations

import builtins
import keyword
import os
import re
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Sequence

from .canary_config import Collects

FALLBACK_WORDS = ("value", "range", "order", "empty", "basic", "round", "items", "limit", "format", "update",
                  "default", "result", "string", "number", "input", "output", "config", "check", "simple", "nested")
_STOP = frozenset({"test", "tests", "testing", "py", "self", "cls", "init", "main", "conftest", "txt", "rst"})
_SKIP_DIRS = frozenset({".git", ".hg", ".tox", ".nox", ".venv", "venv", "node_modules", "__pycache__"})


def words_of(judged: Sequence[str]) -> tuple[str, ...]:
    found = {w for nodeid in judged for w in re.findall(r"[a-z]{3,10}", nodeid.lower()) if w not in _STOP}
    return tuple(sorted(found)) or FALLBACK_WORDS


def usable(name: str) -> bool:
    """A name a canary module may define: an identifier, no keyword (`def with(...)` does not compile) and no
    builtin (a helper named `len` would break the canaries beside it that call `len`)."""
    return name.isidentifier() and not keyword.iskeyword(name) and not hasattr(builtins, name)


def _joined(words: Sequence[str], rng) -> str:
    pool = list(words) + list(FALLBACK_WORDS[:4]) if len(words) < 4 else list(words)
    return "_".join(rng.sample(pool, rng.randint(1, 2)))


def file_path(collects: Collects, root: Path, folder: str, words, taken: set[str], rng) -> str | None:
    """A repo-relative path in `folder` that the repository collects as a test module, or None."""
    for pattern in rng.sample(collects.python_files, len(collects.python_files)):
        base = pattern.rsplit("/", 1)[-1]
        if "[" in base or not base.endswith(".py") or "*" not in base:
            continue
        name = re.sub(r"\*+", lambda _: _joined(words, rng), base).replace("?", "x")
        path = str(PurePosixPath(folder) / name)
        if (name not in taken and usable(name[:-3]) and not (root / path).exists()
                and collects.collects_file(root / path)):
            return path
    return None


def function_names(collects: Collects, words, rng, count: int, judged_names: set[str]) -> list[str] | None:
    names: list[str] = []
    for _ in range(count * 20):
        option = rng.choice(collects.python_functions)
        if any(c in option for c in "?["):
            continue
        stem = _joined(words, rng)
        name = re.sub(r"\*+", stem, option) if "*" in option else option + ("_" if option[-1:].isalnum() else "") + stem
        if usable(name) and collects.collects_function(name) and name not in names \
                and name not in judged_names:
            names.append(name)
        if len(names) == count:
            return names
    return None


def neighbour_mtime(root: Path, folder: str, files: Sequence[str]) -> float | None:
    for f in files:
        if str(PurePosixPath(f).parent) == folder:
            try:
                return (root / f).stat().st_mtime
            except OSError:
                continue
    return None


@lru_cache(maxsize=32)
def taken_names(root: Path) -> frozenset[str]:
    """Basenames a canary module must not have: every .py file of the tree, and `<folder>.py` for each folder
    (a module of that name would shadow or clash with a package when pytest imports it)."""
    taken = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        taken.update(n for n in filenames if n.endswith(".py"))
        taken.update(d + ".py" for d in dirnames)
    return frozenset(taken)


def helper_name(collects: Collects, words, rng, avoid: set[str]) -> str:
    """A plain function name (a canary doctest's function) that `python_functions` does not collect."""
    for _ in range(50):
        name = _joined(words, rng)
        if usable(name) and not collects.collects_function(name) and name not in avoid:
            return name
    return "helper_" + _joined(FALLBACK_WORDS, rng)


def package_module(root: Path, path: str) -> str:
    """The module name pytest's default import mode gives a file: its folders with an `__init__.py`, upward."""
    file = root / path
    parts = [] if file.name == "__init__.py" else [file.stem]
    folder = file.parent
    while (folder / "__init__.py").is_file() and folder.name.isidentifier() and folder != folder.parent:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def doctest_folders(root: Path, judged: Sequence[str]) -> tuple[str, ...]:
    """Folders of the judged module doctests whose ids match the module name `package_module` gives their
    file (so a canary module there gets a doctest id the judge can name); () when none do."""
    found = set()
    for nodeid in judged:
        file, _, name = nodeid.partition("::")
        if not file.endswith(".py") or not name or "::" in name:
            continue
        module = package_module(root, file)
        if name == module and _defines_function(root / file, name):
            continue  # test_schema.py::test_schema: a test function named like its module, not its docstring
        if module and (name == module or name.startswith(module + ".")):
            found.add(str(PurePosixPath(file).parent))
    return tuple(sorted(found))


def _defines_function(path: Path, name: str) -> bool:
    """Whether the module at `path` defines a top-level function `name` (a test function's node id is then
    the same as the module docstring's doctest id)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(rf"^(?:async\s+)?def\s+{re.escape(name)}\s*\(", text, re.MULTILINE) is not None
