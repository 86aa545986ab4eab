"""Keep only samples that discriminate: the ground truth passes its judged tests 3 times out of 3,
and a neutral ("null") fill fails at least one of them.  Uses the metric's own judge, so "a sample
is valid" means exactly "the metric passes its ground truth and fails a null fill".

Null fills: `execrepobench_metric.fills` (the metric's `prepare` checks the same way).
A sample for which no candidate compiles is dropped (`no_null_fill`).  A judgement that fails for
the harness's reasons (an `error` verdict, any exception) drops the sample as `harness_error`:
it is never counted as a ground-truth failure, and never kept.
Samples are verified on an executor (`execrepobench_metric.executors`): local threads, or Ray
nodes that make the repository's environment from its record first.
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from typing import Mapping

from tqdm import tqdm

from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.executors import Batch, Executor, split
from execrepobench_metric.executors.local import LocalExecutor
from execrepobench_metric.fills import null_fill
from execrepobench_metric.judge import JudgeConfig, Verdict, judge_safely

from .selection import CoverageMap, ImportGraph, select_tests

DROP_REASONS = ("gt_failed", "null_passed", "no_null_fill", "no_tests", "harness_error")
VERIFY_BATCH = 2  # samples per executor batch (each is 3 ground-truth runs and a null fill)
GUARD_RECORDING = 1  # what verification records for the in-process guard (Sample.guard_allowed); part of build keys


@dataclass(frozen=True)
class Outcome:
    sample: Sample
    kept: bool
    reason: str  # "kept" or one of DROP_REASONS
    gt_runs_s: tuple[float, ...] = ()
    detail: str = ""


def verify_one(sample: Sample, config: JudgeConfig, gt_runs: int = 3) -> Outcome:
    """The first ground-truth run records what the guard sees the masked file do (`guard_allowed`);
    the other runs, and the null fill, are judged with those events allowed and nothing else."""
    if not sample.judged_tests:
        return Outcome(sample, False, "no_tests")
    times = []
    for run in range(gt_runs):
        record = run == 0 and config.guard != "off"
        v: Verdict = judge_safely(sample, sample.middle_code, replace(config, guard="record") if record else config)
        times.append(v.duration_s)
        if v.reason == "error":
            return Outcome(sample, False, "harness_error", tuple(times), v.detail)
        if not v.passed:
            return Outcome(sample, False, "gt_failed", tuple(times), f"{v.reason}: {v.detail or v.failing_tests[:3]}")
        if record:
            sample = replace(sample, guard_allowed=v.guard_events)
    fill = null_fill(sample)
    if fill is None:
        return Outcome(sample, False, "no_null_fill", tuple(times))
    null = judge_safely(sample, fill, config)
    if null.reason == "error":
        return Outcome(sample, False, "harness_error", tuple(times), null.detail)
    if null.passed:
        return Outcome(sample, False, "null_passed", tuple(times), f"null fill {fill!r} passed")
    return Outcome(sample, True, "kept", tuple(times))


def _verify_safely(sample: Sample, *, config: JudgeConfig, gt_runs: int) -> Outcome:
    try:
        return verify_one(sample, config, gt_runs)
    except Exception as exc:  # noqa: BLE001 - one sample never ends a repository's verification
        return Outcome(sample, False, "harness_error", detail=f"{type(exc).__name__}: {exc}")


def with_selection(samples: list[Sample], cov: CoverageMap, graph: ImportGraph, judgeable: tuple[str, ...],
                   floor: Mapping[str, str] | None = None) -> list[Sample]:
    """Samples with their judged tests; `floor` maps a fill type to the narrowest rule allowed for it
    ("coverage" by default; "importers" or "suite" widen the selection for that kind of sample)."""
    out = []
    for s in samples:
        minimum_rule = (floor or {}).get(s.fill_type, "coverage")
        tests, rule = select_tests(s.file_name, s.prefix_code, s.middle_code, cov, graph, judgeable, minimum_rule)
        out.append(replace(s, judged_tests=tests, selection_rule=rule))
    return out


def verify_samples(samples: list[Sample], config: JudgeConfig, *, workers: int, gt_runs: int = 3,
                   progress: bool = True, label: str = "verify", executor: Executor | None = None,
                   record: RepoRecord | None = None) -> list[Outcome]:
    """Outcomes in the order of `samples`.  On `executor` (default: `workers` local threads); `record`
    lets a remote node make the repository's environment.  A sample its node could not verify
    (environment not made there, node lost) is a `harness_error`, never a ground-truth failure."""
    if not samples:
        return []
    executor = executor or LocalExecutor(workers)
    by_id = {s.sample_id: s for s in samples}
    shipped = [replace(s, context_code=()) for s in samples]  # the context is not needed to judge
    batches = [Batch(part[0].repo_name, key, part, record if record and record.env_key == key else None)
               for key in dict.fromkeys(s.env_key for s in shipped)
               for part in split([s for s in shipped if s.env_key == key], VERIFY_BATCH, executor.parallelism)]
    found: dict[str, Outcome] = {}
    with tqdm(total=len(samples), desc=label, unit="sample", disable=not progress, leave=False) as bar:
        for done in executor.map(partial(_verify_safely, config=config, gt_runs=gt_runs), batches, config):
            original = by_id[done.item.sample_id]  # what verification recorded stays; the context comes back
            found[original.sample_id] = (Outcome(original, False, "harness_error", detail=done.error) if done.error
                                         else replace(done.value, sample=replace(
                                             done.value.sample, context_code=original.context_code)))
            bar.update(1)
    return [found[s.sample_id] for s in samples]


def verify_report(outcomes: list[Outcome], kept: list[Sample], suite_tests: int, suite_s: float) -> dict:
    """The verification part of a repository's build report."""
    reasons = Counter(o.reason for o in outcomes)
    kept_ids = {s.sample_id for s in kept}
    run_times = [statistics.median(o.gt_runs_s) for o in outcomes if o.sample.sample_id in kept_ids and o.gt_runs_s]
    median_run = statistics.median(run_times) if run_times else None
    return {
        "verify_candidates": len(outcomes),
        "dropped_verify": {r: reasons.get(r, 0) for r in DROP_REASONS},
        # the share of checked candidates the official method would have shipped although untestable
        "null_passed_share": round(reasons.get("null_passed", 0) / max(1, len(outcomes)), 3),
        "kept": len(kept),
        "selection_rules": dict(sorted(Counter(s.selection_rule for s in kept).items())),
        "median_judged_tests": statistics.median([len(s.judged_tests) for s in kept]) if kept else 0,
        "suite_tests": suite_tests,
        "median_sample_run_s": round(median_run, 3) if median_run is not None else None,
        "suite_run_s": round(suite_s, 3),
        # per kept sample: the median of its ground-truth runs (the statistics' ground-truth run time)
        "kept_gt_run_s": {o.sample.sample_id: round(statistics.median(o.gt_runs_s), 3) for o in outcomes
                          if o.sample.sample_id in kept_ids and o.gt_runs_s},
        "dropped_examples": [{"sample_id": o.sample.sample_id, "file": o.sample.file_name, "reason": o.reason,
                              "detail": o.detail[:200]} for o in outcomes if not o.kept][:20],
    }
