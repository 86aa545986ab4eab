"""`decide.decide` without a sandbox: a table of frozen run results -> verdicts, one row per branch of the
chain (what the plan found, the CPU budget, the guard's stream, timeouts, unfinished sessions, phase
budgets, collection errors, failing / missing / inconsistent / skipped tests, the canaries, the exit
code).  A tracer proves that the table reaches every `return` of `decide` and of the guard's stream reading."""
import dataclasses
import inspect
import signal
import sys

import pytest

from conftest import make_sample
from execrepobench_dataset.record import FILL_STATEMENT
from execrepobench_metric.execution import judge as judge_module
from execrepobench_metric.execution import run_plan
from execrepobench_metric.execution.budget import PHASE_MARK, Budget
from execrepobench_metric.execution.canaries import Canary, CanaryPlan
from execrepobench_metric.execution.decide import RunResult, decide
from execrepobench_metric.execution.guard import NEVER_STARTED, GuardEvidence
from execrepobench_metric.execution.guard_verdict import guarded_run
from execrepobench_metric.execution.junit import ERROR, FAILED, PASSED, SKIPPED
from execrepobench_metric.execution.limits import Limits
from execrepobench_metric.execution.process import ProcessResult
from execrepobench_metric.execution.pytest_run import PytestRun
from execrepobench_metric.execution.run_plan import RunPlan
from execrepobench_metric.execution.sandbox import ViewFile
from execrepobench_metric.execution.verdict import JudgeConfig
from sample_build import of

A, B = "tests/test_core.py::test_add", "tests/test_core.py::test_add_neg"
EXCLUDED = "tests/test_x.py::test_flaky"
SAMPLE = make_sample(file_name="alpha/core.py", middle="    return a + b\n", fill_type=FILL_STATEMENT,
                     prefix_code="def add(a, b):\n", suffix_code="\n\nX = 1\n", **of("alpha", A, B))
WRONG = SAMPLE.prefix_code + "    return a - b\n" + SAMPLE.suffix_code
PLAN = RunPlan(WRONG)
BUDGETED = RunPlan(WRONG, limits=Limits(cpu_seconds=4), budget=Budget(run_s=3.5, collect_s=2.0))
XCPU = -int(signal.SIGXCPU)
CONF = JudgeConfig(timeout_s=60)
# canaries (canaries.py): one that must pass, placed before the judged tests, and one that must fail, last
PASSES, FAILS = "tests/test_add_order.py::test_add_range", "tests/test_add_limit.py::test_limit"
CANARIES = dataclasses.replace(PLAN, canaries=CanaryPlan(
    (Canary(PASSES, PASSED), Canary(FAILS, FAILED)),
    (ViewFile("tests/test_add_order.py", ""), ViewFile("tests/test_add_limit.py", ""))))


def run(outcomes=None, *, rc=0, finished=True, timed_out=False, stderr="", collected=None, plugin=None,
        unmatched=None, messages=None, guard=None, error=None) -> PytestRun:
    """A pytest run as `run_pytest` returns it (by default: both judged tests passed, reports agree)."""
    outcomes = {A: PASSED, B: PASSED} if outcomes is None else outcomes
    return PytestRun(outcomes=outcomes, collected=tuple(outcomes) if collected is None else collected,
                     process=ProcessResult(rc, timed_out, 1.5, "", stderr), error=error, finished=finished,
                     unmatched=unmatched or {}, plugin_outcomes=dict(outcomes) if plugin is None else plugin,
                     messages=messages or {}, guard=guard)


def stream(**kw) -> GuardEvidence:
    """The guard's evidence stream of a finished session in which both judged tests passed."""
    return GuardEvidence(**{"collected": (A, B), "outcomes": {A: PASSED, B: PASSED}, "finished": True,
                            "exit_code": 0, **kw})


