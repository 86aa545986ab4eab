"""The judge's side of the in-process guard: the channel it opens, the collector that reads it, the evidence.

The guard (`pytest_plugin/_execrepobench_guard*.py`) runs inside the sandboxed pytest process and
writes each fact (collected tests, each test's call report, its subtests' reports and any setup /
teardown that did not pass, completion-attributed events, the end of the session, the exit) as it
happens, one line each, chained with an HMAC-SHA256 whose key reaches the process through a pipe it
reads and closes before any repository code runs.

The channel is a pipe held by the judge (`GuardChannel`): a reader thread here, started before the
run, drains it as lines arrive and stamps each chunk with its arrival time, so a large run never
blocks on a full pipe buffer and nothing the process does later can reach what was already read -
a pipe cannot be sought, truncated or rewritten.  `read_evidence` gives each fact one voice: the
first word about a test's phase is final (a second one is damage), and once the session's `finish`
line has arrived, nothing but its `exit` line counts; whatever comes after (at interpreter exit, in a
finalizer, from a thread left running) is recorded as `late` and changes no verdict.  The HMAC chain
still matters: the completion can write into the descriptor it inherits, and a line without the key
breaks the chain (damage while tests run, noise after the finish).  What the chain does not give:
code running in the process unattributed that reaches the guard's closures could write lines with a
valid chain while tests run - attribution (`_execrepobench_guard_attribution`) is what keeps the
completion's code from doing so; see docs/judging.md.

Mode "legacy" (tests only) restores the former channel: an unnamed temporary file read after the run,
which code in the process can rewrite at exit (and the former attribution, see the guard's plugin).
"""
from __future__ import annotations

import dataclasses
import hmac
import json
import os
import re
import select
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from execrepobench_metric.defaults import PROBE_TIMEOUT_S

# "blind": evidence without refusals; "legacy": the former channel and attribution (both for tests only)
GUARD_MODES = ("enforce", "record", "off", "blind", "legacy")
BOOTSTRAP = "_execrepobench_guard"
SETTINGS_VAR = "EXECREPOBENCH_GUARD"
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
NEVER_STARTED = "the guard never started"
STREAM_CAP = 64 * 1024 * 1024  # bytes of a run's stream kept; more is drained and dropped (damage)
DRAIN_S = 2.0  # after the process ended: how long the collector keeps reading a pipe that still has writers


@dataclass(frozen=True)
class GuardSetup:
    """How the guard runs for one judged run."""

    # "enforce": completion events fail the run; "record": they are only reported; "blind" (tests only): the
    # stream is written but nothing is refused or checked - an attacker that got past every in-process check
    mode: str
    masked_file: str  # repo-relative path of the file whose code is judged
    allowed: tuple[str, ...] = ()  # event kinds the ground truth triggers itself (Sample.guard_allowed)
    # More files whose code counts as the judged code: only for verification's ground-truth runs shared
    # by the candidates of several files (the original tree; what they do is recorded for all at once).
    also_masked: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in ("enforce", "record", "blind", "legacy"):
            raise ValueError(f"guard mode {self.mode!r}: use 'enforce', 'record', 'blind' or 'legacy'")


@dataclass(frozen=True)
class GuardEvidence:
    """What the stream proves.  `problem` is set when the stream itself cannot be trusted."""

    problem: str = ""
    collected: tuple[str, ...] = ()
    outcomes: dict[str, str] = field(default_factory=dict)  # worst outcome per test id
    collect_errors: tuple[str, ...] = ()
    tampering: tuple[str, ...] = ()  # enforce mode: refused events
    events: tuple[str, ...] = ()  # record mode: attributed events (what the ground truth may do)
    # record mode with several masked files: (event, the masked file whose frame was on the stack, "" if none)
    sources: tuple[tuple[str, str], ...] = ()
    guard_errors: tuple[str, ...] = ()
    finished: bool = False  # pytest reached the end of its session
    exit_code: int | None = None  # what pytest returned; None: the process never got there
    late: int = 0  # lines after the session's finish (beyond its exit line): recorded, never read


_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_UNESCAPE = {"t": "\t", "n": "\n", "\\": "\\"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return _ESCAPED.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(1)), text)


