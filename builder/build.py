"""Per repository: source -> environment -> baseline -> masks -> ranked context -> samples.

Each repository's result is written under OUT/repos/NAME/ as soon as it is done (samples first,
report last), keyed by a hash of everything that defines it, so an interrupted or repeated build
reuses finished repositories and retries failed ones.  One repository's failure is a report entry,
never the end of the build.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Mapping

from tqdm import tqdm

from execrepobench_dataset.record import Sample, make_sample_id, read_jsonl, write_jsonl
from execrepobench_dataset.repo_record import RepoRecord, read_repo_records, write_repo_records
from execrepobench_dataset.version import __version__
from execrepobench_metric.judge import JudgeConfig
from execrepobench_metric.sandbox import WEAK

from .baseline import Baseline, BaselineError
from .context import RepoContextIndex
from .lock import EnvError
from .manifest import Manifest, RepoSpec
from .masking import MaskConfig, candidate_files, sample_masks, split
from .prepare import coverage_map, prepare
from .selection import CoverageMap, ImportGraph
from .sources import SourceError, fetch
from .verify import GUARD_RECORDING, verify_report, verify_samples, with_selection

_SKIP_DIRS = {".git", ".hg", ".tox", ".nox", ".venv", "venv", "build", "dist", "node_modules", "__pycache__"}
REPO_ERRORS = (SourceError, EnvError, BaselineError)


@dataclass(frozen=True)
class BuildConfig:
    manifest: Manifest
    out: Path
    baseline_runs: int = 3
    baseline_timeout_s: float = 900.0
    only: tuple[str, ...] = ()  # repository names; empty = all
    mask: MaskConfig = field(default_factory=MaskConfig)
    progress: bool = True
    verify: bool = True  # keep only samples whose ground truth passes and whose null fill fails
    oversample: int = 3  # candidates masked per wanted sample, so verification can drop some
    gt_runs: int = 3
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    judge_timeout_s: float = 300.0
    # fill type -> narrowest selection rule allowed ("coverage" when absent); widen a kind of sample
    # here if benchmarks/bench_selection.py ever finds its selected verdicts disagreeing with the suite.
    selection_floor: Mapping[str, str] = field(default_factory=dict)


def python_files(root: Path) -> list[str]:
    """Every .py file of the repository (the context pool), repo-relative POSIX, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in filenames:
            if name.endswith(".py"):
                found.append((Path(dirpath) / name).relative_to(root).as_posix())
    return sorted(found)


def _inputs_hash(spec: RepoSpec, config: BuildConfig, mask: MaskConfig) -> str:
    mask_fields = {f.name: getattr(mask, f.name) for f in fields(mask)}
    data = {"spec": asdict(spec), "seed": config.manifest.seed, "mask": mask_fields,
            "baseline_runs": config.baseline_runs, "builder": __version__, "verify": config.verify,
            "oversample": config.oversample, "gt_runs": config.gt_runs, "guard": GUARD_RECORDING,
            "selection_floor": dict(config.selection_floor)}
    encode = lambda o: dict(o) if isinstance(o, Mapping) else str(o)  # noqa: E731
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=encode).encode()).hexdigest()[:20]


def _mask_config(spec: RepoSpec, config: BuildConfig) -> MaskConfig:
    total = spec.samples_per_repo or config.manifest.samples_per_repo
    return replace(config.mask, samples_per_repo=total)


def make_samples(name: str, pinned: str, root: Path, env_key: str, seed: int, mask: MaskConfig,
                 baseline: Baseline | None, exclude: tuple[str, ...], report: dict,
                 pool: dict[str, str] | None = None) -> list[Sample]:
    """Mask the repository's sources and attach ranked context; fills the masking part of `report`."""
    sources = candidate_files(root)
    raw = {f: (root / f).read_bytes() for f in sources}
    result = sample_masks(raw, mask, seed, name)
    if pool is None:
        pool = read_pool(root)
    index = RepoContextIndex(pool)  # tokenized once per repository
    samples = []
    for m in result.masks:
        prefix, middle, suffix = split(raw[m.file_name], m)
        fill = m.fill_type
        samples.append(Sample(
            sample_id=make_sample_id(pinned, m.file_name, prefix, middle, suffix, fill),
            repo_name=name, repo_source=pinned, file_name=m.file_name,
            prefix_code=prefix, middle_code=middle, suffix_code=suffix,
            context_code=tuple(index.rank(m.file_name, prefix, suffix)),
            fill_type=fill, node_type=m.node_type,
            middle_start_byte=m.start_byte, middle_end_byte=m.end_byte,
            env_key=env_key, seed=seed, builder_version=__version__,
            test_command=baseline.test_command if baseline else (),
            excluded_tests=tuple(sorted(set(baseline.excluded if baseline else ()) | set(exclude))),
        ))
    report.update({
        "files": len(sources), "context_files": len(pool), "skipped_files": result.skipped_files,
        "candidates": len(result.masks) + sum(result.dropped.values()),
        "dropped": dict(sorted(result.dropped.items())), "shortfall": result.shortfall,
        "samples": len(samples), "per_fill_type": dict(sorted(Counter(s.fill_type for s in samples).items())),
    })
    return samples


def read_pool(root: Path) -> dict[str, str]:
    return {f: (root / f).read_text(encoding="utf-8", errors="replace") for f in python_files(root)}


