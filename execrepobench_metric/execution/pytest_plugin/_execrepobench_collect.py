"""pytest plugin loaded with `-p _execrepobench_collect` in every run.

It writes (1) the collected node ids when collection finishes and (2) at the very end of the
session, a second, independent record of each test's outcome.  Without the guard the judge requires
(2) to exist (a run that exits early never writes it) and to agree with pytest's junit XML report.

Under the guard (`python -m _execrepobench_guard`), each hook below also hands its facts to the
guard's audit hook with `sys.audit("execrepobench.*", ...)`; the guard checks that the call comes
from this very code, called by pluggy, with no frame of the masked file on the stack, and streams
the fact to the judge as it happens.  Without the guard nobody listens and the calls cost nothing.

With EXECREPOBENCH_BUDGETS naming a JSON file (a judged run with measured budgets: {"collect": s,
"tests": {node id: s}, "default": s}), collection, then each test, may use that many CPU seconds of
this process (ITIMER_PROF): collection its own budget, each test its own (or the default); at the limit
the phase raises PhaseBudgetExceeded.  Every run records what it measured in the `.done` record: the
CPU seconds of the whole run, of start-up and collection, and of each test (os.times: this process and
the children it waited for) - the data budgets are derived from.  Every run lifts hypothesis'
wall-clock checks (`_lift_hypothesis_clock`).  With EXECREPOBENCH_TEST_WALL_S (the builder's first baseline
run only), each test may take that many wall seconds (ITIMER_REAL): a test that waits for a server, the
network or a terminal fails with TestWallLimit and the builder deselects it by node id for the other runs;
where the limit ran out in a fixture's setup (a server started for each test), the later tests that ask for
that fixture stop at once with the same words, instead of each waiting out the limit again.
"""
import json
import os
from functools import lru_cache
from sys import audit as _audit
from sys import modules as _modules
from signal import ITIMER_PROF as _ITIMER_PROF, SIGPROF as _SIGPROF, setitimer as _setitimer
from signal import ITIMER_REAL as _ITIMER_REAL, SIGALRM as _SIGALRM
from signal import signal as _signal

import pytest

_OUTCOMES = {}


class PhaseBudgetExceeded(BaseException):
    """Collection, or one test, used up the sample's phase budget (CPU seconds of this process): a
    BaseException, so the code under test does not swallow it with `except Exception`."""