# name -> (plan, run, config, (passed, reason, failing tests, a piece of the detail))
CASES = {
    "syntax error": (RunPlan(WRONG, syntax_error="invalid syntax (core.py, line 2)"), None, CONF,
                     (False, "syntax_error", (), "invalid syntax")),
    "no environment": (RunPlan(WRONG, environment_found=False), None, CONF,
                       (False, "error", (), f"environment {SAMPLE.env_key} of alpha not found in this cache")),
    "known verdict": (RunPlan(SAMPLE.original_code, known="known verdict, not run again"), None, CONF,
                      (True, "passed", (), "known verdict")),
    "CPU budget spent": (BUDGETED, run(rc=XCPU, finished=False), CONF,
                         (False, "timeout", (), "used up its time budget of 4 CPU seconds (from the build's")),
    "SIGXCPU without a budget": (PLAN, run(rc=XCPU, finished=False), CONF,
                                 (False, "crashed", (), f"did not finish its session (exit code {XCPU})")),
    "estimated budget spent": (dataclasses.replace(BUDGETED, budget=Budget(run_s=3.5, origin="estimated")),
                               run(rc=XCPU, finished=False), CONF,
                               (False, "timeout", (), "estimated from the baseline")),
    "guard never started": (PLAN, run(rc=1, guard=GuardEvidence(problem=NEVER_STARTED)), CONF,
                            (False, "error", (), "the guard did not start (exit code 1)")),
    "guard stream damaged": (PLAN, run(guard=GuardEvidence(problem="a record out of sequence")), CONF,
                             (False, "tampering", (), "evidence stream was damaged: a record out of sequence")),
    "guard refused": (PLAN, run(guard=stream(tampering=("os._exit",))), CONF,
                      (False, "tampering", (), "refused by the guard: os._exit")),
    "guard failed": (PLAN, run(guard=stream(guard_errors=("audit hook",))), CONF,
                     (False, "error", (), "the guard failed on: audit hook")),
    "guard stream incomplete": (PLAN, run(finished=False, rc=None, guard=stream(finished=False, exit_code=None)),
                                CONF, (False, "crashed", (), "guard stream incomplete")),
    "collection budget in a conftest": (BUDGETED, run(finished=False, rc=1, stderr=f"... {PHASE_MARK}: collect",
                                                      guard=stream(finished=False, exit_code=None)), CONF,
                                        (False, "timeout", (), "(collection's budget, 2 CPU seconds)")),
    "exit codes differ": (PLAN, run(rc=0, guard=stream(exit_code=1)), CONF,
                          (False, "crashed", (), "process exit code 0 differs from pytest's 1")),
    "guarded timeout": (PLAN, run(rc=None, timed_out=True, finished=False, error="timed out after 60 s",
                                  guard=stream(finished=False, exit_code=None)), CONF,
                        (False, "timeout", (), "timed out after 60 s")),
    "wall-clock timeout": (PLAN, run(rc=None, timed_out=True, finished=False, error="timed out after 60 s"), CONF,
                           (False, "timeout", (), "timed out after 60 s")),
    "session unfinished": (PLAN, run(rc=1, finished=False), CONF,
                           (False, "crashed", (), "pytest did not finish its session (exit code 1)")),
    "unfinished in the collection budget": (PLAN, run(rc=1, finished=False, stderr=PHASE_MARK), CONF,
                                            (False, "timeout", (), "(collection's budget, 0 CPU seconds)")),
    "a test's phase budget": (PLAN, run({A: FAILED, B: None}, rc=1, messages={A: f"{PHASE_MARK}: 0.5 CPU s"}),
                              CONF, (False, "timeout", (A,), f"{A}: {PHASE_MARK}: 0.5 CPU s")),
    "collection errors": (PLAN, run({A: None, B: None}, rc=2, unmatched={"tests/test_core.py": ERROR},
                                    messages={"tests/test_core.py": "ImportError: cannot import add"}), CONF,
                          (False, "failed", ("tests/test_core.py",), "collection errors; tests/test_core.py: "
                                                                     "ImportError")),
    "failing, stopped early": (PLAN, run({A: FAILED, B: None}, rc=1, messages={A: "assert -1 == 3"}), CONF,
                               (False, "failed", (A,), f"stopped at the first failing test; {A}: assert -1 == 3")),
    "failing, every test ran": (PLAN, run({A: FAILED, B: PASSED}, rc=1, messages={A: "assert -1 == 3"}),
                                dataclasses.replace(CONF, fail_fast=False), (False, "failed", (A,), A)),
    "a judged test not reported": (PLAN, run({A: PASSED}), CONF,
                                   (False, "missing_tests", (B,), "1 judged test(s) not reported")),
    "no test ran": (PLAN, run({}), dataclasses.replace(CONF, selection="suite"),
                    (False, "missing_tests", (), "no test ran")),
    "reports disagree": (PLAN, run(plugin={A: PASSED, B: FAILED}), CONF,
                         (False, "inconsistent_report", (B,), "junit report disagrees")),
    "a judged test skipped": (PLAN, run({A: PASSED, B: SKIPPED}), CONF,
                              (False, "failed", (B,), "a judged test was skipped")),
    "exit code": (PLAN, run(rc=1), CONF, (False, "crashed", (), "pytest exit code 1")),
    "a canary that must fail reported passed": (CANARIES, run({PASSES: PASSED, A: FAILED, B: None, FAILS: PASSED},
                                                              rc=1), CONF, (False, "tampering", (), "canary:passed")),
    "canaries cut the run short": (CANARIES, run({FAILS: FAILED, A: None, B: None, PASSES: None}, rc=1), CONF,
                                   (False, "error", (), "the canary tests cut the run short")),
    "a canary missing": (CANARIES, run({PASSES: None, A: PASSED, B: PASSED, FAILS: FAILED}, rc=1), CONF,
                         (False, "tampering", (), "canary:missing")),
    "canaries held": (CANARIES, run({PASSES: PASSED, A: PASSED, B: PASSED, FAILS: FAILED}, rc=1), CONF,
                      (True, "passed", (), "")),
    # fail closed: every judged test passed and no canary was collected - made again with fresh canaries
    "canaries not collected": (CANARIES, run(), CONF, (False, "error", (), "the canary tests cut the run short")),
    "canaries not collected again": (dataclasses.replace(CANARIES, canaries=dataclasses.replace(
        CANARIES.canaries, attempt=1)), run(), CONF, (False, "tampering", (), "canary:not-collected")),
    "passed": (PLAN, run(), CONF, (True, "passed", (), "")),
    "passed through the guard's stream": (PLAN, run(guard=stream()), CONF, (True, "passed", (), "")),
    "suite: excluded tests do not count": (PLAN, run({A: PASSED, B: PASSED, EXCLUDED: FAILED}),
                                           dataclasses.replace(CONF, selection="suite"), (True, "passed", (), "")),
    # the strict rule (strict.py): a pass by a capability the original lacks is refused; --lenient: the tests alone
    "refused by the strict rule": (RunPlan(SAMPLE.prefix_code + "    import gc\n    return a + b\n" + SAMPLE.suffix_code),
                                   run(), CONF, (False, "refused", (), "import:gc")),
    "lenient": (RunPlan(SAMPLE.prefix_code + "    import gc\n    return a + b\n" + SAMPLE.suffix_code), run(),
                dataclasses.replace(CONF, strict=False), (True, "passed", (), "")),
}


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch):
    """decide is pure: nothing is looked up, compiled into a run or executed."""
    def refuse(*args, **kwargs):
        raise AssertionError("decide ran or looked something up")

    for module, name in ((judge_module, "run_pytest"), (judge_module, "plan_run"), (run_plan, "find_environment"),
                         (run_plan, "protected_paths")):
        monkeypatch.setattr(module, name, refuse)


