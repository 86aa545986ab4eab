"""The judge's side of the in-process guard: the channel it opens, the evidence it reads back.

The guard (`pytest_plugin/_execrepobench_guard*.py`) runs inside the sandboxed pytest process and
streams each fact (collected tests, each test's call report, its subtests' reports and any setup /
teardown that did not pass, completion-attributed events, the end of the session, the exit) as it happens to a file descriptor opened here, one line each, chained with an
HMAC-SHA256 whose key reaches the process through a pipe it reads and closes before any repository
code runs.  The stream is an unnamed temporary file of this process: the sandbox cannot open it by a
path, and whatever the code under test does to the descriptor (truncate, seek, write) breaks the
chain or cuts its end - never produces a valid "passed".
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from execrepobench_metric.defaults import PROBE_TIMEOUT_S

GUARD_MODES = ("enforce", "record", "off", "blind")  # "blind": evidence without refusals (tests only)
BOOTSTRAP = "_execrepobench_guard"
SETTINGS_VAR = "EXECREPOBENCH_GUARD"
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
NEVER_STARTED = "the guard never started"


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
        if self.mode not in ("enforce", "record", "blind"):
            raise ValueError(f"guard mode {self.mode!r}: use 'enforce', 'record' or 'blind'")


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


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def verify_lines(data: bytes, key: bytes) -> tuple[list[list[str]], str]:
    """(lines as fields, problem): every line must carry the next sequence number and a valid chained mac."""
    lines, prev = [], b""
    chunks = data.split(b"\n")
    if chunks and chunks[-1] == b"":
        chunks.pop()
    elif chunks:
        return lines, "the stream ends inside a line"
    for number, raw in enumerate(chunks, 1):
        body, _, mac = raw.rpartition(b"\t")
        expected = hmac.new(key, prev + body, hashlib.sha256).hexdigest().encode()
        if not body or not hmac.compare_digest(mac, expected):
            return lines, f"line {number} is not the guard's (bad mac)"
        prev = bytes.fromhex(mac.decode())
        fields = [_unescape(f) for f in body.decode("utf-8", "surrogatepass").split("\t")]
        if fields[0] != str(number):
            return lines, f"line {number} is out of sequence"
        lines.append(fields[1:])
    return lines, ""


def read_evidence(data: bytes, key: bytes) -> GuardEvidence:
    lines, problem = verify_lines(data, key)
    if problem:
        return GuardEvidence(problem=problem)
    if not lines:
        return GuardEvidence(problem=NEVER_STARTED)
    if lines[0][0] != "hello":
        return GuardEvidence(problem="the stream does not begin with the guard's first line")
    collected, outcomes, errors, tamper, events, guard_errors, sources = (), {}, [], [], [], [], []
    finished, exit_code, phases, copies = False, None, {}, Counter()
    for kind, *rest in lines[1:]:
        if exit_code is not None:
            return GuardEvidence(problem="lines after the exit line")
        if kind == "collected":
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
    return GuardEvidence("", collected, outcomes, tuple(errors), tuple(tamper), tuple(sorted(set(events))),
                         tuple(sorted(set(sources))), tuple(guard_errors), finished, exit_code)


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
    """Open before the run (key pipe + stream file), hand over with `pass_fds`, read after the run."""

    def __init__(self, setup: GuardSetup, evidence_dir: Path) -> None:
        self.key = os.urandom(32)
        self.stream = tempfile.TemporaryFile(prefix="erb-guard-")
        read_end, write_end = os.pipe()
        os.write(write_end, self.key)
        os.close(write_end)
        self.key_pipe = os.fdopen(read_end, "rb")  # closed here after the run (or when collected)
        self.key_fd = read_end
        # the masked file is resolved against the working directory (the repository's view) in the run
        self.settings = {"mode": setup.mode, "masked": setup.masked_file, "also_masked": list(setup.also_masked),
                         "allowed": list(setup.allowed),
                         "evidence": str(evidence_dir), "stream_fd": self.stream.fileno(), "key_fd": read_end}

    @property
    def pass_fds(self) -> tuple[int, int]:
        return self.stream.fileno(), self.key_fd

    def env(self) -> dict[str, str]:
        return {SETTINGS_VAR: json.dumps(self.settings)}

    def read(self) -> GuardEvidence:
        self.stream.seek(0)
        return read_evidence(self.stream.read(), self.key)

    def keep(self, path: Path) -> None:
        """A copy of the raw stream (for a run's evidence folder)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.stream.seek(0)
        path.write_bytes(self.stream.read())

    def close(self) -> None:
        self.stream.close()
        self.key_pipe.close()
