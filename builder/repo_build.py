"""One repository of a benchmark build as a unit of work (`RepoJob`): planned on the driver (`build.plan_job`:
its `RepoTask`, its candidate step and the inputs hash that names its result), run wherever there is room (`run_job`: a thread
of this machine or a node of a cluster - it writes nothing but its own scratch folder and that machine's
cache), and written by the driver (`write_result`) under OUT/repos/NAME/, where a later build finds it again
(`reuse`: the per-repository journal of finished results).

The candidates are masked from the repository's sources (`MaskedCandidates`), kept at the paper's level mix.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from execrepobench_dataset.measurements import MEASUREMENTS_FILE, Measurements, read_measurements, write_measurements
from execrepobench_dataset.record import Sample, read_jsonl, write_jsonl
from execrepobench_dataset.repo_record import RepoRecord, read_repo_records, write_repo_records
from execrepobench_metric.environments.measured import keep as keep_measurements
from execrepobench_metric.execution.surface import Executor

from .pipeline import Candidates, Scan, run_repository
from .preparation.prepare import Prepared
from .preparation.testlayout import modules_with_tests
from .sampling.candidates import Stamp, make_samples
from .sampling.masking import MaskConfig, level_mask
from .sampling.parsed_files import Region
from .sampling.repo_files import context_pool, write_atomic
from .settings import RepoTask
from .sources.manifest import RepoSpec
from .sources.sources import FetchedSource
from .verification.mix import level_quotas

LOCAL_NODE = "local"


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

        stamp = Stamp(self.spec.name, fetched.pinned, prepared.env.key, self.seed, baseline.test_command,
                      excluded_tests, self.fields)

        def candidates_of(mask_config: MaskConfig) -> tuple[list[Sample], dict]:
            return make_samples(fetched.root, stamp, mask_config, exclude=exclude, pool=context, region=self.region)

        def more(needs: dict[str, int], round_: int) -> list[Sample]:  # extra candidates of short levels
            return [s for level, n in needs.items()
                    for s in candidates_of(level_mask(masking_config, level, max(12, 6 * n) * (round_ + 1)))[0]]

        samples, masking = candidates_of(masking_config)
        return Candidates(samples, masking, level_quotas(wanted, f"{self.seed}:{self.spec.name}"), more, context)


@dataclass(frozen=True)
class RepoJob:
    """What the driver hands over for one repository: everything its run needs, and the name of its result."""

    task: RepoTask
    step: MaskedCandidates
    inputs_hash: str  # of everything that defines the result (a finished result with this hash is reused)

    @property
    def name(self) -> str:
        return self.task.spec.name


@dataclass(frozen=True)
class RepoBuild:
    """One repository's result: its verified samples, report entry, record and measurements (the last
    two None unless it is ok)."""

    samples: list[Sample]
    report: dict
    record: RepoRecord | None
    measurements: Measurements | None


def run_job(job: RepoJob, workdir: Path, executor: Executor | None = None, node: str = LOCAL_NODE) -> RepoBuild:
    """The repository built (see `RepoBuild`), the baseline's coverage data under `workdir`, verification on
    `executor` (default: local threads); `node` names where it ran in its report.  Never raises for the
    repository's sake, and writes nothing the driver reads."""
    spec = job.task.spec
    t0 = time.monotonic()
    run = run_repository(job.task, job.step, workdir, executor)
    kept, status = run.kept, run.status
    parts = {**run.report, **(run.verified.report if run.verified else {})}
    if status == "empty":
        parts["reason"] = "no candidate passed verification" if run.selected else "no mask survived the filters"
    if status == "error" and node != LOCAL_NODE:
        parts["reason"] = f"node {node}: {parts.get('reason', '')}"
    report = {"repo": spec.name, "source": spec.source, "inputs_hash": job.inputs_hash, **parts, "status": status,
              "samples": len(kept), "per_fill_type": dict(sorted(Counter(s.fill_type for s in kept).items())),
              "timings": {k: round(v, 2) for k, v in run.timings.items()}, "time_s": round(time.monotonic() - t0, 2),
              "node": node}
    record = run.record if status == "ok" else None  # a repository that failed or ended empty ships nothing
    measured = run.verified.measurements if status == "ok" and run.verified else None
    return RepoBuild(kept, report, record, measured)


def reuse(job: RepoJob, folder: Path) -> RepoBuild | None:
    """The finished result of `job` in `folder` (OUT/repos/NAME), None when there is none with its inputs hash."""
    report_path, record_path, measured_path = folder / "report.json", folder / "repository.jsonl", folder / MEASUREMENTS_FILE
    if not (report_path.is_file() and record_path.is_file() and measured_path.is_file()):
        return None
    old = json.loads(report_path.read_text(encoding="utf-8"))
    if old.get("inputs_hash") != job.inputs_hash or old.get("status") != "ok":
        return None
    return RepoBuild(list(read_jsonl(folder / "samples.jsonl")), {**old, "reused": True},
                     next(read_repo_records(record_path)), next(read_measurements(measured_path), None))


def write_result(result: RepoBuild, folder: Path) -> None:
    """The driver's record of a finished repository in `folder`: samples first, report last (the journal entry
    `reuse` reads); its measurements also go to this machine's cache, where judging by record finds them."""
    folder.mkdir(parents=True, exist_ok=True)
    record, measured = result.record, result.measurements
    write_atomic(folder / "samples.jsonl", lambda p: write_jsonl(result.samples, p))
    write_atomic(folder / "repository.jsonl", lambda p: write_repo_records([record] if record else [], p))
    write_atomic(folder / MEASUREMENTS_FILE, lambda p: write_measurements([measured] if measured else [], p))
    if measured is not None:
        keep_measurements(measured)  # judging these samples by record, without this folder, finds them too
    write_atomic(folder / "report.json",
                 lambda p: p.write_text(json.dumps(result.report, indent=1, sort_keys=True), encoding="utf-8"))
