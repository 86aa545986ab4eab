"""One repository's verification in the build: tests selected per candidate, then candidates verified
level by level until the repository's per-level quotas are kept (`mix.verify_to_quotas`), and the
verification part of its report."""
from __future__ import annotations

import statistics
from collections import Counter
from typing import TYPE_CHECKING, Callable

from execrepobench_dataset.measurements import MEASUREMENTS_SCHEME, Measurements
from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.calibration import calibration_s, machine
from execrepobench_metric.executors import Executor
from execrepobench_metric.isolation import Isolation
from execrepobench_metric.judge import JudgeConfig

from ..preparation.baseline import Baseline
from .mix import level_quotas, verify_to_quotas
from .selection import CoverageMap, ImportGraph, region_lines
from .verify import verify_report, verify_samples, with_selection

if TYPE_CHECKING:
    from ..build import BuildConfig

VERIFY_BATCH = 16  # candidates verified per round of verify_to_quotas


def verify_repo(samples: list[Sample], wanted: int, baseline: Baseline, cov: CoverageMap, pool: dict[str, str],
                config: "BuildConfig", isolation: Isolation, name: str,
                more: Callable[[dict[str, int], int], list[Sample]] | None = None, executor: Executor | None = None,
                record: RepoRecord | None = None) -> tuple[list[Sample], dict, Measurements | None]:
    """Select tests for each candidate, then verify candidates level by level until the repository's
    per-level quotas (the paper's mix, builder/verification/mix.py) are kept; `more(needs, round)` masks extra
    candidates for a level that runs out.  Kept samples return in candidate order, with what their ground
    truths' runs measured.  Verification runs
    on `executor` (default: local threads); `record` lets its remote nodes make the environment."""
    graph = ImportGraph(pool)

    def select(candidates: list[Sample]) -> list[Sample]:
        return with_selection(candidates, cov, graph, baseline.passing, config.selection_floor)

    jconf = JudgeConfig(isolation=isolation, timeout_s=config.judge_timeout_s)

    def verify(batch: list[Sample]) -> list:
        return verify_samples(batch, jconf, workers=config.workers, gt_runs=config.gt_runs,
                              progress=config.progress, label=f"verify {name}", executor=executor, record=record,
                              estimate=baseline.estimate_s, mutants=config.mutants,
                              min_killed=config.min_mutant_kill)

    quotas = level_quotas(wanted, f"{config.manifest.seed}:{name}")
    # large batches: candidates of one masked file share their ground-truth runs (ground_truth.py)
    parallel = executor.parallelism if executor else config.workers
    mixed = verify_to_quotas(select(samples), quotas, verify, batch=max(VERIFY_BATCH, 2 * parallel),
                             more=(lambda needs, round_: select(more(needs, round_))) if more else None)
    suite_s = statistics.median(baseline.durations_s) if baseline.durations_s else 0.0
    report = {**verify_report(mixed.outcomes, mixed.kept, len(baseline.passing), suite_s), **mixed.report,
              "outcomes_by_coverage": outcomes_by_coverage(mixed.outcomes, cov)}
    return mixed.kept, report, measurements_of(name, mixed.kept, mixed.outcomes)


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
