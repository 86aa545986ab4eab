"""Time budgets, the covering tests first in the record, the benchmark's workload and ground-truth run
estimates: the pure parts, no sandbox."""
import ast
from dataclasses import replace

from execrepobench.builder.preparation.baseline import Baseline
from execrepobench.builder.verification.ground_truth import GroundTruth, estimate_s, measured, with_measurements
from execrepobench.builder.verification.selection import covering_first
import pytest

from conftest import make_sample
from execrepobench_dataset.measurements import Measurements, SampleTiming
from execrepobench_dataset.record import FILL_BLOCK, FILL_EXPRESSION, FILL_STATEMENT, RecordError, Sample
from execrepobench_dataset.schemes import MEASUREMENTS_SCHEME
from execrepobench_metric.execution import budget as budget_module
from execrepobench_metric.execution.budget import describe
from execrepobench_metric.execution.budget import (BUDGET_FACTOR, BUDGET_FLOOR_S, DEFAULT_TIMEOUT_S, PHASE_FACTOR,
                                                   PHASE_FLOOR_S, TEST_FACTOR, TEST_FLOOR_S, WALL_FLOOR_S, Budget,
                                                   budgets_for, measured_budget, out_of_budget, per_test_budget,
                                                   phase_budget, run_limits, scale, time_budget)
from execrepobench_metric.execution.limits import CPU_GRACE_S, Limits
from execrepobench_metric.execution.process import ProcessResult
from execrepobench_metric.execution.pytest_run import PytestRun

from workload import HANG_EXPR, KINDS, never_terminating, reformatted, workload  # benchmarks/



def test_time_budget_floor_and_factor():
    assert time_budget(0.1) == BUDGET_FLOOR_S
    assert time_budget(10.0) == BUDGET_FACTOR * 10.0
    assert time_budget(2.01) >= BUDGET_FACTOR * 2.01  # rounded up, never down


def test_run_limits_budget_timeout_and_none():
    limits = Limits()
    wall, lim = run_limits(Budget(12.0), None, limits)  # the sample's budget: CPU seconds + a wall backstop
    assert lim.cpu_seconds == 12 and wall == max(WALL_FLOOR_S, 120.0)
    assert "--cpu=12:%d" % (12 + CPU_GRACE_S) in lim.argv()
    assert run_limits(Budget(12.0), 30.0, limits) == (30.0, limits)  # an explicit timeout wins
    assert run_limits(None, None, limits) == (DEFAULT_TIMEOUT_S, limits)  # a sample without measurements


def test_out_of_budget_only_when_a_budget_applied():
    assert out_of_budget(152, True) and out_of_budget(-24, True)  # SIGXCPU through bwrap / directly
    assert not out_of_budget(152, False) and not out_of_budget(1, True) and not out_of_budget(None, True)


def test_covering_tests_come_first():
    assert covering_first({"z::t"}, {"a::t", "z::t", "m::t"}) == ("z::t", "a::t", "m::t")


def _run(duration, durations):
    return PytestRun({}, tuple(durations), ProcessResult(0, False, duration, "", ""), None, durations=durations)


def test_estimates_from_a_superset_run_and_the_baseline():
    run = _run(3.0, {"t1": 0.5, "t2": 1.0, "t3": 0.5})  # 1 s outside the tests
    assert abs(estimate_s(run, ["t2"]) - 2.0) < 1e-9
    base = Baseline(("t1",), (), (), (), 1, (3.0,), ("python",), test_seconds={"t1": 0.25}, fixed_s=1.0)
    assert base.estimate_s(["t1", "unknown"]) == 1.25


ONE_TEST = {"judged": ("t.py::t",), "fill_type": FILL_EXPRESSION}  # the samples below, unless they say otherwise


def test_reformatted_keeps_the_ast_and_changes_the_text():
    s = make_sample(middle="max(a,b) + 1", prefix_code="def f(a, b):\n    return ", **ONE_TEST)
    new = reformatted(s)
    assert new is not None and new != s.middle_code
    assert ast.dump(ast.parse(s.prefix_code + new + s.suffix_code)) == ast.dump(ast.parse(s.original_code))
    block = make_sample(middle="x = a\n    return x", judged=("t.py::t",), fill_type=FILL_BLOCK, prefix_code="def f(a):\n    ")
    new = reformatted(block)
    assert new is not None and ast.dump(ast.parse(block.prefix_code + new + "\n")) == ast.dump(ast.parse(block.original_code))


