"""The launcher: every command the project runs against repository or model code starts here.

One command, in a new session, with a wall-clock timeout that kills its whole process group, its
output captured to files and capped, and - when given - rlimits and cgroup membership set by the
command line itself (`Limits.argv`, `PidsCgroup.argv`): no Python runs between fork and exec, so
launching from thread-pool workers is safe.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from .limits import Limits, PidsCgroup

DEFAULT_OUTPUT_CAP = 64 * 1024  # bytes of stdout and of stderr kept (the tail)


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None when killed by the timeout
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str


def _tail(fh, cap: int) -> str:
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    fh.seek(max(0, size - cap))
    return fh.read().decode("utf-8", errors="replace")


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def launch_argv(argv: Sequence[str], limits: Limits | None = None, cgroup: PidsCgroup | None = None) -> list[str]:
    """The command line actually executed: [cgroup join] [prlimit ...] argv."""
    return [*(cgroup.argv() if cgroup else ()), *(limits.argv() if limits else ()), *argv]


def run_command(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float,
                output_cap: int = DEFAULT_OUTPUT_CAP, limits: Limits | None = None,
                cgroup: PidsCgroup | None = None, pass_fds: tuple[int, ...] = ()) -> ProcessResult:
    """Run `argv` in a new session; on timeout kill the session's process group.

    Output goes to unnamed temporary files (not pipes), so a child that floods its output cannot
    block or exhaust memory here; only the last `output_cap` bytes of each are kept.
    """
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(launch_argv(argv, limits, cgroup), cwd=str(cwd), env=dict(env), stdout=out,
                                stderr=err, stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=pass_fds)
        timed_out = False
        try:
            returncode: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            proc.wait()
            returncode = None
        # Whatever the command left running in its group (daemons, background jobs) goes too.
        _kill_group(proc.pid)
        return ProcessResult(returncode, timed_out, time.monotonic() - start,
                             _tail(out, output_cap), _tail(err, output_cap))
