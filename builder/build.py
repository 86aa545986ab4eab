"""The benchmark build: every repository of a manifest through the stages (pipeline.py), its candidates masked
from its sources (`MaskedCandidates`), then the build's files.

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
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from tqdm import tqdm

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.measurements import MEASUREMENTS_FILE, Measurements, read_measurements, write_measurements
from execrepobench_dataset.record import Sample, read_jsonl, write_jsonl
from execrepobench_dataset.repo_record import RepoRecord, read_repo_records, write_repo_records
from execrepobench_dataset.schemes import BUILD_SCHEMES
from execrepobench_dataset.stats import compute_statistics
from execrepobench_dataset.version import __version__
from execrepobench_metric.defaults import BASELINE_TIMEOUT_S, VERIFY_TIMEOUT_S
from execrepobench_metric.environments.measured import keep as keep_measurements
from execrepobench_metric.execution.surface import (
    Executor, ExecutorConfig, Isolation, JudgeConfig, decide_isolation, open_executor)

from .pipeline import Candidates, RepoSettings, Scan, run_repository
from .preparation.prepare import Prepared
from .preparation.testlayout import modules_with_tests
from .report import summarize, write_report
from .sampling.candidates import make_samples
from .sampling.masking import MaskConfig, level_mask
from .sampling.parsed_files import Region
from .sampling.repo_files import context_pool, write_atomic
from .sources.manifest import Manifest, RepoSpec, with_resolution_date
from .sources.sources import FetchedSource
from .verification.mix import level_quotas
from .verification.repo_verification import VerifySettings


@dataclass(frozen=True)
class BuildConfig:
    manifest: Manifest
    out: Path
    baseline_runs: int = 3
    baseline_timeout_s: float = BASELINE_TIMEOUT_S
    only: tuple[str, ...] = ()  # repository names; empty = all
    mask: MaskConfig = field(default_factory=MaskConfig)
    progress: bool = True
    allow_weak_sandbox: bool = False  # without bubblewrap: run in the weak mode instead of refusing
    oversample: int = 3  # candidates masked per wanted sample, so verification can drop some
    # ground-truth runs under the judge: the first records what the guard sees, the others enforce it (one
    # more is added when the guard recorded something); each judged test already passed 3 whole-suite
    # baseline runs of the same tree
    gt_runs: int = 1
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)  # runs at a time within a repository
    repo_workers: int = field(default_factory=lambda: os.cpu_count() or 1)  # repositories built at a time
    judge_timeout_s: float = VERIFY_TIMEOUT_S
    # fill type -> narrowest selection rule allowed ("coverage" when absent); widen a kind of sample
    # here if benchmarks/bench_selection.py ever finds its selected verdicts disagreeing with the suite.
    selection_floor: Mapping[str, str] = field(default_factory=dict)
    # rank context from test files too (not the paper's pool: tests spell out the expected values)
    context_tests: bool = False
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # where verification runs (local, ray)
    # mutation adequacy: mutants of each verified ground truth judged, and the share its tests must kill
    mutants: int = 3
    min_mutant_kill: float = 0.5
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


def _mask_config(spec: RepoSpec, config: BuildConfig) -> MaskConfig:
    total = spec.samples_per_repo or config.manifest.samples_per_repo
    return replace(config.mask, samples_per_repo=total)


def repo_settings(config: BuildConfig, isolation: Isolation, folder: Path, mask: MaskConfig) -> RepoSettings:
    """The build's settings of one repository's stages (pipeline.py)."""
    verify = VerifySettings(JudgeConfig(isolation=isolation, timeout_s=config.judge_timeout_s), workers=config.workers,
                            gt_runs=config.gt_runs, progress=config.progress, mutants=config.mutants,
                            min_mutant_kill=config.min_mutant_kill)
    return RepoSettings(isolation, folder, config.manifest.python, config.baseline_runs, config.baseline_timeout_s,
                        baseline_workers=config.workers, samples_per_repo=mask.samples_per_repo,
                        selection_floor=config.selection_floor, verify=verify, stage_lines=not config.progress)


@dataclass(frozen=True)
class MaskedCandidates:
    """The build's candidate step: the repository's sources masked (not its test modules), `oversample`
    candidates per wanted sample, ranked context from the paper's pool (stored in the repository record), kept
    at the paper's level mix, and more candidates of a level that verification leaves short."""

    spec: RepoSpec
    seed: int
    mask: MaskConfig  # samples_per_repo: the samples wanted
    oversample: int
    context_tests: bool
    region: Region | None = None
    fields: Mapping[str, str] | None = None
    phase: str = "masking"

    def scan(self, fetched: FetchedSource) -> Scan:
        return Scan()

    def candidates(self, fetched: FetchedSource, prepared: Prepared, pool: dict[str, str], scan: Scan) -> Candidates:
        context = context_pool(pool, fetched.root, self.context_tests)
        wanted = self.mask.samples_per_repo
        masking_config = replace(self.mask, samples_per_repo=wanted * self.oversample)
        baseline = prepared.baseline
        exclude = modules_with_tests(fetched.root, prepared.spec.test_paths)
        excluded_tests = tuple(sorted(set(baseline.excluded) | set(self.spec.exclude_tests)))

        def candidates_of(mask_config: MaskConfig) -> tuple[list[Sample], dict]:
            return make_samples(self.spec.name, fetched.pinned, fetched.root, prepared.env.key, self.seed,
                                mask_config, test_command=baseline.test_command, excluded_tests=excluded_tests,
                                exclude=exclude, pool=context, region=self.region, fields=self.fields)

        def more(needs: dict[str, int], round_: int) -> list[Sample]:  # extra candidates of short levels
            return [s for level, n in needs.items()
                    for s in candidates_of(level_mask(masking_config, level, max(12, 6 * n) * (round_ + 1)))[0]]

        samples, masking = candidates_of(masking_config)
        return Candidates(samples, masking, level_quotas(wanted, f"{self.seed}:{self.spec.name}"), more, context)


