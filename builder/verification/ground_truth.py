"""The ground-truth part of verification: many candidates at once.

Every ground-truth run of a candidate is the original tree running some of its tests, so candidates
share their runs: each round runs the union of their judged tests once, on the original tree, with the
metric's own judge.  Round 1 records what the guard sees their masked files do (all of them watched
at once); when it sees nothing - the usual case - every candidate's `guard_allowed` is empty, exactly
what a run of its own would have recorded, and the later rounds (if `rounds` > 1) are judged with
nothing allowed: with nothing recorded, an enforcing run refuses nothing a recording run let through.
When it sees something, each candidate's allowances must be its own file's: the guard names the
masked files each event came from, so they are taken from that run (`allowances.py`) when every event
can be placed; otherwise each file's recording round runs on its own.  Either way the later rounds -
at least one, which enforces: what was allowed must be shown to suffice - run together again for the
candidates that got the same allowances (most get none), and a candidate that an enforcing round
refuses after allowances taken from the shared run is recorded again on its own file.  A candidate
passes a round when the union passed; its run time is derived from the round
(the run's fixed part - sandbox, interpreter, pytest, collection - plus its own tests' junit times),
and what the rounds measured (CPU seconds: start-up and collection, the fixed part, each of its judged
tests; the most over its rounds) becomes its `SampleTiming` and test times - the repository's
measurements, from which the judge derives budgets; they never enter the sample.  When a union fails,
its candidates are checked apart (a test that only fails next to another one's must not drop a
candidate that passes alone).  A round that times out (the wall-clock limit: a loaded machine) is run
once more with WIDEN times the limit before the candidate is dropped (`widened`).
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, replace
from typing import Sequence

from execrepobench_dataset.measurements import SampleTiming
from execrepobench_dataset.record import Sample
from execrepobench_metric.execution.surface import JudgeConfig, PytestRun, Verdict, judge_run

from .allowances import attribute


WIDEN = 3.0  # a ground-truth round that timed out runs once more with this many times the limit


@dataclass(frozen=True)
class GroundTruth:
    sample: Sample  # with guard_allowed recorded when it passed
    passed: bool
    reason: str  # "passed", "gt_failed" or "harness_error"
    runs_s: tuple[float, ...] = ()  # this sample's run time in each round (derived)
    detail: str = ""
    # the runs it shared, as (group key, wall seconds of that group's runs): the cost, counted once per group
    costs: tuple[tuple[str, tuple[float, ...]], ...] = ()
    timing: SampleTiming | None = None  # what its rounds measured (CPU seconds), when it passed
    test_s: tuple[tuple[str, float], ...] = ()  # its judged tests' CPU seconds (the most over its rounds)
    widened: int = 0  # rounds that timed out and were run again with a wider limit


def estimate_s(run: PytestRun, tests: Sequence[str]) -> float:
    """Seconds a run of only `tests` takes, from a run of a superset: the run's fixed part (its wall
    time minus every test's junit time) plus these tests' own times."""
    return run.fixed_s + sum(run.durations.get(t, 0.0) for t in tests)


def measured(sample: Sample, runs: Sequence[PytestRun]) -> tuple[SampleTiming | None, tuple[tuple[str, float], ...]]:
    """What the ground truth's rounds measured for `sample` (CPU seconds, the most over the rounds): start-up
    and collection, the fixed part, and each of its judged tests; (None, ()) when no round measured.  In a
    shared round another candidate's test may have paid for a module or a fixture that this one's first test
    pays alone: the judge's per-test budgets have a floor for that (`budget.TEST_FLOOR_S`)."""
    done = [r for r in runs if r.cpu_s is not None and r.collect_cpu_s is not None]
    if not done:
        return None, ()
    timing = SampleTiming(max(r.collect_cpu_s for r in done), max(r.fixed_cpu_s for r in done))
    tests = tuple((t, max(r.test_cpu_s.get(t, 0.0) for r in done)) for t in sample.judged_tests)
    return timing, tests


def with_measurements(g: GroundTruth, runs: Sequence[PytestRun]) -> GroundTruth:
    """`g` with what `runs` measured."""
    timing, tests = measured(g.sample, runs)
    return g if timing is None else replace(g, timing=timing, test_s=tests)


