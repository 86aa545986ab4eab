"""The benchmark build: the driver plans one job per repository of a manifest (`repo_build.py`: its task with the
build's settings, its candidates masked from its sources), runs them here (threads) or on a Ray cluster (one task
per repository: `cluster.py`), collects their results and writes the build's files.

Each repository's result is written under OUT/repos/NAME/ as soon as it is done (samples first,
report last), keyed by a hash of everything that defines it, so an interrupted or repeated build
reuses finished repositories and retries failed ones.  One repository's failure - any exception, at
any phase - is a report entry (`status: error`, the phase, the reason, the traceback when the error
was unexpected), never the end of the build.  Only verified samples are ever written: a repository
that fails or ends empty contributes no sample to OUT/repos/NAME/samples.jsonl or OUT/samples.jsonl.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Mapping

from tqdm import tqdm

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.measurements import MEASUREMENTS_FILE, write_measurements
from execrepobench_dataset.record import Sample, write_jsonl
from execrepobench_dataset.repo_record import write_repo_records
from execrepobench_dataset.schemes import BUILD_SCHEMES
from execrepobench_dataset.stats import compute_statistics
from execrepobench_dataset.version import __version__
from execrepobench_metric.execution.surface import (
    ExecutorConfig, Isolation, decide_isolation, open_executor, require_executor)

from .repo_build import MaskedCandidates, RepoBuild, RepoJob, reuse, run_job, write_result
from .report import summarize, write_report
from .sampling.masking import MaskConfig
from .sampling.parsed_files import Region
from .sampling.repo_files import write_atomic
from .settings import BuildSettings, RepoTask
from .sources.manifest import Manifest, RepoSpec, with_resolution_date
from .throughput import Throughput


@dataclass(frozen=True, kw_only=True)
class BuildConfig(BuildSettings):
    """A build: what to build and where (below), with its settings - the knobs, declared once in
    `BuildSettings`, which every repository's task carries (`knobs()`)."""

    manifest: Manifest
    out: Path
    only: tuple[str, ...] = ()  # repository names; empty = all
    mask: MaskConfig = field(default_factory=MaskConfig)
    repo_workers: int = field(default_factory=lambda: os.cpu_count() or 1)  # repositories built at a time (local)
    # where the repositories run: `local` (threads of this machine) or `ray` (one task per repository on a cluster)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    # live snapshots, per repository name: where masks may lie (its new code) and fields every sample records
    regions: Mapping[str, Region] = field(default_factory=dict)
    sample_fields: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def _inputs_hash(spec: RepoSpec, config: BuildConfig, mask: MaskConfig, isolation: Isolation) -> str:
    mask_fields = {f.name: getattr(mask, f.name) for f in fields(mask)}
    data = {"spec": asdict(spec), "seed": config.manifest.seed, "mask": mask_fields, "isolation": str(isolation),
            "baseline_runs": config.baseline_runs, "builder": __version__,
            "oversample": config.oversample, "gt_runs": config.gt_runs, "selection_floor": dict(config.selection_floor),
            "mutants": [config.mutants, config.min_mutant_kill], "context_tests": config.context_tests,
            **BUILD_SCHEMES}
    if spec.name in config.regions or spec.name in config.sample_fields:  # only live builds: other hashes unchanged
        data.update(region=getattr(config.regions.get(spec.name), "digest", None),
                    sample_fields=dict(config.sample_fields.get(spec.name, {})))
    encode = lambda o: dict(o) if isinstance(o, Mapping) else str(o)  # noqa: E731
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=encode).encode()).hexdigest()[:20]


def plan_job(spec: RepoSpec, config: BuildConfig, isolation: Isolation) -> RepoJob:
    """The driver's plan of one repository: its task (the build's settings, made once) and candidate step."""
    mask = replace(config.mask, samples_per_repo=spec.samples_per_repo or config.manifest.samples_per_repo)
    task = RepoTask(spec, config.knobs(), isolation, config.manifest.python, mask.samples_per_repo)
    step = MaskedCandidates(spec, config.manifest.seed, mask, config.oversample, config.context_tests,
                            config.regions.get(spec.name), config.sample_fields.get(spec.name))
    return RepoJob(task, step, _inputs_hash(spec, config, mask, isolation))


def _selected(config: BuildConfig) -> list[RepoSpec]:
    repos = list(config.manifest.repos)
    if config.only:
        unknown = sorted(set(config.only) - {r.name for r in repos})
        if unknown:
            raise UsageError(f"--repo {', '.join(unknown)}: not in manifest {config.manifest.path or '<inline>'} "
                             f"(it has: {', '.join(r.name for r in repos)})")
        repos = [r for r in repos if r.name in config.only]
    return repos


