"""Fair labels under a repository's own timeout (pytest-timeout's way): a conftest installs a SIGALRM handler
per test that dumps every thread's stack (`sys._current_frames`) and fails the test.  A completion that loops
forever is interrupted by it - the handler's frames sit on top of the completion's - and is judged `failed`,
not `tampering`: the attribution walk ends at a signal handler the completion did not install.  A handler
the completion installs itself stays refused."""
from __future__ import annotations

import pytest

from conftest import make_sample, prepared_local_repo, write_local_repo
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
CONFTEST = '''import signal
import sys

import pytest


def _dump_stacks_and_fail(signum, frame):
    stacks = {ident: f.f_code.co_name for ident, f in sys._current_frames().items()}
    pytest.fail(f"Timeout >2s ({len(stacks)} threads)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    previous = signal.signal(signal.SIGALRM, _dump_stacks_and_fail)
    signal.alarm(2)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
'''
JUDGED = ("tests/test_core.py::test_double",)
CONF = JudgeConfig(timeout_s=120, known_verdicts=False)


@pytest.fixture(scope="module")
def alarmrepo(tmp_path_factory):
    base = tmp_path_factory.mktemp("alarmrepo")
    repo = write_local_repo(base, "alarmrepo", {
        "alarmrepo/__init__.py": "", "alarmrepo/core.py": "def double(x):\n    return 2 * x\n",
        "tests/test_core.py": "from alarmrepo.core import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
        "conftest.py": CONFTEST})
    return prepared_local_repo(base, repo)


def test_a_completion_that_loops_under_the_repositorys_timeout_handler_is_failed_not_tampering(alarmrepo,
                                                                                                monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", alarmrepo["cache"])
    sample = make_sample(alarmrepo, "alarmrepo/core.py", "return 2 * x", judged=JUDGED)
    assert judge(sample, sample.middle_code, CONF).passed
    looping = judge(sample, "while True:\n        pass", CONF)
    assert (looping.passed, looping.reason) == (False, "failed"), looping
    assert "Timeout >2s" in looping.detail, looping.detail


def test_a_handler_the_completion_installs_is_still_refused(alarmrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", alarmrepo["cache"])
    sample = make_sample(alarmrepo, "alarmrepo/core.py", "return 2 * x", judged=JUDGED)
    own = ("import signal, sys\n    signal.signal(signal.SIGUSR1, lambda s, f: sys._current_frames())\n"
           "    return 2 * x")
    verdict = judge(sample, own, CONF)
    assert (verdict.passed, verdict.reason) == (False, "tampering"), verdict
