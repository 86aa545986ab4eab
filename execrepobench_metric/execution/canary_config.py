"""What a repository's pytest configuration collects: the `python_files` and `python_functions` a
judged run applies (for canary tests, `canaries.py`, whose file and function names must be collected
by the repository's own configuration, as the judged tests' are).

pytest's rules, read from outside the run: the configuration file is `-c` / `--config-file` of the
test command, else the first of pytest.ini, .pytest.ini, pyproject.toml (with `[tool.pytest.ini_options]`
or `[tool.pytest]`), tox.ini (with `[pytest]`), setup.cfg (with `[tool:pytest]`) in the common folder of
the run's files or a folder above it; `-o NAME=VALUE` of the command overrides it.  A value a conftest
changes at run time is not seen here: the run itself then shows whether the canaries were collected
(the judge's check is off when they were not).
"""
from __future__ import annotations

import configparser
import fnmatch
import os
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Sequence

DEFAULT_FILES = ("test_*.py", "*_test.py")
DEFAULT_FUNCTIONS = ("test",)
_INI = (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("pyproject.toml", None), ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"))


@dataclass(frozen=True)
class Collects:
    """The patterns pytest collects test files and test functions by, in a repository's judged run."""

    python_files: tuple[str, ...] = DEFAULT_FILES
    python_functions: tuple[str, ...] = DEFAULT_FUNCTIONS
    python_plugin: bool = True  # False: `-p no:python` (no Python test module is collected at all)

    def collects_file(self, path: Path) -> bool:
        """pytest's `path_matches_patterns` (`fnmatch_ex`) for an absolute path."""
        return any(_fnmatch_ex(pattern, path) for pattern in self.python_files)

    def collects_function(self, name: str) -> bool:
        """pytest's `_matches_prefix_or_glob_option` for `python_functions`."""
        return any(name.startswith(option) or (any(c in option for c in "*?[") and fnmatch.fnmatch(name, option))
                   for option in self.python_functions)


def _fnmatch_ex(pattern: str, path: Path) -> bool:
    if os.sep not in pattern:
        name = PurePath(path).name
    else:
        name = str(path)
        if PurePath(path).is_absolute() and not os.path.isabs(pattern):
            pattern = f"*{os.sep}{pattern}"
    return fnmatch.fnmatch(name, pattern)


def _split(value) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return tuple(shlex.split(str(value)))


def _ini_options(path: Path, section: str | None) -> dict | None:
    """The pytest options of one configuration file, or None when it is not pytest's."""
    if section is None:  # pyproject.toml
        try:
            tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest")
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if not isinstance(tool, dict):
            return None
        options = tool.get("ini_options", tool)
        return options if isinstance(options, dict) else None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return {} if path.name in ("pytest.ini", ".pytest.ini") else None
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if path.name in ("pytest.ini", ".pytest.ini") else None  # pytest.ini is pytest's even when empty


def _args(pytest_args: Sequence[str]) -> tuple[str | None, dict[str, str], bool]:
    """(-c file, -o overrides, python plugin on) from the test command's arguments."""
    config, overrides, python, args = None, {}, True, list(pytest_args)
    for i, arg in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else ""
        if arg in ("-c", "--config-file"):
            config = following
        elif arg.startswith("--config-file="):
            config = arg.split("=", 1)[1]
        elif arg in ("-o", "--override-ini") and "=" in following:
            key, value = following.split("=", 1)
            overrides[key.strip()] = value
        elif arg.startswith("--override-ini=") and "=" in arg[len("--override-ini="):]:
            key, value = arg[len("--override-ini="):].split("=", 1)
            overrides[key.strip()] = value
        elif (arg == "-p" and following == "no:python") or arg == "-pno:python":
            python = False
    return config, overrides, python


def read_collects(root: Path, files: Sequence[str], pytest_args: Sequence[str]) -> Collects:
    """The patterns of a run of `files` (repo-relative) with these pytest arguments, from `root`."""
    config, overrides, python = _args(pytest_args)
    options: dict = {}
    if config:
        path = root / config
        options = _ini_options(path, None if path.name == "pyproject.toml" else
                               ("tool:pytest" if path.name == "setup.cfg" else "pytest")) or {}
    else:
        start = Path(os.path.commonpath([str((root / f).parent.resolve()) for f in files])) if files else root
        options = _locate(start)
    options = {**options, **overrides}
    found_files = _split(options["python_files"]) if "python_files" in options else DEFAULT_FILES
    found_functions = _split(options["python_functions"]) if "python_functions" in options else DEFAULT_FUNCTIONS
    return Collects(found_files, found_functions, python)


def _locate(start: Path) -> dict:
    for folder in (start, *start.parents):
        for name, section in _INI:
            path = folder / name
            if path.is_file():
                options = _ini_options(path, section)
                if options is not None:
                    return options
    return {}
