"""Aim what a repository KEEPS at the paper's level mix (random ~10%, expression ~35%, statement ~23%,
block ~32%), whatever verification drops.

Verification drops kinds of candidates at different rates (a random span or a docstring often passes
with a null fill), so keeping the first candidates that verify lets the kept mix drift from the masking
mix.  Instead, per repository:

1. `level_quotas(wanted, key)` splits the wanted samples over the four levels in the paper's proportions
   (`stats.PAPER_FILL_COUNTS`), rounding systematically with an offset drawn from `key` (seed + repository),
   so that summed over many repositories the counts match the paper's shares in expectation instead of
   every repository rounding the same way;
2. `verify_to_quotas` verifies candidates level by level (each level's candidates in a fixed order, by
   sample id), asking only for as many as the level still needs (scaled by the level's observed yield),
   until every quota is met; a level whose candidates run out gets more from `more(needs)` (the builder
   masks again, drawing only that level's kinds: `masking.level_mask`), at most `max_extra_rounds` times;
   within a level, only candidates whose judged tests run the masked code (`coverage` rule) are queued;
   the others wait in reserves (`RESERVE_TIERS`), verified only when a level is still short after the
   extra masking rounds, tier by tier: first those whose code only runs when its module is imported
   (`importers`: judged by every test of the modules that import the file; their null fill passes more
   often than not, and a null fill that passes runs every judged test - build v6 of the default manifest:
   375 of 642 checked passed, against 317 of 1,652 `coverage` ones, and their kept ground truths' runs
   took 5.5 s against 1.9 s on average: 788 judged tests against 92), then those judged by the whole
   suite (`suite`: no test ran the masked code; release 1: 570 of 699 checked passed).  Masking more is
   cheap (build v6: 2.1 of 128 repository-minutes, extra rounds included), verifying is not: cheap,
   discriminating candidates fill the quotas;
3. a level still short after that leaves its slots to the others (`fill order`: the level furthest below
   its expected count first), so the repository still yields `wanted` samples when it can; the report says
   what was short.

Levels of fill types: `stats.FILL_LEVEL` (random = span, single-line, multi-line; the grammar-based fill
type is the level of the node actually masked: builder/sampling/grammar.py `level_of_type`).
"""
from __future__ import annotations

import hashlib
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from execrepobench_dataset.record import Sample
from execrepobench_dataset.schemes import MIX_NAME
from execrepobench_dataset.stats import FILL_LEVEL, LEVELS, PAPER_FILL_COUNTS, level_counts

PAPER_LEVELS = level_counts(PAPER_FILL_COUNTS)
PAPER_SHARES = {lvl: n / sum(PAPER_LEVELS.values()) for lvl, n in PAPER_LEVELS.items()}
PRIOR_YIELD = 0.5  # share of a level's candidates expected to verify before any was tried
MIN_YIELD = 0.2
# Candidates judged by these selection rules wait in reserves, one tier after the other, verified only when a
# level is still short after the extra masking rounds (see the module doc, step 2).
RESERVE_TIERS = (("importers",), ("suite",))
_TIER_OF = {rule: n for n, rules in enumerate(RESERVE_TIERS) for rule in rules}


def level_of(sample: Sample) -> str:
    return FILL_LEVEL[sample.fill_type]


def level_quotas(total: int, key: str, shares: Mapping[str, float] = PAPER_SHARES) -> dict[str, int]:
    """`total` split over LEVELS in proportion to `shares`: each level gets the floor of its exact share, and
    the remaining units go by systematic sampling over the fractional parts with an offset from sha256(key),
    so a level gets one more exactly with the probability of its fractional part."""
    if total < 0:
        raise ValueError(f"total must be >= 0, got {total}")
    weight = sum(shares[lvl] for lvl in LEVELS)
    exact = {lvl: total * shares[lvl] / weight for lvl in LEVELS}
    quotas = {lvl: math.floor(exact[lvl]) for lvl in LEVELS}
    left = total - sum(quotas.values())
    offset = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") / 2**64
    points, cumulative = [offset + i for i in range(left)], 0.0
    for lvl in LEVELS:
        lo, cumulative = cumulative, cumulative + exact[lvl] - quotas[lvl]
        quotas[lvl] += sum(lo <= p < cumulative for p in points)
    quotas[LEVELS[-1]] += total - sum(quotas.values())  # float rounding at the very end of the interval
    return quotas


