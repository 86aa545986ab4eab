"""Fetch a RepoSpec (a manifest entry) into a pinned, unpacked source tree in the cache.

The pinned-source machinery (pypi sdists, git clones, safe unpacking) lives on the metric floor
(`execrepobench_metric.environments.sources`), where `prepare` fetches published sources too.  What only the builder
does stays here: pinning a manifest entry, and snapshotting a local `path:` folder.  A path source is
identified by a hash of its (tracked) files, which are copied into sources_dir()/path-NAME-HASH12 (the
checkout itself is never modified); its pinned spec, `path:NAME#tree=HASH`, names no folder of this
machine.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from execrepobench_metric.defaults import TOOL_TIMEOUT_S
from execrepobench_metric.environments.sources import (SourceError, fetch_git, fetch_pypi, file_sha256,
                                                       path_snapshot_dir, project_root, safe_extract)

from .manifest import RepoSpec, parse_source

__all__ = ["FetchedSource", "SourceError", "fetch", "file_sha256", "safe_extract", "tree_hash"]
_SKIP_DIRS = frozenset({".git", "__pycache__", ".venv", ".pytest_cache", ".mypy_cache", ".tox", ".nox"})


@dataclass(frozen=True)
class FetchedSource:
    name: str
    version: str  # pypi version, git commit, or "local"
    pinned: str  # "pypi:NAME==VER#sha256=HEX", "git:URL@FULLCOMMIT", "path:NAME#tree=HEX"
    source_hash: str  # sha256 of the sdist, the full commit id, or the tree hash
    root: Path  # the unpacked project root (holds setup.py / pyproject.toml)


def fetch(spec: RepoSpec) -> FetchedSource:
    """Fetch `spec` (idempotent: a second call reuses what the first left in the cache)."""
    try:
        ref = parse_source(spec.source)
    except ValueError as exc:
        raise SourceError(f"{spec.name}: {exc}") from None
    if ref.kind == "pypi":
        got = fetch_pypi(ref.name, ref.version or "", spec.sha256, spec.name)
    elif ref.kind == "git":
        got = fetch_git(ref.url or "", ref.commit or "", spec.name)
    else:
        return _fetch_path(spec, ref.path or Path(spec.source[5:]))
    return FetchedSource(spec.name, got.version, got.pinned, got.source_hash, got.root)


def _git_tracked_files(folder: Path) -> list[str]:
    """Tracked paths (relative to folder) when folder is inside a git work tree, else []."""
    try:
        proc = subprocess.run(["git", "ls-files", "-z", "--cached"], cwd=folder, capture_output=True,
                              timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):  # no git: the caller walks the folder
        return []
    out = proc.stdout.decode("utf-8", "surrogateescape").split("\0") if proc.returncode == 0 else []
    return [p for p in out if p]


def _walk_files(folder: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        rel = Path(dirpath).relative_to(folder)
        out.extend((rel / f).as_posix() for f in filenames if not f.endswith((".pyc", ".pyo")))
    return out


def _source_files(folder: Path) -> tuple[bool, list[str]]:
    """(is git, sorted relative paths): tracked files of a git work tree, else all source files."""
    tracked = _git_tracked_files(folder)
    return bool(tracked), sorted(set(tracked or _walk_files(folder)))


def tree_hash(folder: Path) -> str:
    """sha256 over (path, content hash) of the folder's tracked files (git) or all source files."""
    is_git, files = _source_files(folder)
    digest = hashlib.sha256(b"git\0" if is_git else b"walk\0")
    for rel in files:
        path = folder / rel
        if path.is_symlink():
            content = b"link:" + os.readlink(path).encode("utf-8", "surrogateescape")
        else:
            content = file_sha256(path).encode() if path.is_file() else b"missing"
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0" + content + b"\0")
    return digest.hexdigest()


def _snapshot(folder: Path, target: Path, repo: str) -> None:
    """Copy the hashed files of `folder` into `target` atomically: the checkout itself is never
    modified (an editable install writes into its project), and the copy is what the hash names."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        for rel in _source_files(folder)[1]:
            src, dst = folder / rel, tmp / rel
            if not (src.is_file() or src.is_symlink()):
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst, follow_symlinks=False)
        os.chmod(tmp, 0o755)
        os.rename(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if not target.is_dir():
            raise SourceError(f"{repo}: cannot snapshot {folder} into {target}: {exc}") from None


def _fetch_path(spec: RepoSpec, folder: Path) -> FetchedSource:
    if not folder.is_dir():
        raise SourceError(f"{spec.name}: path source {folder} is not a directory")
    digest = tree_hash(folder)
    snapshot = path_snapshot_dir(spec.name, digest)
    if not snapshot.is_dir():
        _snapshot(folder, snapshot, spec.name)
    return FetchedSource(name=spec.name, version="local", pinned=f"path:{spec.name}#tree={digest}",
                         source_hash=digest, root=project_root(snapshot, spec.name))
