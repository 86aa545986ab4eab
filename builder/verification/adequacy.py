"""Mutation adequacy: do a sample's judged tests tell plausible wrong fills from the right one?

After the null fill and the ground truth, verification judges up to `mutants` AST-level mutants of the
ground truth (`mutants.py`) with the metric's judge - unguarded and failing fast, like the null fill
(the mutants are ours: nothing in them can forge a verdict) - and records how many the tests kill
(`Sample.mutants_killed` / `mutants_total`).  A sample whose tests kill fewer than `min_share` of its
mutants is dropped (`weak_tests`).  A mutant whose judgement fails for the harness's reasons is counted
in neither number; a sample with no mutant (nothing in its middle to mutate) is kept with 0 / 0.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, replace

from execrepobench_dataset.record import Sample
from execrepobench_metric.execution.surface import Budget, JudgeConfig, judge_safely

from .mutants import mutants


@dataclass(frozen=True)
class Adequacy:
    killed: int
    total: int
    survivors: tuple[str, ...] = ()  # mutants the judged tests passed
    errors: int = 0  # mutants whose judgement was a harness error (counted in neither number)
    detail: str = ""
    runs: int = 0  # mutant judgements made (the build-time cost of adequacy)
    run_s: float = 0.0  # their wall seconds


def check_mutants(item: tuple[Sample, Budget | None], config: JudgeConfig, limit: int) -> Adequacy:
    """Judge up to `limit` mutants of the sample's ground truth."""
    sample, budget = item
    conf = replace(config, guard="off", timeout_s=None if budget else config.timeout_s, fail_fast=True,
                   known_verdicts=False)
    killed = total = errors = runs = 0
    survivors = []
    t0 = time.monotonic()
    try:
        for middle in mutants(sample, limit):
            runs += 1
            verdict = judge_safely(sample, middle, conf, budget=budget)
            if verdict.reason == "error":
                errors += 1
                continue
            total += 1
            if verdict.passed:
                survivors.append(middle)
            else:
                killed += 1
    except Exception as exc:  # noqa: BLE001 - one sample's mutants never end a repository's verification
        return Adequacy(killed, total, tuple(survivors), errors + 1, f"{type(exc).__name__}: {exc}\n"
                        f"{traceback.format_exc()[-1500:]}", runs, time.monotonic() - t0)
    return Adequacy(killed, total, tuple(survivors), errors, runs=runs, run_s=time.monotonic() - t0)


def adequate(a: Adequacy, min_share: float) -> bool:
    return a.total == 0 or a.killed >= min_share * a.total