@dataclass
class _State:
    quotas: dict[str, int]
    queues: dict[str, deque] = field(default_factory=lambda: {lvl: deque() for lvl in LEVELS})
    reserves: tuple[dict[str, deque], ...] = field(
        default_factory=lambda: tuple({lvl: deque() for lvl in LEVELS} for _ in RESERVE_TIERS))
    kept: dict[str, list[Sample]] = field(default_factory=lambda: {lvl: [] for lvl in LEVELS})
    tried: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEVELS, 0))
    seen_ids: set = field(default_factory=set)
    seen_middles: set = field(default_factory=set)

    def add(self, candidates: Sequence[Sample]) -> list[Sample]:
        """Queue the candidates not seen before (by id and by middle); returns them in the given order."""
        fresh = []
        for s in candidates:
            if s.sample_id in self.seen_ids or s.middle_code in self.seen_middles:
                continue
            self.seen_ids.add(s.sample_id)
            self.seen_middles.add(s.middle_code)
            fresh.append(s)
        for s in sorted(fresh, key=lambda s: s.sample_id):
            tier = _TIER_OF.get(s.selection_rule)
            (self.queues if tier is None else self.reserves[tier])[level_of(s)].append(s)
        return fresh

    def use_reserve(self, every_level: bool = False) -> bool:
        """Queue, for each level still short (or every level), the candidates of its first reserve tier that
        has any; whether there were any."""
        moved = False
        for lvl in LEVELS:
            if not (every_level or self.need(lvl)):
                continue
            tier = next((r for r in self.reserves if r[lvl]), None)
            if tier is not None:
                self.queues[lvl].extend(tier[lvl])
                tier[lvl].clear()
                moved = True
        return moved

    def need(self, lvl: str) -> int:
        return max(0, self.quotas[lvl] - len(self.kept[lvl]))

    def ask(self, lvl: str, need: int) -> int:
        tried, kept = self.tried[lvl], len(self.kept[lvl])
        expected = max(MIN_YIELD, (kept + PRIOR_YIELD * 2) / (tried + 2))  # observed yield, smoothed
        return min(len(self.queues[lvl]), math.ceil(need / expected))


@dataclass(frozen=True)
class MixResult:
    kept: list[Sample]  # the outcomes' samples, in candidate order (original candidates, then extra ones)
    outcomes: list  # every verification outcome, in the order verified
    report: dict


def _fill_order(counts: Mapping[str, int], total: int) -> list[str]:
    """Levels, the one furthest below its expected count (paper share x total) first."""
    return sorted(LEVELS, key=lambda lvl: (counts[lvl] - PAPER_SHARES[lvl] * total, LEVELS.index(lvl)))


def verify_to_quotas(candidates: Sequence[Sample], quotas: Mapping[str, int],
                     verify: Callable[[list[Sample]], list], *,
                     more: Callable[[dict[str, int], int], list[Sample]] | None = None,
                     batch: int = 4, max_extra_rounds: int = 2) -> MixResult:
    """Verify candidates until each level's quota is kept (see the module doc).  `verify(samples)` returns one
    outcome per sample (with `.sample` and `.kept`); `more(needs, round)` returns extra candidates for the
    short levels ({level: samples still needed}).  Deterministic for the same candidates and outcomes."""
    state, outcomes, rounds = _State(dict(quotas)), [], 0
    order = state.add(candidates)
    total, cap = sum(quotas.values()), max(batch, len(LEVELS))

    def run(picked: list[Sample]) -> None:
        for o in verify(picked):
            outcomes.append(o)
            state.tried[level_of(o.sample)] += 1
            if o.kept:
                state.kept[level_of(o.sample)].append(o.sample)

    while any(state.need(lvl) for lvl in LEVELS):  # 1: quotas, level by level
        asked = {lvl: [state.queues[lvl].popleft() for _ in range(state.ask(lvl, state.need(lvl)))] for lvl in LEVELS}
        picked = [s for i in range(max(map(len, asked.values()))) for lvl in LEVELS  # levels interleaved
                  if i < len(asked[lvl]) for s in (asked[lvl][i],)]
        if picked:
            for s in reversed(picked[cap:]):  # beyond one round's batch: back to the front of its queue
                state.queues[level_of(s)].appendleft(s)
            run(picked[:cap])
            continue
        if more is None or rounds >= max_extra_rounds:
            if state.use_reserve():
                continue
            break
        rounds += 1
        order += state.add(more({lvl: state.need(lvl) for lvl in LEVELS if state.need(lvl)}, rounds))
    short = {lvl: state.need(lvl) for lvl in LEVELS if state.need(lvl)}
    chosen = {lvl: state.kept[lvl][:quotas[lvl]] for lvl in LEVELS}
    surplus = {lvl: state.kept[lvl][quotas[lvl]:] for lvl in LEVELS}
    missing = total - sum(len(v) for v in chosen.values())
    while missing > 0:  # 2: slots of short levels go to the others, from surplus first, then verified anew
        counts = {lvl: len(chosen[lvl]) for lvl in LEVELS}
        lvl = next((lv for lv in _fill_order(counts, total) if surplus[lv] or state.queues[lv]), None)
        if lvl is None and state.use_reserve(every_level=True):  # the reserve last
            continue
        if lvl is None:
            break
        if surplus[lvl]:
            chosen[lvl].append(surplus[lvl].pop(0))
            missing -= 1
            continue
        run([state.queues[lvl].popleft() for _ in range(min(len(state.queues[lvl]), max(1, missing)))])
        surplus[lvl] = state.kept[lvl][len(chosen[lvl]):]
    keep = {s.sample_id: s for v in chosen.values() for s in v}  # as verification returned them (what it recorded)
    kept = [keep[s.sample_id] for s in order if s.sample_id in keep]
    report = {"mix": MIX_NAME, "quotas": dict(quotas),
              "kept_per_level": {lvl: len(chosen[lvl]) for lvl in LEVELS},
              "short_levels": short, "extra_rounds": rounds, "extra_candidates": len(order) - len(candidates),
              "verified_per_level": dict(state.tried)}
    return MixResult(kept, outcomes, report)
