"""pytest plugin loaded with `-p _execrepobench_collect` in every run.

It writes (1) the collected node ids when collection finishes and (2) at the very end of the
session, a second, independent record of each test's outcome.  The judge requires (2) to exist (a
run that exits early never writes it) and to agree with pytest's junit XML report.
"""
import json
import os

_OUTCOMES = {}


def _write(suffix, data):
    path = os.environ.get("EXECREPOBENCH_COLLECT_OUT")
    if path:
        with open(path + suffix, "w", encoding="utf-8") as fh:
            json.dump(data, fh)


def pytest_collection_finish(session):
    _write("", [item.nodeid for item in session.items])


def pytest_runtest_logreport(report):
    if report.failed:
        outcome = "failed" if report.when == "call" else "error"
    elif report.skipped:
        outcome = "skipped"
    else:
        outcome = "passed"
    previous = _OUTCOMES.get(report.nodeid)
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    if previous is None or rank[outcome] > rank[previous]:
        _OUTCOMES[report.nodeid] = outcome


def pytest_sessionfinish(session, exitstatus):
    _write(".done", {"exitstatus": int(exitstatus), "outcomes": _OUTCOMES})
