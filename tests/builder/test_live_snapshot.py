"""`execrepobench live` around the build: candidates asked in order on a local index (recorded PyPI answers),
`--limit`, per-candidate outcomes, the report, and bad input (dates, unknown projects, an index that does not
answer).  The planning of a candidate with a release (sdist downloads, the build) is replaced here by a
recorder; tests/builder/test_live_real.py runs it for real."""
import json
from datetime import date

import pytest

from execrepobench.builder.live import snapshot as snapshot_module
from execrepobench.builder.live.candidates import Candidate
from execrepobench.builder.live.plan import NO_NEW_CODE, NO_RELEASE, NO_TESTS, Skip
from execrepobench.builder.live.snapshot import LiveConfig, LiveInputError, snapshot
from execrepobench.builder.live.window import Window
from execrepobench.runner.cli import main
from local_index import LocalIndex

WINDOW = Window.of("2026-04-02", "2026-11-30", today=date(2026, 12, 2))


@pytest.fixture()
def index():
    served = LocalIndex()
    yield served
    served.close()


@pytest.fixture()
def planned(monkeypatch):
    """Candidates with a release in the window end in planning: toolz without tests, cachetools without new code."""
    calls = []

    def fake_plan(name, releases):
        calls.append((name, releases.target.version, releases.baseline.version))
        raise Skip(NO_TESTS if name == "toolz" else NO_NEW_CODE, f"{name}: recorded outcome")
    monkeypatch.setattr(snapshot_module, "plan", fake_plan)
    return calls


def config(tmp_path, index, names, **kw):
    return LiveConfig(window=WINDOW, out=tmp_path / "out", candidates=tuple(Candidate(n, f"note {n}") for n in names),
                      index_url=index.url, progress=False, allow_weak_sandbox=True, **kw)


def test_candidates_in_order_up_to_the_limit(tmp_path, index, planned):
    summary = snapshot(config(tmp_path, index, ["six", "no-such-project", "toolz", "cachetools", "never-asked"],
                              limit=2))
    asked = [path for path, _ in index.requests]
    assert asked == ["/simple/six/", "/simple/no-such-project/", "/simple/toolz/", "/simple/cachetools/"]
    assert planned == [("toolz", "1.2.0", "1.1.0"), ("cachetools", "8.0.2", "7.0.5")]
    live = summary["live"]
    by_name = {e["candidate"]: e for e in live["candidates"]}
    assert list(by_name) == ["six", "no-such-project", "toolz", "cachetools"]
    assert by_name["six"]["status"] == NO_RELEASE and by_name["six"]["latest"]["version"] == "1.17.0"
    assert by_name["six"]["baseline"]["version"] == "1.17.0" and by_name["six"]["target"] is None
    assert by_name["no-such-project"]["status"] == "error" and "no such project" in by_name["no-such-project"]["reason"]
    assert by_name["toolz"]["status"] == NO_TESTS and by_name["cachetools"]["status"] == NO_NEW_CODE
    assert all(e["time_s"] >= 0 and e["note"] for e in live["candidates"])
    assert live["totals"]["with_release_in_window"] == 2 and live["totals"]["samples"] == 0
    assert live["totals"]["per_status"][NO_TESTS] == 1 and live["window"]["config_name"] == "live-2026-04-03-to-2026-11-30"
    out = tmp_path / "out"
    assert json.loads((out / "live_report.json").read_text())["candidates"] == live["candidates"]
    assert json.loads((out / "build_report.json").read_text())["live"]["index_requests"] == 4
    assert (out / "samples.jsonl").read_text() == ""  # an ordinary (here empty) builder folder
    assert "| toolz | no_tests | 1.2.0 (2026-10-07) | 1.1.0 (2025-10-17) |" in (out / "build_report.md").read_text()


def test_named_unknown_project_and_dead_index_are_bad_input(tmp_path, index, planned):
    with pytest.raises(LiveInputError, match="--candidate no-such-project: no-such-project: no such project"):
        snapshot(config(tmp_path, index, ["six", "no-such-project"], named=True))
    dead = LocalIndex()
    dead.close()
    down = config(tmp_path, dead, ["six", "toolz", "cachetools", "attrs"])
    with pytest.raises(LiveInputError, match="the package index does not answer .*nothing was built"):
        snapshot(down)
    assert not (tmp_path / "out" / "samples.jsonl").exists()


def test_cli_bad_input(tmp_path, index, capsys):
    out = str(tmp_path / "out")
    assert main(["live", "--after", "2999-01-01", "--out", out]) == 2
    assert "--after 2999-01-01 is in the future" in capsys.readouterr().err
    assert main(["live", "--after", "2026-05-01", "--before", "2026-04-01", "--out", out]) == 2
    assert "empty window" in capsys.readouterr().err
    assert main(["live", "--after", "2026-04-02", "--candidate", "no-such-project", "--index-url", index.url,
                 "--out", out, "--no-progress", "--allow-weak-sandbox"]) == 2
    assert "no such project on the index" in capsys.readouterr().err
    assert main(["live", "--after", "2026-04-02", "--limit", "0", "--out", out]) == 2
    assert "--limit must be a positive integer" in capsys.readouterr().err
    bad = tmp_path / "list.txt"
    bad.write_text("six\nsix\n")
    assert main(["live", "--after", "2026-04-02", "--candidates", str(bad), "--out", out]) == 2
    assert "listed twice" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_cli_reports_candidates_without_release(tmp_path, index, capsys):
    rc = main(["live", "--after", "2026-04-02", "--before", "2026-11-30", "--candidate", "six", "--index-url", index.url,
               "--out", str(tmp_path / "out"), "--no-progress", "--allow-weak-sandbox"])
    assert rc == 1  # no sample: nothing in the window
    printed = capsys.readouterr().out
    assert "| six | no_release_in_window |" in printed and "How new was decided" in printed