def _run_local(jobs: list[RepoJob], config: BuildConfig) -> Iterator[tuple[RepoJob, RepoBuild]]:
    """`run_job` of each job, `config.repo_workers` at a time (the machine's cores stay busy while one
    repository waits on the network or on a single long test run), verification on one shared local pool."""
    with open_executor(config.executor, config.workers) as executor, \
            ThreadPoolExecutor(max_workers=max(1, config.repo_workers)) as pool:
        running = {pool.submit(run_job, job, config.out / "repos" / job.name, executor): job for job in jobs}
        for future in as_completed(running):
            yield running[future], future.result()


def _run_jobs(jobs: list[RepoJob], config: BuildConfig) -> Iterator[tuple[RepoJob, RepoBuild]]:
    """Each job's result as it lands: here (threads) or one Ray task per repository (`cluster.py`)."""
    if config.executor.name == "ray":
        require_executor(config.executor)
        from .cluster import run_on_cluster

        return run_on_cluster(jobs, config.executor)
    return _run_local(jobs, config)


def _build_repos(specs: list[RepoSpec], config: BuildConfig, isolation: Isolation) -> tuple[list[RepoBuild], dict]:
    """Every repository's result in manifest order - a finished one read back from OUT/repos/NAME, the others
    run and written there as each lands (the journal an interrupted build resumes from) - and the
    throughput per node."""
    jobs = [plan_job(spec, config, isolation) for spec in specs]
    done = {job.name: old for job in jobs if (old := reuse(job, config.out / "repos" / job.name)) is not None}
    bar = tqdm(total=len(jobs), initial=len(done), desc="build", unit="repo", disable=not config.progress)
    meter = Throughput()
    for job, result in _run_jobs([job for job in jobs if job.name not in done], config):
        write_result(result, config.out / "repos" / job.name)
        done[job.name] = result
        report = result.report
        meter.add(report)
        if report["status"] != "ok":
            where = f" at {report['phase']}" if report.get("phase") else ""
            tqdm.write(f"[{job.name}] {report['status']}{where}: {report.get('reason', '')}")
        bar.set_postfix_str(f"{job.name}; {meter.line()}")
        bar.update(1)
    bar.close()
    return [done[job.name] for job in jobs], meter.report()


def build(config: BuildConfig) -> dict:
    """Build every selected repository; write OUT/samples.jsonl, OUT/repositories.jsonl (one record per ok
    repository), OUT/measurements.jsonl (what this machine measured: never part of the fingerprint) and
    OUT/build_report.{json,md}."""
    repos = _selected(config)
    today = datetime.now(timezone.utc).date().isoformat()
    manifest, unbound = with_resolution_date(config.manifest, today)
    chosen = {r.name for r in repos}
    unbound = [name for name in unbound if name in chosen]
    if unbound:  # a lock resolved without a date bound would change with the package index
        tqdm.write(f"note: {len(unbound)} repositor{'y' if len(unbound) == 1 else 'ies'} of the manifest name no "
                   f"exclude_newer date; their locks are resolved as of {today} (UTC). To rebuild the same "
                   f'benchmark later, add exclude_newer = "{today}" to the manifest\'s [defaults].')
    config, repos = replace(config, manifest=manifest), [r for r in manifest.repos if r.name in chosen]
    isolation, note = decide_isolation(config.allow_weak_sandbox)
    if note:
        tqdm.write(note)
    config.out.mkdir(parents=True, exist_ok=True)
    samples: list[Sample] = []
    reports, records, measured = [], [], []
    t0 = time.monotonic()
    results, throughput = _build_repos(repos, config, isolation)
    for done in results:
        if done.report["status"] == "ok":  # a repository that failed or ended empty ships nothing
            samples += done.samples
        reports.append(done.report)
        records += [done.record] if done.record else []
        measured += [done.measurements] if done.measurements else []
    tmp = config.out / "samples.jsonl.tmp"
    write_jsonl(samples, tmp)
    fingerprint = hashlib.sha256(tmp.read_bytes()).hexdigest()
    os.replace(tmp, config.out / "samples.jsonl")
    write_repo_records(records, config.out / "repositories.jsonl.tmp")
    os.replace(config.out / "repositories.jsonl.tmp", config.out / "repositories.jsonl")
    write_atomic(config.out / MEASUREMENTS_FILE, lambda p: write_measurements(measured, p))
    summary = summarize(reports, config.manifest, fingerprint, isolation_note=note)
    summary["build_wall_s"] = round(time.monotonic() - t0, 1)
    summary["repo_workers"] = config.repo_workers
    summary["executor"] = {"executor": config.executor.name, **throughput}  # where the repositories ran
    summary["exclude_newer"] = {"pinned_by_build": today if unbound else None, "repos": unbound}
    summary["context_pool"] = "with-tests" if config.context_tests else "paper"  # which files a context may name
    write_report(summary, config.out, compute_statistics(samples, records, summary))
    return summary
