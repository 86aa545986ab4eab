"""The speed levers on the fixture repository, in the real sandbox: time budgets as CPU seconds, fail
fast in the recorded order, known verdicts, ground truth shared per masked file, null fill first,
byte-compiled trees that never hide a completion."""
import time
from dataclasses import replace

import pytest

from conftest import make_sample
from execrepobench.builder.verification.ground_truth import check_ground_truth
from execrepobench.builder.settings import BuildSettings
from execrepobench.builder.verification.verify import verify_samples
from execrepobench_metric.environments.venvs import find_environment
from execrepobench_metric.execution.budget import Budget
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

pytestmark = pytest.mark.sandbox
INSIDE, EDGES = "tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges"
CONF = JudgeConfig()  # no explicit timeout: the budget given (else the default timeout)


@pytest.fixture(scope="module")
def clamp(built_minirepo):
    return make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=(INSIDE, EDGES))


def test_a_completion_that_never_ends_stops_at_its_cpu_budget(clamp):
    budget = Budget(run_s=2.0)
    t0 = time.monotonic()
    v = judge(clamp, "while True: pass", CONF, budget=budget)
    assert (v.passed, v.reason) == (False, "timeout") and "2 CPU seconds" in v.detail, v
    assert time.monotonic() - t0 < 50  # not the wall-clock backstop (60 s)
    slow_but_right = judge(clamp, "sum(range(10 ** 6)); return value", replace(CONF, known_verdicts=False),
                           budget=budget)
    assert slow_but_right.passed, slow_but_right


def test_a_loop_stops_at_the_phase_budget_of_its_test_or_of_collection(clamp, built_minirepo):
    # the whole run may take 60 CPU seconds, collection 3, each test its own: the loop stops in its test
    budget = Budget(run_s=60.0, collect_s=3.0, tests=((INSIDE, 2.0), (EDGES, 2.5)), default_test_s=9.0)
    v = judge(clamp, "while True: pass", CONF, budget=budget)
    assert (v.passed, v.reason) == (False, "timeout") and v.duration_s < 55, v  # not the run's 60 s budget
    own = dict(budget.tests)[v.failing_tests[0]]  # the test that ran it stopped at its own budget
    assert f"phase budget of {own:g} CPU seconds" in v.detail, v
    caught = "try:\n        while True: pass\n    except Exception:\n        return value"
    v = judge(clamp, caught, CONF, budget=budget)  # not swallowed by `except Exception`
    assert (v.passed, v.reason) == (False, "timeout") and "phase budget" in v.detail, v
    fine = judge(clamp, "sum(range(10 ** 6)); return value", replace(CONF, known_verdicts=False), budget=budget)
    assert fine.passed, fine
    at_import = make_sample(built_minirepo, "minirepo/mathx.py", "import math", judged=(INSIDE, EDGES))
    v = judge(at_import, "import math\nwhile True: pass", CONF, budget=budget)  # loops while tests are collected
    assert (v.passed, v.reason) == (False, "timeout") and "phase budget of 3 CPU seconds" in v.detail, v
    assert judge(at_import, "import math", replace(CONF, known_verdicts=False), budget=budget).passed
    untimed = judge(clamp, "while True: pass", replace(CONF, timeout_s=3), budget=budget)  # an explicit timeout
    assert untimed.reason == "timeout" and "phase budget" not in untimed.detail, untimed  # replaces every budget


def test_fail_fast_stops_at_the_first_failure_in_pytests_order(built_minirepo):
    # `if True:` always raises ValueError: both clamp tests fail.  The judged tests' order in the record
    # does not reorder the run (order-dependent suites fail otherwise): the same test stops it either way.
    s = make_sample(built_minirepo, "minirepo/mathx.py", "if low > high:", judged=(EDGES, INSIDE))
    v = judge(s, "if True:", CONF)
    assert not v.passed and len(v.failing_tests) == 1 and "first failing" in v.detail, v
    # the detail says what failed: the test and the first line of its message (from pytest's junit report)
    assert f"{v.failing_tests[0]}: ValueError: low must not exceed high" in v.detail, v.detail
    again = judge(replace(s, judged_tests=(INSIDE, EDGES)), "if True:", CONF)
    assert again.failing_tests == v.failing_tests, (again, v)
    v = judge(s, "if True:", replace(CONF, fail_fast=False))
    assert set(v.failing_tests) == {INSIDE, EDGES}


