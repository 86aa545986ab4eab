"""How fast this machine runs Python, so that budgets measured on one machine hold on another.

`calibration_s()` is the CPU seconds (not wall seconds: a loaded machine does not look slower) this
process takes for a fixed pure-Python workload, the fastest of a few tries.  The builder stores it
with its measurements (`execrepobench_dataset.measurements`); a judge divides its own by the recorded
one to scale the budgets it derives (`budget.scale`), never below 1: a faster machine keeps the
recorded budgets, a slower one gets proportionally more.
"""
from __future__ import annotations

import os
import platform
import time
from functools import lru_cache

TRIES = 5


def _workload() -> int:
    # Integer arithmetic, dict and string work, calls: what a test suite's Python mostly does.
    acc, table = 0, {}
    for i in range(60_000):
        acc = (acc * 31 + i) % 1_000_003
        key = f"k{i % 997}"
        table[key] = table.get(key, 0) + (acc & 7)
    return acc + len(table)


@lru_cache(maxsize=1)
def calibration_s() -> float:
    """CPU seconds of the calibration workload on this machine (fastest of TRIES; measured once per process)."""
    best = float("inf")
    for _ in range(TRIES):
        start = time.process_time()
        _workload()
        best = min(best, time.process_time() - start)
    return round(max(best, 1e-4), 5)


@lru_cache(maxsize=1)
def machine() -> str:
    """A description of this machine: processor, cores, Python (data about the machine, never identity)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}; {os.cpu_count()} cores; {platform.system()} {platform.machine()}; Python {platform.python_version()}"
