"""Resource limits for one sandboxed run: rlimits (per process) and a cgroup (per run, when writable).

Both are applied without running Python between fork and exec: the launcher (`process.run_command`)
puts them into the command line itself - util-linux `prlimit` sets the rlimits of the command it
execs, and a one-line `sh` joins the cgroup (`echo $$ > cgroup.procs`) and execs the rest.  Both
exec, so the launched command keeps the launcher's child PID (timeouts and die-with-parent still hold).

RLIMIT_NPROC is not enforced by Linux for root, so a fork bomb is bounded by a `pids` cgroup where
the machine lets us make one (cgroup v1 `pids` hierarchy or cgroup v2 with the pids controller), and
always by the PID namespace + wall-clock kill.
"""
from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from execrepobench_metric.defaults import CPU_LIMIT_S

_V1_PIDS = Path("/sys/fs/cgroup/pids")
_V2 = Path("/sys/fs/cgroup")
_PREFIX = "execrepobench-"
# `sh -c JOIN sh PROCS_FILE ARGV...`: join the cgroup, then become ARGV (same PID).
_JOIN = 'echo $$ > "$1" && shift && exec "$@"'
CPU_GRACE_S = 5  # a process that ignores SIGXCPU is killed this many CPU seconds after its soft limit


@dataclass(frozen=True)
class Limits:
    address_space_bytes: int = 4 << 30  # per process
    file_size_bytes: int = 64 << 20  # largest file a run may write (stdout/stderr files included)
    cpu_seconds: int = CPU_LIMIT_S  # soft limit (SIGXCPU); the hard limit (SIGKILL) is CPU_GRACE_S later
    processes: int = 256  # pids cgroup when available; RLIMIT_NPROC otherwise (ineffective as root)
    open_files: int = 1024

    def argv(self) -> list[str]:
        """`prlimit` prefix: the command after it runs (and everything it starts inherits) these rlimits."""
        return ["prlimit", f"--as={self.address_space_bytes}", f"--fsize={self.file_size_bytes}",
                f"--cpu={self.cpu_seconds}:{self.cpu_seconds + CPU_GRACE_S}", f"--nproc={self.processes}",
                f"--nofile={self.open_files}", "--core=0", "--"]


class PidsCgroup:
    """A throw-away pids cgroup for one run; `create` gives None when cgroups are not writable here."""

    def __init__(self, path: Path, procs_file: Path) -> None:
        self.path = path
        self.procs_file = procs_file

    @classmethod
    def create(cls, max_pids: int) -> "PidsCgroup | None":
        name = f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        for parent in _parents():
            _remove_stale(parent)
            path = parent / name
            try:
                path.mkdir()
            except OSError:
                continue
            try:
                (path / "pids.max").write_text(str(max_pids))
                return cls(path, path / "cgroup.procs")
            except OSError:
                _rmdir(path)
        return None

    def argv(self) -> list[str]:
        """Prefix that moves the command (and all its descendants) into this cgroup before it runs."""
        return ["sh", "-c", _JOIN, "sh", str(self.procs_file)]

    def kill_and_remove(self) -> None:
        _kill_members(self.procs_file)
        _rmdir(self.path)


def _parents() -> list[Path]:
    found = []
    if (_V1_PIDS / "pids.max").exists() or (_V1_PIDS / "cgroup.procs").exists():
        found.append(_V1_PIDS)
    if "pids" in _read(_V2 / "cgroup.subtree_control"):
        found.append(_V2)
    return found


def _remove_stale(parent: Path) -> None:
    """Groups left by an evaluation that was killed (kill -9): their owner PID is gone."""
    try:
        entries = [p for p in parent.iterdir() if p.name.startswith(_PREFIX)]
    except OSError:
        return
    for path in entries:
        owner = path.name[len(_PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _kill_members(path / "cgroup.procs")
            _rmdir(path, tries=1)


def _kill_members(procs_file: Path) -> None:
    for _ in range(50):
        pids = [int(p) for p in _read(procs_file).split()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _rmdir(path: Path, tries: int = 50) -> None:
    for _ in range(tries):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def cgroups_available() -> bool:
    group = PidsCgroup.create(8)
    if group is None:
        return False
    group.kill_and_remove()
    return True
