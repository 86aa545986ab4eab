"""One completion of one sample -> a verdict, in three steps: `plan_run` (compile, find the environment,
make the invocation), the sandboxed pytest run, and `decide` - the only place where a pass is decided, a
pure function of what the plan found and the run left (tests/test_decide.py covers every branch).

A completion passes only if: the completed file compiles; the sandboxed pytest run, under the
in-process guard (`guard.py`, `pytest_plugin/_execrepobench_guard*.py`), streamed an intact evidence
record in which the guard refused nothing the masked file did (beyond what its ground truth does
too), pytest finished its session, and every judged test was collected and reported passed; pytest's
junit XML agrees with that record; neither its time budget nor the timeout ran out; and the run's
canary tests (`canaries.py`: outcomes only this process knows) ended as drawn.  Neither the exit code
nor anything printed decides a pass.

Speed without a weaker verdict: the run stops at the first failing test (`fail_fast`: the verdict is
decided then), the run's CPU time is bounded by the sample's time budget (`budget.py`), and the
ground truth of a verified sample is not run again (`known_verdict`).  The judged tests run in
pytest's own order, the order verification checked: running them in another (the tests most likely
to fail first) made order-dependent suites fail correct completions (arrow's locale tests), so it is
not done.  With `guard="off"` (tests only) the record is pytest's junit XML checked
against our plugin's files, which the code under test can rewrite.
"""
from __future__ import annotations

import json
import os
import time
import traceback
import warnings
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from execrepobench_dataset.record import Sample
from execrepobench_metric.environments.venvs import find_environment

from .budget import PHASE_MARK, Budget, out_of_budget, run_limits
from .canaries import CanaryCheck, CanaryPlan, check_canaries, plan_canaries
from .guard import GUARD_MODES, GuardSetup
from .guard_verdict import guarded_run
from .junit import ERROR, FAILED, PASSED, SKIPPED
from .limits import Limits
from .pytest_run import PytestInvocation, PytestRun, run_pytest, collected_files
from .sandbox import Isolation
from .suspicious import suspicious

# Reasons, most specific first.  "error" is the harness's fault (missing environment, sandbox
# failure, any exception while judging), not the model's; it is counted and reported apart.
REASONS = ("passed", "failed", "syntax_error", "tampering", "timeout", "crashed", "missing_tests",
           "inconsistent_report", "error")
RERUN = "rerun: "  # a verdict's `canaries` when the canaries cut the run short (decide -> judge_run)
CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "conftest.py")
@dataclass(frozen=True)
class Verdict:
    sample_id: str
    passed: bool
    reason: str  # one of REASONS
    failing_tests: tuple[str, ...] = ()
    duration_s: float = 0.0
    stderr_tail: str = ""
    sandbox: str = ""  # the Isolation value the run used
    detail: str = ""
    artifacts: str = ""  # evidence folder of this (sample, completion), relative to the results folder
    guard_events: tuple[str, ...] = ()  # record mode: what the completion did that the guard watches
    # what the completion touches that its ground truth never does (suspicious.py): a flag, not a verdict
    suspicious: tuple[str, ...] = ()
    canaries: str = ""  # the canary check of the run (canaries.py): "held", "off: why", "fired: ..."; "" none

    def to_dict(self) -> dict:
        return {"sample_id": self.sample_id, "passed": self.passed, "reason": self.reason,
                "failing_tests": list(self.failing_tests), "duration_s": round(self.duration_s, 3),
                "stderr_tail": self.stderr_tail, "sandbox": self.sandbox, "detail": self.detail,
                "harness_error": self.reason == "error", "artifacts": self.artifacts,
                "guard_events": list(self.guard_events), "suspicious": list(self.suspicious),
                "canaries": self.canaries}

    @classmethod
    def from_dict(cls, d: dict) -> "Verdict":
        return cls(d["sample_id"], bool(d["passed"]), d["reason"], tuple(d.get("failing_tests", ())),
                   float(d.get("duration_s", 0.0)), d.get("stderr_tail", ""), d.get("sandbox", ""),
                   d.get("detail", ""), d.get("artifacts", ""), tuple(d.get("guard_events", ())),
                   tuple(d.get("suspicious", ())), d.get("canaries", ""))


@dataclass(frozen=True)
class JudgeConfig:
    isolation: Isolation = Isolation.BWRAP  # decided by sandbox.decide_isolation
    timeout_s: float | None = None  # None: each sample's time budget (budget.py); a number: wall seconds
    selection: str = "judged"  # "judged": the sample's judged tests (suite if it has none); "suite"
    limits: Limits = Limits()
    stderr_cap: int = 2000
    # The in-process guard: "enforce" (default: what the completion may not do fails it as tampering,
    # unless the ground truth does it too), "record" (verification: report what the ground truth does),
    # "off" (no guard: only for tests that show an attack is real), "blind" (the evidence stream without
    # refusals or integrity checks: only for tests, the strongest attacker inside the process).
    guard: str = "enforce"
    # Canary tests among the judged ones (canaries.py): the metric plants them in every judged run; the
    # builder's runs (baseline, verification) never do, so what a build makes does not depend on them.
    canaries: bool = False
    fail_fast: bool = True  # stop at the first failing test: the verdict is decided then
    # The ground truth's verdict is known from verification: a completed file byte-identical to the
    # original is not run again.  Off where the point is to run it (verification, prepare's gold check).
    known_verdicts: bool = True

    def __post_init__(self) -> None:
        if self.guard not in GUARD_MODES:
            raise ValueError(f"guard {self.guard!r}: use one of {GUARD_MODES}")


