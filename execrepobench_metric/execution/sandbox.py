"""Run a command against a private, writable view of a repository with one file replaced (and, for a
judged run, the canary test files the judge adds: `ViewFile`, read-only in the view).

Strong mode ("bwrap"): a private mount namespace (`unshare -m`) mounts an overlayfs whose lower
layer is the original tree and whose upper layer is a size-capped tmpfs holding the completed file;
bubblewrap then binds that view over the original path (so editable installs and `src/` layouts
import the completed file) in an allow-listed filesystem (`view.py`: the system, the interpreter,
the venv - no cache, download, dataset, checkout or other venv; no copy or bytecode of the original
masked file), test files / conftests / pytest configuration read-only inside the view, a private
/tmp, no network, new PID/IPC/UTS namespaces, die-with-parent, a cleared environment, rlimits, a pids cgroup where possible, a
wall-clock timeout that kills the whole group, and capped output.  Nothing is copied per run and the
original tree is never written.

Weak mode (only when the caller accepts it explicitly): a temporary copy of the tree with the file
replaced, run with rlimits and the timeout but without namespaces.

How code under test is isolated is one type (`Isolation`), decided in one place (`decide_isolation`)
and used by every run: the baseline, the builder's verification, the metric and the benchmarks all ask
`decide_isolation` once per evaluation or build and pass the answer down to `run_sandboxed`; there is
no other mode (no "host" runs).
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Mapping

from execrepobench_metric.errors import SandboxUnavailable

from . import view as views
from .limits import Limits, PidsCgroup
from .process import ProcessResult, run_command

TMPFS_SIZE = "256m"  # cap on what one run may write into its view

# The files of the view (the completed file, files the judge adds, whiteouts of hidden files) are staged
# under $staged with their repo-relative paths, and copied into the overlay's upper layer as they are
# (modification times kept; a whiteout - a 0/0 character device - hides the lower layer's file).
_MOUNT_SCRIPT = r"""set -e
mnt="$1"; staged="$2"; lower="$3"; shift 3
mount -t tmpfs -o size=%s,mode=0755 erb-view "$mnt"
mkdir -p "$mnt/upper" "$mnt/work" "$mnt/merged"
if [ -n "$staged" ]; then
  cp -a "$staged/." "$mnt/upper/"
fi
mount -t overlay erb-overlay -o "lowerdir=$lower,upperdir=$mnt/upper,workdir=$mnt/work" "$mnt/merged"
exec "$@"
""" % TMPFS_SIZE


class Isolation(str, Enum):
    """`BWRAP`: bubblewrap + a private overlay view (the normal mode).  `WEAK`: a temporary copy of
    the tree, rlimits and the timeout, no namespaces - only when the caller accepts it explicitly."""

    BWRAP = "bwrap"
    WEAK = "weak"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ViewFile:
    """A file the judge adds to a run's view (read-only there), e.g. a canary test module."""

    path: str  # repo-relative
    text: str
    mtime: float | None = None  # its modification time in the view (None: when it was written)


@dataclass(frozen=True)
class SandboxRun:
    argv: tuple[str, ...]
    root: Path  # original tree; the view appears at this path
    out_dir: Path  # host folder the run may write (junit report), bound read-write
    env: Mapping[str, str]
    timeout_s: float
    replacement: tuple[str, str] | None = None  # (repo-relative path, new content)
    readonly: tuple[str, ...] = ()  # repo-relative paths kept read-only inside the view
    visible: tuple[Path, ...] = ()  # host folders the run sees read-only (the venv, the plugin folder): `view.py`
    limits: Limits = field(default_factory=Limits)
    pass_fds: tuple[int, ...] = ()  # descriptors the command inherits (the guard's key pipe and stream)
    added: tuple[ViewFile, ...] = ()  # files that appear in the view only (read-only there)


def strong_available() -> str | None:
    """None when bwrap + unshare + overlayfs work here, else the reason they do not."""
    for tool in ("bwrap", "unshare", "mount", "prlimit"):
        if shutil.which(tool) is None:
            return f"`{tool}` not found (install the Debian package bubblewrap / util-linux)"
    with tempfile.TemporaryDirectory(prefix="erb-probe-") as tmp:
        lower = Path(tmp) / "lower"
        lower.mkdir()
        (lower / "f").write_text("old")
        (Path(tmp) / "new").write_text("new")
        (Path(tmp) / "mnt").mkdir()
        run = SandboxRun(("cat", str(lower / "f")), lower, Path(tmp), {"PATH": "/usr/bin:/bin"}, 20,
                         replacement=("f", "new"))
        result = _run_strong(run, Path(tmp))
        if result.returncode != 0 or result.stdout_tail != "new":
            return f"bwrap/overlay probe failed: {result.stderr_tail.strip()[-300:]}"
    return None


