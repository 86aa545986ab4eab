"""Helpers shared by the benchmark scripts."""
from __future__ import annotations

import multiprocessing
import os
import sys
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

from execrepobench_dataset.load import open_dataset
from execrepobench_dataset.record import Sample, read_jsonl
from execrepobench_metric.environments.measured import measurements_for
from execrepobench_metric.execution.budget import Budget, budgets_for, describe


def verified_samples(path: Path, limit: int) -> list[Sample]:
    """Up to `limit` samples that carry judged tests, taken round-robin over repositories."""
    by_repo: dict[str, list[Sample]] = defaultdict(list)
    for s in read_jsonl(path):
        if s.judged_tests:
            by_repo[s.repo_name].append(s)
    picked: list[Sample] = []
    while len(picked) < limit and any(by_repo.values()):
        for repo in sorted(by_repo):
            if by_repo[repo] and len(picked) < limit:
                picked.append(by_repo[repo].pop(0))
    return picked


def metric_budgets(path: Path, samples: list[Sample], timeout_s: float | None = None, note: str = ""
                   ) -> dict[str, Budget]:
    """{sample id: budget} as the metric's `compute()` derives them: the build's measurements (shipped beside
    `path`, else this cache's), scaled for this machine; prints the rule in force (and `note`) on stderr."""
    budgets = budgets_for(samples, measurements_for(samples, open_dataset(path).measurements_by_env()))
    print(f"budgets: {describe(samples, budgets, timeout_s)['rule']}{note}", file=sys.stderr, flush=True)
    return budgets


def _spin() -> None:
    # A session of its own: with the kernel's autogroup scheduling (sched_autogroup_enabled) CPU time is
    # shared between sessions first, and the sandbox starts each run in a new session, so spinners left in
    # this one would share a single group's share and hardly load the run at all.
    os.setsid()
    while True:
        pass


@contextmanager
def spinning(load: int):
    """`load` CPU-spinning processes (each in a session of its own) while the block runs."""
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(load)]
    for p in spinners:
        p.start()
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