@lru_cache(maxsize=64)
def protected_paths(root: Path, test_paths: tuple[str, ...]) -> tuple[str, ...]:
    """Repo-relative paths kept read-only in the view: test paths, every conftest.py, pytest configs."""
    found = set(test_paths) | {c for c in CONFIG_FILES if (root / c).exists()}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        if "conftest.py" in filenames:
            found.add((Path(dirpath) / "conftest.py").relative_to(root).as_posix())
    return tuple(sorted(found))


def judged_tests(sample: Sample, selection: str) -> tuple[str, ...]:
    return sample.judged_tests if selection == "judged" else ()


def known_verdict(sample: Sample, completed: str, config: JudgeConfig) -> str | None:
    """The detail of a known verdict, when the completion is the ground truth of a verified sample
    (it has its judged tests and the rule that selected them) judged on its own judged tests."""
    if not (config.known_verdicts and config.selection == "judged" and sample.judged_tests
            and sample.selection_rule and completed == sample.original_code):
        return None
    return ("known verdict, not run again: the completed file is byte-identical to the original (the ground "
            "truth), which passed these judged tests in every verification run")


@dataclass(frozen=True)
class RunPlan:
    """What one judgement runs (`plan_run`): the completed file and what was found before anything ran -
    a syntax error, no environment, a known verdict - or the pytest run to make (`invocation` set)."""

    completed: str  # the masked file with the completion in place
    syntax_error: str | None = None  # compile()'s message: the completed file does not compile
    environment_found: bool = True
    known: str | None = None  # the known verdict's detail (`known_verdict`): nothing is run
    invocation: PytestInvocation | None = None  # None: nothing to run
    limits: Limits = Limits()  # the run's resource limits (its CPU budget, when one applies)
    readonly: tuple[str, ...] = ()  # repo-relative paths kept read-only in the run's view
    guard: GuardSetup | None = None  # None: no guard (guard="off")
    budget: Budget | None = None  # the CPU budgets in force (None: a wall-clock timeout)
    canaries: CanaryPlan | None = None  # the canary tests planted in the run (None: none by this configuration)


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


def judge(sample: Sample, completion: str, config: JudgeConfig, evidence: Path | None = None,
          budget: Budget | None = None) -> Verdict:
    return judge_run(sample, completion, config, evidence, budget=budget)[0]


def judge_run(sample: Sample, completion: str, config: JudgeConfig, evidence: Path | None = None, *,
              also_masked: tuple[str, ...] = (), budget: Budget | None = None) -> tuple[Verdict, PytestRun | None]:
    """The verdict, and the pytest run it was read from (None when nothing ran: a syntax error, a
    missing environment, a known verdict).  `also_masked`: more files the guard watches as the judged
    code (verification's ground-truth runs shared by the candidates of several files).  `budget`: the
    run's CPU budgets (`budget.py`; None: the default timeout, unless `config.timeout_s` is set).
    Three steps: plan the run, run it in the sandbox, `decide` (pure) from what it left."""
    start = time.monotonic()
    plan = plan_run(sample, completion, config, also_masked=also_masked, budget=budget)
    run = None if plan.invocation is None else run_pytest(
        plan.invocation, isolation=config.isolation, replacement=(sample.file_name, plan.completed),
        readonly=plan.readonly, limits=plan.limits, evidence=evidence, guard=plan.guard,
        added=plan.canaries.files if plan.canaries is not None else ())
    if run is not None and plan.canaries is not None and evidence is not None:  # after the run: never in its reach
        (evidence / "canaries.json").write_text(json.dumps(plan.canaries.to_dict(), indent=1), encoding="utf-8")
    result = RunResult(plan, run, time.monotonic() - start)
    verdict = decide(result, sample, config)
    if verdict.canaries.startswith(RERUN):  # the canaries cut this run short: judged by a run without them
        again, rerun = judge_run(sample, completion, replace(config, canaries=False), evidence,
                                 also_masked=also_masked, budget=budget)
        return replace(again, canaries=f"off: {verdict.canaries[len(RERUN):]} (judged by a run without canaries)"), \
            rerun
    return verdict, result.read()