@pytest.mark.parametrize("name", list(CASES))
def test_decide_table(name):
    plan, pytest_run, config, (passed, reason, failing, detail) = CASES[name]
    v = decide(RunResult(plan, pytest_run, duration_s=2.5), SAMPLE, config)
    assert (v.passed, v.reason, v.failing_tests) == (passed, reason, failing), name
    assert detail in v.detail, (name, v.detail)
    assert v.sample_id == SAMPLE.sample_id and v.duration_s == 2.5 and v.sandbox == "bwrap"
    assert decide(RunResult(plan, pytest_run, duration_s=2.5), SAMPLE, config) == v  # a value in, a value out


def test_the_table_reaches_every_return_of_the_chain():
    """Every `return` line of `decide` and of `guarded_run` (the guard's part of the chain) runs for some row."""
    targets = {f.__code__: f for f in (decide, guarded_run)}
    hit: set[tuple[str, int]] = set()

    def tracer(frame, event, arg):
        if frame.f_code in targets:
            def lines(frame, event, arg):
                if event == "line":
                    hit.add((frame.f_code.co_name, frame.f_lineno))
                return lines
            return lines
        return None

    sys.settrace(tracer)
    try:
        for plan, pytest_run, config, _ in CASES.values():
            decide(RunResult(plan, pytest_run), SAMPLE, config)
    finally:
        sys.settrace(None)
    for code, fn in targets.items():
        source, first = inspect.getsourcelines(fn)
        own = {line for _, _, line in code.co_lines()}  # not the lines of functions nested in it
        returns = {first + i for i, line in enumerate(source) if line.strip().startswith("return ")} & own
        assert returns, fn
        missed = sorted(n for n in returns if (code.co_name, n) not in hit)
        assert not missed, f"{fn.__name__}: no row reaches the returns at lines {missed}"


