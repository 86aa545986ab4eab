import pytest

from execrepobench_metric.execution.junit import (ERROR, FAILED, PASSED, SKIPPED, JunitError, junit_key,
                                                  parse_junit_messages, parse_junit_text, results_by_nodeid)

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5">
<testcase classname="tests.test_a" name="test_ok" time="0.001"/>
<testcase classname="tests.test_a.TestK" name="test_fail[1-x]" time="0.001"><failure message="boom">trace</failure></testcase>
<testcase classname="tests.test_a" name="test_skip" time="0"><skipped message="no"/></testcase>
<testcase classname="tests.test_a" name="test_teardown" time="0.001"/>
<testcase classname="tests.test_a" name="test_teardown" time="0.001"><error message="teardown"/></testcase>
</testsuite></testsuites>"""


@pytest.mark.parametrize("nodeid, key", [
    ("tests/test_a.py::test_ok", ("tests.test_a", "test_ok")),
    ("tests/test_a.py::TestK::test_fail[1-x]", ("tests.test_a.TestK", "test_fail[1-x]")),
    ("test_x.py::test_p[a/b::c]", ("test_x", "test_p[a/b::c]")),
    ("src/pkg/mod.py::pkg.mod.func", ("src.pkg.mod", "pkg.mod.func")),
])
def test_junit_key_matches_pytest_mangling(nodeid, key):
    assert junit_key(nodeid) == key


def test_parse_statuses_and_worst_outcome_wins():
    res = parse_junit_text(REPORT)
    assert res[("tests.test_a", "test_ok")] == PASSED
    assert res[("tests.test_a.TestK", "test_fail[1-x]")] == FAILED
    assert res[("tests.test_a", "test_skip")] == SKIPPED
    assert res[("tests.test_a", "test_teardown")] == ERROR  # pass then teardown error -> error


def test_results_by_nodeid_marks_unreported_tests_none():
    res = results_by_nodeid(["tests/test_a.py::test_ok", "tests/test_a.py::test_missing"], parse_junit_text(REPORT))
    assert res == {"tests/test_a.py::test_ok": PASSED, "tests/test_a.py::test_missing": None}


@pytest.mark.parametrize("text", ["", "not xml", "<html><body/></html>"])
def test_bad_reports_raise(text):
    with pytest.raises(JunitError):
        parse_junit_text(text)


def test_messages_of_failures_errors_and_collection_failures(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(REPORT.replace("</testsuite>", '<testcase classname="" name="tests.test_b">'
                                     '<error message="collection failure">tests/test_b.py:1: in &lt;module&gt;\n'
                                     '    import x\nE   ValueError: first\nE   RuntimeError: last line\n'
                                     '</error></testcase></testsuite>'))
    said = parse_junit_messages(report, cap=6)
    assert said[("tests.test_a.TestK", "test_fail[1-x]")] == "boom"
    assert said[("tests.test_a", "test_teardown")] == "teardo"  # capped
    assert said[("", "tests.test_b")] == "Runtim"  # a collection error's own last line, not "collection failure"
    assert ("tests.test_a", "test_ok") not in said and parse_junit_messages(tmp_path / "none.xml") == {}
