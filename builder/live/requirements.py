"""A candidate's test requirements, from what its sdist declares: no hand-written manifest entry.

The builder's lock already installs the project with its extras and PEP 735 groups named test/tests/testing
(`lock.detect_test_extras`).  Beyond those, `declared_test_requirements` reads:

- extras and dependency groups whose names mention tests (`test-extras`, `tests_require`...), and those that
  tox's `[testenv] extras` or a nox test session's `.[...]` install;
- requirement files for tests (`requirements-test*.txt`, `test-requirements.txt`, `requirements/test*.txt`,
  `tests/requirements*.txt`, ...), following `-r` includes inside the sdist;
- tox's `[testenv] deps` and `extras` (tox.ini, setup.cfg's `[testenv]`, pyproject's `legacy_tox_ini`, tox.toml
  or `[tool.tox.env_run_base]`): lines without a factor condition, or conditioned on test factors only (`unit:`,
  `py311:` on Python 3.11, `unit-!py315t:`; not `py38:`, `docs:`, `lint:`);
- nox's test sessions (`noxfile.py`, functions whose name mentions tests): `session.install("...")` literals;
- setuptools' `tests_require` (setup.py's `setup(...)`, setup.cfg's `[options]`).

Only when none of these says anything, the same sources named `dev` are read instead.  Markers are
evaluated for this interpreter (the lock is for it); tooling that is no test dependency (tox, linters, type
checkers, doc builders, pytest-randomly which reorders the tests) and the project itself are left out.
What the tests import that nobody declared: `undeclared.py`.
"""
from __future__ import annotations

import ast
import configparser
import email.parser
import re
import sys
from pathlib import Path
from typing import Iterable

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..preparation.lock import TEST_EXTRA_NAMES
from ..preparation.testconfig import read_toml

TOOLING = frozenset({"tox", "nox", "pre-commit", "twine", "build", "wheel", "check-manifest", "codecov", "coveralls",
                     "mypy", "ruff", "black", "isort", "flake8", "pylint", "pycodestyle", "pyright", "pytest-randomly",
                     "pytest-xdist", "pytest-sugar", "sphinx", "bump2version", "bumpversion", "towncrier", "ipdb",
                     "readme-renderer", "pip-tools", "setuptools-scm", "tox-uv", "nox-uv", "coverage", "uv"})
TOOLING_PREFIXES = ("flake8-", "sphinx", "types-", "mypy-", "pytest-mypy", "pylint-")
REQUIREMENT_FILES = ("requirements-test*.txt", "requirements_test*.txt", "test-requirements*.txt",
                     "test_requirements*.txt", "requirements/test*.txt", "requirements/*test*.txt",
                     "tests/requirements*.txt", "test/requirements*.txt", "ci/requirements-test*.txt")
DEV_FILES = ("requirements-dev*.txt", "requirements_dev*.txt", "dev-requirements*.txt", "dev.requirements*.txt",
             "requirements/dev*.txt")
_FACTOR = re.compile(r"^(?P<factors>[\w.{},!\- ]+):\s*(?P<rest>.*)$")
# tox factors of a test run here: a line conditioned on other factors (py38:, docs:, lint:) is left out
TEST_FACTORS = frozenset({"unit", "test", "tests", "testing", "pytest", "py", "py3",
                          f"py{sys.version_info.major}{sys.version_info.minor}",
                          f"py{sys.version_info.major}.{sys.version_info.minor}"})
_TESTISH = re.compile(r"test", re.I)


def _is_testish(name: str) -> bool:
    return bool(_TESTISH.search(name)) and canonicalize_name(name) not in TEST_EXTRA_NAMES


def _requirement(line: str) -> Requirement | None:
    """A PEP 508 line as a Requirement whose marker holds here (None when it does not, or is no requirement)."""
    try:
        req = Requirement(line.strip())
    except InvalidRequirement:
        return None
    if req.marker is not None and not req.marker.evaluate({**default_environment(), "extra": ""}):
        return None
    return req