def test_never_terminating_compiles_and_loops():
    s = make_sample(middle="max(a, b)", prefix_code="def f(a, b):\n    return ", **ONE_TEST)
    hang = never_terminating(s)
    assert hang is not None and HANG_EXPR in hang
    compile(s.prefix_code + hang + s.suffix_code, "m.py", "exec")
    stmt = make_sample(middle="return a", judged=("t.py::t",), fill_type=FILL_STATEMENT, prefix_code="def f(a):\n    ")
    assert never_terminating(stmt).startswith(HANG_EXPR + "\n    return a")  # the hang, then the original
    kinds = [k for k, _ in workload(s)]
    assert kinds[0] == "ground_truth" and set(kinds) <= set(KINDS) and "never_terminates" in kinds


def _cpu_run(cpu, collect, tests):
    return PytestRun({}, tuple(tests), ProcessResult(0, False, cpu + 1, "", ""), None, cpu_s=cpu,
                     collect_cpu_s=collect, test_cpu_s=tests)


def _measurements(calibration=0.05, **samples):
    return Measurements("r", "k", MEASUREMENTS_SCHEME, "test machine", calibration,
                        {sid: SampleTiming(*t) for sid, t in samples.items()},
                        {"t.py::a": 0.1, "t.py::b": 3.0})


def test_ground_truth_measurements_are_cpu_seconds_of_its_own_tests_the_most_over_its_runs():
    s = make_sample(middle="1", judged=("t.py::a", "t.py::b"), fill_type=FILL_EXPRESSION, prefix_code="x = ")
    runs = [_cpu_run(4.0, 1.0, {"t.py::a": 0.2, "t.py::b": 1.0, "t.py::other": 2.0}),
            _cpu_run(3.5, 1.2, {"t.py::a": 0.3, "t.py::b": 0.5})]
    timing, tests = measured(s, runs)
    assert timing == SampleTiming(collect_s=1.2, fixed_s=max(4.0 - 3.2, 3.5 - 0.8))  # the most of each
    assert tests == (("t.py::a", 0.3), ("t.py::b", 1.0))  # only its judged tests, in its order
    g = with_measurements(GroundTruth(s, True, "passed"), runs)
    assert g.timing == timing and g.test_s == tests
    unfinished = PytestRun({}, (), ProcessResult(1, True, 9.0, "", ""), "timed out")  # measured nothing
    assert measured(s, [unfinished]) == (None, ())


def test_the_fixed_part_is_never_below_the_collection_it_contains():
    """0.15 - 0.01 is 0.13999999999999999 in floats: the fixed part is rounded, so it is not below a
    collection of 0.14 (a ground-truth test saw collect_s > fixed_s on such clock ticks)."""
    run = _cpu_run(0.15, 0.14, {"t.py::a": 0.01})
    assert run.fixed_cpu_s == 0.14 and run.collect_cpu_s <= run.fixed_cpu_s


def test_budgets_derive_from_the_measurements_at_judging_time():
    m = _measurements(s1=(0.2, 2.0))
    b = measured_budget("s1", ("t.py::a", "t.py::b"), m, factor=1.0)
    assert b.run_s == time_budget(2.0 + 0.1 + 3.0) and b.collect_s == phase_budget(0.2) == PHASE_FLOOR_S
    assert phase_budget(1.0) == PHASE_FACTOR * 1.0  # collection's own time, once above the floor
    assert dict(b.tests) == {"t.py::a": TEST_FLOOR_S, "t.py::b": TEST_FACTOR * 3.0}  # each test its own
    assert b.phase_budgets() == {"collect": b.collect_s, "tests": dict(b.tests), "default": b.default_test_s}
    slower = measured_budget("s1", ("t.py::a", "t.py::b"), m, factor=2.0)  # a machine twice as slow
    assert slower.run_s == time_budget(2 * 5.1) and dict(slower.tests)["t.py::b"] == TEST_FACTOR * 6.0
    assert measured_budget("unknown", ("t.py::a",), m) is None and measured_budget("s1", (), None) is None
    # a judged test without a time of its own is counted like the slowest known one
    odd = measured_budget("s1", ("t.py::a", "t.py::new"), m, factor=1.0)
    assert odd.run_s == time_budget(2.0 + 0.1 + 0.1) and odd.default_test_s == per_test_budget(0.1)


