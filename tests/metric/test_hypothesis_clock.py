"""Hypothesis' wall-clock checks are lifted in every run (baseline, verification, judging): a property
test whose examples outlast its deadline passes under our runs - on a loaded machine any test can - while
a plain pytest run of the same tree fails it, and a wrong completion still fails.  The same small
repository has a conftest that imports the package: a completion that loops at import there stops at
the sample's phase budget before pytest collects anything, and the verdict says so."""
from __future__ import annotations

import subprocess
from dataclasses import replace

import pytest

from conftest import make_sample, prepared_local_repo, write_local_repo
from execrepobench_metric.execution.budget import Budget
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

TESTS = '''import time

from hypothesis import given, settings, strategies as st

from hyprepo.core import double


@settings(deadline=5, max_examples=5)  # an explicit deadline of 5 ms; every example takes 30 ms
@given(st.integers(0, 100))
def test_explicit_deadline(x):
    time.sleep(0.03)
    assert double(x) == x + x


@given(st.integers(0, 100))  # the default deadline (200 ms); every example takes 250 ms
@settings(max_examples=2)
def test_default_deadline(x):
    time.sleep(0.25)
    assert double(x) == 2 * x
'''
JUDGED = ("tests/test_props.py::test_explicit_deadline", "tests/test_props.py::test_default_deadline")


@pytest.fixture(scope="module")
def hyprepo(tmp_path_factory):
    base = tmp_path_factory.mktemp("hyprepo")
    repo = write_local_repo(base, "hyprepo", {
        "pyproject.toml": '[project]\nname = "hyprepo"\nversion = "0.1"\n\n[project.optional-dependencies]\n'
                          'test = ["hypothesis"]\n\n[build-system]\nrequires = ["setuptools"]\n'
                          'build-backend = "setuptools.build_meta"\n',
        "hyprepo/__init__.py": "", "hyprepo/core.py": "SCALE = 2\n\n\ndef double(x):\n    return x * SCALE\n",
        "tests/test_props.py": TESTS,
        "conftest.py": "import hyprepo.core  # noqa: F401 - loaded before any collection\n"})
    return prepared_local_repo(base, repo)


@pytest.mark.sandbox
@pytest.mark.slow
def test_hypothesis_deadlines_do_not_decide_verdicts(hyprepo, monkeypatch):
    plain = subprocess.run([hyprepo["python"], "-m", "pytest", "-p", "no:cacheprovider", "tests/test_props.py"],
                           cwd=hyprepo["root"], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 1 and "DeadlineExceeded" in plain.stdout, plain.stdout[-2000:]  # the checks bite
    monkeypatch.setenv("EXECREPOBENCH_CACHE", hyprepo["cache"])
    sample = make_sample(hyprepo, "hyprepo/core.py", "return x * SCALE", judged=JUDGED)  # baseline: both passed
    conf = JudgeConfig(timeout_s=300, known_verdicts=False, fail_fast=False)
    gold = judge(sample, sample.middle_code, conf)
    assert (gold.passed, gold.reason) == (True, "passed"), gold
    for test in JUDGED:
        assert judge(replace(sample, judged_tests=(test,)), sample.middle_code, conf).passed, test
    wrong = judge(sample, "return x * 3", conf)
    assert (wrong.passed, wrong.reason) == (False, "failed") and set(wrong.failing_tests) == set(JUDGED), wrong
    assert "AssertionError" in wrong.detail or "assert" in wrong.detail, wrong.detail  # the message says why


@pytest.mark.sandbox
@pytest.mark.slow
def test_a_loop_in_code_the_conftest_imports_stops_at_the_phase_budget(hyprepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", hyprepo["cache"])
    sample = make_sample(hyprepo, "hyprepo/core.py", "SCALE = 2", judged=JUDGED)
    budget = Budget(run_s=60.0, collect_s=2.0, default_test_s=2.0)
    v = judge(sample, "SCALE = 2\nwhile True: pass", JudgeConfig(), budget=budget)
    assert (v.passed, v.reason) == (False, "timeout") and "collection's budget, 2 CPU seconds" in v.detail, v
    assert v.duration_s < 55, v  # not the run's budget of 60 CPU seconds
