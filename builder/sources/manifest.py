"""TOML manifests: which repositories go into the benchmark, with per-repo overrides.

A manifest has an optional ``[defaults]`` table (seed, samples_per_repo, python, exclude_newer) and
one ``[[repo]]`` table per repository.  ``exclude_newer = "YYYY-MM-DD"`` (in [defaults] or a repo) is
the date every lock is resolved against: nothing uploaded to the package index after that day is
considered, so the same manifest gives the same locks on any later day. Every repo needs ``source``: ``pypi:NAME==VERSION``,
``git:URL@COMMIT`` or ``path:DIR`` (relative DIR is resolved against the manifest's folder).
Anything unexpected raises :class:`ManifestError` naming the file, the entry and the key.
"""
from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from ..errors import ManifestError


DEFAULT_SEED = 0
DEFAULT_SAMPLES_PER_REPO = 24

_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_VERSION_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.+!_-]*[A-Za-z0-9])?$")
_COMMIT_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")
_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")
_PYTHON_RE = re.compile(r"^\d+\.\d+$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

_TOP_KEYS = frozenset({"defaults", "repo"})
_DEFAULT_KEYS = {"seed": int, "samples_per_repo": int, "python": str, "exclude_newer": str, "infer_requirements": bool}
_LIST_KEYS = ("extra_test_requires", "test_paths", "pytest_args", "exclude_tests")
_REPO_KEYS = frozenset({"source", "sha256", "name", "python", "env", "samples_per_repo", "exclude_newer",
                        *_LIST_KEYS})


@dataclass(frozen=True)
class SourceRef:
    """A parsed source spec: kind is 'pypi', 'git' or 'path'."""

    kind: str
    name: str  # pypi project name, git repo basename, or dir name
    version: str | None = None  # pypi only
    url: str | None = None  # git only
    commit: str | None = None  # git only (as written, lower-cased)
    path: Path | None = None  # path only (absolute)


@dataclass(frozen=True)
class RepoSpec:
    name: str
    source: str  # path: sources are stored with their absolute dir
    sha256: str | None = None
    python: str | None = None
    extra_test_requires: tuple[str, ...] = ()
    test_paths: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()
    exclude_tests: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # sorted (key, value) pairs
    samples_per_repo: int | None = None
    exclude_newer: str | None = None  # YYYY-MM-DD the lock is resolved against (the manifest's default if unset)
    # The entry names no `extra_test_requires` (and [defaults] infer_requirements is not false): the build
    # infers them (preparation/inference.py).  An entry that writes the key, even `[]`, is authoritative.
    infer_requirements: bool = False

    @property
    def ref(self) -> SourceRef:
        return parse_source(self.source)


@dataclass(frozen=True)
class Manifest:
    path: Path | None
    seed: int
    samples_per_repo: int
    python: str | None  # None: the running interpreter's major.minor (see python_for)
    repos: tuple[RepoSpec, ...]
    exclude_newer: str | None = None  # [defaults] exclude_newer (already copied into repos that set none)

    def python_for(self, repo: RepoSpec) -> str:
        return repo.python or self.python or f"{sys.version_info.major}.{sys.version_info.minor}"

    def samples_for(self, repo: RepoSpec) -> int:
        return repo.samples_per_repo if repo.samples_per_repo is not None else self.samples_per_repo

    def repo(self, name: str) -> RepoSpec:
        for spec in self.repos:
            if spec.name == name:
                return spec
        raise KeyError(name)


def parse_source(source: str, base_dir: Path | None = None) -> SourceRef:
    """Parse a source spec; raises ValueError with the reason when malformed."""
    kind, sep, rest = source.partition(":")
    if not sep or kind not in ("pypi", "git", "path"):
        raise ManifestError(f"source {source!r} must start with 'pypi:', 'git:' or 'path:'")
    if kind == "pypi":
        name, eq, version = rest.partition("==")
        if not eq or not _NAME_RE.match(name) or not _VERSION_RE.match(version):
            raise ManifestError(f"pypi source {source!r} must be exactly 'pypi:NAME==VERSION'")
        return SourceRef("pypi", name, version=version)
    if kind == "git":
        url, at, commit = rest.rpartition("@")
        if not at or not url or not _COMMIT_RE.match(commit):
            raise ManifestError(f"git source {source!r} must be 'git:URL@COMMIT' with a 7-40 hex commit")
        base = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
        return SourceRef("git", base or "repo", url=url, commit=commit.lower())
    if not rest:
        raise ManifestError(f"path source {source!r} has no directory")
    path = Path(rest).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    path = path.resolve()
    if not path.is_dir():
        raise ManifestError(f"path source {source!r}: directory {path} does not exist")
    return SourceRef("path", path.name, path=path)


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _check_scalar(value: Any, want: type, where: str) -> Any:
    if want is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ManifestError(f"{where}: expected an integer, got {type(value).__name__} {value!r}")
    if want is str and not isinstance(value, str):
        raise ManifestError(f"{where}: expected a string, got {type(value).__name__} {value!r}")
    return value


def _check_common(key: str, value: Any, where: str) -> Any:
    """Checks shared by [defaults] and [[repo]] for seed/samples_per_repo/python."""
    if key == "python":
        _check_scalar(value, str, where)
        if not _PYTHON_RE.match(value):
            raise ManifestError(f"{where}: expected MAJOR.MINOR like '3.11', got {value!r}")
    elif key == "exclude_newer":
        _check_scalar(value, str, where)
        try:
            valid = bool(_DATE_RE.match(value)) and date.fromisoformat(value) is not None
        except ValueError:
            valid = False
        if not valid:
            raise ManifestError(f"{where}: expected a date YYYY-MM-DD, got {value!r}")
    elif key == "infer_requirements" and not isinstance(value, bool):
        raise ManifestError(f"{where}: expected true or false, got {type(value).__name__} {value!r}")
    elif key in ("samples_per_repo", "seed"):
        _check_scalar(value, int, where)
        if value < (1 if key == "samples_per_repo" else 0):
            raise ManifestError(f"{where}: must be {'positive' if key != 'seed' else '>= 0'}, got {value}")
    return value


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ManifestError(f"{where}: expected a list of strings, got {type(value).__name__}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise ManifestError(f"{where}: expected non-empty strings, got {item!r}")
    return tuple(value)


def _parse_repo(index: int, table: Any, base_dir: Path, label: str, infer: bool = True) -> RepoSpec:
    if not isinstance(table, dict):
        raise ManifestError(f"{label}: repo #{index}: expected a table, got {type(table).__name__}")
    source = table.get("source")
    entry = f"{label}: repo #{index} ({source!r})" if isinstance(source, str) else f"{label}: repo #{index}"
    unknown = sorted(set(table) - _REPO_KEYS)
    if unknown:
        raise ManifestError(f"{entry}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_REPO_KEYS))})")
    if source is None:
        raise ManifestError(f"{entry}: missing required key 'source'")
    _check_scalar(source, str, f"{entry}: key 'source'")
    try:
        ref = parse_source(source, base_dir)
    except ValueError as exc:
        raise ManifestError(f"{entry}: key 'source': {exc}") from None
    if ref.kind == "path":
        source = f"path:{ref.path}"
    kwargs: dict[str, Any] = {}
    for key in _LIST_KEYS:
        if key in table:
            kwargs[key] = _str_list(table[key], f"{entry}: key {key!r}")
    for key in ("python", "samples_per_repo", "exclude_newer"):
        if key in table:
            kwargs[key] = _check_common(key, table[key], f"{entry}: key {key!r}")
    if "sha256" in table:
        sha = _check_scalar(table["sha256"], str, f"{entry}: key 'sha256'")
        if ref.kind != "pypi":
            raise ManifestError(f"{entry}: key 'sha256' only applies to pypi: sources")
        if not _SHA256_RE.match(sha):
            raise ManifestError(f"{entry}: key 'sha256': expected 64 hex digits, got {sha!r}")
        kwargs["sha256"] = sha.lower()
    if "env" in table:
        env = table["env"]
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ManifestError(f"{entry}: key 'env': expected a table of string values, got {env!r}")
        kwargs["env"] = tuple(sorted(env.items()))
    name = table.get("name", ref.name)
    _check_scalar(name, str, f"{entry}: key 'name'")
    if not _NAME_RE.match(name):
        raise ManifestError(f"{entry}: key 'name': {name!r} is not a valid name (letters, digits, . _ -)")
    return RepoSpec(name=name, source=source, infer_requirements=infer and "extra_test_requires" not in table,
                    **kwargs)


def parse_manifest(text: str, base_dir: Path, *, path: Path | None = None) -> Manifest:
    """Parse manifest TOML text; relative ``path:`` sources resolve against base_dir."""
    label = str(path) if path is not None else "<manifest>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{label}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ManifestError(f"{label}: unknown top-level key {unknown[0]!r} (allowed: defaults, repo)")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ManifestError(f"{label}: key 'defaults': expected a table")
    for key in defaults:
        if key not in _DEFAULT_KEYS:
            raise ManifestError(f"{label}: [defaults]: unknown key {key!r} (allowed: {', '.join(_DEFAULT_KEYS)})")
        _check_common(key, defaults[key], f"{label}: [defaults]: key {key!r}")
    tables = data.get("repo", [])
    if not isinstance(tables, list):
        raise ManifestError(f"{label}: key 'repo': expected an array of tables ([[repo]])")
    base = Path(base_dir).resolve()
    repos: list[RepoSpec] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables, start=1):  # 1-based, as a reader counts [[repo]]s
        spec = _parse_repo(index, table, base, label, defaults.get("infer_requirements", True))
        key = _canon(spec.name)
        if key in seen:
            raise ManifestError(
                f"{label}: repo #{index} ({spec.source!r}): key 'name': duplicate repo name {spec.name!r}"
                f" (also repo #{seen[key]})"
            )
        seen[key] = index
        repos.append(spec if spec.exclude_newer else replace(spec, exclude_newer=defaults.get("exclude_newer")))
    return Manifest(path=path, seed=defaults.get("seed", DEFAULT_SEED),
                    samples_per_repo=defaults.get("samples_per_repo", DEFAULT_SAMPLES_PER_REPO),
                    python=defaults.get("python"), repos=tuple(repos), exclude_newer=defaults.get("exclude_newer"))


def with_resolution_date(manifest: Manifest, today: str) -> tuple[Manifest, list[str]]:
    """The manifest with every repository's lock bound to a date: its own, the manifest's, else `today`
    (the build pins it; the names of the repositories that got it are returned, for a warning)."""
    unbound = [r.name for r in manifest.repos if not r.exclude_newer]
    repos = tuple(r if r.exclude_newer else replace(r, exclude_newer=today) for r in manifest.repos)
    return replace(manifest, repos=repos), unbound


def load_manifest(path: str | Path) -> Manifest:
    path = Path(path).expanduser().resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc.strerror or exc}") from None
    return parse_manifest(text, path.parent, path=path)


def _packaged(name: str) -> Path:
    """A manifest shipped in the package's manifests/ folder (builder/manifests/)."""
    return Path(__file__).resolve().parents[1] / "manifests" / name


def default_manifest_path() -> Path:
    return _packaged("default.toml")


def quickstart_manifest_path() -> Path:
    return _packaged("quickstart.toml")


def instruct_manifest_path() -> Path:
    return _packaged("instruct.toml")