@dataclass(frozen=True)
class RepoBuild:
    """One repository's result: its verified samples, report entry, record and measurements (the last
    two None unless it is ok)."""

    samples: list[Sample]
    report: dict
    record: RepoRecord | None
    measurements: Measurements | None


def build_repo(spec: RepoSpec, config: BuildConfig, isolation: Isolation,
               executor: Executor | None = None) -> RepoBuild:
    """One repository built (see `RepoBuild`) and written under OUT/repos/NAME/, or reused from there when
    its inputs hash is that of a finished build.  Never raises for the repository's sake."""
    folder = config.out / "repos" / spec.name
    mask = _mask_config(spec, config)
    key = _inputs_hash(spec, config, mask, isolation)
    report_path, record_path, measured_path = folder / "report.json", folder / "repository.jsonl", folder / MEASUREMENTS_FILE
    if report_path.is_file() and record_path.is_file() and measured_path.is_file():
        old = json.loads(report_path.read_text(encoding="utf-8"))
        if old.get("inputs_hash") == key and old.get("status") == "ok":
            return RepoBuild(list(read_jsonl(folder / "samples.jsonl")), {**old, "reused": True},
                             next(read_repo_records(record_path)), next(read_measurements(measured_path), None))
    t0 = time.monotonic()
    step = MaskedCandidates(spec, config.manifest.seed, mask, config.oversample, config.context_tests,
                            config.regions.get(spec.name), config.sample_fields.get(spec.name))
    run = run_repository(spec, repo_settings(config, isolation, folder, mask), step, executor)
    kept, status = run.kept, run.status
    parts = {**run.report, **(run.verified.report if run.verified else {})}
    if status == "empty":
        parts["reason"] = "no candidate passed verification" if run.selected else "no mask survived the filters"
    report = {"repo": spec.name, "source": spec.source, "inputs_hash": key, **parts, "status": status,
              "samples": len(kept), "per_fill_type": dict(sorted(Counter(s.fill_type for s in kept).items())),
              "timings": {k: round(v, 2) for k, v in run.timings.items()}, "time_s": round(time.monotonic() - t0, 2)}
    folder.mkdir(parents=True, exist_ok=True)
    record = run.record if status == "ok" else None  # a repository that failed or ended empty ships nothing
    measured = run.verified.measurements if status == "ok" and run.verified else None
    write_atomic(folder / "samples.jsonl", lambda p: write_jsonl(kept, p))
    write_atomic(record_path, lambda p: write_repo_records([record] if record else [], p))
    write_atomic(measured_path, lambda p: write_measurements([measured] if measured else [], p))
    if measured is not None:
        keep_measurements(measured)  # judging these samples by record, without this folder, finds them too
    write_atomic(report_path, lambda p: p.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8"))
    return RepoBuild(kept, report, record, measured)


def _build_repos(repos: list[RepoSpec], config: BuildConfig, isolation: Isolation,
                 executor: Executor | None = None) -> list[RepoBuild]:
    """`build_repo` of each repository, `config.repo_workers` at a time (the machine's cores stay busy
    while one repository waits on the network or on a single long test run); results in `repos` order."""
    bar = tqdm(total=len(repos), desc="build", unit="repo", disable=not config.progress)

    def one(spec: RepoSpec) -> RepoBuild:
        result = build_repo(spec, config, isolation, executor)
        report = result.report
        if report["status"] != "ok":
            where = f" at {report['phase']}" if report.get("phase") else ""
            tqdm.write(f"[{spec.name}] {report['status']}{where}: {report.get('reason', '')}")
        bar.set_postfix_str(spec.name)
        bar.update(1)
        return result

    with ThreadPoolExecutor(max_workers=max(1, config.repo_workers)) as pool:
        out = list(pool.map(one, repos))
    bar.close()
    return out


def build(config: BuildConfig) -> dict:
    """Build every selected repository; write OUT/samples.jsonl, OUT/repositories.jsonl (one record per ok
    repository), OUT/measurements.jsonl (what this machine measured: never part of the fingerprint) and
    OUT/build_report.{json,md}."""
    repos = list(config.manifest.repos)
    if config.only:
        unknown = sorted(set(config.only) - {r.name for r in repos})
        if unknown:
            raise UsageError(f"--repo {', '.join(unknown)}: not in manifest {config.manifest.path or '<inline>'} "
                             f"(it has: {', '.join(r.name for r in repos)})")
        repos = [r for r in repos if r.name in config.only]
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
    with open_executor(config.executor, config.workers) as executor:
        for done in _build_repos(repos, config, isolation, executor):
            if done.report["status"] == "ok":  # a repository that failed or ended empty ships nothing
                samples += done.samples
            reports.append(done.report)
            records += [done.record] if done.record else []
            measured += [done.measurements] if done.measurements else []
        cluster = executor.report()
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
    summary["executor"] = cluster  # where verification ran: samples and environments per node
    summary["exclude_newer"] = {"pinned_by_build": today if unbound else None, "repos": unbound}
    summary["context_pool"] = "with-tests" if config.context_tests else "paper"  # which files a context may name
    write_report(summary, config.out, compute_statistics(samples, records, summary))
    return summary
