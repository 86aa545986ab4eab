"""Prepare one fetched repository for sampling: its environment, where its tests are, the settings
of its own that conflict with our runs, the proof that the tests import the tree being judged, the
baseline, and (on demand) per-test coverage, from one of the baseline runs.  The stage after the source in
every repository's run (pipeline.py), for the benchmark build and the official-release importer alike."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.environments.venvs import Environment, ensure_environment
from execrepobench_metric.execution.sandbox import Isolation

from ..sampling.masking import candidate_files
from ..settings import RepoTask
from ..sources.manifest import RepoSpec
from ..sources.sources import FetchedSource
from .baseline import Baseline, run_baseline, top_level_modules
from .coverage import CoverageMap
from .lock import resolve_lock
from .records import draft_record, final_record
from .testconfig import neutralise
from .testlayout import find_tests


@dataclass(frozen=True)
class Prepared:
    fetched: FetchedSource
    env: Environment
    baseline: Baseline
    isolation: Isolation
    spec: RepoSpec  # as run: the tests found and the overriding pytest arguments filled in
    record: RepoRecord  # what is published for this repository (repositories.jsonl)
    report: dict = field(default_factory=dict)  # env_key, environment, test_layout, test_config, baseline, ...
    timings: dict = field(default_factory=dict)  # env_s, baseline_s (import check + runs), collect_checks_s
    coverage: CoverageMap | None = None  # which tests ran which lines (when asked for)


def python_version(spec: RepoSpec, python: str | None) -> str:
    return spec.python or python or f"{sys.version_info.major}.{sys.version_info.minor}"


def prepare(task: RepoTask, fetched: FetchedSource, coverage_data: Path | None = None) -> Prepared:
    """Lock + environment (made from the lock) + test layout + conflicting settings + import check +
    baseline (with `coverage_data`: one of its runs under coverage.py, with a context per test, writing
    there; `Prepared.coverage` maps it).  The repository record carries the test paths found and the
    overriding arguments."""
    spec, isolation, samples_per_repo = task.spec, task.isolation, task.samples_per_repo
    t0 = time.monotonic()
    version = python_version(spec, task.python)
    lock = resolve_lock(spec.name, fetched.source_hash, fetched.root, version, spec.extra_test_requires,
                        exclude_newer=spec.exclude_newer)
    env = ensure_environment(draft_record(spec, fetched, version, lock, samples_per_repo))
    env_s = time.monotonic() - t0
    layout = find_tests(fetched.root, tuple(spec.test_paths), repo=spec.name)
    overrides = neutralise(fetched.root, tuple(spec.pytest_args), layout.paths, env.has)
    run_spec = replace(spec, test_paths=layout.paths, pytest_args=(*spec.pytest_args, *overrides.pytest_args))
    draft = draft_record(run_spec, fetched, version, lock, samples_per_repo)  # same key: the lock decides it
    sources = candidate_files(fetched.root, exclude=layout.paths)
    modules = [m for m in top_level_modules(sources) if m not in task.settings.skip_modules]
    if coverage_data is not None:
        coverage_data.parent.mkdir(parents=True, exist_ok=True)
        coverage_data.unlink(missing_ok=True)
    baseline = run_baseline(env, fetched.root, run_spec, modules, task, coverage_data=coverage_data)
    coverage = CoverageMap.from_data_file(coverage_data, fetched.root) if coverage_data is not None else None
    # the editable install's line names this machine's cache: the report names the pinned source instead
    freeze = [f"-e {draft.repo_source}" if line.startswith("-e ") else line for line in env.freeze]
    report = {"env_key": env.key, "environment": {"python": version, "lock_lines": len(lock), "freeze": freeze},
              "isolation": str(isolation), "test_layout": layout.report(), "test_config": overrides.report,
              "baseline": baseline.summary(), "manifest_entry": draft.manifest_entry}
    parts = baseline.timings
    timings = {"env_s": env_s, "baseline_s": parts.get("import_check_s", 0) + parts.get("baseline_runs_s", 0),
               "collect_checks_s": parts.get("collect_checks_s", 0)}
    return Prepared(fetched, env, baseline, isolation, run_spec,
                    final_record(draft, baseline.test_command, baseline.excluded), report, timings, coverage)

