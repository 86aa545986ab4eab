"""Prepare one fetched repository for sampling: its environment, the proof that the tests import the
tree being judged, the baseline, and (on demand) per-test coverage.  Shared by the benchmark build
(`build.py`) and the official-release importer (`official.py`)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.environments import Environment, ensure_environment
from execrepobench_metric.pytest_run import run_pytest
from execrepobench_metric.sandbox import STRONG, strong_available

from .baseline import Baseline, BaselineError, invocation, run_baseline, top_level_modules
from .lock import resolve_lock
from .manifest import RepoSpec
from .masking import candidate_files
from .records import draft_record, final_record
from .selection import CoverageMap
from .sources import FetchedSource


@dataclass(frozen=True)
class Prepared:
    fetched: FetchedSource
    env: Environment
    baseline: Baseline
    sandbox: str | None  # "bwrap", or None when bubblewrap is unavailable (runs on the host)
    record: RepoRecord  # what is published for this repository (repositories.jsonl)


def baseline_sandbox() -> str | None:
    return STRONG if strong_available() is None else None


def python_version(spec: RepoSpec, python: str | None) -> str:
    return spec.python or python or f"{sys.version_info.major}.{sys.version_info.minor}"


def prepare(spec: RepoSpec, fetched: FetchedSource, python: str | None, *, runs: int, timeout_s: float,
            report: dict, timings: dict, skip_modules: tuple[str, ...] = (), samples_per_repo: int = 0) -> Prepared:
    """Lock + environment (made from the lock) + import check + baseline; fills `report` and `timings`
    (env_s, baseline_s)."""
    t0 = time.monotonic()
    version = python_version(spec, python)
    lock = resolve_lock(spec.name, fetched.source_hash, fetched.root, version, spec.extra_test_requires)
    draft = draft_record(spec, fetched, version, lock, samples_per_repo)
    env = ensure_environment(draft)
    report["env_key"] = env.key
    report["environment"] = {"python": version, "lock_lines": len(lock), "freeze": list(env.freeze)}
    timings["env_s"] = time.monotonic() - t0
    modules = [m for m in top_level_modules(candidate_files(fetched.root)) if m not in skip_modules]
    sandbox = baseline_sandbox()
    report["baseline_sandbox"] = sandbox or "host (bubblewrap unavailable)"
    baseline = run_baseline(spec.name, env, fetched.root, spec, modules, runs=runs, timeout_s=timeout_s,
                            sandbox=sandbox)
    report["baseline"] = baseline.summary()
    timings["baseline_s"] = time.monotonic() - t0 - timings["env_s"]
    return Prepared(fetched, env, baseline, sandbox, final_record(draft, baseline.test_command, baseline.excluded))


def coverage_map(prepared: Prepared, spec: RepoSpec, data_file: Path, timeout_s: float) -> CoverageMap:
    """One baseline run under coverage.py with a context per test -> which tests ran which lines."""
    root = prepared.fetched.root
    inv = replace(invocation(prepared.env, root, spec, timeout_s), coverage_data=data_file)
    data_file.parent.mkdir(parents=True, exist_ok=True)
    result = run_pytest(inv, sandbox=prepared.sandbox)
    if result.error or not data_file.exists():
        raise BaselineError(f"{spec.name}: coverage run failed: {result.error or 'no coverage data'}")
    return CoverageMap.from_data_file(data_file, root)
