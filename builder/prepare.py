"""Prepare one fetched repository for sampling: its environment, where its tests are, the settings
of its own that conflict with our runs, the proof that the tests import the tree being judged, the
baseline, and (on demand) per-test coverage.  Shared by the benchmark build (`build.py`) and the
official-release importer (`official.py`)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from execrepobench_metric.isolation import Isolation
from execrepobench_metric.pytest_run import run_pytest

from .baseline import Baseline, BaselineError, invocation, run_baseline, top_level_modules
from .envs import Environment, ensure_env, make_spec
from .manifest import RepoSpec
from .masking import candidate_files
from .selection import CoverageMap
from .sources import FetchedSource
from .testconfig import neutralise
from .testlayout import find_tests


@dataclass(frozen=True)
class Prepared:
    fetched: FetchedSource
    env: Environment
    baseline: Baseline
    isolation: Isolation
    spec: RepoSpec  # as run: the tests found and the overriding pytest arguments filled in
    report: dict = field(default_factory=dict)  # env_key, environment, test_layout, test_config, baseline, ...
    timings: dict = field(default_factory=dict)  # env_s, baseline_s

    def manifest_entry(self) -> dict:
        """The manifest entry that reproduces this run (pinned source, the test paths found)."""
        s = self.spec
        source, _, sha = s.source.partition("#")  # path: sources stay as the manifest named them
        entry = {"source": source, "name": s.name, "test_paths": list(s.test_paths),
                 "pytest_args": list(s.pytest_args), "exclude_tests": list(s.exclude_tests),
                 "extra_test_requires": list(s.extra_test_requires), "env": dict(s.env)}
        if self.fetched.pinned.startswith("pypi:") and "#sha256=" in self.fetched.pinned:
            entry["source"] = self.fetched.pinned.split("#sha256=")[0]
            entry["sha256"] = self.fetched.pinned.split("#sha256=")[1]
        return {k: v for k, v in entry.items() if v or k in ("source", "name")}


def prepare(spec: RepoSpec, fetched: FetchedSource, python: str | None, *, runs: int, timeout_s: float,
            isolation: Isolation, skip_modules: tuple[str, ...] = ()) -> Prepared:
    """Environment + test layout + conflicting settings + import check + baseline."""
    t0 = time.monotonic()
    env = ensure_env(make_spec(spec.name, fetched.source_hash, fetched.root, spec.python or python,
                               spec.extra_test_requires))
    env_s = time.monotonic() - t0
    layout = find_tests(fetched.root, tuple(spec.test_paths), repo=spec.name)
    overrides = neutralise(fetched.root, tuple(spec.pytest_args), layout.paths, env.has)
    run_spec = replace(spec, test_paths=layout.paths, pytest_args=(*spec.pytest_args, *overrides.pytest_args))
    sources = candidate_files(fetched.root, exclude=layout.paths)
    modules = [m for m in top_level_modules(sources) if m not in skip_modules]
    baseline = run_baseline(spec.name, env, fetched.root, run_spec, modules, runs=runs, timeout_s=timeout_s,
                            isolation=isolation)
    report = {"env_key": env.key, "environment": {"python": env.python, "freeze": list(env.freeze)},
              "isolation": str(isolation), "test_layout": layout.report(), "test_config": overrides.report,
              "baseline": baseline.summary()}
    timings = {"env_s": env_s, "baseline_s": time.monotonic() - t0 - env_s}
    return Prepared(fetched, env, baseline, isolation, run_spec, report, timings)


def coverage_map(prepared: Prepared, data_file: Path, timeout_s: float) -> CoverageMap:
    """One baseline run under coverage.py with a context per test -> which tests ran which lines."""
    root = prepared.fetched.root
    inv = replace(invocation(prepared.env, root, prepared.spec, timeout_s), coverage_data=data_file)
    data_file.parent.mkdir(parents=True, exist_ok=True)
    data_file.unlink(missing_ok=True)
    result = run_pytest(inv, isolation=prepared.isolation)
    if result.error or not data_file.exists():
        tail = (result.process.stdout_tail + result.process.stderr_tail).strip().splitlines()[-3:]
        raise BaselineError(f"{prepared.spec.name}: coverage run failed: {result.error or 'no coverage data'}"
                            + (": " + " | ".join(tail) if tail else ""))
    return CoverageMap.from_data_file(data_file, root)