def plan_run(sample: Sample, completion: str, config: JudgeConfig, *, also_masked: tuple[str, ...] = (),
             budget: Budget | None = None) -> RunPlan:
    """Compile the completed file, find the environment, check for a known verdict, and make the pytest
    invocation with its limits, read-only paths and guard.  Runs nothing but `compile`."""
    completed = sample.prefix_code + completion + sample.suffix_code
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(completed, sample.file_name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return RunPlan(completed, syntax_error=str(exc)[:300])
    env = find_environment(sample.env_key)
    if env is None:
        return RunPlan(completed, environment_found=False)
    known = known_verdict(sample, completed, config)
    if known is not None:
        return RunPlan(completed, known=known)
    python, root = env.python, env.root
    select = judged_tests(sample, config.selection)
    budget = budget if config.timeout_s is None else None  # an explicit timeout replaces every budget
    wall_s, limits = run_limits(budget, config.timeout_s, config.limits)
    # A selection is exact (our plugin keeps these ids); pytest's --deselect matches node-id prefixes, so
    # deselecting an excluded `test_x` would also drop a judged `test_x_y` (babel, pydash).
    inv = PytestInvocation.from_test_command(
        sample.test_command, python=python, root=root, select=select,
        deselect=() if select else sample.excluded_tests, timeout_s=wall_s,
        max_fail=1 if config.fail_fast else 0)
    # each phase's own CPU budget (collection, each test): measured on the judged tests' run only
    inv = replace(inv, phase_budgets=budget.phase_budgets() if budget is not None and select else None)
    readonly = tuple(p for p in protected_paths(root, inv.test_paths) + collected_files(select)
                     if p != sample.file_name)
    guard = None if config.guard == "off" else GuardSetup(config.guard, sample.file_name, sample.guard_allowed,
                                                          also_masked)
    canaries = plan_canaries(root, select, inv.pytest_args) if config.canaries and select and config.guard != "record" \
        else None
    if canaries is not None and not canaries.off:  # the canaries join the selection (sorted in) and the run's files
        inv = replace(inv, select=tuple(sorted({*select, *canaries.ids})), targets=canaries.targets)
    return RunPlan(completed, invocation=inv, limits=limits, readonly=readonly, guard=guard, budget=budget,
                   canaries=canaries)


def decide(result: RunResult, sample: Sample, config: JudgeConfig) -> Verdict:
    """The verdict: pure (a frozen value in, a verdict out; nothing runs or is read).  The chain, most
    specific first: what the plan found (syntax error, no environment, known verdict); a spent CPU budget;
    what the guard's stream alone decides; a timeout; an unfinished session; a spent phase budget;
    collection errors; failing, missing, inconsistently reported or skipped judged tests; the canaries
    (`canaries.py`: a rewrite they show is `tampering`; when they cut the run short, an `error` whose
    `canaries` starts with RERUN - `judge_run` then judges it by a run without them); the exit code."""
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
    check = check_canaries(plan.canaries, collected=run.collected, outcomes=run.outcomes, cross=run.plugin_outcomes,
                           unmatched=run.unmatched, judged=select)
    if check.state == "rerun":  # the harness's canaries cut the run short: never the completion's verdict
        return verdict(False, "error", stderr_tail=tail, detail=f"the canary tests cut the run short: {check.note}")
    if check.state == "fired" and check.always:  # no honest run reports this
        return verdict(False, "tampering", stderr_tail=tail, detail=check.note)
    broken = tuple(name for name, status in run.unmatched.items() if status in (FAILED, ERROR))
    spent = next((t for t, said in run.messages.items() if PHASE_MARK in said), None)
    if spent is not None:  # collection or a test used up the phase budget (our plugin stopped it)
        return verdict(False, "timeout", failing_tests=(spent,), stderr_tail=tail,
                       detail=f"{spent}: {run.messages[spent]}")
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
    return verdict(True, "passed")


def _origin(budget: Budget) -> str:
    if budget.origin == "measured":
        return f"from the build's measurements, x{budget.scale:g} for this machine"
    return "estimated from the baseline"


def _said(messages: dict[str, str], tests: tuple[str, ...]) -> str:
    """"; <first test>: <its failure message>" for a verdict's detail (what a person reads first)."""
    first = next((t for t in tests if messages.get(t)), None)
    return f"; {first}: {messages[first]}" if first else ""


def judge_safely(sample: Sample, completion: str, config: JudgeConfig, evidence: Path | None = None,
                 budget: Budget | None = None) -> Verdict:
    """`judge`, except that any exception becomes an `error` verdict (the harness's fault, never the
    model's) carrying the exception and its traceback: one judgement never ends an evaluation."""
    start = time.monotonic()
    try:
        return judge(sample, completion, config, evidence, budget)
    except Exception as exc:  # noqa: BLE001 - the boundary of one unit of work
        text = traceback.format_exc()
        return Verdict(sample.sample_id, False, "error", duration_s=time.monotonic() - start,
                       sandbox=str(config.isolation),
                       detail=f"harness error: {type(exc).__name__}: {exc}\n{text[-3000:]}")
