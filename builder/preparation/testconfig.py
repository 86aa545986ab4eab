"""The repository's own pytest and coverage settings that conflict with our runs, and how we
neutralise them without editing the repository.

- coverage.py: our coverage run reads only our own configuration (`coverage run --rcfile=OURS`,
  see `execrepobench_metric.execution.pytest_run.COVERAGE_RC`), so `parallel = true` (data in
  `.coverage.<host>.<pid>.*`), `data_file`, `source`, `include`/`omit`, `fail_under`, `plugins`...
  of `.coveragerc` / `setup.cfg` / `tox.ini` / `pyproject.toml` never apply.  We only record which.
- pytest `addopts`: options that start a second coverage (pytest-cov `--cov*`, which also fails the
  run on `--cov-fail-under`), run tests in worker processes (xdist `-n`, our plugin must see the
  session), stop early (`-x`, `--maxfail`, `--sw`, `--lf`), open a debugger or take over the
  terminal (`--pdb`, `--trace`, `--looponfail`) are removed by overriding the value:
  `-o addopts=<the rest>` (pytest reads `-o` before it applies addopts).  Options we also pass
  (`--junitxml`, `--color`) need nothing: ours come later and win.  Plugins that take over the
  terminal are disabled (`-p no:sugar`).
A manifest that sets `-o addopts=...` or `-c FILE` itself is left alone.  The build report lists
what was overridden (`test_config`).
"""
from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from execrepobench_dataset.files import read_ini

# option -> takes a value ("required", "optional" like pytest-cov's `--cov [SOURCE]`, or "none")
_DROP = {
    **{o: "optional" for o in ("--cov",)},
    **{o: "required" for o in ("--cov-report", "--cov-config", "--cov-fail-under", "--cov-context",
                               "--cov-precision", "-n", "--numprocesses", "--dist", "--maxprocesses", "--tx",
                               "--max-worker-restart", "--maxfail", "--lfnf", "--last-failed-no-failures",
                               "--pdbcls")},
    **{o: "none" for o in ("--cov-append", "--cov-branch", "--cov-reset", "--no-cov", "--no-cov-on-fail",
                           "-x", "--exitfirst", "--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--lf",
                           "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--pdb", "--trace",
                           "--looponfail", "-f")},
}
_SHORT_FLAGS = set("xvqsl")  # single-letter flags without a value that may be clustered (-xvs)
# Plugins (distribution name -> plugin name) that take over the terminal; disabled with -p no:NAME.
TERMINAL_PLUGINS = {"pytest-sugar": "sugar"}
COVERAGE_KEYS = ("parallel", "data_file", "source", "source_pkgs", "include", "omit", "fail_under", "branch",
                 "concurrency", "plugins", "relative_files", "dynamic_context", "context", "command_line")


@dataclass(frozen=True)
class TestConfig:
    """What we add to the repository's pytest arguments, and the report of what it overrides."""

    pytest_args: tuple[str, ...] = ()
    report: dict = field(default_factory=dict)


def _ini_addopts(path: Path, section: str) -> str | None:
    parser = read_ini(path)
    if parser is None or not parser.has_section(section):
        return None
    return parser.get(section, "addopts", fallback="")


def read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _pyproject_addopts(path: Path) -> str | None:
    tool = read_toml(path).get("tool", {}).get("pytest")
    if not isinstance(tool, dict):
        return None
    value = tool.get("ini_options", tool).get("addopts", "")
    return shlex.join(str(v) for v in value) if isinstance(value, list) else str(value)


# pytest's own order of configuration files in one folder; a file counts when it has its section.
_PYTEST_FILES: tuple[tuple[str, Callable[[Path], str | None]], ...] = (
    ("pytest.ini", lambda p: _ini_addopts(p, "pytest") if _ini_addopts(p, "pytest") is not None else ""),
    (".pytest.ini", lambda p: _ini_addopts(p, "pytest") if _ini_addopts(p, "pytest") is not None else ""),
    ("pyproject.toml", _pyproject_addopts),
    ("tox.ini", lambda p: _ini_addopts(p, "pytest")),
    ("setup.cfg", lambda p: _ini_addopts(p, "tool:pytest")),
)


