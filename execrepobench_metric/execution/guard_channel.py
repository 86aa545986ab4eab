"""The guard's channel: the pipe a judged run writes its evidence into, and the collector that reads it.

Opened before the run (a key pipe and the stream pipe, handed over with `pass_fds`); the collector - a
thread of the judge, started before the process - drains the stream as lines arrive, so a large run
never blocks on a full pipe buffer, and stamps each part with its arrival time (kept in a run's evidence
folder).  A pipe cannot be sought, truncated or rewritten: what the collector has read is out of the
process's reach.  What the lines prove is `guard.read_evidence`'s business; docs/judging.md, "The
channel", states the guarantees.  Mode "legacy" (tests only) restores the former channel: an unnamed
temporary file read after the run, which code in the process could rewrite until it exited.
"""
from __future__ import annotations

import dataclasses
import json
import os
import select
import tempfile
import threading
import time
from pathlib import Path

from .guard import SETTINGS_VAR, GuardEvidence, GuardSetup, read_evidence

STREAM_CAP = 64 * 1024 * 1024  # bytes of a run's stream kept; more is drained and dropped
DRAIN_S = 2.0  # after the process ended: how long the collector keeps reading a pipe that still has writers


class GuardChannel:
    """Open before the run (key pipe + stream pipe), hand over with `pass_fds`; `start()` the collector
    before the process starts, `stop()` it when the process has ended, then `read()`."""

    def __init__(self, setup: GuardSetup, evidence_dir: Path) -> None:
        self.key = os.urandom(32)
        read_end, write_end = os.pipe()
        os.write(write_end, self.key)
        os.close(write_end)
        self.key_pipe = os.fdopen(read_end, "rb")  # closed here after the run (or when collected)
        self.key_fd = read_end
        self.legacy = setup.mode == "legacy"
        if self.legacy:  # the former channel (tests only): a file the process could rewrite until it exits
            self.stream = tempfile.TemporaryFile(prefix="erb-guard-")
            self.write_fd, self.read_fd = self.stream.fileno(), None
        else:
            self.read_fd, self.write_fd = os.pipe()
            os.set_blocking(self.read_fd, False)
        self._chunks: list[tuple[float, bytes]] = []  # (seconds since start(), bytes) as they arrived
        self._size, self._dropped, self._stop = 0, 0, threading.Event()
        self._thread: threading.Thread | None = None
        self._started = self.ended = 0.0
        # the masked file is resolved against the working directory (the repository's view) in the run
        self.settings = {"mode": setup.mode, "masked": setup.masked_file, "also_masked": list(setup.also_masked),
                         "allowed": list(setup.allowed),
                         "evidence": str(evidence_dir), "stream_fd": self.write_fd, "key_fd": read_end}

    @property
    def pass_fds(self) -> tuple[int, int]:
        return self.write_fd, self.key_fd

    def env(self) -> dict[str, str]:
        return {SETTINGS_VAR: json.dumps(self.settings)}

    def start(self) -> None:
        """Start the collector (before the process): a thread that drains the pipe as lines arrive."""
        self._started = time.monotonic()
        if not self.legacy:
            self._thread = threading.Thread(target=self._collect, name="erb-guard-collector", daemon=True)
            self._thread.start()

    def _collect(self) -> None:
        poller = select.poll()
        poller.register(self.read_fd, select.POLLIN)
        while True:
            if not poller.poll(50):
                if self._stop.is_set():  # the process has ended and nothing more is waiting
                    return
                continue
            if self._stop.is_set() and time.monotonic() - self._started - self.ended > DRAIN_S:
                return  # something outside the run's process group still writes: what it says is late anyway
            try:
                chunk = os.read(self.read_fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:  # every writer is gone
                return
            if self._size + len(chunk) > STREAM_CAP:
                self._dropped += len(chunk)  # drained (the writer never blocks), never kept
                continue
            self._size += len(chunk)
            self._chunks.append((time.monotonic() - self._started, chunk))

    def stop(self) -> None:
        """The process has ended: close our write end, let the collector drain what is left, and wait."""
        if self._stop.is_set():
            return
        self.ended = time.monotonic() - self._started
        if self.legacy or self._thread is None:
            self._stop.set()
            return
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None
        self._stop.set()
        self._thread.join()

    def data(self) -> bytes:
        if self.legacy:
            self.stream.seek(0)
            return self.stream.read()
        return b"".join(chunk for _, chunk in self._chunks)

    def read(self) -> GuardEvidence:
        evidence = read_evidence(self.data(), self.key)
        if self._dropped:  # past the cap: late noise after the session's finish, damage before it
            if evidence.problem or not evidence.finished:
                return GuardEvidence(problem=f"the stream exceeded {STREAM_CAP} bytes")
            return dataclasses.replace(evidence, late=evidence.late + 1)
        return evidence

    def keep(self, path: Path) -> None:
        """A copy of the raw stream (for a run's evidence folder), and when each part of it arrived."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.data())
        arrivals = [{"at_s": round(at, 4), "bytes": len(chunk), "lines": chunk.count(b"\n")}
                    for at, chunk in self._chunks]
        path.with_name(path.stem + "_arrivals.json").write_text(
            json.dumps({"process_ended_s": round(self.ended, 4), "chunks": arrivals}, indent=1), encoding="utf-8")

    def close(self) -> None:
        self.stop()
        if self.legacy:
            self.stream.close()
        elif self.read_fd is not None:
            os.close(self.read_fd)
            self.read_fd = None
        self.key_pipe.close()
