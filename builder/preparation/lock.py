"""Resolve a repository's test environment to a lock (the builder's part of making environments).

The requirement set is the project itself with its own test extras (`-e ROOT[test,...]`) and PEP 735
test groups, plus BASE_REQUIREMENTS and the manifest's `extra_test_requires`.  `uv pip compile
--generate-hashes` resolves it for the repository's Python X.Y; the project's own `-e` line is dropped
(the environment installs it from the pinned source), every other line is one exact pin with its
hashes.  Every lock is bound to a date (`exclude_newer`, YYYY-MM-DD, from the manifest or pinned by
the build): `uv pip compile --exclude-newer` considers no distribution uploaded after that day (UTC),
so the same manifest resolves to the same lock on any later day, on any machine.  Locks are also cached
by what they were resolved from (the date included).  The environment is then made FROM the lock by the metric's
`ensure_environment`, exactly as `prepare` makes it on any other machine.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import tomllib
from pathlib import Path

from execrepobench_dataset.files import read_ini
from execrepobench_dataset.schemes import LOCK_SCHEMA
from execrepobench_metric.environments.layout import cache_root
from execrepobench_metric.environments.venvs import interpreter_for, run_uv
from execrepobench_metric.errors import EnvError

__all__ = ["BASE_REQUIREMENTS", "EnvError", "detect_test_extras", "parse_compiled", "resolve_lock"]
TEST_EXTRA_NAMES = ("test", "tests", "testing")
BASE_REQUIREMENTS = ("pytest>=7", "coverage>=7.4")


def detect_test_extras(root: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(extras, PEP 735 groups) named test/tests/testing that the project itself declares."""
    extras: set[str] = set()
    groups: set[str] = set()
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            data = {}
        extras |= set(data.get("project", {}).get("optional-dependencies", {}) or {})
        groups |= set(data.get("dependency-groups", {}) or {})
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        parser = read_ini(setup_cfg)
        if parser is not None and parser.has_section("options.extras_require"):
            extras |= set(parser.options("options.extras_require"))
    pkg_info = root / "PKG-INFO"
    if pkg_info.is_file():
        for line in pkg_info.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Provides-Extra:"):
                extras.add(line.split(":", 1)[1].strip())
            elif not line.strip():
                break  # end of the metadata headers
    return (tuple(sorted(e for e in extras if e in TEST_EXTRA_NAMES)),
            tuple(sorted(g for g in groups if g in TEST_EXTRA_NAMES)))


def parse_compiled(text: str) -> tuple[str, ...]:
    """`uv pip compile` output -> one line per pinned requirement (continuations joined, whitespace
    normalised), without comments and without editable (`-e`) lines."""
    logical, current = [], ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            current += line[:-1].strip() + " "
            continue
        current += line
        if current.strip():
            logical.append(" ".join(current.split()))
        current = ""
    if current.strip():
        logical.append(" ".join(current.split()))
    return tuple(line for line in logical if not line.startswith(("-e ", "--editable")))


def _lock_path(inputs: dict) -> Path:
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:24]
    return cache_root() / "locks" / f"{digest}.json"


def exclude_newer_bound(date: str) -> str:
    """What uv is given for a resolution date: the end of that day, UTC (uploads on the day count)."""
    return f"{date}T23:59:59Z"


def resolve_lock(repo: str, source_hash: str, root: Path, python: str,
                 extra_requires: tuple[str, ...] = (), *, exclude_newer: str | None = None) -> tuple[str, ...]:
    """The lock of `repo`'s test environment, resolved as of `exclude_newer` (YYYY-MM-DD; None: no bound,
    for callers that pin nothing) and cached by source hash, python, extras, groups, requirements, date."""
    extras, groups = detect_test_extras(root)
    inputs = {"schema": LOCK_SCHEMA, "source_hash": source_hash, "python": python, "extras": list(extras),
              "groups": list(groups), "base": list(BASE_REQUIREMENTS), "extra_requires": list(extra_requires),
              "exclude_newer": exclude_newer}
    cached = _lock_path(inputs)
    try:
        return tuple(json.loads(cached.read_text(encoding="utf-8"))["lock"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    target = f"{root}[{','.join(extras)}]" if extras else str(root)
    with tempfile.TemporaryDirectory(prefix="erb-lock-") as tmp:
        req = Path(tmp) / "requirements.in"
        req.write_text("\n".join([f"-e {target}", *BASE_REQUIREMENTS, *extra_requires]) + "\n", encoding="utf-8")
        args = ["pip", "compile", "--quiet", "--generate-hashes", "--no-header", "--no-annotate",
                "--python", interpreter_for(python), "--python-version", python, str(req)]
        if exclude_newer:
            args += ["--exclude-newer", exclude_newer_bound(exclude_newer)]
        for group in groups:
            args += ["--group", f"{root / 'pyproject.toml'}:{group}"]
        lock = parse_compiled(run_uv(*args, repo=repo))
    if not lock:
        raise EnvError(f"{repo}: `uv pip compile` gave an empty lock")
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp_file = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp_file.write_text(json.dumps({"inputs": inputs, "lock": list(lock)}, indent=1), encoding="utf-8")
    os.replace(tmp_file, cached)
    return lock
