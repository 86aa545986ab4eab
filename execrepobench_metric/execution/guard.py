"""The judge's side of the in-process guard: its settings and what its evidence stream proves.

The guard (`pytest_plugin/_execrepobench_guard*.py`) runs inside the sandboxed pytest process and
writes each fact (collected tests, each test's call report, its subtests' reports and any setup /
teardown that did not pass, completion-attributed events, the end of the session, the exit) as it
happens, one line each, chained with an HMAC-SHA256 whose key reaches the process through a pipe it
reads and closes before any repository code runs.

The channel is a pipe held by the judge (`guard_channel.GuardChannel`), drained by a collector thread
as lines arrive: nothing the process does later can reach what was already read.  `read_evidence`
gives each fact one voice: the first word about a test's phase is final (a second one is damage), and once the session's `finish`
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

import hmac
import re
import subprocess
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
