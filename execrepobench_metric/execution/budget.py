"""How long a judged run may take: budgets derived at judging time from what the build measured.

A sample is content; its ground truth's run times are data about the machine that built it, kept in
the repository's measurements (`execrepobench_dataset.measurements`: per sample the CPU seconds of its
ground truth's run outside its tests and up to the end of collection, per judged test its own CPU
seconds).  The judge derives each sample's `Budget` from them (`measured_budget`), scaled for the
judging machine (`scale`: this machine's calibration time over the building machine's, never below 1):

- the whole run: RLIMIT_CPU on every process of the run = max(BUDGET_FLOOR_S, BUDGET_FACTOR x (fixed
  part + the judged tests' times)) CPU seconds (SIGXCPU at the budget, SIGKILL a few seconds later);
- collection: max(PHASE_FLOOR_S, PHASE_FACTOR x the ground truth's start-up and collection);
- each judged test (setup, call, teardown): max(TEST_FLOOR_S, TEST_FACTOR x its own time).
Our pytest plugin arms ITIMER_PROF for collection and for each test; at the limit the phase fails with
`PhaseBudgetExceeded`, a BaseException that `except Exception` does not swallow.  CPU seconds, not wall
seconds: a completion that loops forever is stopped after its budget however loaded the machine is,
and a correct but slower one is not failed because other jobs took the CPU.  A completion that hangs
without using the CPU (a sleep, a lock) is stopped by the wall-clock backstop, max(WALL_FLOOR_S,
WALL_FACTOR x the run's budget).

An explicit timeout (`timeout=` of `compute`, `--timeout`) replaces all of it: that many wall-clock
seconds, CPU limited as always.  A sample without measurements (none shipped, or not for this sample)
gets DEFAULT_TIMEOUT_S of wall time and no phase budgets, and the evaluation's output says how many
samples were judged so (`budgets` in the result) - never a silent 0-second budget.  Verification's null
fills run with a budget estimated from the baseline's runs (`Budget(origin="estimated")`).
"""
from __future__ import annotations

import math
import signal
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from execrepobench_dataset.measurements import Measurements
from execrepobench_dataset.record import Sample

from .calibration import calibration_s
from execrepobench_metric.defaults import DEFAULT_TIMEOUT_S
from .limits import Limits

BUDGET_FLOOR_S = 8.0  # CPU seconds: pytest's start-up alone can take a few on a slow machine
BUDGET_FACTOR = 5.0  # a correct completion may be this much slower than the ground truth
# Collection and each test get 5x their own measured CPU seconds (a correct completion may be that much
# slower), at least the floor: 2 CPU seconds cover what a phase pays on its own and not in the ground truth's
# run (a test that first imports a heavy module when the one that paid for it is not judged: importing numpy
# or hypothesis is 0.1-0.5 s) and the clock's 10 ms ticks; a slower judging machine scales them (`scale`).
# A never-ending completion costs about the floor: 2 CPU seconds, not the 5 of engine 5.
PHASE_FLOOR_S = 2.0  # CPU seconds: start-up and collection
PHASE_FACTOR = 5.0
TEST_FLOOR_S = 2.0  # CPU seconds: one test (setup, call, teardown)
TEST_FACTOR = 5.0
SCALE_STEP = 0.25  # the machine scale is rounded up to this step (equal budgets, equal result keys)
PHASE_MARK = "PhaseBudgetExceeded"  # the exception's name, in the failing phase's junit message
WALL_FLOOR_S = 60.0
WALL_FACTOR = 10.0
# How a run stopped by its CPU budget ends: SIGXCPU, seen directly or as the sandbox's exit status 128 + n.
_XCPU = int(signal.SIGXCPU)
CPU_BUDGET_EXIT_CODES = (-_XCPU, 128 + _XCPU)


@dataclass(frozen=True)
class Budget:
    """CPU seconds one judged run may use: the whole run (every process), collection, each test."""

    run_s: float
    collect_s: float = 0.0
    tests: tuple[tuple[str, float], ...] = ()  # judged test id -> its CPU seconds
    default_test_s: float = 0.0  # a test of the run without a budget of its own
    origin: str = "measured"  # "measured" (the build's measurements, scaled) or "estimated" (from a baseline)
    scale: float = 1.0  # the judging machine's factor the budgets include

    def phase_budgets(self) -> dict | None:
        """What our pytest plugin arms (None: no per-phase limits)."""
        if not (self.collect_s or self.tests or self.default_test_s):
            return None
        return {"collect": self.collect_s, "tests": dict(self.tests), "default": self.default_test_s}

    def key(self) -> list:
        return [self.run_s, self.collect_s, [list(t) for t in self.tests], self.default_test_s]


