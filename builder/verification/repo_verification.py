"""One repository's verification: the tests that judge each candidate (`selection.py`), then its candidates
verified (`verify.py`) - level by level until the repository's per-level quotas are kept (`mix.verify_to_quotas`:
the benchmark build), or every one (the official importer) - and the verification part of its report."""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping

from execrepobench_dataset.measurements import Measurements
from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_dataset.schemes import MEASUREMENTS_SCHEME
from execrepobench_metric.execution.surface import Executor, calibration_s, machine

from ..preparation.baseline import Baseline
from ..preparation.coverage import CoverageMap
from ..settings import RepoTask
from .mix import verify_to_quotas
from .selection import ImportGraph, region_lines
from .verify import Outcome, verify_report, verify_samples, with_selection

CANDIDATES_PER_ROUND = 16  # candidates verified per round of verify_to_quotas (at least 2 per parallel run)


@dataclass(frozen=True)
class Verified:
    """A repository's verification: the kept samples (in candidate order), every outcome, the report's part
    and what the kept samples' ground-truth runs measured on this machine (None when nothing was kept)."""

    kept: list[Sample]
    outcomes: list[Outcome]
    report: dict
    measurements: Measurements | None


def selector(baseline: Baseline, cov: CoverageMap | None, pool: dict[str, str],
             floor: Mapping[str, str]) -> Callable[[list[Sample]], list[Sample]]:
    """A function that gives candidates their judged tests (the import graph over `pool` is built once)."""
    graph = ImportGraph(pool)
    return lambda candidates: with_selection(candidates, cov, graph, baseline.passing, floor)


def verify_repo(selected: list[Sample], baseline: Baseline, cov: CoverageMap, task: RepoTask,
                quotas: Mapping[str, int] | None = None,
                more: Callable[[dict[str, int], int], list[Sample]] | None = None,
                executor: Executor | None = None, record: RepoRecord | None = None) -> Verified:
    """Verify candidates that carry their judged tests: with `quotas`, level by level until the repository's
    per-level quotas (the paper's mix, builder/verification/mix.py) are kept, `more(needs, round)` giving
    extra candidates (with their tests) for a level that runs out; without, every candidate.  Verification
    runs on `executor` (default: local threads); `record` lets its remote nodes make the environment."""
    settings, name = task.settings, task.spec.name
    estimate = baseline.estimate_s if settings.null_budgets else None

    def verify(batch: list[Sample]) -> list[Outcome]:
        return verify_samples(batch, task.judge, settings, label=f"verify {name}", executor=executor, record=record,
                              estimate=estimate)

    if quotas is None:
        outcomes, mix_report = verify(selected), {}
        kept = [o.sample for o in outcomes if o.kept]
    else:
        # large batches: candidates of one masked file share their ground-truth runs (ground_truth.py)
        parallel = executor.parallelism if executor else settings.workers
        mixed = verify_to_quotas(selected, quotas, verify, batch=max(CANDIDATES_PER_ROUND, 2 * parallel), more=more)
        outcomes, kept, mix_report = mixed.outcomes, mixed.kept, mixed.report
    suite_s = statistics.median(baseline.durations_s) if baseline.durations_s else 0.0
    report = {**verify_report(outcomes, kept, len(baseline.passing), suite_s), **mix_report,
              "outcomes_by_coverage": outcomes_by_coverage(outcomes, cov)}
    return Verified(kept, outcomes, report, measurements_of(name, kept, outcomes))


def measurements_of(name: str, kept: list[Sample], outcomes: list) -> Measurements | None:
    """The repository's measurements: what the kept samples' ground-truth runs measured, on this machine."""
    if not kept:
        return None
    ids = {s.sample_id for s in kept}
    mine = [o for o in outcomes if o.sample.sample_id in ids and o.timing is not None]
    tests: dict[str, float] = {}
    for o in mine:
        for test, seconds in o.test_s:
            tests[test] = max(seconds, tests.get(test, 0.0))
    return Measurements(name, kept[0].env_key, MEASUREMENTS_SCHEME, machine(), calibration_s(),
                        {o.sample.sample_id: o.timing for o in mine}, tests)


def outcomes_by_coverage(outcomes: list, cov: CoverageMap) -> dict[str, int]:
    """Verification outcomes counted by whether a test ran the masked lines ("tested"), only the
    import did ("import"), or nothing ran them ("unrun"): "tested/kept", "unrun/null_passed", ..."""
    counts: Counter = Counter()
    for o in outcomes:
        s = o.sample
        tests, at_import, hit = cov.tests_for(s.file_name, *region_lines(s.prefix_code, s.middle_code))
        kind = "tested" if tests else "import" if at_import else "unrun" if not hit else "other"
        counts[f"{kind}/{o.reason}"] += 1
    return dict(sorted(counts.items()))