def test_known_verdict_only_for_the_original_bytes(clamp):
    verified = replace(clamp, selection_rule="coverage")  # verification records the rule with the tests
    known = judge(verified, clamp.middle_code, CONF)
    assert known.passed and known.detail.startswith("known verdict") and known.duration_s < 1
    ran = judge(verified, clamp.middle_code, replace(CONF, known_verdicts=False))
    assert ran.passed and not ran.detail
    reformatted = judge(verified, "return (value)", CONF)  # same AST, other bytes: it runs
    assert reformatted.passed and not reformatted.detail
    unverified = judge(clamp, clamp.middle_code, CONF)  # no selection rule recorded: not a verified sample
    assert unverified.passed and not unverified.detail
    assert not judge(verified, "return value + 1", CONF).passed


def test_ground_truth_runs_are_shared_and_a_failing_union_split(built_minirepo):
    conf = JudgeConfig(timeout_s=60)
    a = make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=(INSIDE,))
    b = make_sample(built_minirepo, "minirepo/mathx.py", "return low", judged=(EDGES,))
    c = make_sample(built_minirepo, "minirepo/strings.py", "return slug[:limit]",
                    judged=("tests/test_strings.py::test_slugify",))
    bad = make_sample(built_minirepo, "minirepo/mathx.py", "return high", judged=("tests/test_mathx.py::test_nope",))
    out = check_ground_truth([a, b, c], conf, rounds=2)
    assert [g.passed for g in out] == [True, True, True] and all(len(g.runs_s) == 2 for g in out)
    assert len({g.costs for g in out}) == 1 and len(out[0].costs[0][1]) == 2  # 2 runs for 3 samples, 2 files
    assert all(g.sample.guard_allowed == () for g in out)
    # what the runs measured: CPU seconds of start-up + collection, the fixed part, each judged test
    assert all(g.timing is not None and 0 < g.timing.collect_s <= g.timing.fixed_s for g in out), out
    assert [tuple(t for t, _ in g.test_s) for g in out] == [g.sample.judged_tests for g in out]
    out = check_ground_truth([a, bad, c], conf, rounds=2)
    assert [g.reason for g in out] == ["passed", "gt_failed", "passed"], out


def test_null_fill_first_no_ground_truth_run_for_a_null_pass(built_minirepo):
    conf = JudgeConfig(timeout_s=60)
    good = make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=(EDGES, INSIDE))
    untested = make_sample(built_minirepo, "minirepo/strings.py", 'return text.upper() + "!"',
                           judged=("tests/test_strings.py::test_slugify",))
    settings = BuildSettings(workers=2, gt_runs=2, progress=False, mutants=0)
    kept, dropped = verify_samples([good, untested], conf, settings)
    assert kept.kept and kept.sample.judged_tests[0] == INSIDE  # the test that caught the null fill first
    assert kept.timing is not None and len(kept.gt_runs_s) == 2
    assert dropped.reason == "null_passed" and dropped.gt_runs_s == ()  # never ran its ground truth


def test_the_tree_is_byte_compiled_and_a_completion_still_wins(built_minirepo):
    env = find_environment(built_minirepo["env_key"])
    pycs = list((env.root / "minirepo" / "__pycache__").glob("mathx.*.pyc"))
    assert pycs and int.from_bytes(pycs[0].read_bytes()[4:8], "little") & 0b1  # PEP 552 hash-based
    s = make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=(INSIDE,))
    assert not judge(s, "return value + 1", JudgeConfig(timeout_s=60)).passed