def test_the_machine_scale_is_never_below_one_and_rounded_up(monkeypatch):
    m = _measurements(calibration=0.1)
    monkeypatch.setattr(budget_module, "calibration_s", lambda: 0.05)  # a faster machine keeps the budgets
    assert scale(m) == 1.0
    monkeypatch.setattr(budget_module, "calibration_s", lambda: 0.26)  # 2.6x slower -> 2.75
    assert scale(m) == 2.75
    monkeypatch.setattr(budget_module, "calibration_s", lambda: 0.2)  # exactly 2x
    assert scale(m) == 2.0


def test_budgets_for_samples_and_what_the_output_says(monkeypatch):
    monkeypatch.setattr(budget_module, "calibration_s", lambda: 0.05)
    a = make_sample(middle="1", judged=("t.py::a",), fill_type=FILL_EXPRESSION, prefix_code="x = ", sample_id="s1")
    b = replace(a, sample_id="s2")
    budgets = budgets_for([a, b], {"k": _measurements(s1=(1.0, 2.0))})
    assert set(budgets) == {"s1"}
    said = describe([a, b], budgets, None)
    assert (said["measured"], said["default_timeout"]) == (1, 1) and "1 sample(s) without measurements" in said["rule"]
    assert describe([a, b], {}, 30.0)["explicit_timeout"] == 2


def test_measurements_records_round_trip_and_refuse_what_they_cannot_read():
    m = _measurements(s1=(1.0, 2.0))
    assert Measurements.from_dict(m.to_dict()) == m
    with pytest.raises(RecordError, match="unknown scheme 'wall-0'.*explicit timeout"):
        Measurements.from_dict({**m.to_dict(), "scheme": "wall-0"})
    with pytest.raises(RecordError, match="calibration_s"):
        Measurements.from_dict({**m.to_dict(), "calibration_s": 0})
    with pytest.raises(RecordError, match="missing field"):
        Measurements.from_dict({"repo_name": "r"})


def test_old_records_budget_fields_are_measurements_and_dropped():
    s = make_sample(middle="1", prefix_code="x = ", **ONE_TEST)
    back = Sample.from_dict({**s.to_dict(), "time_budget_s": 12.0, "phase_budget_s": 5})
    assert back == s and "time_budget_s" not in back.to_dict()


def test_tests_that_flipped_at_baseline_are_kept_only_when_every_rerun_passes(monkeypatch, tmp_path):
    from execrepobench.builder.preparation import baseline as baseline_module
    from execrepobench_metric.execution.pytest_run import PytestInvocation
    from execrepobench_metric.execution.sandbox import Isolation

    outcomes = iter([{"a": "passed", "b": "failed", "c": "passed"}, {"a": "passed", "b": "passed", "c": "passed"}])
    seen = []

    def fake_run(inv, **kwargs):
        seen.append(inv.select)
        return PytestRun(next(outcomes), inv.select, ProcessResult(0, False, 1.0, "", ""), None)

    monkeypatch.setattr(baseline_module, "run_pytest", fake_run)
    monkeypatch.setattr(baseline_module, "as_judged", lambda inv: ())
    inv = PytestInvocation(python="python", root=tmp_path, deselect=("x",))
    kept = baseline_module.recheck_flipped(inv, ["a", "b", "c"], 2, Isolation.BWRAP)
    assert kept == ("a", "c") and seen == [("a", "b", "c")] * 2  # b failed one re-run: it stays flaky
    assert baseline_module.recheck_flipped(inv, [], 2, Isolation.BWRAP) == ()


def test_parametrized_tests_whose_ids_vary_are_excluded_by_their_prefix():
    from execrepobench.builder.preparation.baseline import varying_ids

    absent = {"t.py::test_f[a-expected3]", "t.py::test_g", "u.py::C::test_h[x-1]"}
    assert varying_ids(absent) == ("t.py::test_f[", "u.py::C::test_h[")
    base = Baseline(("t.py::ok",), ("t.py::bad",), ("t.py::test_f[a-expected3]", "t.py::test_f[b-expected1]",
                                                     "t.py::slow"), (), 3, (1.0,), ("python",),
                    varying=("t.py::test_f[",))
    # the ids of the moment are not recorded, the prefix is: the same record in every build
    assert base.excluded == ("t.py::bad", "t.py::slow", "t.py::test_f[")
    assert varying_ids(set()) == ()