def _most(g: GroundTruth, earlier: GroundTruth) -> GroundTruth:
    """`g` with the most of its own and `earlier`'s measurements (a sample verified over several rounds)."""
    if earlier.timing is None or g.timing is None:
        return g if g.timing is not None else replace(g, timing=earlier.timing, test_s=earlier.test_s)
    had = dict(earlier.test_s)
    return replace(g, timing=SampleTiming(max(g.timing.collect_s, earlier.timing.collect_s),
                                          max(g.timing.fixed_s, earlier.timing.fixed_s)),
                   test_s=tuple((t, max(s, had.get(t, 0.0))) for t, s in g.test_s))


def _judge(sample: Sample, config: JudgeConfig, also: tuple[str, ...]) -> tuple[Verdict, PytestRun | None, int]:
    """(verdict, run, rounds widened): a round that timed out runs once more with WIDEN times the limit (a
    loaded machine must not drop a candidate that a quiet one keeps)."""
    try:
        verdict, run = judge_run(sample, sample.middle_code, config, also_masked=also)
        if verdict.reason != "timeout" or config.timeout_s is None:
            return verdict, run, 0
        verdict, run = judge_run(sample, sample.middle_code, replace(config, timeout_s=config.timeout_s * WIDEN),
                                 also_masked=also)
        return verdict, run, 1
    except Exception as exc:  # noqa: BLE001 - a harness error of this group, never a ground-truth failure
        return Verdict(sample.sample_id, False, "error", detail=f"{type(exc).__name__}: {exc}\n"
                                                                  f"{traceback.format_exc()[-2000:]}"), None, 0


def _in_order(samples: Sequence[Sample], parts: list[list[Sample]], config: JudgeConfig,
              rounds: int, allowed: tuple[str, ...] | None, enforce_recorded: bool = True) -> list[GroundTruth]:
    found = {g.sample.sample_id: g for part in parts
             for g in check_ground_truth(part, config, rounds, allowed, enforce_recorded=enforce_recorded)}
    return [found[s.sample_id] for s in samples]


def _per_file(samples: Sequence[Sample], config: JudgeConfig, rounds: int) -> list[GroundTruth]:
    """The guard saw the union do something it cannot place: each file's recording round on its own
    (whose was it?), then the other rounds together again for the files that recorded the same allowances."""
    groups: dict[str, list[Sample]] = {}
    for s in samples:
        groups.setdefault(s.file_name, []).append(s)
    return _later(_in_order(samples, list(groups.values()), config, 1, None, enforce_recorded=False), config, rounds)


def _placed(samples: Sequence[Sample], allowed: dict[str, tuple[str, ...]], run: PytestRun, config: JudgeConfig,
            rounds: int) -> list[GroundTruth]:
    """The union's recording run placed every event: each candidate's allowances from it, then the later
    rounds; a candidate an enforcing round refused (its allowances too small) is recorded on its own file."""
    cost = _union_cost(samples, run)
    recorded = []
    for s in samples:
        took = round(estimate_s(run, s.judged_tests), 3)
        kept = replace(s, guard_allowed=allowed[s.sample_id])
        recorded.append(with_measurements(GroundTruth(kept, True, "passed", (took,), costs=cost), [run]))
    out = _later(recorded, config, rounds)  # what was placed is enforced in a run of its own
    refused = [s for s, g in zip(samples, out) if not g.passed and g.detail.startswith("tampering")]
    if not refused:
        return out
    again = {g.sample.sample_id: replace(g, costs=cost + g.costs) for g in _per_file(refused, config, rounds)}
    return [again.get(g.sample.sample_id, g) for g in out]


def _union_cost(samples: Sequence[Sample], run: PytestRun) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """The shared recording run, as a cost entry of its own (its key never one of a group's later rounds)."""
    return ((samples[0].sample_id + "*", (round(run.process.duration_s, 3),)),)


