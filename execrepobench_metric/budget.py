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
"""
from __future__ import annotations

import math
import signal
from dataclasses import replace

from .limits import Limits

BUDGET_FLOOR_S = 8.0  # CPU seconds: pytest's start-up alone can take a few on a slow machine
BUDGET_FACTOR = 5.0  # a correct completion may be this much slower than the ground truth
WALL_FLOOR_S = 60.0
WALL_FACTOR = 10.0
DEFAULT_TIMEOUT_S = 300.0
# How a run stopped by its CPU budget ends: SIGXCPU, seen directly or as the sandbox's exit status 128 + n.
_XCPU = int(signal.SIGXCPU)
CPU_BUDGET_EXIT_CODES = (-_XCPU, 128 + _XCPU)


def time_budget(estimate_s: float) -> float:
    """The budget (CPU seconds) for a run whose ground truth was measured at `estimate_s` seconds."""
    return float(math.ceil(max(BUDGET_FLOOR_S, BUDGET_FACTOR * max(0.0, estimate_s)) * 10) / 10)


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
