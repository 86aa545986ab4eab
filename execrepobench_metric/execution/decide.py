"""The last step of a judgement (`judge.py`): `decide` - the only place where a pass is decided, a pure
function of what the plan found and the run left (tests/metric/test_decide.py covers every branch)."""
from __future__ import annotations

from dataclasses import dataclass

from execrepobench_dataset.record import Sample

from .budget import PHASE_MARK, Budget, out_of_budget
from .canaries import CanaryCheck, check_canaries
from .guard_verdict import guarded_run
from .junit import ERROR, FAILED, PASSED, SKIPPED
from .pytest_run import PytestRun
from .run_plan import RunPlan, judged_tests
from .strict import refusal_reasons
from .suspicious import suspicious
from .verdict import JudgeConfig, Verdict


@dataclass(frozen=True)
class RunResult:
    """What a verdict is decided from: the plan and the pytest run it led to (None: nothing ran)."""

    plan: RunPlan
    run: PytestRun | None = None
    duration_s: float = 0.0  # the judgement's wall seconds so far

    @property
    def budget_spent(self) -> bool:
        """The run was stopped because it used up its CPU budget (then its guard stream is not read)."""
        return self.run is not None and out_of_budget(self.run.exit_code, self.plan.budget is not None)

    def read(self) -> PytestRun | None:
        """The run as the verdict reads it: through the guard's evidence stream, unless its budget stopped it."""
        return self.run if self.run is None or self.budget_spent else guarded_run(self.run)[0]