def pytest_config(root: Path, test_paths: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(repo-relative config file, its addopts) that pytest uses for a run from `root`, or None."""
    start = root
    if test_paths:
        parents = [(root / p) if (root / p).is_dir() else (root / p).parent for p in test_paths]
        common = Path(*Path(parents[0]).parts[:min(len(p.parts) for p in parents)])
        start = next((c for c in [common, *common.parents] if all(p.is_relative_to(c) for p in parents)), root)
    folder = start if start.is_relative_to(root) else root
    while True:
        for name, read in _PYTEST_FILES:
            if (folder / name).is_file():
                addopts = read(folder / name)
                if addopts is not None:
                    return (folder / name).relative_to(root).as_posix(), addopts
        if folder == root:
            return None
        folder = folder.parent


def filter_addopts(addopts: str) -> tuple[list[str], list[str]]:
    """(kept tokens, removed tokens) of an addopts value."""
    try:
        tokens = shlex.split(addopts)
    except ValueError:
        return addopts.split(), []
    kept, removed = [], []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name = tok.split("=", 1)[0]
        kind = _DROP.get(name)
        if kind is None and len(name) > 2 and name[:2] in ("-n",) and not name.startswith("--"):
            kind, name = "attached", "-n"  # -n4, -nauto
        if kind is not None:
            removed.append(tok)
            takes_next = "=" not in tok and (kind == "required" or (
                kind == "optional" and i + 1 < len(tokens) and not tokens[i + 1].startswith("-")))
            if takes_next and i + 1 < len(tokens):
                i += 1
                removed.append(tokens[i])
        elif tok.startswith("-") and not tok.startswith("--") and len(tok) > 2 and set(tok[1:]) <= _SHORT_FLAGS \
                and "x" in tok:
            kept.append("-" + tok[1:].replace("x", ""))  # -xvs -> -vs
            removed.append("-x")
        else:
            kept.append(tok)
        i += 1
    return kept, removed


def _manifest_overrides_addopts(args: tuple[str, ...]) -> bool:
    for i, arg in enumerate(args):
        if arg in ("-c", "--config-file") or arg.startswith(("-c=", "--config-file=")):
            return True
        if arg.startswith("-oaddopts=") or arg.startswith("--override-ini=addopts"):
            return True
        if arg in ("-o", "--override-ini") and i + 1 < len(args) and args[i + 1].startswith("addopts="):
            return True
    return False


def coverage_settings(root: Path) -> dict[str, list[str]]:
    """{repo-relative file: [coverage [run] keys it sets that our own configuration overrides]}."""
    found: dict[str, list[str]] = {}
    for name, sections in ((".coveragerc", ("run", "coverage:run")), ("setup.cfg", ("coverage:run",)),
                           ("tox.ini", ("coverage:run",))):
        path = root / name
        if not path.is_file():
            continue
        parser = read_ini(path)
        if parser is None:
            continue
        keys = {k for s in sections if parser.has_section(s) for k in parser.options(s)}
        keys |= {"fail_under"} if any(parser.has_option(s, "fail_under") for s in ("report", "coverage:report")
                                      if parser.has_section(s)) else set()
        if keys & set(COVERAGE_KEYS):
            found[name] = sorted(keys & set(COVERAGE_KEYS))
    cov = read_toml(root / "pyproject.toml").get("tool", {}).get("coverage", {})
    if isinstance(cov, dict):
        keys = set(cov.get("run", {}) or {}) | ({"fail_under"} if "fail_under" in (cov.get("report") or {}) else set())
        if keys & set(COVERAGE_KEYS):
            found["pyproject.toml"] = sorted(keys & set(COVERAGE_KEYS))
    return found


def neutralise(root: Path, pytest_args: tuple[str, ...], test_paths: tuple[str, ...],
               installed: Callable[[str], bool]) -> TestConfig:
    """Arguments that neutralise the repository's conflicting settings; `installed(dist)` says
    whether a distribution is in the environment."""
    args: list[str] = []
    report: dict = {}
    coverage = coverage_settings(root)
    if coverage:
        report["coverage_settings_ignored"] = coverage  # our coverage run reads only our own rcfile
    found = pytest_config(root, test_paths)
    if found and not _manifest_overrides_addopts(pytest_args):
        kept, removed = filter_addopts(found[1])
        if removed:
            args += ["-o", "addopts=" + shlex.join(kept)]
            report["addopts"] = {"file": found[0], "removed": removed, "kept": kept}
    for dist, plugin in TERMINAL_PLUGINS.items():
        if installed(dist) and f"no:{plugin}" not in pytest_args:
            args += ["-p", f"no:{plugin}"]
            report.setdefault("plugins_disabled", []).append(plugin)
    return TestConfig(tuple(args), report)
