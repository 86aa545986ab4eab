"""Keep only samples that discriminate: the ground truth passes its judged tests in every ground-truth
run (`gt_runs`: the build's default is 1 - plus an enforcing run when the guard recorded something -
after 3 whole-suite baseline runs), and a neutral ("null") fill fails at least one of them.  Uses the metric's own judge, so "a sample
is valid" means exactly "the metric passes its ground truth and fails a null fill".

In the order that costs least (the verdicts are the same as checking each sample on its own):
1. no judged tests (`no_tests`) or no null fill that compiles (`no_null_fill`): dropped without a run;
2. the null fill, one run per sample, stopping at its first failing test, bounded by the time budget
   estimated from the baseline (a null fill that loops forever costs that, not the 300 s timeout); it
   runs without the guard: the null fill is ours (`pass`, `None`, ...), so nothing in it can forge a
   verdict, and the guard could only add failures (what the file may do is learnt in step 3), so a
   null fill that fails unguarded fails the guarded judge too; the guard costs up to ~25% of a run
   (lark: 8.3 s -> 10.5 s), and null fills that pass run every judged test.  A
   null fill that passes drops the sample (`null_passed`) before any ground-truth run; the test that
   caught it moves to the front of `judged_tests` (a record of what catches a wrong fill; runs keep
   pytest's own order);
3. the ground truth of the remaining samples whose judged tests lie in the same test files together
   (`by_test_files`: a shared run collects what each one's own run collects): each round runs the union
   of their judged tests once (`ground_truth.py`), recording `guard_allowed` and what each sample's
   runs measured (its `SampleTiming` and judged tests' CPU seconds: the repository's measurements, from
   which the judge derives budgets - `execrepobench_metric/execution/budget.py`; never part of the sample).

Null fills: `execrepobench_metric.execution.fills` (the metric's `prepare` checks the same way).  A judgement
that fails for the harness's reasons (an `error` verdict, any exception) drops the sample as
`harness_error`: it is never counted as a ground-truth failure, and never kept.
Both steps run on an executor (`execrepobench_metric.execution.executors`): local threads or Ray nodes that make
the repository's environment from its record first; the null fills and the ground-truth groups are
spread over them.
"""
from __future__ import annotations

import statistics
import traceback
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable, Mapping

from tqdm import tqdm

from execrepobench_dataset.measurements import SampleTiming
from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.execution.surface import (
    Batch, Budget, Executor, JudgeConfig, LocalExecutor, collected_files, judge_safely, null_fill, split, time_budget)

from ..preparation.coverage import CoverageMap
from ..settings import BuildSettings
from .adequacy import Adequacy, adequate, check_mutants
from .ground_truth import GroundTruth, check_ground_truth
from .selection import ImportGraph, select_tests

DROP_REASONS = ("gt_failed", "null_passed", "no_null_fill", "no_tests", "harness_error", "weak_tests")
SAMPLES_PER_EXECUTOR_BATCH = 2  # samples in one batch handed to the executor (each: 3 ground-truth runs, a null fill)


@dataclass(frozen=True)
class Outcome:
    sample: Sample
    kept: bool
    reason: str  # "kept" or one of DROP_REASONS
    gt_runs_s: tuple[float, ...] = ()
    detail: str = ""
    null_s: float = 0.0  # the null fill's run (wall seconds)
    gt_cost: tuple[tuple[str, tuple[float, ...]], ...] = ()  # (group, wall seconds of the ground-truth runs it shared)
    timing: SampleTiming | None = None  # what its ground truth's runs measured (kept samples)
    test_s: tuple[tuple[str, float], ...] = ()  # its judged tests' CPU seconds
    widened: int = 0  # ground-truth rounds that timed out and ran again with a wider limit
    mutant_runs: int = 0  # mutants of its ground truth judged (mutation adequacy)
    mutant_s: float = 0.0  # their wall seconds


