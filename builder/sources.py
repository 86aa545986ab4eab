"""Fetch a RepoSpec into a pinned, unpacked source tree in the cache.

pypi: sdist downloaded once by pip (reused offline later), sha256-checked, unpacked atomically into
sources_dir()/<name>-<version>-<sha12>. git: cloned into sources_dir()/git-<sha12(url)>-<commit12>,
detached at the commit. path: identified by a hash of its (tracked) files, which are copied into
sources_dir()/path-<name>-<hash12> (the checkout itself is never modified).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from execrepobench_metric.layout import downloads_dir, sources_dir

from .manifest import RepoSpec, parse_source

_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
_SKIP_DIRS = frozenset({".git", "__pycache__", ".venv", ".pytest_cache", ".mypy_cache", ".tox", ".nox"})
_TIMEOUT_S = 900  # for one pip download / git command


class SourceError(RuntimeError):
    """A source that cannot be fetched; the message names the repo and the reason."""


@dataclass(frozen=True)
class FetchedSource:
    name: str
    version: str  # pypi version, git commit, or "local"
    pinned: str  # "pypi:NAME==VER#sha256=HEX", "git:URL@FULLCOMMIT", "path:ABSDIR#tree=HEX"
    source_hash: str  # sha256 of the sdist, the full commit id, or the tree hash
    root: Path  # the unpacked project root (holds setup.py / pyproject.toml)


def fetch(spec: RepoSpec) -> FetchedSource:
    """Fetch `spec` (idempotent: a second call reuses what the first left in the cache)."""
    try:
        ref = parse_source(spec.source)
    except ValueError as exc:
        raise SourceError(f"{spec.name}: {exc}") from None
    if ref.kind == "pypi":
        return _fetch_pypi(spec, ref.name, ref.version or "")
    if ref.kind == "git":
        return _fetch_git(spec, ref.url or "", ref.commit or "")
    return _fetch_path(spec, ref.path or Path(spec.source[5:]))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _find_archive(folder: Path) -> Path | None:
    found = sorted(p for p in folder.iterdir() if p.name.endswith(_ARCHIVE_SUFFIXES)) if folder.is_dir() else []
    return found[0] if found else None


def _pip_download(name: str, version: str, dest: Path, repo: str) -> None:
    """Run pip (current interpreter) to download exactly one sdist into dest."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
           f"{name}=={version}", "-d", str(dest)]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"{repo}: pip download {name}=={version} could not run: {exc}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + "\n" + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR")]
        last = (errors or lines or [f"exit status {proc.returncode}"])[-1]
        if dest.is_dir() and not any(dest.iterdir()):
            dest.rmdir()  # pip made it; leave no empty folder behind
        raise SourceError(f"{repo}: pip download {name}=={version} failed: {last}")


def _fetch_pypi(spec: RepoSpec, name: str, version: str) -> FetchedSource:
    dl_dir = downloads_dir() / f"{name}-{version}"
    if (archive := _find_archive(dl_dir)) is None:
        _pip_download(name, version, dl_dir, spec.name)
        if (archive := _find_archive(dl_dir)) is None:
            raise SourceError(f"{spec.name}: pip download {name}=={version} left no sdist in {dl_dir}")
    sha = file_sha256(archive)
    if spec.sha256 and sha != spec.sha256.lower():
        raise SourceError(f"{spec.name}: sha256 mismatch for {archive.name}: "
                          f"expected {spec.sha256.lower()}, got {sha}")
    target = sources_dir() / f"{name}-{version}-{sha[:12]}"
    if not target.is_dir():
        _unpack_atomically(archive, target, spec.name)
    return FetchedSource(name=spec.name, version=version, pinned=f"pypi:{name}=={version}#sha256={sha}",
                         source_hash=sha, root=_project_root(target, spec.name))


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


def _project_root(tree: Path, repo: str) -> Path:
    """The folder holding pyproject.toml/setup.py: the tree or its single top folder."""
    if any((tree / f).is_file() for f in _PROJECT_FILES):
        return tree
    entries = [p for p in tree.iterdir() if not p.name.startswith(".")] if tree.is_dir() else []
    if len(entries) == 1 and entries[0].is_dir() and any((entries[0] / f).is_file() for f in _PROJECT_FILES):
        return entries[0]
    raise SourceError(f"{repo}: no pyproject.toml/setup.py/setup.cfg found in {tree}")


def _git(args: list[str], repo: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"}
    try:
        proc = subprocess.run(["git", "-c", "advice.detachedHead=false", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"{repo}: git {args[0]} could not run: {exc}") from None
    if check and proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise SourceError(f"{repo}: git {args[0]} failed: {why}")
    return proc


def _fetch_git(spec: RepoSpec, url: str, commit: str) -> FetchedSource:
    url_hash = hashlib.sha256(url.encode()).hexdigest()[:12]
    target = sources_dir() / f"git-{url_hash}-{commit[:12]}"
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            clone = tmp / "repo"
            _git(["clone", "--quiet", "--no-checkout", url, str(clone)], spec.name)
            verify = ["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"]
            proc = _git(verify, spec.name, cwd=clone, check=False)
            if proc.returncode != 0 and len(commit) == 40:  # maybe on no branch: ask for it directly
                _git(["fetch", "--quiet", "origin", commit], spec.name, cwd=clone, check=False)
                proc = _git(verify, spec.name, cwd=clone, check=False)
            if proc.returncode != 0 or not (full := proc.stdout.strip()):
                raise SourceError(f"{spec.name}: commit {commit} not found in {url}")
            _git(["checkout", "--quiet", "--detach", full], spec.name, cwd=clone)
            try:
                os.rename(clone, target)
            except OSError as exc:
                if not target.is_dir():
                    raise SourceError(f"{spec.name}: cannot move clone to {target}: {exc}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    head = _git(["rev-parse", "HEAD"], spec.name, cwd=target).stdout.strip()
    if not head.startswith(commit):
        raise SourceError(f"{spec.name}: cached clone {target} is at {head}, not {commit}; delete it and retry")
    return FetchedSource(name=spec.name, version=head, pinned=f"git:{url}@{head}", source_hash=head, root=target)


def _git_tracked_files(folder: Path) -> list[str]:
    """Tracked paths (relative to folder) when folder is inside a git work tree, else []."""
    try:
        proc = subprocess.run(["git", "ls-files", "-z", "--cached"], cwd=folder, capture_output=True,
                              timeout=_TIMEOUT_S)
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
    snapshot = sources_dir() / f"path-{spec.name}-{digest[:12]}"
    if not snapshot.is_dir():
        _snapshot(folder, snapshot, spec.name)
    return FetchedSource(name=spec.name, version="local", pinned=f"path:{folder}#tree={digest}",
                         source_hash=digest, root=snapshot)