def decide_isolation(allow_weak: bool) -> tuple[Isolation, str]:
    """(isolation, note): bubblewrap when it works here; the weak mode only when `allow_weak`.

    Raises `SandboxUnavailable` (naming the reason and both ways out) otherwise.  The note is empty
    for bubblewrap and a loud warning for the weak mode; callers print it and record it.
    """
    reason = strong_available()
    if reason is None:
        return Isolation.BWRAP, ""
    if not allow_weak:
        raise SandboxUnavailable(f"strong sandbox unavailable: {reason}. Install bubblewrap "
                                 "(apt-get install bubblewrap) or accept the weak mode explicitly "
                                 "(allow_weak_sandbox=True / --allow-weak-sandbox): no namespaces, only "
                                 "rlimits and a timeout.")
    return Isolation.WEAK, f"WEAK SANDBOX: {reason}; ran with rlimits and a timeout only"


def _bwrap_args(run: SandboxRun, merged: Path, view: views.View | None, empty: Path) -> list[str]:
    """`view`: the allow-list (`view.build_view`); None only for tests' former view (`/` read-only)."""
    args = ["bwrap", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if view is None:
        args[1:1] = ["--ro-bind", "/", "/"]
        args += [a for p in run.visible if Path(p).is_relative_to("/tmp") for a in ("--ro-bind", str(p), str(p))]
    else:
        args += views.mount_args(view.mounts)
        args += [a for p in view.hidden_files for a in ("--ro-bind", str(empty), p)]
    args += ["--bind", str(run.out_dir), str(run.out_dir)]  # before the view: never on top of it
    args += ["--bind", str(merged), str(run.root)]
    hidden = set(view.hidden_tree) if view is not None else set()
    for rel in run.readonly:
        if (run.root / rel).exists() and rel not in hidden:
            args += ["--ro-bind", str(merged / rel), str(run.root / rel)]
    for added in run.added:
        args += ["--ro-bind", str(merged / added.path), str(run.root / added.path)]
    args += views.remount_args(view.mounts) if view is not None else []
    # --cap-drop ALL: bwrap started as root would otherwise leave the run nearly every capability
    # (e.g. reading another process's memory from a child it spawns).
    args += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv", "--chdir", str(run.root)]
    for key, value in sorted(run.env.items()):
        args += ["--setenv", key, value]
    return args + ["--", *run.argv]


def _write_view_files(run: SandboxRun, tree: Path) -> None:
    """The completed file and the added files, written into `tree` (the staged upper layer or a copy)."""
    files = ((ViewFile(*run.replacement),) if run.replacement is not None else ()) + run.added
    for file in files:
        path = tree / file.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(file.text, encoding="utf-8")
        if file.mtime is not None:
            os.utime(path, (file.mtime, file.mtime))


def _stage(run: SandboxRun, staged: Path, whiteouts: tuple[str, ...]) -> str:
    staged.mkdir()
    _write_view_files(run, staged)
    for rel in whiteouts:  # overlayfs hides a lower file under a 0/0 character device of the upper layer
        path = staged / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(0, 0))
    return str(staged)


def _run_strong(run: SandboxRun, scratch: Path) -> ProcessResult:
    mnt = scratch / "mnt"
    mnt.mkdir(exist_ok=True)
    view = None
    if not views.HOST_VIEW_FOR_TESTS:
        view = views.build_view(run.root, tuple(run.visible), run.replacement[0] if run.replacement else None)
    empty = scratch / "empty"
    empty.write_bytes(b"")
    empty.chmod(0o444)
    whiteouts = view.hidden_tree if view is not None else ()
    staged = _stage(run, scratch / "staged", whiteouts) if run.replacement is not None or run.added or whiteouts \
        else ""
    argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", _MOUNT_SCRIPT, "sh",
            str(mnt), staged, str(run.root), *_bwrap_args(run, mnt / "merged", view, empty)]
    group = PidsCgroup.create(run.limits.processes)
    try:
        return run_command(argv, cwd=Path("/"), env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
                           timeout_s=run.timeout_s, limits=run.limits, cgroup=group, pass_fds=run.pass_fds)
    finally:
        if group is not None:
            group.kill_and_remove()


def _run_weak(run: SandboxRun, scratch: Path) -> ProcessResult:
    copy = scratch / "copy"
    shutil.copytree(run.root, copy, symlinks=True)
    _write_view_files(run, copy)
    env = dict(run.env)
    env["PYTHONPATH"] = ":".join(p for p in (str(copy), str(copy / "src"), env.get("PYTHONPATH", "")) if p)
    argv = [a.replace(str(run.root), str(copy)) for a in run.argv]
    return run_command(argv, cwd=copy, env=env, timeout_s=run.timeout_s, limits=run.limits, pass_fds=run.pass_fds)


def run_sandboxed(run: SandboxRun, isolation: Isolation) -> ProcessResult:
    """Run `run` under `isolation`; the scratch space is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="erb-sbx-") as tmp:
        isolation = Isolation(isolation)
        if isolation is Isolation.BWRAP:
            return _run_strong(run, Path(tmp))
        if isolation is Isolation.WEAK:
            return _run_weak(run, Path(tmp))
        raise ValueError(f"unknown isolation {isolation!r} (use one of {[m.value for m in Isolation]})")
