"""One requirement inference for every manifest entry (build, live, release): what an entry that names no
test requirements needs, read from its sdist - extras and groups for tests (`tests_require`, test/dev extras
when nothing names tests), tox and nox test environments, requirement files for tests, and the modules the
tests import that nothing provides (`builder/live/requirements.py`, `builder/live/undeclared.py`).

An entry that writes `extra_test_requires` (even `[]`) is authoritative: nothing is inferred for it, so a
hand-written entry keeps its environment key.  The inferred set is locked here; when it cannot be locked,
the declared part alone, then nothing (each try is reported)."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from ..live.requirements import declared_test_requirements, extra_requirements
from ..live.undeclared import guessed_requirements, imported_test_modules
from ..errors import RequirementsUnresolvable
from .lock import EnvError, resolve_lock
from .testlayout import TEST_DIRS, _walk, defines_tests, modules_with_tests


@dataclass(frozen=True)
class InferredRequirements:
    requires: tuple[str, ...]  # what the entry's environment gets beyond its test extras and groups
    declared: tuple[str, ...]  # what the sdist declares for tests (tox, nox, files, extras, tests_require)
    guessed: tuple[str, ...]  # distributions of modules the tests import that nothing declares
    used: str  # "declared+imports", "declared" or "none": which try could be locked
    lock_errors: tuple[str, ...] = ()

    def report(self) -> dict:
        """What was added and why, for the build report."""
        return {"source": "inferred", "added": list(self.requires), "declared": list(self.declared),
                "guessed_from_imports": list(self.guessed), "used": self.used,
                **({"lock_errors": list(self.lock_errors)} if self.lock_errors else {})}


def test_files(root: Path, test_paths: tuple[str, ...]) -> list[str]:
    """The files that define tests: under the test paths, else pytest's names and the usual test folders."""
    if test_paths:
        return list(modules_with_tests(root, test_paths))
    return [f.as_posix() for f in _walk(root) if (fnmatch.fnmatch(f.name, "test_*.py") or fnmatch.fnmatch(
        f.name, "*_test.py") or set(f.parts[:-1]) & set(TEST_DIRS)) and defines_tests(root / f)]


def infer_test_requirements(name: str, source_hash: str, root: Path, python: str, test_paths: tuple[str, ...],
                            exclude_newer: str | None = None) -> InferredRequirements:
    """The entry's inferred test requirements, locked as of `exclude_newer` (the first try that locks)."""
    declared = declared_test_requirements(root)
    guessed = guessed_requirements(imported_test_modules(root, test_files(root, test_paths)), declared,
                                   extra_requirements(root))
    tries: dict[tuple[str, ...], str] = {}
    for label, requires in (("declared+imports", declared + guessed), ("declared", declared), ("none", ())):
        tries.setdefault(requires, label)  # each distinct set once
    errors: list[str] = []
    for requires, label in tries.items():
        try:
            resolve_lock(name, source_hash, root, python, requires, exclude_newer=exclude_newer)
        except EnvError as exc:
            errors.append(f"{label} ({', '.join(requires) or 'nothing added'}): {str(exc)[-300:]}")
            continue
        return InferredRequirements(requires, declared, guessed, label, tuple(errors))
    raise RequirementsUnresolvable(f"{name}: its test environment cannot be resolved: {' | '.join(errors)}")