def verify_repo(samples: list[Sample], wanted: int, baseline: Baseline, cov: CoverageMap, pool: dict[str, str],
                config: BuildConfig, sandbox: str | None, name: str) -> tuple[list[Sample], dict]:
    """Select tests for each candidate, then verify candidates in a fixed, kind-mixed order (by
    content hash) until `wanted` are kept; kept samples return in masking order."""
    selected = with_selection(samples, cov, ImportGraph(pool), baseline.passing, config.selection_floor)
    order = sorted(selected, key=lambda s: s.sample_id)
    jconf = JudgeConfig(sandbox=sandbox or WEAK, timeout_s=config.judge_timeout_s)
    outcomes = []
    batch = max(2, 2 * config.workers)
    for i in range(0, len(order), batch):
        outcomes += verify_samples(order[i:i + batch], jconf, workers=config.workers, gt_runs=config.gt_runs,
                                   progress=config.progress, label=f"verify {name}")
        if sum(o.kept for o in outcomes) >= wanted:
            break
    kept = {o.sample.sample_id: o.sample for o in outcomes if o.kept}  # with what verification recorded
    kept_ids = set(sorted(kept)[:wanted]) if len(kept) > wanted else set(kept)
    final = [kept[s.sample_id] for s in selected if s.sample_id in kept_ids]
    suite_s = statistics.median(baseline.durations_s) if baseline.durations_s else 0.0
    return final, verify_report(outcomes, final, len(baseline.passing), suite_s)


def build_repo(spec: RepoSpec, config: BuildConfig) -> tuple[list[Sample], dict, RepoRecord | None]:
    """(samples, report, repository record) of one repository; the record is None unless it is ok."""
    folder = config.out / "repos" / spec.name
    mask = _mask_config(spec, config)
    key = _inputs_hash(spec, config, mask)
    report_path, record_path = folder / "report.json", folder / "repository.jsonl"
    if report_path.is_file() and record_path.is_file():
        old = json.loads(report_path.read_text(encoding="utf-8"))
        if old.get("inputs_hash") == key and old.get("status") == "ok":
            return (list(read_jsonl(folder / "samples.jsonl")), {**old, "reused": True},
                    next(read_repo_records(record_path)))
    report: dict = {"repo": spec.name, "source": spec.source, "inputs_hash": key, "status": "error"}
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    samples: list[Sample] = []
    record: RepoRecord | None = None
    try:
        fetched = fetch(spec)
        report["pinned"] = fetched.pinned
        timings["fetch_s"] = time.monotonic() - t0
        prepared = prepare(spec, fetched, config.manifest.python, runs=config.baseline_runs,
                           timeout_s=config.baseline_timeout_s, report=report, timings=timings,
                           samples_per_repo=mask.samples_per_repo)
        record = prepared.record
        env, baseline, sandbox = prepared.env, prepared.baseline, prepared.sandbox
        pool = read_pool(fetched.root)
        wanted = mask.samples_per_repo
        masking = replace(mask, samples_per_repo=wanted * (config.oversample if config.verify else 1))
        samples = make_samples(spec.name, fetched.pinned, fetched.root, env.key, config.manifest.seed, masking,
                               baseline, tuple(spec.exclude_tests), report, pool)
        timings["samples_s"] = time.monotonic() - t0 - sum(timings.values())
        if config.verify:
            cov = coverage_map(prepared, spec, folder / "coverage.sqlite", config.baseline_timeout_s)
            timings["coverage_s"] = time.monotonic() - t0 - sum(timings.values())
            samples, vreport = verify_repo(samples, wanted, baseline, cov, pool, config, sandbox, spec.name)
            report.update(vreport)
            report["samples"] = len(samples)
            report["per_fill_type"] = dict(sorted(Counter(s.fill_type for s in samples).items()))
            timings["verify_s"] = time.monotonic() - t0 - sum(timings.values())
        report["status"] = "ok" if samples else "empty"
        if not samples:
            report["reason"] = "no mask survived the filters"
    except REPO_ERRORS as exc:
        report["reason"] = str(exc)
    report["timings"] = {k: round(v, 2) for k, v in timings.items()}
    report["time_s"] = round(time.monotonic() - t0, 2)
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(samples, folder / "samples.jsonl")
    record = record if report["status"] == "ok" else None
    write_repo_records([record] if record else [], folder / "repository.jsonl")
    tmp = report_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, report_path)
    return samples, report, record


def build(config: BuildConfig) -> dict:
    """Build every selected repository; write OUT/samples.jsonl, OUT/repositories.jsonl (one record per ok
    repository) and OUT/build_report.{json,md}."""
    from .report import summarize, write_report

    repos = list(config.manifest.repos)
    if config.only:
        unknown = sorted(set(config.only) - {r.name for r in repos})
        if unknown:
            raise ValueError(f"--repo {', '.join(unknown)}: not in manifest {config.manifest.path or '<inline>'} "
                             f"(it has: {', '.join(r.name for r in repos)})")
        repos = [r for r in repos if r.name in config.only]
    config.out.mkdir(parents=True, exist_ok=True)
    samples: list[Sample] = []
    reports, records = [], []
    bar = tqdm(repos, desc="build", unit="repo", disable=not config.progress)
    for spec in bar:
        bar.set_postfix_str(spec.name)
        repo_samples, report, record = build_repo(spec, config)
        samples += repo_samples
        reports.append(report)
        records += [record] if record else []
        if report["status"] != "ok":
            tqdm.write(f"[{spec.name}] {report['status']}: {report.get('reason', '')}")
    tmp = config.out / "samples.jsonl.tmp"
    write_jsonl(samples, tmp)
    fingerprint = hashlib.sha256(tmp.read_bytes()).hexdigest()
    os.replace(tmp, config.out / "samples.jsonl")
    write_repo_records(records, config.out / "repositories.jsonl.tmp")
    os.replace(config.out / "repositories.jsonl.tmp", config.out / "repositories.jsonl")
    summary = summarize(reports, config.manifest, fingerprint)
    write_report(summary, config.out)
    return summary
