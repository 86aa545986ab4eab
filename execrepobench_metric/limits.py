"""Resource limits for one sandboxed run: rlimits (per process) and a cgroup (per run, when writable).

RLIMIT_NPROC is not enforced by Linux for root, so a fork bomb is bounded by a `pids` cgroup where
the machine lets us make one (cgroup v1 `pids` hierarchy or cgroup v2 with the pids controller), and
always by the PID namespace + wall-clock kill.
"""
from __future__ import annotations

import os
import resource
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

_V1_PIDS = Path("/sys/fs/cgroup/pids")
_V2 = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Limits:
    address_space_bytes: int = 4 << 30  # per process
    file_size_bytes: int = 64 << 20  # largest file a run may write (stdout/stderr files included)
    cpu_seconds: int = 900
    processes: int = 256  # pids cgroup when available; RLIMIT_NPROC otherwise (ineffective as root)
    open_files: int = 1024


def apply_rlimits(limits: Limits) -> None:
    """Called in the child before exec (inherited by everything it starts)."""
    for res, value in ((resource.RLIMIT_AS, limits.address_space_bytes),
                       (resource.RLIMIT_FSIZE, limits.file_size_bytes),
                       (resource.RLIMIT_CPU, limits.cpu_seconds),
                       (resource.RLIMIT_NPROC, limits.processes),
                       (resource.RLIMIT_NOFILE, limits.open_files),
                       (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(res, (value, value))


class PidsCgroup:
    """A throw-away pids cgroup for one run; `None`-safe when cgroups are not writable here."""

    def __init__(self, path: Path, procs_file: Path) -> None:
        self.path = path
        self.procs_file = procs_file

    @classmethod
    def create(cls, max_pids: int) -> "PidsCgroup | None":
        name = f"execrepobench-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        candidates = []
        if (_V1_PIDS / "pids.max").exists() or (_V1_PIDS / "cgroup.procs").exists():
            candidates.append(_V1_PIDS / name)
        if "pids" in _read(_V2 / "cgroup.subtree_control"):
            candidates.append(_V2 / name)
        for path in candidates:
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

    def join(self) -> None:
        """Called in the child before exec: the child and all its descendants count against pids.max."""
        self.procs_file.write_text(str(os.getpid()))

    def kill_and_remove(self) -> None:
        for _ in range(50):
            pids = [int(p) for p in _read(self.procs_file).split()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)
        _rmdir(self.path)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _rmdir(path: Path) -> None:
    for _ in range(50):
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
