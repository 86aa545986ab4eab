"""What the engine offers the rooms above the metric (the builder, the runner): the one module of
`execution/` they import, so what they depend on is declared here, and everything else in `execution/`
can change without them (tests/project/test_engine_surface.py reads their sources and holds them to it).

- judging: `JudgeConfig`, `Verdict`, `judge_safely` (one completed file, never raises), `judge_run`
  (a judgement from a run already made), `null_fill`, `require_opt_in`;
- running a suite the way a judgement does: `run_pytest`, `PytestInvocation`, `PytestRun`,
  `collected_files`, `run_command`, `Limits`, `protected_paths`, junit's `PASSED` / `SKIPPED`;
- where it runs: `Isolation`, `decide_isolation`, `strong_available`; `Executor`, `ExecutorConfig`, `Batch`,
  `split`, `LocalExecutor`, `open_executor`, `require_executor`; on a Ray cluster `RayExecutor` and
  `node_name` (imported on first use: Ray is an extra);
- reporting: `impossible_line` (the `--impossible` summary line);
- how long it may take: `Budget`, `time_budget`, `calibration_s`, `machine`.
"""
from __future__ import annotations

from .budget import Budget, time_budget
from .calibration import calibration_s, machine
from .engine import require_opt_in
from .executors.base import Batch, Executor, ExecutorConfig, split
from .executors.local import LocalExecutor
from .executors.registry import open_executor, require_executor
from .fills import null_fill
from .impossible import impossible_line
from .judge import judge_run, judge_safely
from .junit import FAILED, PASSED, SKIPPED
from .limits import Limits
from .process import run_command
from .pytest_run import PytestInvocation, PytestRun, collected_files, run_pytest
from .run_plan import protected_paths
from .sandbox import Isolation, decide_isolation, strong_available
from .verdict import JudgeConfig, Verdict

__all__ = [
    "Batch", "Budget", "Executor", "ExecutorConfig", "FAILED", "Isolation", "JudgeConfig", "Limits", "LocalExecutor",
    "PASSED", "PytestInvocation", "PytestRun", "SKIPPED", "Verdict", "calibration_s", "collected_files",
    "decide_isolation", "judge_run", "judge_safely", "machine", "null_fill", "open_executor", "protected_paths",
    "require_opt_in", "run_command", "run_pytest", "split", "time_budget",
    "require_executor", "strong_available", "impossible_line", "RayExecutor", "node_name",
]

_RAY = ("RayExecutor", "node_name")  # executors/ray.py imports Ray: loaded when first asked for


def __getattr__(name: str):
    if name in _RAY:
        from .executors import ray as ray_executor

        return getattr(ray_executor, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
