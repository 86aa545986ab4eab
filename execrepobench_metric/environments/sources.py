"""A pinned source spec -> an unpacked source tree in the local cache (idempotent).

pypi:NAME==VER#sha256=HEX: the sdist downloaded once by pip (`--no-binary`), sha256-checked, unpacked
safely and atomically into sources_dir()/NAME-VER-SHA12.  git:URL@COMMIT: cloned into
sources_dir()/git-SHA12(URL)-COMMIT12, detached at the commit.  path:NAME#tree=HEX: a snapshot of a
local folder, made by the builder into sources_dir()/path-NAME-HEX12; another machine finds it there
(copied in by hand, or sent by the Ray executor's driver: `pack_path_snapshot`) or is told that the
source is not portable.  Shared by the builder (which
pins new sources) and `prepare` / the metric (which fetch published ones).
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from execrepobench_dataset.files import file_sha256
from execrepobench_metric.defaults import TOOL_TIMEOUT_S
from execrepobench_metric.errors import SourceError

from .layout import downloads_dir, sources_dir

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
_PYPI_RE = re.compile(r"^pypi:(?P<name>[^=#\s]+)==(?P<version>[^#\s]+)(?:#sha256=(?P<sha>[0-9a-fA-F]{64}))?$")
_GIT_RE = re.compile(r"^git:(?P<url>.+)@(?P<commit>[0-9a-fA-F]{7,40})$")
_PATH_RE = re.compile(r"^path:(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)#tree=(?P<tree>[0-9a-f]{64})$")


@dataclass(frozen=True)
class Source:
    pinned: str  # the spec, with the sha256 / full commit / tree hash
    version: str  # pypi version, git commit, or "local"
    source_hash: str  # sha256 of the sdist, the full commit id, or the tree hash
    root: Path  # the unpacked project root (holds setup.py / pyproject.toml / setup.cfg)


def fetch_pinned(pinned: str, repo: str) -> Source:
    """The tree of a pinned spec as published (pypi with sha256, git with commit, path with tree)."""
    if m := _PYPI_RE.match(pinned):
        if not m["sha"]:
            raise SourceError(f"{repo}: source {pinned!r} is not pinned (no #sha256=...)")
        return fetch_pypi(m["name"], m["version"], m["sha"].lower(), repo)
    if m := _GIT_RE.match(pinned):
        return fetch_git(m["url"], m["commit"].lower(), repo)
    if m := _PATH_RE.match(pinned):
        return find_path_snapshot(m["name"], m["tree"], repo)
    raise SourceError(f"{repo}: {pinned!r} is not a pinned source (pypi:NAME==VER#sha256=HEX, git:URL@COMMIT "
                      "or path:NAME#tree=HEX)")


def path_snapshot_dir(name: str, tree: str) -> Path:
    return sources_dir() / f"path-{name}-{tree[:12]}"


def find_path_snapshot(name: str, tree: str, repo: str) -> Source:
    folder = path_snapshot_dir(name, tree)
    if not folder.is_dir():
        raise SourceError(f"{repo}: source path:{name}#tree={tree} is not portable: it was a local folder of the "
                          f"machine that built the dataset, and no snapshot of it is in this cache ({folder}); "
                          "copy that folder's tracked files there, or rebuild from a pypi:/git: source")
    return Source(f"path:{name}#tree={tree}", "local", tree, project_root(folder, repo))


def _path_parts(pinned: str) -> tuple[str, str] | None:
    m = _PATH_RE.match(pinned)
    return (m["name"], m["tree"]) if m else None


def pack_path_snapshot(pinned: str) -> bytes | None:
    """This cache's snapshot of a `path:NAME#tree=HEX` source as tar.gz bytes, to send to a machine
    that has none (a Ray node); None for other sources or when this cache has no snapshot."""
    parts = _path_parts(pinned)
    folder = path_snapshot_dir(*parts) if parts else None
    if folder is None or not folder.is_dir():
        return None
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for child in sorted(folder.iterdir()):
            tf.add(child, arcname=child.name)
    return buf.getvalue()


def unpack_path_snapshot(pinned: str, data: bytes, repo: str) -> None:
    """Place a snapshot sent by `pack_path_snapshot` where `find_path_snapshot` looks (unless it is there)."""
    parts = _path_parts(pinned)
    target = path_snapshot_dir(*parts) if parts else None
    if target is None or target.is_dir():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        archive = Path(tmp) / "snapshot.tar.gz"
        archive.write_bytes(data)
        _unpack_atomically(archive, target, repo)


def _find_archive(folder: Path) -> Path | None:
    found = sorted(p for p in folder.iterdir() if p.name.endswith(ARCHIVE_SUFFIXES)) if folder.is_dir() else []
    return found[0] if found else None


def _pip_download(name: str, version: str, dest: Path, repo: str) -> None:
    """Run pip (current interpreter) to download exactly one sdist into dest."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
           f"{name}=={version}", "-d", str(dest)]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"{repo}: pip download {name}=={version} could not run: {exc}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + "\n" + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR") or "No module named pip" in ln]
        last = (errors or lines or [f"exit status {proc.returncode}"])[-1]
        if dest.is_dir() and not any(dest.iterdir()):
            dest.rmdir()  # pip made it; leave no empty folder behind
        raise SourceError(f"{repo}: pip download {name}=={version} failed: {last}")


