"""One pytest run of a repository's suite (or a selection of it) -> per-test outcomes.

Outcomes come from pytest's junit XML; the set of collected tests from a tiny collection plugin.
The exit code is recorded but never makes a pass on its own.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from .junit import JunitError, parse_junit_file, results_by_nodeid
from .process import ProcessResult, run_command

PLUGIN_DIR = Path(__file__).parent / "pytest_plugin"
PLUGIN_NAME = "_execrepobench_collect"
# Flags every run gets: quiet, no cache writes into the repo, no colour codes.
BASE_PYTEST_ARGS = ("-q", "-p", "no:cacheprovider", "--color=no")


@dataclass(frozen=True)
class PytestInvocation:
    """What to run: the repo's pytest arguments plus paths, deselections and an optional selection."""

    python: str  # the environment's interpreter
    root: Path  # project root: cwd and --rootdir, so node ids are root-relative
    pytest_args: tuple[str, ...] = ()
    test_paths: tuple[str, ...] = ()
    deselect: tuple[str, ...] = ()
    select: tuple[str, ...] = ()  # node ids; when given, only these run (instead of test_paths)
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 600.0

    def test_command(self) -> tuple[str, ...]:
        """The command a person would type (recorded in samples), without our bookkeeping flags."""
        return ("python", "-m", "pytest", *BASE_PYTEST_ARGS, *self.pytest_args, *self.test_paths)

    def argv(self, junit_path: Path) -> list[str]:
        targets = list(self.select) if self.select else list(self.test_paths)
        argv = [self.python, "-m", "pytest", *BASE_PYTEST_ARGS, "-p", PLUGIN_NAME,
                f"--rootdir={self.root}", f"--junitxml={junit_path}", "-o", "junit_logging=no",
                *self.pytest_args]
        for nodeid in self.deselect:
            argv += ["--deselect", nodeid]
        return argv + targets


@dataclass(frozen=True)
class PytestRun:
    outcomes: dict[str, str | None]  # collected node id -> passed/failed/error/skipped, None = no report
    collected: tuple[str, ...]
    process: ProcessResult
    error: str | None  # why the run produced no usable report, else None

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode


def clean_env(inv: PytestInvocation, *, home: Path) -> dict[str, str]:
    """A small, fixed environment: none of the caller's variables leak into the repo's tests.

    Bytecode writing is off so no stale `.pyc` of an original file can shadow a completed one.
    """
    venv_bin = str(Path(inv.python).parent)
    env = {
        "PATH": os.pathsep.join((venv_bin, "/usr/local/bin", "/usr/bin", "/bin")),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(PLUGIN_DIR),
        "VIRTUAL_ENV": str(Path(venv_bin).parent),
    }
    env.update(inv.env)
    if "PYTHONPATH" in inv.env:
        env["PYTHONPATH"] = os.pathsep.join((str(PLUGIN_DIR), inv.env["PYTHONPATH"]))
    return env


def run_pytest(inv: PytestInvocation, *, scratch: Path | None = None) -> PytestRun:
    with tempfile.TemporaryDirectory(prefix="erb-run-", dir=scratch) as tmp:
        junit = Path(tmp) / "junit.xml"
        collect = Path(tmp) / "collected.json"
        env = clean_env(inv, home=Path(tmp))
        env["EXECREPOBENCH_COLLECT_OUT"] = str(collect)
        proc = run_command(inv.argv(junit), cwd=inv.root, env=env, timeout_s=inv.timeout_s)
        try:
            collected = tuple(json.loads(collect.read_text(encoding="utf-8")))
        except (FileNotFoundError, json.JSONDecodeError):
            collected = ()
        error = None
        try:
            junit_results = parse_junit_file(junit)
        except JunitError as exc:
            junit_results = {}
            error = str(exc)
        if proc.timed_out:
            error = f"timed out after {inv.timeout_s:.0f} s"
        elif not collected and error is None:
            error = f"no tests collected (pytest exit code {proc.returncode})"
        return PytestRun(results_by_nodeid(collected, junit_results), collected, proc, error)
