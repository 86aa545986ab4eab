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
from execrepobench_metric.execution.surface import Isolation

from ..sampling.masking import candidate_files
from ..settings import RepoTask
from ..sources.manifest import RepoSpec
from ..sources.sources import FetchedSource
from .baseline import BASELINE_TEST_LIMIT_S, Baseline, BaselineError, CoverageError, run_baseline, top_level_modules
from .heal import MAX_REPAIRS, Repair, repair
from .coverage import CoverageMap
from .inference import infer_test_requirements
from .lock import resolve_lock
from .records import draft_record, final_record
from .testconfig import filter_addopts, neutralise, pytest_config
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
    inferred = None
    if spec.infer_requirements:  # the entry names no test requirements: the one inference (build, live, release)
        inferred = infer_test_requirements(spec.name, fetched.source_hash, fetched.root, version,
                                           tuple(spec.test_paths), spec.exclude_newer)
        spec = replace(spec, extra_test_requires=inferred.requires)
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
    baseline, run_spec, repairs = _healed_baseline(env, fetched.root, run_spec, modules, task,
                                                   coverage_data=coverage_data)
    if repairs:
        draft = draft_record(run_spec, fetched, version, lock, samples_per_repo)
    coverage = CoverageMap.from_data_file(coverage_data, fetched.root) if coverage_data is not None else None
    # the editable install's line names this machine's cache: the report names the pinned source instead
    freeze = [f"-e {draft.repo_source}" if line.startswith("-e ") else line for line in env.freeze]
    requirements = inferred.report() if inferred else {"source": "manifest", "added": list(spec.extra_test_requires)}
    test_config = {**overrides.report, **({"repairs": [r.to_dict() for r in repairs]} if repairs else {})}
    report = {"env_key": env.key, "environment": {"python": version, "lock_lines": len(lock), "freeze": freeze},
              "requirements": requirements,
              "isolation": str(isolation), "test_layout": layout.report(), "test_config": test_config,
              "baseline": baseline.summary(), "manifest_entry": draft.manifest_entry}
    parts = baseline.timings
    timings = {"env_s": env_s, "baseline_s": parts.get("import_check_s", 0) + parts.get("baseline_runs_s", 0),
               "collect_checks_s": parts.get("collect_checks_s", 0)}
    return Prepared(fetched, env, baseline, isolation, run_spec,
                    final_record(draft, baseline.test_command, baseline.excluded), report, timings, coverage)



def _healed_baseline(env: Environment, root: Path, run_spec: RepoSpec, modules: list[str], task: RepoTask,
                     coverage_data: Path | None) -> tuple[Baseline, RepoSpec, list[Repair]]:
    """The baseline, after the repairs pytest's output calls for (`heal.py`), one at a time: (baseline, the
    spec as run, the repairs made).  Still failing: the last error, naming every repair tried."""
    found = pytest_config(root, tuple(run_spec.test_paths))
    config_addopts = filter_addopts(found[1])[0] if found else []
    repairs: list[Repair] = []
    while True:
        try:
            return (run_baseline(env, root, run_spec, modules, task, coverage_data=coverage_data,
                                 test_limit_s=BASELINE_TEST_LIMIT_S),
                    run_spec, repairs)
        except CoverageError:
            raise
        except BaselineError as exc:
            fix = repair(run_spec, root, exc.output, config_addopts) if len(repairs) < MAX_REPAIRS else None
            if fix is None:
                tried = "; ".join(f"{r.kind} {r.detail}" for r in repairs) or "none applies"
                raise BaselineError(f"{exc} [repairs tried: {tried}]", exc.output) from None
            run_spec, made = fix
            repairs.append(made)