def fetch_pypi(name: str, version: str, sha256: str | None, repo: str) -> Source:
    """The sdist of NAME==VERSION (downloaded once), checked against `sha256` when given, unpacked."""
    dl_dir = downloads_dir() / f"{name}-{version}"
    if (archive := _find_archive(dl_dir)) is None:
        _pip_download(name, version, dl_dir, repo)
        if (archive := _find_archive(dl_dir)) is None:
            raise SourceError(f"{repo}: pip download {name}=={version} left no sdist in {dl_dir}")
    sha = file_sha256(archive)
    if sha256 and sha != sha256.lower():
        raise SourceError(f"{repo}: sha256 mismatch for {archive.name}: expected {sha256.lower()}, got {sha}")
    target = sources_dir() / f"{name}-{version}-{sha[:12]}"
    if not target.is_dir():
        _unpack_atomically(archive, target, repo)
    return Source(f"pypi:{name}=={version}#sha256={sha}", version, sha, project_root(target, repo))


def _check_member(name: str, dest: Path, repo: str, link: bool = False) -> None:
    """Reject absolute names, '..' in member names, and anything (incl. link targets) outside dest."""
    pure = PurePosixPath(name.replace("\\", "/"))
    top, full = os.path.normpath(dest), os.path.normpath(dest / pure)
    inside = full == top or full.startswith(os.path.join(top, ""))
    if pure.is_absolute() or (".." in pure.parts and not link) or not inside:
        raise SourceError(f"{repo}: unsafe archive member {name!r} (path traversal) rejected")


def safe_extract(archive: Path, dest: Path, repo: str = "?") -> None:
    """Extract a .tar.gz/.tgz/.zip into dest, refusing members that would land outside it."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    _check_member(info.filename, dest, repo)
                zf.extractall(dest)
            return
        with tarfile.open(archive, "r:*") as tf:
            members = tf.getmembers()
            for member in members:
                _check_member(member.name, dest, repo)
                if member.issym() or member.islnk():
                    target = PurePosixPath(member.name).parent / member.linkname if member.issym() else member.linkname
                    _check_member(str(target), dest, repo, link=True)
                elif not (member.isfile() or member.isdir()):
                    raise SourceError(f"{repo}: archive member {member.name!r} is not a file or folder")
            # Python < 3.11.4 has no extraction filters: the members were checked above.
            tf.extractall(dest, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise SourceError(f"{repo}: cannot unpack {archive.name}: {exc}") from None


def _unpack_atomically(archive: Path, target: Path, repo: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        safe_extract(archive, tmp, repo)
        os.chmod(tmp, 0o755)  # mkdtemp made it 0700
        try:
            os.rename(tmp, target)
        except OSError:
            if not target.is_dir():  # not a lost race with another fetch: a real failure
                raise
    except OSError as exc:
        raise SourceError(f"{repo}: cannot move unpacked tree to {target}: {exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after a successful rename


def project_root(tree: Path, repo: str) -> Path:
    """The folder holding pyproject.toml/setup.py: the tree or its single top folder."""
    if any((tree / f).is_file() for f in PROJECT_FILES):
        return tree
    entries = [p for p in tree.iterdir() if not p.name.startswith(".")] if tree.is_dir() else []
    if len(entries) == 1 and entries[0].is_dir() and any((entries[0] / f).is_file() for f in PROJECT_FILES):
        return entries[0]
    raise SourceError(f"{repo}: no pyproject.toml/setup.py/setup.cfg found in {tree}")


def _git(args: list[str], repo: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"}
    try:
        proc = subprocess.run(["git", "-c", "advice.detachedHead=false", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"{repo}: git {args[0]} could not run: {exc}") from None
    if check and proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise SourceError(f"{repo}: git {args[0]} failed: {why}")
    return proc


def fetch_git(url: str, commit: str, repo: str) -> Source:
    """A clone of `url` detached at `commit` (7-40 hex digits), cloned once into the cache."""
    url_hash = hashlib.sha256(url.encode()).hexdigest()[:12]
    target = sources_dir() / f"git-{url_hash}-{commit[:12]}"
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            clone = tmp / "repo"
            _git(["clone", "--quiet", "--no-checkout", url, str(clone)], repo)
            verify = ["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"]
            proc = _git(verify, repo, cwd=clone, check=False)
            if proc.returncode != 0 and len(commit) == 40:  # maybe on no branch: ask for it directly
                _git(["fetch", "--quiet", "origin", commit], repo, cwd=clone, check=False)
                proc = _git(verify, repo, cwd=clone, check=False)
            if proc.returncode != 0 or not (full := proc.stdout.strip()):
                raise SourceError(f"{repo}: commit {commit} not found in {url}")
            _git(["checkout", "--quiet", "--detach", full], repo, cwd=clone)
            try:
                os.rename(clone, target)
            except OSError as exc:
                if not target.is_dir():
                    raise SourceError(f"{repo}: cannot move clone to {target}: {exc}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    head = _git(["rev-parse", "HEAD"], repo, cwd=target).stdout.strip()
    if not head.startswith(commit):
        raise SourceError(f"{repo}: cached clone {target} is at {head}, not {commit}; delete it and retry")
    return Source(f"git:{url}@{head}", head, head, target)
