"""pytest junit XML -> {test id: status}.  The only place test outcomes are read from.

pytest writes one <testcase classname=... name=...> per test.  A pytest node id
("pkg/test_mod.py::TestCls::test_x[a-b]") maps to exactly one (classname, name) pair, the way
pytest's own junitxml plugin derives it (`mangle_test_address`), so results are joined to node ids
without ever reading the test run's stdout.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from execrepobench_metric.errors import JunitError

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
# When a test has several outcomes (e.g. a teardown error after a pass), the worst one wins.
_SEVERITY = {PASSED: 0, SKIPPED: 1, FAILED: 2, ERROR: 3}


def junit_key(nodeid: str) -> tuple[str, str]:
    """(classname, name) that pytest's junitxml writes for `nodeid`."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def parse_junit_text(text: str) -> dict[tuple[str, str], str]:
    """Parse junit XML text into {(classname, name): status}."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise JunitError(f"not valid XML: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise JunitError(f"not a junit report (root element <{root.tag}>)")
    results: dict[tuple[str, str], str] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        tags = {child.tag for child in case}
        if "error" in tags:
            status = ERROR
        elif "failure" in tags:
            status = FAILED
        elif "skipped" in tags:
            status = SKIPPED
        else:
            status = PASSED
        previous = results.get(key)
        if previous is None or _SEVERITY[status] > _SEVERITY[previous]:
            results[key] = status
    return results


def parse_junit_file(path: Path) -> dict[tuple[str, str], str]:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise JunitError(f"no junit report at {path}") from None
    if not text.strip():
        raise JunitError(f"empty junit report at {path}")
    return parse_junit_text(text)


def _cases_or_none(path: Path) -> list:
    """The <testcase> elements of a report, none when it cannot be read (for the informative parsers)."""
    try:
        return list(ET.fromstring(Path(path).read_text(encoding="utf-8", errors="replace")).iter("testcase"))
    except (OSError, ET.ParseError):
        return []


def parse_junit_durations(path: Path) -> dict[tuple[str, str], float]:
    """{(classname, name): seconds} from a junit report (a test's entries summed); {} when unreadable.
    Only for time estimates: outcomes come from `parse_junit_file`."""
    out: dict[tuple[str, str], float] = {}
    for case in _cases_or_none(path):
        key = (case.get("classname", ""), case.get("name", ""))
        try:
            seconds = max(0.0, float(case.get("time", "0") or 0))
        except ValueError:
            seconds = 0.0
        out[key] = out.get(key, 0.0) + seconds
    return out


def parse_junit_messages(path: Path, cap: int = 300) -> dict[tuple[str, str], str]:
    """{(classname, name): the first line of its failure's or error's message, capped} for the tests that
    failed or errored; {} when unreadable.  For people reading a verdict: outcomes come from
    `parse_junit_file`."""
    out: dict[tuple[str, str], str] = {}
    for case in _cases_or_none(path):
        for child in case:
            if child.tag in ("failure", "error"):
                text = (child.get("message") or child.text or "").strip()
                if text == "collection failure":  # the error itself is the last "E " line of the report
                    said = [ln[1:].strip() for ln in (child.text or "").splitlines() if ln.startswith("E ")]
                    text = said[-1] if said else text
                first = text.splitlines()[0] if text else ""
                out.setdefault((case.get("classname", ""), case.get("name", "")), first[:cap])
    return out


def results_by_nodeid(nodeids, junit: dict[tuple[str, str], str]) -> dict[str, str | None]:
    """Join collected node ids to junit outcomes; None means the test did not report (did not run)."""
    return {nodeid: junit.get(junit_key(nodeid)) for nodeid in nodeids}
