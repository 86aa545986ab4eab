"""Time budgets, the covering tests first in the record, the benchmark's workload and ground-truth run
estimates: the pure parts, no sandbox."""
import ast
from dataclasses import replace

from execrepobench.builder.baseline import Baseline
from execrepobench.builder.ground_truth import estimate_s, with_budgets
from execrepobench.builder.selection import covering_first
from execrepobench.builder.workload import HANG_EXPR, KINDS, never_terminating, reformatted, workload
import pytest

from execrepobench_dataset.record import RecordError, Sample
from execrepobench_metric.budget import (BUDGET_FACTOR, BUDGET_FLOOR_S, DEFAULT_TIMEOUT_S, PHASE_ENV, PHASE_FACTOR,
                                         PHASE_FLOOR_S, WALL_FLOOR_S, out_of_budget, phase_budget, phase_env,
                                         run_limits, time_budget)
from execrepobench_metric.limits import CPU_GRACE_S, Limits
from execrepobench_metric.process import ProcessResult
from execrepobench_metric.pytest_run import PytestRun



def test_time_budget_floor_and_factor():
    assert time_budget(0.1) == BUDGET_FLOOR_S
    assert time_budget(10.0) == BUDGET_FACTOR * 10.0
    assert time_budget(2.01) >= BUDGET_FACTOR * 2.01  # rounded up, never down


def test_run_limits_budget_timeout_and_none():
    limits = Limits()
    wall, lim = run_limits(12.0, None, limits)  # the sample's budget: CPU seconds + a wall backstop
    assert lim.cpu_seconds == 12 and wall == max(WALL_FLOOR_S, 120.0)
    assert "--cpu=12:%d" % (12 + CPU_GRACE_S) in lim.argv()
    assert run_limits(12.0, 30.0, limits) == (30.0, limits)  # an explicit timeout wins
    assert run_limits(0.0, None, limits) == (DEFAULT_TIMEOUT_S, limits)  # a sample without a budget


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


def _sample(prefix, middle, suffix, fill="grammar-based: expression"):
    return Sample(sample_id="s", repo_name="r", repo_source="pypi:r==1", file_name="m.py", prefix_code=prefix,
                  middle_code=middle, suffix_code=suffix, context_code=(), fill_type=fill, node_type="x",
                  middle_start_byte=len(prefix), middle_end_byte=len(prefix) + len(middle), env_key="k", seed=0,
                  builder_version="t", judged_tests=("t.py::t",))


def test_reformatted_keeps_the_ast_and_changes_the_text():
    s = _sample("def f(a, b):\n    return ", "max(a,b) + 1", "\n")
    new = reformatted(s)
    assert new is not None and new != s.middle_code
    assert ast.dump(ast.parse(s.prefix_code + new + s.suffix_code)) == ast.dump(ast.parse(s.original_code))
    block = _sample("def f(a):\n    ", "x = a\n    return x", "\n", fill="grammar-based: block")
    new = reformatted(block)
    assert new is not None and ast.dump(ast.parse(block.prefix_code + new + "\n")) == ast.dump(ast.parse(block.original_code))


def test_never_terminating_compiles_and_loops():
    s = _sample("def f(a, b):\n    return ", "max(a, b)", "\n")
    hang = never_terminating(s)
    assert hang is not None and HANG_EXPR in hang
    compile(s.prefix_code + hang + s.suffix_code, "m.py", "exec")
    stmt = _sample("def f(a):\n    ", "return a", "\n", fill="grammar-based: statement")
    assert never_terminating(stmt).startswith(HANG_EXPR + "\n    return a")  # the hang, then the original
    kinds = [k for k, _ in workload(s)]
    assert kinds[0] == "ground_truth" and set(kinds) <= set(KINDS) and "never_terminates" in kinds


def test_phase_budget_from_the_fixed_part_and_the_slowest_judged_test():
    assert phase_budget(0.2, 0.01) == PHASE_FLOOR_S
    assert phase_budget(3.0, 0.5) == PHASE_FACTOR * 3.0  # collection is the longest phase
    assert phase_budget(1.0, 4.0) == PHASE_FACTOR * 4.0  # one slow judged test
    assert phase_env(6.0, None) == {PHASE_ENV: "6"} and phase_env(6.0, 30.0) == {} and phase_env(0.0, None) == {}
    run = _run(5.0, {"t1": 0.5, "t2": 2.0, "t3": 0.5})  # fixed part 2 s
    s = with_budgets(replace(_sample("x = ", "1", "\n"), judged_tests=("t1",)), [run], (2.5,))
    # the slowest test of the run, judged or not: it may have paid for a fixture that t1 pays on its own
    assert (s.time_budget_s, s.phase_budget_s) == (time_budget(2.5), phase_budget(2.0, 2.0))
    quick = _run(2.2, {"t1": 0.1, "t3": 0.1})
    assert with_budgets(replace(s, phase_budget_s=0.0), [quick], (2.1,)).phase_budget_s == phase_budget(2.0, 0.1)
    assert with_budgets(s, [quick], (2.1,)).phase_budget_s == s.phase_budget_s  # an earlier, higher one is kept
    back = Sample.from_dict({**s.to_dict(), "phase_budget_s": 12})  # an integer in JSON is read as a float
    assert back.phase_budget_s == 12.0
    with pytest.raises(RecordError, match="phase_budget_s"):
        replace(s, phase_budget_s=-1.0)


def test_a_sample_without_budget_keeps_the_old_timeout():
    s = replace(_sample("x = ", "1", "\n"), time_budget_s=0.0)
    assert run_limits(s.time_budget_s, None, Limits())[0] == DEFAULT_TIMEOUT_S
