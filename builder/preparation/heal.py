"""Suites that heal: when a repository's baseline cannot run, read why from pytest's own output and try one
repair at a time, each recorded in the build report - none silently changes what the judged tests are.

- an option in the repository's `addopts` that pytest does not know (its plugin is in no extra the
  environment installs: `unrecognized arguments: --flakes`) is removed from addopts;
- an addopts `-p PLUGIN` that cannot be imported (`Error importing plugin "x"`) is removed;
- a pytest plugin the environment installs that crashes pytest itself (an INTERNALERROR in its own code:
  pytest-isort wants the cache provider our runs switch off) is switched off with `-p no:NAME`;
- collection errors in some files (a helper module the sdist lacks) narrow the suite to the test files that
  collect; the files left out are named.
"""
from __future__ import annotations

import configparser
import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from ..sources.manifest import RepoSpec
from .testlayout import modules_with_tests

MAX_REPAIRS = 3
_UNRECOGNIZED = re.compile(r"unrecognized arguments?: (.+)$", re.MULTILINE)
_PLUGIN = re.compile(r"""Error importing plugin ["']([\w.\-]+)["']""")
_INTERNAL_FRAME = re.compile(r'INTERNALERROR>\s+File "(?P<site>[^"]*?/site-packages)/(?P<module>[A-Za-z_]\w*)[/.]')
_PYTEST_ITSELF = frozenset({"pluggy", "_pytest", "pytest", "coverage"})
_COLLECT_ERROR = re.compile(r"^ERROR (?:collecting )?(\S+\.py)\b", re.MULTILINE)


@dataclass(frozen=True)
class Repair:
    kind: str  # "addopts_option_removed", "addopts_plugin_removed", "suite_narrowed"
    detail: dict

    def to_dict(self) -> dict:
        return {"repair": self.kind, **self.detail}


def _addopts(args: tuple[str, ...]) -> tuple[int, list[str]] | None:
    """(index of the `-o` pair's value, addopts tokens) of the run's `-o addopts=...` override, if any."""
    for i, arg in enumerate(args[:-1]):
        if arg == "-o" and args[i + 1].startswith("addopts="):
            return i + 1, shlex.split(args[i + 1][len("addopts="):])
    return None


def _without(tokens: list[str], drop: set[str], with_value: bool) -> list[str]:
    out, skip = [], False
    for i, tok in enumerate(tokens):
        if skip:
            skip = False
            continue
        if tok.split("=", 1)[0] in drop:
            skip = with_value and "=" not in tok and i + 1 < len(tokens) and not tokens[i + 1].startswith("-")
            continue
        out.append(tok)
    return out


def _set_addopts(spec: RepoSpec, found: tuple[int, list[str]] | None, config_addopts: list[str],
                 tokens: list[str]) -> RepoSpec:
    args = list(spec.pytest_args)
    if found is None:
        return replace(spec, pytest_args=(*args, "-o", "addopts=" + shlex.join(tokens)))
    args[found[0]] = "addopts=" + shlex.join(tokens)
    return replace(spec, pytest_args=tuple(args))


def repair(spec: RepoSpec, root: Path, output: str, config_addopts: list[str]) -> tuple[RepoSpec, Repair] | None:
    """The next repair `output` (pytest's, from a failed baseline) calls for, or None when none applies.
    `config_addopts`: the addopts tokens of the repository's pytest configuration as run."""
    found = _addopts(spec.pytest_args)
    current = found[1] if found else list(config_addopts)
    if m := _UNRECOGNIZED.search(output):
        named = {t.split("=", 1)[0] for t in m[1].split() if t.startswith("-")}
        unknown = {t for t in named if any(c.split("=", 1)[0] == t for c in current)}
        if unknown:
            kept = _without(current, unknown, with_value=True)
            return _set_addopts(spec, found, config_addopts, kept), Repair(
                "addopts_option_removed", {"removed": sorted(unknown), "why": m[0].strip()[:200]})
    if m := _PLUGIN.search(output):
        plugin = m[1]
        kept, i, removed = [], 0, False
        while i < len(current):
            if current[i] == "-p" and i + 1 < len(current) and current[i + 1] == plugin:
                i, removed = i + 2, True
                continue
            if current[i] == f"-p{plugin}":
                i, removed = i + 1, True
                continue
            kept.append(current[i])
            i += 1
        if removed:
            return _set_addopts(spec, found, config_addopts, kept), Repair(
                "addopts_plugin_removed", {"removed": ["-p", plugin], "why": m[0][:200]})
    frames = [m for m in _INTERNAL_FRAME.finditer(output) if m["module"] not in _PYTEST_ITSELF]
    if frames:
        name = _entry_point(Path(frames[-1]["site"]), frames[-1]["module"])
        if name and f"no:{name}" not in spec.pytest_args:
            return replace(spec, pytest_args=(*spec.pytest_args, "-p", f"no:{name}")), Repair(
                "plugin_disabled", {"plugin": name, "module": frames[-1]["module"],
                                    "why": "an INTERNALERROR in the plugin's own code"})
    broken = sorted(set(_COLLECT_ERROR.findall(output)))
    if broken:
        files = list(modules_with_tests(root, tuple(spec.test_paths))) if spec.test_paths else []
        good = [f for f in files if f not in broken]
        if good and len(good) < len(files):
            return replace(spec, test_paths=tuple(good)), Repair(
                "suite_narrowed", {"left_out": broken, "kept_files": len(good),
                                   "why": "these files do not collect here (see the error lines of pytest)"})
    return None


def _entry_point(site: Path, module: str) -> str | None:
    """The pytest11 entry-point name under which `module` is registered in `site` (its dist-info)."""
    for path in sorted(site.glob("*.dist-info/entry_points.txt")):
        parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section("pytest11"):
            for name, value in parser.items("pytest11"):
                if value.strip().split(":")[0].split(".")[0] == module:
                    return name.strip()
    return None