def _extras(root: Path) -> dict[str, list[str]]:
    """extra name -> its requirement lines, from PKG-INFO, pyproject.toml and setup.cfg."""
    found: dict[str, list[str]] = {}
    pkg_info = root / "PKG-INFO"
    if pkg_info.is_file():
        msg = email.parser.Parser().parsestr(pkg_info.read_text(encoding="utf-8", errors="replace"), headersonly=True)
        for line in msg.get_all("Requires-Dist") or []:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            for extra in msg.get_all("Provides-Extra") or []:
                marker = req.marker
                if marker is not None and marker.evaluate({**default_environment(), "extra": extra}) and \
                        not marker.evaluate({**default_environment(), "extra": ""}):
                    found.setdefault(extra, []).append(str(Requirement(str(req).split(";")[0])))
    for extra, lines in (read_toml(root / "pyproject.toml").get("project", {}).get("optional-dependencies") or {}).items():
        found.setdefault(extra, list(lines) if isinstance(lines, list) else [])
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(root / "setup.cfg", encoding="utf-8")
        if parser.has_section("options.extras_require"):
            for extra, value in parser.items("options.extras_require"):
                found.setdefault(extra, [v for v in re.split(r"[\n;]", value) if v.strip()])
    except (configparser.Error, UnicodeDecodeError):
        pass
    return found


def _groups(root: Path) -> dict[str, list[str]]:
    """PEP 735 group name -> its requirement lines (include-group resolved)."""
    groups = read_toml(root / "pyproject.toml").get("dependency-groups") or {}

    def resolve(name: str, seen: tuple[str, ...]) -> list[str]:
        out = []
        for item in groups.get(name, []) if isinstance(groups.get(name), list) else []:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and isinstance(item.get("include-group"), str) and item["include-group"] not in seen:
                out += resolve(item["include-group"], (*seen, item["include-group"]))
        return out
    return {name: resolve(name, (name,)) for name in groups if isinstance(name, str)}


def _requirement_file(path: Path, root: Path, depth: int = 0) -> list[str]:
    """Requirement lines of a pip requirements file, `-r` includes followed inside `root`."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        include = re.match(r"^(?:-r|--requirement)\s*=?\s*(\S+)$", line)
        if include and depth < 5:
            target = (path.parent / include[1].replace("{toxinidir}", str(root))).resolve()
            if target.is_relative_to(root.resolve()):
                out += _requirement_file(target, root, depth + 1)
        elif line and not line.startswith(("-", "#", ".", "/")):
            out.append(line)
    return out


def _files(root: Path, patterns: Iterable[str]) -> list[str]:
    return [line for pattern in patterns for path in sorted(root.glob(pattern)) if path.is_file()
            for line in _requirement_file(path, root)]


def _tox(root: Path) -> tuple[list[str], list[str]]:
    """(deps lines of tox's base test environment, extras it installs)."""
    tox = read_toml(root / "pyproject.toml").get("tool", {}).get("tox", {})
    tox = tox if isinstance(tox, dict) else {}
    text = ""
    if (root / "tox.ini").is_file():
        text = (root / "tox.ini").read_text(encoding="utf-8", errors="replace")
    elif isinstance(tox.get("legacy_tox_ini"), str):
        text = tox["legacy_tox_ini"]
    elif (root / "tox.toml").is_file() or "env_run_base" in tox:
        base = (read_toml(root / "tox.toml") if (root / "tox.toml").is_file() else tox).get("env_run_base", {})
        base = base if isinstance(base, dict) else {}
        return (_expand([d for d in base.get("deps", []) if isinstance(d, str)], root),
                [e for e in base.get("extras", []) if isinstance(e, str)])
    elif (root / "setup.cfg").is_file():
        text = (root / "setup.cfg").read_text(encoding="utf-8", errors="replace")  # tox reads its [testenv]
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except (configparser.Error, UnicodeDecodeError):
        return [], []
    if not parser.has_section("testenv"):
        return [], []
    lines = _unconditioned(parser.get("testenv", "deps", fallback="").splitlines())
    extras = [e.strip() for line in _unconditioned(parser.get("testenv", "extras", fallback="").splitlines())
              for e in line.split(",")]
    return _expand([line for line in lines if "{[" not in line], root), [e for e in extras if re.fullmatch(r"[\w.-]+", e)]


def _unconditioned(lines: Iterable[str]) -> list[str]:
    """The tox lines that apply to a test run here: unconditioned ones, and those whose factor condition names
    test factors only (negated ones: not this interpreter), without their condition."""
    out = []
    for line in (raw.strip() for raw in lines):
        m = _FACTOR.match(line)
        if not line or line.startswith("#"):
            continue
        if m is None or "://" in line:
            out.append(line)
            continue
        factors = re.split(r"[-,]", m["factors"].replace(" ", ""))
        wanted = [f for f in factors if not f.startswith("!")]
        refused = [f[1:] for f in factors if f.startswith("!")]
        if "{" not in m["factors"] and wanted and set(wanted) <= TEST_FACTORS and not set(refused) & TEST_FACTORS:
            out.append(m["rest"].strip())
    return out


def _expand(lines: list[str], root: Path) -> list[str]:
    out = []
    for line in lines:
        include = re.match(r"^-r\s*(\S+)$", line)
        if include:
            out += _requirement_file((root / include[1].replace("{toxinidir}/", "").replace("{toxinidir}", "")), root)
        elif not line.startswith(("-", ".")):
            out.append(line)
    return out


def _nox(root: Path) -> tuple[list[str], list[str]]:
    """(requirement literals a nox test session installs, extras it installs with `.[...]`)."""
    try:
        tree = ast.parse((root / "noxfile.py").read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return [], []
    deps, extras = [], []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _TESTISH.search(n.name)):
        for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                     and c.func.attr == "install"):
            args = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            for i, arg in enumerate(args):
                if m := re.fullmatch(r"(?:-e\s*)?\.\[([\w,.-]+)\]", arg):
                    extras += m[1].split(",")
                elif i and args[i - 1] in ("-r", "--requirement"):
                    deps += _requirement_file(root / arg, root)
                elif not arg.startswith(("-", ".")):
                    deps.append(arg)
    return deps, extras