def precheck(sample: Sample) -> Outcome | None:
    """The drop that needs no run, if any."""
    if not sample.judged_tests:
        return Outcome(sample, False, "no_tests")
    if null_fill(sample) is None:
        return Outcome(sample, False, "no_null_fill")
    return None


def null_budget(estimate_s: float) -> Budget:
    """The budget of a null fill's run, from the baseline's CPU seconds for its judged tests."""
    return Budget(run_s=time_budget(estimate_s), origin="estimated")


def check_null(sample: Sample, config: JudgeConfig, budget: Budget | None = None) -> tuple[Sample, Outcome | None]:
    """(the sample with the tests that failed on its null fill first, a `null_failed` outcome: it goes on)
    or (sample, the drop).  `budget`: the run's (estimated from the baseline); None: `config.timeout_s`."""
    fill = null_fill(sample)
    null = judge_safely(sample, fill, replace(config, guard="off", timeout_s=None if budget else config.timeout_s,
                                              fail_fast=True, known_verdicts=False), budget=budget)
    if null.reason == "error":
        return sample, Outcome(sample, False, "harness_error", detail=null.detail, null_s=null.duration_s)
    if null.passed:
        return sample, Outcome(sample, False, "null_passed", detail=f"null fill {fill!r} passed",
                               null_s=null.duration_s)
    first = [t for t in null.failing_tests if t in sample.judged_tests]
    order = tuple(dict.fromkeys([*first, *sample.judged_tests]))
    return replace(sample, judged_tests=order), Outcome(sample, True, "null_failed", null_s=null.duration_s)


def _null_safely(item: tuple[Sample, Budget | None], config: JudgeConfig) -> tuple[Sample, Outcome | None]:
    sample, budget = item
    try:
        return check_null(sample, config, budget)
    except Exception as exc:  # noqa: BLE001 - one sample never ends a repository's verification
        return sample, Outcome(sample, False, "harness_error", detail=f"{type(exc).__name__}: {exc}\n"
                                                                       f"{traceback.format_exc()[-2000:]}")


def _ground_truth_safely(group: list[Sample], config: JudgeConfig, gt_runs: int) -> list[GroundTruth]:
    try:
        return check_ground_truth(group, config, gt_runs)
    except Exception as exc:  # noqa: BLE001 - one batch's candidates never end a repository's verification
        why = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}"
        return [GroundTruth(s, False, "harness_error", detail=why) for s in group]


def _outcome(g: GroundTruth, null_s: float) -> Outcome:
    return Outcome(g.sample, g.passed, "kept" if g.passed else g.reason, g.runs_s, g.detail, null_s,
                   g.costs, g.timing, g.test_s, g.widened)


def with_selection(samples: list[Sample], cov: CoverageMap, graph: ImportGraph, judgeable: tuple[str, ...],
                   floor: Mapping[str, str] | None = None) -> list[Sample]:
    """Samples with their judged tests (in order of priority); `floor` maps a fill type to the narrowest
    rule allowed for it ("coverage" by default; "importers" or "suite" widen the selection for that kind
    of sample)."""
    out = []
    for s in samples:
        minimum_rule = (floor or {}).get(s.fill_type, "coverage")
        tests, rule = select_tests(s.file_name, s.prefix_code, s.middle_code, cov, graph, judgeable, minimum_rule)
        out.append(replace(s, judged_tests=tests, selection_rule=rule))
    return out


def verify_one(sample: Sample, config: JudgeConfig, gt_runs: int = 3) -> Outcome:
    """One sample on its own, by the same steps (no mutants)."""
    return verify_samples([sample], config, BuildSettings(workers=1, gt_runs=gt_runs, progress=False, mutants=0))[0]