def _checked(data: bytes, key: bytes):
    """Yield (line number, fields, problem) in order: fields of each line that carries the next sequence
    number and a valid chained mac; at the first line that does not (or a cut last line), its problem."""
    prev, start, number = b"", 0, 0
    while True:  # line by line (a long tail of noise after the finish is never split up front)
        end = data.find(b"\n", start)
        if end < 0:
            break
        raw, start, number = data[start:end], end + 1, number + 1
        body, _, mac = raw.rpartition(b"\t")
        expected = hmac.digest(key, prev + body, "sha256").hex().encode()
        if not body or not hmac.compare_digest(mac, expected):
            yield number, [], f"line {number} is not the guard's (bad mac)"
            return
        prev = bytes.fromhex(mac.decode())
        fields = [_unescape(f) for f in body.decode("utf-8", "surrogatepass").split("\t")]
        if fields[0] != str(number):
            yield number, [], f"line {number} is out of sequence"
            return
        yield number, fields[1:], ""
    if start < len(data):
        yield number + 1, [], "the stream ends inside a line"


def verify_lines(data: bytes, key: bytes) -> tuple[list[list[str]], str]:
    """(lines as fields, problem): every line must carry the next sequence number and a valid chained mac."""
    lines = []
    for _, fields, problem in _checked(data, key):
        if problem:
            return lines, problem
        lines.append(fields)
    return lines, ""


def read_evidence(data: bytes, key: bytes) -> GuardEvidence:
    """What the stream proves, read in arrival order.  The first word about each fact is final: a second
    report of a test's phase, a second collection or hello is damage.  Once the `finish` line is in, only
    the `exit` line (and the guard's own refusals or faults until then: they can only fail a run) is read;
    anything else - more reports, damaged or foreign lines, anything after `exit` - is counted as `late`."""
    total = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    collected, outcomes, errors, tamper, events, guard_errors, sources = None, {}, [], [], [], [], []
    finished, exit_code, phases, copies, late, number = False, None, {}, Counter(), 0, 0
    for number, fields, problem in _checked(data, key):
        if problem or exit_code is not None:
            if not finished:
                return GuardEvidence(problem=problem or "lines after the exit line")
            late += total - number + 1
            break
        kind, rest = fields[0], fields[1:]
        if number == 1:
            if kind != "hello":
                return GuardEvidence(problem="the stream does not begin with the guard's first line")
            continue
        if finished and kind not in ("exit", "tamper", "guard-error"):
            late += 1
            continue
        if kind == "hello":
            return GuardEvidence(problem="a second first line")
        if kind == "collected":
            if collected is not None:
                return GuardEvidence(problem="a second collection")
            collected, copies = tuple(rest), Counter(rest)
        elif kind in ("report", "subreport") and len(rest) == 3:
            nodeid, outcome = rest[0], rest[2]
            if kind == "report":  # each phase of a test is reported once (its subtests come as subreports),
                # once per collected item of that id: a collector may yield items of the same id (docopt-ng)
                phases[(nodeid, rest[1])] = phases.get((nodeid, rest[1]), 0) + 1
                if phases[(nodeid, rest[1])] > max(1, copies[nodeid]):
                    return GuardEvidence(problem=f"a second {rest[1]} report for {nodeid}")
            if _RANK.get(outcome, 3) >= _RANK.get(outcomes.get(nodeid, "passed"), 0):
                outcomes[nodeid] = outcome if outcome in _RANK else "error"
        elif kind == "collecterror":
            errors.append(rest[0] if rest else "")
        elif kind == "tamper":
            tamper.append(": ".join(x for x in rest if x))
        elif kind == "event":
            events.append(rest[0])
            sources.append((rest[0], rest[2] if len(rest) > 2 else ""))
        elif kind == "guard-error":
            guard_errors.append(":".join(rest))
        elif kind == "finish":
            finished = True
        elif kind == "exit":
            exit_code = int(rest[0])
    if number == 0:
        return GuardEvidence(problem=NEVER_STARTED)
    return GuardEvidence("", collected or (), outcomes, tuple(errors), tuple(tamper), tuple(sorted(set(events))),
                         tuple(sorted(set(sources))), tuple(guard_errors), finished, exit_code, late)


def precompile(python: str, plugin_dir: Path) -> None:
    """Byte-compile the guard's modules for this interpreter (a judged run cannot write bytecode, and
    compiling them again in every run costs more than the guard's own start-up)."""
    stamp = max(p.stat().st_mtime for p in plugin_dir.glob("*.py"))
    _compile(python, str(plugin_dir), stamp)


@lru_cache(maxsize=64)
def _compile(python: str, plugin_dir: str, stamp: float) -> bool:
    try:
        return subprocess.run([python, "-m", "compileall", "-q", plugin_dir], capture_output=True,
                              timeout=PROBE_TIMEOUT_S).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False  # only slower: the run compiles them itself


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
