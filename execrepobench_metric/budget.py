"""How long a judged run may take: each sample's time budget, from its own ground-truth runs.

Verification measures what the ground truth's judged run costs (`estimate_s`: the run's fixed part -
sandbox, interpreter, pytest, collection - plus the judged tests' own junit times) and stores
`Sample.time_budget_s = max(BUDGET_FLOOR_S, BUDGET_FACTOR x estimate)`.  The judge applies it as CPU
time, not wall time: every process of the run gets RLIMIT_CPU = the budget (SIGXCPU at the budget,
SIGKILL a few seconds later), so a completion that loops forever is stopped after the budget's CPU
seconds however loaded the machine is, and a correct but slower completion is not failed because
other jobs took the CPU.  A completion that hangs without using the CPU (a sleep, a lock) is stopped
by the wall-clock backstop, max(WALL_FLOOR_S, WALL_FACTOR x budget).  An explicit timeout (`timeout=`
of `compute`, `--timeout`) replaces both: that many wall-clock seconds, CPU limited as always.  A
sample without a budget (made before budgets existed: 0) gets DEFAULT_TIMEOUT_S of wall time.

Inside the run, each phase has a budget of its own (`Sample.phase_budget_s = max(PHASE_FLOOR_S,
PHASE_FACTOR x the longer of the ground truth's fixed part and the slowest test of its runs)`): collection,
then each test (setup, call, teardown), may use that many CPU seconds of the pytest process (our pytest
plugin arms ITIMER_PROF; at the limit the phase fails with `PhaseBudgetExceeded`, a BaseException that
`except Exception` does not swallow).  A completion that loops in the first test that calls it is
stopped after that phase's budget, not after the whole run's: for a sample whose judged run is most of
its suite, seconds instead of a minute.  An explicit timeout replaces it too.
"""
from __future__ import annotations

import math
import signal
from dataclasses import replace

from .limits import Limits

BUDGET_FLOOR_S = 8.0  # CPU seconds: pytest's start-up alone can take a few on a slow machine
BUDGET_FACTOR = 5.0  # a correct completion may be this much slower than the ground truth
PHASE_FLOOR_S = 5.0  # CPU seconds: collection or one test
PHASE_FACTOR = 5.0
PHASE_ENV = "EXECREPOBENCH_PHASE_CPU_S"  # how the judge tells our pytest plugin
PHASE_MARK = "PhaseBudgetExceeded"  # the exception's name, in the failing phase's junit message
WALL_FLOOR_S = 60.0
WALL_FACTOR = 10.0
DEFAULT_TIMEOUT_S = 300.0
# How a run stopped by its CPU budget ends: SIGXCPU, seen directly or as the sandbox's exit status 128 + n.
_XCPU = int(signal.SIGXCPU)
CPU_BUDGET_EXIT_CODES = (-_XCPU, 128 + _XCPU)


def time_budget(estimate_s: float) -> float:
    """The budget (CPU seconds) for a run whose ground truth was measured at `estimate_s` seconds."""
    return float(math.ceil(max(BUDGET_FLOOR_S, BUDGET_FACTOR * max(0.0, estimate_s)) * 10) / 10)


def phase_budget(fixed_s: float, slowest_test_s: float) -> float:
    """The CPU seconds for collection or one test, from the ground truth's fixed part (start-up,
    collection, report) and the slowest test of its runs (junit seconds)."""
    return float(math.ceil(max(PHASE_FLOOR_S, PHASE_FACTOR * max(0.0, fixed_s, slowest_test_s)) * 10) / 10)


def phase_env(phase_budget_s: float, timeout_s: float | None) -> dict[str, str]:
    """The variable that arms the plugin's per-phase limit in a judged run (none with an explicit timeout)."""
    return {PHASE_ENV: f"{phase_budget_s:g}"} if timeout_s is None and phase_budget_s > 0 else {}


def run_limits(budget_s: float, timeout_s: float | None, limits: Limits) -> tuple[float, Limits]:
    """(wall-clock seconds, limits) for one judged run of a sample with this budget."""
    if timeout_s is not None:
        return float(timeout_s), limits
    if budget_s <= 0:
        return DEFAULT_TIMEOUT_S, limits
    cpu = max(1, math.ceil(budget_s))
    return max(WALL_FLOOR_S, WALL_FACTOR * budget_s), replace(limits, cpu_seconds=min(cpu, limits.cpu_seconds))


def out_of_budget(returncode: int | None, budget_applied: bool) -> bool:
    """The run was stopped because it used up its CPU budget."""
    return budget_applied and returncode in CPU_BUDGET_EXIT_CODES
