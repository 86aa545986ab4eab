"""One isolated uv environment per repository, keyed by a content hash of what defines it.

The key covers the interpreter version, the source hash, the detected test extras / dependency
groups and the extra test requirements; a changed key means a new environment, an unchanged key
reuses the cached one.  `uv pip freeze` is recorded as provenance.
"""
from __future__ import annotations

import configparser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from execrepobench_metric.layout import env_dir

ENV_SCHEMA = 1  # bump when the way environments are made changes
TEST_EXTRA_NAMES = ("test", "tests", "testing")
BASE_REQUIREMENTS = ("pytest>=7", "coverage>=7.4")


class EnvError(RuntimeError):
    """An environment could not be made; the message names the repository and the reason."""


@dataclass(frozen=True)
class EnvSpec:
    repo_name: str
    source_hash: str
    project_root: str
    python: str  # requested version ("3.11") or "" for the running interpreter's
    test_extras: tuple[str, ...]
    test_groups: tuple[str, ...]
    extra_requires: tuple[str, ...]

    @property
    def key(self) -> str:
        data = asdict(self)
        data.pop("repo_name")  # project_root stays: an editable install is bound to its path
        data["python"] = resolved_python_version(self.python)
        data["schema"] = ENV_SCHEMA
        data["base"] = BASE_REQUIREMENTS
        blob = json.dumps(data, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:20]


@dataclass(frozen=True)
class Environment:
    key: str
    path: Path  # the environment folder (venv/ and env.json inside)
    python: str  # the venv's interpreter
    freeze: tuple[str, ...]
    spec: EnvSpec

    def has(self, distribution: str) -> bool:
        norm = re.sub(r"[-_.]+", "-", distribution).lower()
        return any(re.sub(r"[-_.]+", "-", line.split("==")[0].split(" @ ")[0]).lower() == norm
                   for line in self.freeze)


def resolved_python_version(requested: str) -> str:
    return requested or f"{sys.version_info.major}.{sys.version_info.minor}"


def _interpreter(requested: str) -> str:
    if not requested or requested == resolved_python_version(""):
        return sys.executable
    return requested  # uv finds an installed interpreter of that version (downloads are disabled)


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
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(setup_cfg, encoding="utf-8")
            if parser.has_section("options.extras_require"):
                extras |= set(parser.options("options.extras_require"))
        except configparser.Error:
            pass
    pkg_info = root / "PKG-INFO"
    if pkg_info.is_file():
        for line in pkg_info.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Provides-Extra:"):
                extras.add(line.split(":", 1)[1].strip())
            elif not line.strip():
                break  # end of the metadata headers
    return (tuple(sorted(e for e in extras if e in TEST_EXTRA_NAMES)),
            tuple(sorted(g for g in groups if g in TEST_EXTRA_NAMES)))


def make_spec(repo_name: str, source_hash: str, root: Path, python: str | None,
              extra_requires: tuple[str, ...]) -> EnvSpec:
    extras, groups = detect_test_extras(root)
    return EnvSpec(repo_name, source_hash, str(root), python or "", extras, groups, tuple(extra_requires))


def _uv(*args: str, repo: str, timeout: float = 900) -> str:
    from uv import find_uv_bin

    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    try:
        proc = subprocess.run([find_uv_bin(), *args], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise EnvError(f"{repo}: `uv {args[0]} {args[1] if len(args) > 1 else ''}` timed out after {timeout:.0f} s") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
        raise EnvError(f"{repo}: `uv {' '.join(args[:2])}` failed: " + " | ".join(lines[-6:]))
    return proc.stdout


def load_env(spec: EnvSpec) -> Environment | None:
    """The cached environment for `spec`, or None if it was never completed."""
    folder = env_dir(spec.key)
    meta = folder / "env.json"
    if not meta.is_file():
        return None
    data = json.loads(meta.read_text(encoding="utf-8"))
    python = folder / "venv" / "bin" / "python"
    if not python.exists():
        return None
    return Environment(spec.key, folder, str(python), tuple(data["freeze"]), spec)


def ensure_env(spec: EnvSpec) -> Environment:
    """Reuse the environment with this key, or make it: uv venv + editable install + test deps."""
    cached = load_env(spec)
    if cached is not None:
        return cached
    final = env_dir(spec.key)
    venv = final / "venv"  # made in its final place: venvs hard-code their own path
    shutil.rmtree(final, ignore_errors=True)  # a partial one from an interrupted run
    try:
        _uv("venv", "--quiet", "--python", _interpreter(spec.python), str(venv), repo=spec.repo_name)
        python = str(venv / "bin" / "python")
        root = Path(spec.project_root)
        target = f"{root}[{','.join(spec.test_extras)}]" if spec.test_extras else str(root)
        args = ["pip", "install", "--quiet", "--python", python, "--editable", target,
                *BASE_REQUIREMENTS, *spec.extra_requires]
        for group in spec.test_groups:
            args += ["--group", f"{root / 'pyproject.toml'}:{group}"]
        _uv(*args, repo=spec.repo_name)
        freeze = tuple(_uv("pip", "freeze", "--python", python, repo=spec.repo_name).splitlines())
    except EnvError:
        shutil.rmtree(final, ignore_errors=True)
        raise
    meta = {"spec": asdict(spec), "key": spec.key, "python": python, "freeze": list(freeze)}
    tmp = final / "env.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, final / "env.json")  # written last: its presence marks a complete environment
    return Environment(spec.key, final, python, freeze, spec)