def verify_samples(samples: list[Sample], config: JudgeConfig, settings: BuildSettings, *, label: str = "verify",
                   executor: Executor | None = None, record: RepoRecord | None = None,
                   estimate: Callable[[tuple[str, ...]], float] | None = None) -> list[Outcome]:
    """One outcome per sample, in the order of `samples` (see the module doc for the steps).  On
    `executor` (default: `settings.workers` local threads); `record` lets a remote node make the repository's
    environment; `estimate(tests)` (the baseline's CPU seconds for a run of them) gives the budget of a
    null fill's run (None: `config.timeout_s`).  `settings.mutants`: mutants of each kept sample's ground truth
    judged after it (`adequacy.py`); one whose tests kill fewer than `settings.min_mutant_kill` of them is
    dropped (`weak_tests`).  A sample its node could not verify (environment not made there, node lost) is a
    `harness_error`, never a ground-truth failure."""
    workers, gt_runs, progress = settings.workers, settings.gt_runs, settings.progress
    mutants, min_killed = settings.mutants, settings.min_mutant_kill
    if not samples:
        return []
    executor = executor or LocalExecutor(workers)
    by_id = {s.sample_id: s for s in samples}
    found: dict[str, Outcome] = {}
    todo = []
    for s in samples:
        dropped = precheck(s)
        if dropped is not None:
            found[s.sample_id] = dropped
        else:
            budget = null_budget(estimate(s.judged_tests)) if estimate is not None else None
            todo.append((replace(s, context_code=()), budget))  # the context is not needed to judge
    with tqdm(total=len(samples), desc=label, unit="sample", disable=not progress, leave=False) as bar:
        bar.update(len(found))
        survivors, null_s = [], {}
        for done in _on(executor, partial(_null_safely, config=config), todo, record, config,
                        key=lambda item: item[0].env_key):
            if done.error:
                found[done.item[0].sample_id] = Outcome(by_id[done.item[0].sample_id], False, "harness_error",
                                                        detail=done.error)
                bar.update(1)
                continue
            sample, checked = done.value
            if checked.reason != "null_failed":
                found[sample.sample_id] = checked
                bar.update(1)
            else:
                survivors.append(sample)
                null_s[sample.sample_id] = checked.null_s
        rank = {s.sample_id: n for n, (s, _) in enumerate(todo)}
        survivors.sort(key=lambda s: rank[s.sample_id])  # the order of `samples`, whatever order they landed in
        groups = by_test_files(survivors)
        for done in _on(executor, partial(_ground_truth_safely, config=config, gt_runs=gt_runs), groups, record,
                        config, key=lambda group: group[0].env_key):
            results = done.value if not done.error else [
                GroundTruth(s, False, "harness_error", detail=done.error) for s in done.item]
            for g in results:
                found[g.sample.sample_id] = _outcome(g, null_s.get(g.sample.sample_id, 0.0))
                bar.update(1 if not mutants or not g.passed else 0)
        if mutants > 0:
            budgets = dict((s.sample_id, b) for s, b in todo)
            passed = [(found[s.sample_id].sample, budgets[s.sample_id]) for s, _ in todo if found[s.sample_id].kept]
            for done in _on(executor, partial(check_mutants, config=config, limit=mutants), passed, record, config,
                            key=lambda item: item[0].env_key):
                sid = done.item[0].sample_id
                found[sid] = _with_adequacy(found[sid], done.value if not done.error else
                                            Adequacy(0, 0, errors=1, detail=done.error), min_killed)
                bar.update(1)
    return [_with_context(found[s.sample_id], s) for s in samples]


def _with_adequacy(outcome: Outcome, a: Adequacy, min_killed: float) -> Outcome:
    """The kept outcome with its mutants' numbers, dropped as `weak_tests` when its tests killed too few."""
    sample = replace(outcome.sample, mutants_killed=a.killed, mutants_total=a.total)
    outcome = replace(outcome, mutant_runs=a.runs, mutant_s=a.run_s)
    if adequate(a, min_killed):
        return replace(outcome, sample=sample)
    return replace(outcome, sample=sample, kept=False, reason="weak_tests",
                   detail=f"its tests killed {a.killed} of {a.total} mutants of the ground truth "
                          f"(at least {min_killed:.0%} wanted); survived: {a.survivors[0]!r}"[:400])


