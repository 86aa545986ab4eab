"""Run one command with a wall-clock timeout that kills its whole process group, output capped."""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

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


def run_command(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float,
                output_cap: int = DEFAULT_OUTPUT_CAP,
                preexec: Callable[[], None] | None = None, pass_fds: tuple[int, ...] = ()) -> ProcessResult:
    """Run `argv` in a new session; on timeout kill the session's process group.

    Output goes to unnamed temporary files (not pipes), so a child that floods its output cannot
    block or exhaust memory here; only the last `output_cap` bytes of each are kept.
    """
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(list(argv), cwd=str(cwd), env=dict(env), stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=preexec,
                                pass_fds=pass_fds)
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