def test_guard_events_and_suspicious_reasons():
    """What the guard refused is a verdict's guard event and a `guard:` suspicious reason (enforce mode);
    in record mode the events are recorded, and are no suspicious reason."""
    refused = decide(RunResult(PLAN, run(guard=stream(tampering=("os._exit",)))), SAMPLE, CONF)
    assert refused.guard_events == ("os._exit",) and "guard:os._exit" in refused.suspicious
    recorded = decide(RunResult(PLAN, run(guard=stream(events=("open:/etc/passwd",)))), SAMPLE,
                      dataclasses.replace(CONF, guard="record"))
    assert recorded.passed and recorded.guard_events == ("open:/etc/passwd",) and not recorded.suspicious
    spent = decide(RunResult(BUDGETED, run(rc=XCPU, guard=stream(tampering=("os._exit",)))), SAMPLE, CONF)
    assert spent.reason == "timeout" and spent.guard_events == ()  # a spent budget: the stream is not read


def test_a_planned_run_without_a_result_is_the_harness_s_error():
    with pytest.raises(ValueError, match="a run was planned, but no run result"):
        decide(RunResult(PLAN, None), SAMPLE, CONF)


def test_result_read_is_the_run_the_verdict_read():
    """judge_run hands back the run as decided from: through the guard's stream, unless the budget stopped it."""
    guarded = run({A: FAILED, B: FAILED}, guard=stream())
    assert RunResult(PLAN, guarded).read().outcomes == {A: PASSED, B: PASSED}  # the stream's, not junit's
    stopped = run(rc=XCPU, guard=stream())
    assert RunResult(BUDGETED, stopped).read() is stopped
    assert RunResult(PLAN, None).read() is None


def test_the_canaries_check_is_said_in_the_verdict():
    """Each verdict read from a run says what its canaries said; the run a rerun replaces says why."""
    said = {name: decide(RunResult(plan, r), SAMPLE, config).canaries for name, (plan, r, config, _) in CASES.items()
            if plan.canaries is not None}
    assert said["canaries held"] == "held" and said["canaries not collected"].startswith(judge_module.RERUN)
    assert said["canaries cut the run short"].startswith(judge_module.RERUN)
    assert said["a canary missing"].startswith("fired: canary:missing")
    assert decide(RunResult(PLAN, run()), SAMPLE, CONF).canaries == ""  # none planted