def by_test_files(samples: list[Sample]) -> list[tuple[Sample, ...]]:
    """The candidates whose judged tests lie in the same test files, together (in order): their ground
    truth shares runs.  A judged run collects exactly its tests' files, and a test may pass only when
    another file is collected too (docutils' publisher tests need a submodule that another test module
    imports; a lazily set attribute is set during another module's collection), so a shared run must
    collect what each candidate's own run collects."""
    groups: dict[tuple[str, ...], list[Sample]] = {}
    for s in samples:
        groups.setdefault(collected_files(s.judged_tests), []).append(s)
    return [tuple(g) for g in groups.values()]


def _on(executor: Executor, fn: Callable[[Any], Any], items: list, record: RepoRecord | None, config: JudgeConfig,
        key: Callable[[Any], str] = lambda s: s.env_key):
    """fn over `items` on the executor, one batch per environment and slot."""
    batches = [Batch(_repo_of(part[0]), env, part, record if record and record.env_key == env else None)
               for env in dict.fromkeys(key(i) for i in items)
               for part in split([i for i in items if key(i) == env], SAMPLES_PER_EXECUTOR_BATCH, executor.parallelism)]
    return executor.map(fn, batches, config)


def _repo_of(item: Any) -> str:
    return item.repo_name if isinstance(item, Sample) else item[0].repo_name


def _with_context(outcome: Outcome, original: Sample) -> Outcome:
    """What verification recorded stays; the context comes back."""
    return replace(outcome, sample=replace(outcome.sample, context_code=original.context_code))


def verify_report(outcomes: list[Outcome], kept: list[Sample], suite_tests: int, suite_s: float) -> dict:
    """The verification part of a repository's build report."""
    reasons = Counter(o.reason for o in outcomes)
    shared = {group: runs for o in outcomes for group, runs in o.gt_cost}
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
        # per selection rule: candidates whose null fill ran, and how many of those passed it
        "null_checked_by_rule": dict(sorted(Counter(o.sample.selection_rule for o in outcomes
                                                    if o.reason not in ("no_tests", "no_null_fill")).items())),
        "null_passed_by_rule": dict(sorted(Counter(o.sample.selection_rule for o in outcomes
                                                   if o.reason == "null_passed").items())),
        "median_judged_tests": statistics.median([len(s.judged_tests) for s in kept]) if kept else 0,
        "suite_tests": suite_tests,
        "median_sample_run_s": round(median_run, 3) if median_run is not None else None,
        "suite_run_s": round(suite_s, 3),
        # what verification ran: null fills (one run each) and the shared ground-truth runs (wall seconds)
        "null_runs": sum(o.null_s > 0 for o in outcomes), "null_runs_s": round(sum(o.null_s for o in outcomes), 1),
        "gt_runs": sum(len(runs) for runs in shared.values()),
        "gt_runs_s": round(sum(sum(runs) for runs in shared.values()), 1),
        # ground-truth rounds that hit the wall-clock limit and ran again with a wider one (a loaded machine)
        "gt_widened": sum(o.widened for o in outcomes),
        # mutation adequacy of the kept samples: mutants killed / judged (and the drops: weak_tests)
        "mutants_killed": sum(s.mutants_killed for s in kept), "mutants_total": sum(s.mutants_total for s in kept),
        # what adequacy cost: mutant judgements made and their wall seconds (against null_runs_s and gt_runs_s)
        "mutant_runs": sum(o.mutant_runs for o in outcomes), "mutant_runs_s": round(sum(o.mutant_s for o in outcomes), 1),
        # per kept sample: the median of its ground-truth runs (the statistics' ground-truth run time)
        "kept_gt_run_s": {o.sample.sample_id: round(statistics.median(o.gt_runs_s), 3) for o in outcomes
                          if o.sample.sample_id in kept_ids and o.gt_runs_s},
        "dropped_examples": [{"sample_id": o.sample.sample_id, "file": o.sample.file_name, "reason": o.reason,
                              "detail": o.detail[:200]} for o in outcomes if not o.kept][:20],
    }