def _tests_require(root: Path) -> list[str]:
    """setuptools' `tests_require`: a literal list in setup.py's `setup(...)` (or a module-level name bound to
    one), and setup.cfg's `[options] tests_require`."""
    out: list[str] = []
    try:
        tree = ast.parse((root / "setup.py").read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        tree = None
    if tree is not None:
        names = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)}
        for call in (c for c in ast.walk(tree) if isinstance(c, ast.Call)):
            for kw in (k for k in call.keywords if k.arg == "tests_require"):
                value = names.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
                if isinstance(value, (ast.List, ast.Tuple)):
                    out += [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(root / "setup.cfg", encoding="utf-8")
        out += [v.strip() for v in re.split(r"[\n;]", parser.get("options", "tests_require", fallback="")) if v.strip()]
    except (configparser.Error, UnicodeDecodeError):
        pass
    return out


def _keep(lines: Iterable[str], project: str) -> list[str]:
    """Requirements that hold here and are test dependencies, first mention of each name, markers dropped."""
    out, seen = [], {canonicalize_name(project)}
    for line in lines:
        req = _requirement(line)
        if req is None:
            continue
        name = canonicalize_name(req.name)
        if name in seen or name in TOOLING or name.startswith(TOOLING_PREFIXES):
            continue
        seen.add(name)
        req.marker = None
        out.append(str(req))
    return out


def project_name(root: Path) -> str:
    pkg_info = root / "PKG-INFO"
    if pkg_info.is_file():
        msg = email.parser.Parser().parsestr(pkg_info.read_text(encoding="utf-8", errors="replace"), headersonly=True)
        if msg.get("Name"):
            return msg["Name"]
    return str(read_toml(root / "pyproject.toml").get("project", {}).get("name") or root.name)


def extra_requirements(root: Path) -> list[str]:
    """The requirement lines of every extra the project declares (whatever its name)."""
    return [line for lines in _extras(root).values() for line in lines]


def declared_test_requirements(root: Path) -> tuple[str, ...]:
    """The test requirements `root`'s sdist declares beyond its test/tests/testing extras and groups."""
    extras, groups = _extras(root), _groups(root)
    tox_deps, tox_extras = _tox(root)
    nox_deps, nox_extras = _nox(root)
    named = {canonicalize_name(e) for e in [*tox_extras, *nox_extras]}
    lines = [line for name, reqs in extras.items() if _is_testish(name) or canonicalize_name(name) in named
             and canonicalize_name(name) not in TEST_EXTRA_NAMES for line in reqs]
    lines += [line for name, reqs in groups.items() if _is_testish(name) for line in reqs]
    lines += _files(root, REQUIREMENT_FILES) + tox_deps + nox_deps + _tests_require(root)
    if not _keep(lines, project_name(root)):  # nothing for tests: what the project's developers install
        lines = [line for name, reqs in [*extras.items(), *groups.items()] if canonicalize_name(name) == "dev"
                 for line in reqs] + _files(root, DEV_FILES)
    return tuple(_keep(lines, project_name(root)))