def _later(recorded: list[GroundTruth], config: JudgeConfig, rounds: int) -> list[GroundTruth]:
    """The rounds after the recording one, shared by the candidates that recorded the same allowances."""
    found = {g.sample.sample_id: g for g in recorded if not g.passed or not _later_rounds(rounds, g.sample)}
    by_allowed: dict[tuple[str, ...], list[GroundTruth]] = {}
    for g in recorded:
        if g.sample.sample_id not in found:
            by_allowed.setdefault(g.sample.guard_allowed, []).append(g)
    for allowed, first in by_allowed.items():
        rest = check_ground_truth([g.sample for g in first], config, _later_rounds(rounds, first[0].sample), allowed)
        for one, more in zip(first, rest):
            runs_s = one.runs_s + more.runs_s
            merged = replace(more, runs_s=runs_s, costs=one.costs + more.costs, widened=one.widened + more.widened)
            found[one.sample.sample_id] = _most(merged, one) if more.passed else merged
    return [found[g.sample.sample_id] for g in recorded]


def _later_rounds(rounds: int, recorded: Sample) -> int:
    """Rounds after the recording one: `rounds - 1`, and at least one (enforcing) when the guard recorded
    something: what the ground truth was allowed must also be shown to pass with the guard refusing the rest."""
    return max(rounds, 2 if recorded.guard_allowed else 1) - 1


def _split(samples: Sequence[Sample], failing: set[str], config: JudgeConfig, rounds: int,
           allowed: tuple[str, ...] | None, enforce_recorded: bool) -> list[GroundTruth]:
    """Samples that judge none of the failing tests again together, the others one by one."""
    clean = [s for s in samples if not failing & set(s.judged_tests)]
    if not failing or len(clean) in (0, len(samples)):
        return _in_order(samples, [[s] for s in samples], config, rounds, allowed, enforce_recorded)
    return _in_order(samples, [clean, *([s] for s in samples if failing & set(s.judged_tests))], config, rounds,
                     allowed, enforce_recorded)


def check_ground_truth(samples: Sequence[Sample], config: JudgeConfig, rounds: int = 3,
                       allowed: tuple[str, ...] | None = None, *, enforce_recorded: bool = True) -> list[GroundTruth]:
    """The ground truth of `samples`, `rounds` times (twice at least when the recording round saw
    something, unless not `enforce_recorded`), sharing the runs; one result per sample, in order.
    `allowed`: what the guard already recorded for (each of) their files: no recording round, every
    round is judged with just that allowed."""
    if not samples:
        return []
    config = replace(config, fail_fast=False, known_verdicts=False)  # every union test must report
    files = tuple(dict.fromkeys(s.file_name for s in samples))
    union = tuple(dict.fromkeys(t for s in samples for t in s.judged_tests))
    carrier = replace(samples[0], judged_tests=union, guard_allowed=allowed or ())
    also = files[1:]
    runs: list[PytestRun] = []
    widened = 0
    while len(runs) < rounds:
        record = not runs and config.guard != "off" and allowed is None
        verdict, run, wider = _judge(carrier, replace(config, guard="record") if record else config, also)
        widened += wider
        if verdict.reason == "error":
            return [GroundTruth(s, False, "harness_error", detail=verdict.detail) for s in samples]
        if not verdict.passed or run is None:
            if len(samples) > 1:
                return _split(samples, set(verdict.failing_tests), config, rounds, allowed, enforce_recorded)
            why = f"{verdict.reason}: {verdict.detail or ', '.join(verdict.failing_tests[:3])}"
            return [GroundTruth(samples[0], False, "gt_failed", tuple(r.process.duration_s for r in runs), why,
                                widened=widened)]
        if record and verdict.guard_events and also:  # something was seen: whose?
            allowed_by_sample = attribute(samples, run.guard.sources) if run.guard is not None else None
            if allowed_by_sample is None:  # an event the run cannot place: each file records on its own
                cost = _union_cost(samples, run)
                return [replace(g, costs=cost + g.costs) for g in _per_file(samples, config, rounds)]
            return _placed(samples, allowed_by_sample, run, config, rounds)
        if record:
            carrier = replace(carrier, guard_allowed=verdict.guard_events)
            rounds = 1 + _later_rounds(rounds, carrier) if enforce_recorded else rounds
        runs.append(run)
    out, shared = [], tuple(round(r.process.duration_s, 3) for r in runs)
    key = samples[0].sample_id + ("" if allowed is None else "+")  # a group of later rounds has its own key
    for s in samples:
        times = tuple(round(estimate_s(run, s.judged_tests), 3) for run in runs)
        kept = replace(s, guard_allowed=carrier.guard_allowed)
        out.append(with_measurements(GroundTruth(kept, True, "passed", times, costs=((key, shared),),
                                                 widened=widened), runs))
    return out