def _budgets():
    path = os.environ.get("EXECREPOBENCH_BUDGETS")
    if not path:
        return 0.0, {}, 0.0
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        tests = {str(k): max(0.0, float(v)) for k, v in (data.get("tests") or {}).items()}
        return max(0.0, float(data.get("collect") or 0)), tests, max(0.0, float(data.get("default") or 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0.0, {}, 0.0


class TestWallLimit(BaseException):
    """A test of a baseline run took longer than the run's per-test wall limit (it waits for something)."""


def _wall_limit():
    try:
        return max(0.0, float(os.environ.get("EXECREPOBENCH_TEST_WALL_S") or 0))
    except ValueError:
        return 0.0


_WALL_S = _wall_limit()
_WALL_WHY = f"exceeded the baseline's per-test limit of {_WALL_S:g} wall seconds (execrepobench)"


class FixtureWallLimit(Exception):
    """The per-test wall limit ran out in a fixture's setup: an Exception there, so that pytest records the
    fixture's error as it records any (a BaseException would leave the fixture half set up, and every later
    test that asks for it fails on pytest's own assertion instead of being named)."""


_IN_FIXTURE = [0]  # fixture setups under way


def _over_wall(signum, frame):
    raise FixtureWallLimit(_WALL_WHY) if _IN_FIXTURE[0] else TestWallLimit(_WALL_WHY)


if _WALL_S > 0:
    _signal(_SIGALRM, _over_wall)
    _HUNG_FIXTURES = set()  # fixtures whose setup the limit stopped: a test that asks for one again stops at once

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_fixture_setup(fixturedef, request):
        func = fixturedef.func
        if fixturedef.argname in _HUNG_FIXTURES:  # pytest's own setup calls this instead, and records its error
            def _stopped(*args, **kwargs):
                raise FixtureWallLimit(f"{_WALL_WHY}: its fixture {fixturedef.argname} did in an earlier test")
            fixturedef.func = _stopped
        _IN_FIXTURE[0] += 1
        try:
            outcome = yield
        finally:
            _IN_FIXTURE[0] -= 1
            fixturedef.func = func
        if outcome.excinfo is not None and isinstance(outcome.excinfo[1], FixtureWallLimit):
            _HUNG_FIXTURES.add(fixturedef.argname)


_COLLECT_S, _TEST_S, _DEFAULT_S = _budgets()
_ARMED = [0.0]  # the budget of the phase under way
_TEST_CPU = {}  # node id -> CPU seconds of its setup, call and teardown


def _cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _over_budget(signum, frame):
    raise PhaseBudgetExceeded(f"used up the phase budget of {_ARMED[0]:g} CPU seconds (the sample's budget for "
                              "this phase, from its measured ground truth)")


def _arm(seconds):
    if _COLLECT_S > 0 or _TEST_S or _DEFAULT_S > 0:
        _ARMED[0] = seconds
        _setitimer(_ITIMER_PROF, seconds)


if _COLLECT_S > 0:  # from here to the end of collection, then each test: one phase each
    _signal(_SIGPROF, _over_budget)
    _arm(_COLLECT_S)
elif _TEST_S or _DEFAULT_S > 0:
    _signal(_SIGPROF, _over_budget)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    _arm(_TEST_S.get(item.nodeid, _DEFAULT_S))
    if _WALL_S > 0:
        _setitimer(_ITIMER_REAL, _WALL_S)
    start = _cpu()
    try:
        yield
    finally:
        _arm(0)
        if _WALL_S > 0:
            _setitimer(_ITIMER_REAL, 0)
        _TEST_CPU[item.nodeid] = round(_TEST_CPU.get(item.nodeid, 0.0) + _cpu() - start, 4)


def _write(suffix, data):
    path = os.environ.get("EXECREPOBENCH_COLLECT_OUT")
    if path:
        with open(path + suffix, "w", encoding="utf-8") as fh:
            json.dump(data, fh)


def _selected():
    path = os.environ.get("EXECREPOBENCH_SELECT")
    if not path:
        return None
    with open(path, encoding="utf-8") as fh:
        return set(json.load(fh))


@pytest.hookimpl(hookwrapper=True)
def pytest_pycollect_makemodule(module_path, parent):
    # With a selection, pytest is given the selected tests' files instead of the suite's test paths, and
    # a file named on the command line is collected as a test module whatever its name: an example file
    # that a repository's conftest collects as data (pygments' tests/examplefiles/**/*.py) would be
    # imported as a test module too, which the whole suite never does.  Such a module is not collected.
    outcome = yield
    if os.environ.get("EXECREPOBENCH_SELECT") and _named_only_by_selection(module_path, parent):
        outcome.force_result(None)


def _named_only_by_selection(path, parent):
    if not parent.session.isinitpath(path):
        return False
    try:
        from _pytest.python import path_matches_patterns
        if path_matches_patterns(path, parent.config.getini("python_files")):
            return False
    except ImportError:  # an old pytest: keep pytest's own behaviour
        return False
    root = parent.config.rootpath
    return not any(path == (root / p).resolve() or path == root / p for p in _suite_paths())


@lru_cache(maxsize=1)
def _suite_paths():  # the whole suite's own test paths, read once per run
    return tuple(json.loads(os.environ.get("EXECREPOBENCH_TEST_PATHS") or "[]"))


def pytest_collection_modifyitems(session, config, items):
    # Runs after the repo's own hooks (plugins registered with -p load late): keep only the judged
    # tests, in pytest's own order (the order the baseline and verification ran them in: another
    # order fails order-dependent suites).  Selecting here, not with node ids on the command line,
    # means an id that is missing in this run is reported as not run instead of aborting the whole run.
    wanted = _selected()
    if wanted is None:
        return
    keep = [item for item in items if item.nodeid in wanted]
    dropped = [item for item in items if item.nodeid not in wanted]
    items[:] = keep
    if dropped:
        config.hook.pytest_deselected(items=dropped)


def pytest_load_initial_conftests(early_config):
    # After pytest's own start-up (tryfirst implementations), before the repository's conftests.
    _warm_lazy_machinery()
    _audit("execrepobench.baseline")


def _warm_lazy_machinery():
    # What pytest and the standard library bind on first use, bound now by their own code, before the
    # guard's integrity reference is taken (at the audit above): first use during a test is then not a
    # change of the machinery (it was recorded as one for every sample judged by a doctest), and
    # rebinding it later still is.
    try:
        from _pytest import doctest as _doctest
        _doctest._get_checker()
        _doctest._get_runner()
    except Exception:  # noqa: BLE001 - another pytest: its first use stays a recorded change
        pass
    try:
        import unittest
        getattr(unittest, "IsolatedAsyncioTestCase", None)
    except Exception:  # noqa: BLE001
        pass
    try:  # hypothesis appends its gc-time callback to gc.callbacks (which the guard watches) on first use
        from importlib.util import find_spec
        if find_spec("hypothesis") is not None:
            from hypothesis.internal.conjecture.junkdrawer import gc_cumulative_time
            gc_cumulative_time()
    except Exception:  # noqa: BLE001 - another hypothesis: its first use stays a recorded change
        pass
    try:  # posixpath compiles its variable patterns on the first expandvars (str and bytes)
        os.path.expandvars("$_execrepobench")
        os.path.expandvars(b"$_execrepobench")
    except Exception:  # noqa: BLE001
        pass


def pytest_itemcollected(item):
    _audit("execrepobench.item", item)


def pytest_collectreport(report):
    if report.failed:
        _audit("execrepobench.collecterror", report)


_COLLECTED_CPU = [None]


def pytest_collection_finish(session):
    _arm(0)  # collection is over
    _COLLECTED_CPU[0] = round(_cpu(), 4)  # start-up and collection
    _audit("execrepobench.collected", session)
    _lift_hypothesis_clock(session.items)
    _write("", [item.nodeid for item in session.items])


def _lift_hypothesis_clock(items):
    # Hypothesis' wall-clock checks (the per-example deadline, the too_slow health check) fail a test
    # when the machine is loaded, whatever the code under test does: every run (baseline, verification,
    # judging) lifts them, on each collected test's own settings (fixed when its module was imported,
    # after any profile its conftest loaded) and on the default for what is made later.
    hypothesis = _modules.get("hypothesis")
    if hypothesis is None:
        return
    try:
        settings, too_slow = hypothesis.settings, hypothesis.HealthCheck.too_slow

        def lifted(own):
            return settings(own, deadline=None, suppress_health_check=[*own.suppress_health_check, too_slow])

        settings.register_profile("_execrepobench", lifted(settings.default))
        settings.load_profile("_execrepobench")
        done = set()
        for item in items:
            try:
                test = getattr(getattr(item, "obj", None), "__func__", None) or getattr(item, "obj", None)
                own = getattr(test, "_hypothesis_internal_use_settings", None)
            except Exception:  # noqa: BLE001 - an item of another kind: not a hypothesis test
                continue
            if isinstance(own, settings) and id(test) not in done:
                done.add(id(test))  # parametrized items share their function
                test._hypothesis_internal_use_settings = lifted(own)
    except Exception:  # noqa: BLE001 - another hypothesis: its checks stay as the suite set them
        pass


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    # The guard looks at how the phase ended: a skip raised through the completion's code is refused.
    _audit("execrepobench.outcome", call, item.nodeid)


def pytest_runtest_logreport(report):
    _audit("execrepobench.report", report)
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
    _audit("execrepobench.finish", exitstatus)
    # CPU seconds of this process and of the children it waited for: the whole run, start-up and
    # collection, each test (what budgets are derived from; benchmarks read them too)
    _write(".done", {"exitstatus": int(exitstatus), "outcomes": _OUTCOMES, "cpu_s": round(_cpu(), 3),
                     "collect_cpu_s": _COLLECTED_CPU[0], "test_cpu_s": _TEST_CPU})


def _coverage():
    if not os.environ.get("EXECREPOBENCH_COVERAGE_CONTEXTS"):
        return None
    try:
        import coverage
    except ImportError:
        return None
    return coverage.Coverage.current()


def pytest_runtest_logstart(nodeid, location):
    # One coverage context per test (its node id); import-time code stays in the empty context.
    cov = _coverage()
    if cov is not None:
        cov.switch_context(nodeid)


def pytest_runtest_logfinish(nodeid, location):
    cov = _coverage()
    if cov is not None:
        cov.switch_context("")
