"""The build's settings, declared once: `BuildSettings` (how every repository's stages run: the knobs) and
`RepoTask` (one repository's unit of work: its manifest entry, the decided sandbox and the settings).

A build makes its settings once - the CLI, `release`, a live snapshot (`BuildConfig`, which adds what to build
and where) or the official importer - and the driver makes one `RepoTask` per repository from them, as
SWE-bench makes one `TestSpec` per instance.  The task is all a repository's run needs (pipeline.py): it is
what the driver sends to a node of a cluster (release/cluster.py), and every stage below reads its knobs from
it instead of taking them one by one.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Mapping

from execrepobench_metric.defaults import BASELINE_TIMEOUT_S, VERIFY_TIMEOUT_S
from execrepobench_metric.execution.surface import Isolation, JudgeConfig

from .sources.manifest import RepoSpec


@dataclass(frozen=True, kw_only=True)
class BuildSettings:
    """How each repository's stages run (the same on every node; none of it is a path or a clock)."""

    baseline_runs: int = 3  # whole-suite baseline runs
    baseline_timeout_s: float = BASELINE_TIMEOUT_S
    baseline_serial: bool = False  # baseline runs one at a time (the official importer), else `workers` at a time
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)  # runs at a time within a repository
    progress: bool = True
    allow_weak_sandbox: bool = False  # without bubblewrap: run in the weak mode instead of refusing
    oversample: int = 3  # candidates masked per wanted sample, so verification can drop some
    # ground-truth runs under the judge: the first records what the guard sees, the others enforce it (one
    # more is added when the guard recorded something); each judged test already passed 3 whole-suite
    # baseline runs of the same tree
    gt_runs: int = 1
    judge_timeout_s: float = VERIFY_TIMEOUT_S
    # fill type -> narrowest selection rule allowed ("coverage" when absent); widen a kind of sample
    # here if benchmarks/bench_selection.py ever finds its selected verdicts disagreeing with the suite.
    selection_floor: Mapping[str, str] = field(default_factory=dict)
    # rank context from test files too (not the paper's pool: tests spell out the expected values)
    context_tests: bool = False
    # mutation adequacy: mutants of each verified ground truth judged, and the share its tests must kill
    mutants: int = 3
    min_mutant_kill: float = 0.5
    verify: bool = True  # False: candidates are kept (with their tests) unverified (import-official --no-verify)
    # a null fill's run bounded by the baseline's estimate for its judged tests; False: the judge's timeout
    null_budgets: bool = True
    skip_modules: tuple[str, ...] = ()  # top-level modules the import check never imports

    def knobs(self) -> BuildSettings:
        """These settings alone (a `BuildConfig` without what to build and where)."""
        return BuildSettings(**{f.name: getattr(self, f.name) for f in fields(BuildSettings)})

    @property
    def baseline_workers(self) -> int:
        return 1 if self.baseline_serial else self.workers


@dataclass(frozen=True)
class RepoTask:
    """One repository's run, as the driver hands it over (to a thread here or a node of a cluster)."""

    spec: RepoSpec  # the manifest entry, its exclude_newer date resolved
    settings: BuildSettings
    isolation: Isolation  # decided once by the driver; a node that cannot give it refuses the task
    python: str | None = None  # the Python X.Y of the run (a repository's own `python` wins)
    samples_per_repo: int = 0  # the samples wanted (recorded in the repository's manifest entry)

    @property
    def judge(self) -> JudgeConfig:
        return JudgeConfig(isolation=self.isolation, timeout_s=self.settings.judge_timeout_s)