def decide(result: RunResult, sample: Sample, config: JudgeConfig) -> Verdict:
    """The verdict: pure (a frozen value in, a verdict out; nothing runs or is read).  The chain, most
    specific first: what the plan found (syntax error, no environment, known verdict); a spent CPU budget;
    what the guard's stream alone decides; a timeout; an unfinished session; a spent phase budget;
    collection errors; failing, missing, inconsistently reported or skipped judged tests; the canaries
    (`canaries.py`: a rewrite they show is `tampering`; when they cut the run short, an `error` whose
    `canaries` starts with `judge.RERUN` - `judge_run` then judges it by a run with fresh canaries); the exit code;
    last, under the strict rule (`config.strict`, `strict.py`), a pass by a capability the original lacks
    is `refused`."""
    plan, budget = result.plan, result.plan.budget
    events: tuple[str, ...] = ()  # what the guard saw, once its stream is read
    check = CanaryCheck()  # what the canaries say, once the run is read

    def verdict(passed: bool, reason: str, **kw) -> Verdict:
        return Verdict(sample.sample_id, passed, reason, duration_s=result.duration_s, sandbox=str(config.isolation),
                       guard_events=events, suspicious=suspicious(sample.original_code, plan.completed,
                                                                  sample.file_name,
                                                                  events if config.guard == "enforce" else ()),
                       canaries=check.label, **kw)

    if plan.syntax_error is not None:
        return verdict(False, "syntax_error", detail=plan.syntax_error)
    if not plan.environment_found:
        return verdict(False, "error", detail=f"environment {sample.env_key} of {sample.repo_name} not found in this "
                                              "cache: make it with `execrepobench prepare --dataset DATASET`")
    if plan.known is not None:
        return verdict(True, "passed", detail=plan.known)
    if result.run is None:
        raise ValueError(f"sample {sample.sample_id}: a run was planned, but no run result was given")
    if result.budget_spent:  # CPU budget spent
        tail = result.run.process.stderr_tail[-config.stderr_cap:]
        return verdict(False, "timeout", stderr_tail=tail,
                       detail=f"used up its time budget of {plan.limits.cpu_seconds} CPU seconds ({_origin(budget)})")
    run, decided = guarded_run(result.run)
    tail = run.process.stderr_tail[-config.stderr_cap:]
    if run.guard is not None:
        events = run.guard.events if config.guard == "record" else run.guard.tampering
    ended_early = (decided is not None and decided[0] == "crashed") or (decided is None and not run.finished)
    if ended_early and PHASE_MARK in run.process.stderr_tail:  # the phase budget ran out in a conftest's import
        return verdict(False, "timeout", stderr_tail=tail, detail=f"pytest did not finish its session: "
                       f"{PHASE_MARK} (collection's budget, {budget.collect_s if budget else 0:g} CPU seconds)")
    if decided is not None:
        return verdict(False, decided[0], stderr_tail=tail, detail=decided[1])
    if run.process.timed_out:
        return verdict(False, "timeout", stderr_tail=tail, detail=run.error or "")
    if not run.finished:
        return verdict(False, "crashed", stderr_tail=tail,
                       detail=f"pytest did not finish its session (exit code {run.exit_code})")
    select = judged_tests(sample, config.selection)
    spent = next((t for t, said in run.messages.items() if PHASE_MARK in said), None)
    if spent is not None:  # collection or a test used up the phase budget (our plugin stopped it) - before the
        # canaries: a budget spent while a canary module was collected is no canary file failing to import
        return verdict(False, "timeout", failing_tests=(spent,), stderr_tail=tail,
                       detail=f"{spent}: {run.messages[spent]}")
    check = check_canaries(plan.canaries, collected=run.collected, outcomes=run.outcomes, cross=run.plugin_outcomes,
                           unmatched=run.unmatched, judged=select)
    if check.state == "rerun":  # the harness's canaries cut the run short: never the completion's verdict
        return verdict(False, "error", stderr_tail=tail, detail=f"the canary tests cut the run short: {check.note}")
    if check.state == "fired" and check.always:  # no honest run reports this
        return verdict(False, "tampering", stderr_tail=tail, detail=check.note)
    broken = tuple(name for name, status in run.unmatched.items() if status in (FAILED, ERROR))
    if broken:  # a test module that no longer imports: its tests were never collected
        return verdict(False, "failed", failing_tests=broken, stderr_tail=tail,
                       detail="collection errors" + _said(run.messages, broken))
    expected = select or tuple(t for t in run.collected if t not in set(sample.excluded_tests))
    missing = [t for t in expected if run.outcomes.get(t) is None]
    failing = tuple(t for t in expected if run.outcomes.get(t) not in (PASSED, SKIPPED, None))
    if failing:  # with fail_fast, the first failure ended the run: the tests after it never ran
        stopped = "stopped at the first failing test" if config.fail_fast and missing else ""
        return verdict(False, "failed", failing_tests=failing, stderr_tail=tail,
                       detail=(stopped + _said(run.messages, failing)).lstrip("; "))
    if missing or not expected:
        return verdict(False, "missing_tests", failing_tests=tuple(missing), stderr_tail=tail,
                       detail=f"{len(missing)} judged test(s) not reported" if expected else "no test ran")
    disagree = [t for t in expected if run.plugin_outcomes.get(t) != run.outcomes.get(t)]
    if disagree:
        return verdict(False, "inconsistent_report", failing_tests=tuple(disagree), stderr_tail=tail,
                       detail="pytest's junit report disagrees with the run's record")
    if select and any(run.outcomes.get(t) != PASSED for t in select):
        return verdict(False, "failed", failing_tests=tuple(t for t in select if run.outcomes.get(t) != PASSED),
                       stderr_tail=tail, detail="a judged test was skipped")
    if check.state == "fired":  # every judged test passed, and a canary was not reported as drawn
        return verdict(False, "tampering", stderr_tail=tail, detail=check.note)
    if run.exit_code != check.exit_code:  # 1 when a canary failed as drawn
        return verdict(False, "crashed", stderr_tail=tail, detail=f"pytest exit code {run.exit_code}")
    refused = refusal_reasons(sample.original_code, plan.completed, verdict(True, "passed").suspicious) \
        if config.strict else ()
    if refused:  # strict.py: the tests passed, by a capability neither the visible file nor the ground truth uses
        return verdict(False, "refused", refused=refused, detail="the tests passed, but the completion uses what "
                       f"neither the visible file nor the ground truth uses: {', '.join(refused)} (--lenient: tests alone)")
    return verdict(True, "passed")


def _origin(budget: Budget) -> str:
    if budget.origin == "measured":
        return f"from the build's measurements, x{budget.scale:g} for this machine"
    return "estimated from the baseline"


def _said(messages: dict[str, str], tests: tuple[str, ...]) -> str:
    """"; <first test>: <its failure message>" for a verdict's detail (what a person reads first)."""
    first = next((t for t in tests if messages.get(t)), None)
    return f"; {first}: {messages[first]}" if first else ""
