"""One completion of one sample -> a verdict (`verdict.py`), in three steps: `plan_run` (`run_plan.py`:
compile, find the environment, make the invocation), the sandboxed pytest run, and `decide` (`decide.py`) -
the only place where a pass is decided, a pure function of what the plan found and the run left
(tests/metric/test_decide.py covers every branch).

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
import time
import traceback
from dataclasses import replace
from pathlib import Path

from execrepobench_dataset.record import Sample

from . import canaries
from .budget import Budget
from .decide import RunResult, decide
from .pytest_run import PytestRun, run_pytest
from .run_plan import plan_run
from .verdict import JudgeConfig, Verdict

RERUN = "rerun: "  # a verdict's `canaries` when the canaries cut the run short (decide -> judge_run)


def judge(sample: Sample, completion: str, config: JudgeConfig, evidence: Path | None = None,
          budget: Budget | None = None) -> Verdict:
    return judge_run(sample, completion, config, evidence, budget=budget)[0]


def judge_run(sample: Sample, completion: str, config: JudgeConfig, evidence: Path | None = None, *,
              also_masked: tuple[str, ...] = (), budget: Budget | None = None,
              canary_attempt: int = 0) -> tuple[Verdict, PytestRun | None]:
    """The verdict, and the pytest run it was read from (None when nothing ran: a syntax error, a
    missing environment, a known verdict).  `also_masked`: more files the guard watches as the judged
    code (verification's ground-truth runs shared by the candidates of several files).  `budget`: the
    run's CPU budgets (`budget.py`; None: the default timeout, unless `config.timeout_s` is set).
    Three steps: plan the run, run it in the sandbox, `decide` (pure) from what it left.  When the
    canaries say the run must be made again (`canaries.check_canaries`), it is made once more with FRESH
    canaries and without stopping at the first failure - never without canaries (fail closed)."""
    start = time.monotonic()
    plan = plan_run(sample, completion, config, also_masked=also_masked, budget=budget, canary_attempt=canary_attempt)
    run = None if plan.invocation is None else run_pytest(
        plan.invocation, isolation=config.isolation, replacement=(sample.file_name, plan.completed),
        readonly=plan.readonly, limits=plan.limits, evidence=evidence, guard=plan.guard,
        added=(plan.canaries.files if plan.canaries is not None else ()) + plan.variant)
    if run is not None and plan.canaries is not None and evidence is not None:  # after the run: never in its reach
        name = "canaries.json" if canary_attempt == 0 else f"canaries-{canary_attempt}.json"
        (evidence / name).write_text(json.dumps(plan.canaries.to_dict(), indent=1), encoding="utf-8")
    result = RunResult(plan, run, time.monotonic() - start)
    verdict = decide(result, sample, config)
    if verdict.canaries.startswith(RERUN):  # the canaries cut this run short or were not run as drawn
        said = verdict.canaries[len(RERUN):]
        if canaries.FAIL_OPEN:  # test-only: the former design, judged by a run without canaries
            again, rerun = judge_run(sample, completion, replace(config, canaries=False), evidence,
                                     also_masked=also_masked, budget=budget)
            return replace(again, canaries=f"off: {said} (judged by a run without canaries)"), rerun
        if canary_attempt == 0:
            again, rerun = judge_run(sample, completion, replace(config, fail_fast=False), evidence,
                                     also_masked=also_masked, budget=budget, canary_attempt=1)
            joined = ": " if ":" not in again.canaries else " ("  # the state stays first: "held: after a rerun ..."
            label = f"{again.canaries}{joined}after a rerun with fresh canaries ({said})" + (")" if joined == " (" else "")
            return replace(again, canaries=label), rerun
        return replace(verdict, reason="error", passed=False,
                       detail=f"the canary tests cut the run short twice: {said}"), result.read()
    return verdict, result.read()


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