def _up(seconds: float) -> float:
    return float(math.ceil(seconds * 10) / 10)


def time_budget(estimate_s: float) -> float:
    """The budget (CPU seconds) for a run whose ground truth was measured at `estimate_s` seconds."""
    return _up(max(BUDGET_FLOOR_S, BUDGET_FACTOR * max(0.0, estimate_s)))


def phase_budget(collect_s: float) -> float:
    """The CPU seconds for start-up and collection, from the ground truth's."""
    return _up(max(PHASE_FLOOR_S, PHASE_FACTOR * max(0.0, collect_s)))


def per_test_budget(test_s: float) -> float:
    """The CPU seconds for one test (setup, call, teardown), from its own in the ground truth's run."""
    return _up(max(TEST_FLOOR_S, TEST_FACTOR * max(0.0, test_s)))


def scale(measured: Measurements) -> float:
    """This machine's factor over the one that measured: its calibration time over the recorded one,
    rounded up to SCALE_STEP, never below 1."""
    ratio = calibration_s() / measured.calibration_s
    return max(1.0, math.ceil(ratio / SCALE_STEP - 1e-9) * SCALE_STEP)


def measured_budget(sample_id: str, judged: Sequence[str], measured: Measurements | None,
                    factor: float | None = None) -> Budget | None:
    """The budget of a judged run of `judged` (a sample's judged tests), from its repository's
    measurements scaled for this machine (`factor`: `scale(measured)` unless given); None when the
    measurements have nothing for this sample."""
    timing = measured.samples.get(sample_id) if measured is not None else None
    if timing is None:
        return None
    k = scale(measured) if factor is None else factor
    own = {t: measured.tests[t] for t in judged if t in measured.tests}
    unknown = max(own.values(), default=timing.fixed_s)  # a judged test without a time of its own
    return Budget(run_s=time_budget(k * (timing.fixed_s + sum(own.values()) + unknown * (len(judged) - len(own)))),
                  collect_s=phase_budget(k * timing.collect_s),
                  tests=tuple((t, per_test_budget(k * s)) for t, s in own.items()),
                  default_test_s=per_test_budget(k * unknown), origin="measured", scale=k)


def budgets_for(samples: Sequence, measurements: Mapping[str, Measurements]) -> dict[str, Budget]:
    """{sample id: budget} for the samples whose repository's measurements (by env key) cover them."""
    out = {}
    for s in samples:
        budget = measured_budget(s.sample_id, s.judged_tests, measurements.get(s.env_key))
        if budget is not None:
            out[s.sample_id] = budget
    return out


def run_limits(budget: Budget | None, timeout_s: float | None, limits: Limits) -> tuple[float, Limits]:
    """(wall-clock seconds, limits) for one judged run with this budget."""
    if timeout_s is not None:
        return float(timeout_s), limits
    if budget is None or budget.run_s <= 0:
        return DEFAULT_TIMEOUT_S, limits
    cpu = max(1, math.ceil(budget.run_s))
    return max(WALL_FLOOR_S, WALL_FACTOR * budget.run_s), replace(limits, cpu_seconds=min(cpu, limits.cpu_seconds))


def out_of_budget(returncode: int | None, budget_applied: bool) -> bool:
    """The run was stopped because it used up its CPU budget."""
    return budget_applied and returncode in CPU_BUDGET_EXIT_CODES


def describe(samples: Sequence[Sample], budgets: Mapping[str, Budget], timeout_s: float | None) -> dict:
    """What the evaluation's runs were limited by, for its output: never a silent default."""
    if timeout_s is not None:
        return {"rule": f"explicit timeout: {timeout_s:g} wall-clock seconds per run", "measured": 0,
                "default_timeout": 0, "explicit_timeout": len(samples)}
    measured = sum(1 for s in samples if s.sample_id in budgets)
    scales = sorted({b.scale for b in budgets.values()})
    rule = (f"CPU budgets from the build's measurements (x{'/'.join(f'{k:g}' for k in scales)} for this machine)"
            if measured else "")
    if measured < len(samples):
        rule = (rule + "; " if rule else "") + (f"{len(samples) - measured} sample(s) without measurements: the "
                                                f"default timeout of {DEFAULT_TIMEOUT_S:g} wall-clock seconds")
    return {"rule": rule, "measured": measured, "default_timeout": len(samples) - measured, "explicit_timeout": 0}
