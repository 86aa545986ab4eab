"""The kept mix: per-level quotas from the paper's counts, and the verification loop that fills them."""
from dataclasses import dataclass, replace

import pytest

from conftest import make_sample
from execrepobench.builder.sampling.grammar import CATEGORY_LEVEL
from execrepobench.builder.sampling.masking import MaskConfig, level_mask
from execrepobench.builder.verification.mix import PAPER_SHARES, level_quotas, verify_to_quotas
from execrepobench_dataset.record import (FILL_BLOCK, FILL_EXPRESSION, FILL_MULTI_LINE, FILL_SPAN, FILL_STATEMENT,
                                          Sample)
from execrepobench_dataset.stats import LEVELS, MIX_TOLERANCE_PP, mix_within_tolerance

FILL_OF = {"random": FILL_SPAN, "expression": FILL_EXPRESSION, "statement": FILL_STATEMENT, "block": FILL_BLOCK}


def cand(level: str, i: int, fill: str | None = None) -> Sample:
    """Candidate `i` of a level: ids sort by level, then by i."""
    return make_sample(file_name="r/m.py", middle=f"value_{level}_{i} = compute({i})", fill_type=fill or FILL_OF[level],
                       prefix_code="x = 1\n", sample_id=f"{level[:3]}{i:04d}", node_type="x", builder_version="t",
                       repo_source="pypi:r==1#sha256=" + "0" * 64)


@dataclass(frozen=True)
class Outcome:
    sample: Sample
    kept: bool


class Verifier:
    """Keeps a candidate when its number is divisible by `every[level]` (0: never); records what it saw."""

    def __init__(self, every: dict[str, int]):
        self.every, self.seen = every, []

    def __call__(self, samples):
        self.seen += [s.sample_id for s in samples]
        out = []
        for s in samples:
            level = next(lvl for lvl, f in FILL_OF.items() if s.sample_id.startswith(lvl[:3]))
            n = int(s.sample_id[3:])
            verified = replace(s, judged_tests=(f"t.py::t{n}",))  # what verification records travels with the sample
            out.append(Outcome(verified, self.every[level] > 0 and n % self.every[level] == 0))
        return out


def test_level_quotas_sum_and_round_fairly():
    for total in (0, 1, 7, 24, 50):
        q = level_quotas(total, "seed0:repo")
        assert sum(q.values()) == total and set(q) == set(LEVELS)
        for lvl in LEVELS:
            assert abs(q[lvl] - total * PAPER_SHARES[lvl]) < 1
    assert level_quotas(24, "a") == level_quotas(24, "a")
    # summed over many repositories the rounding does not lean one way: the shares match the paper's
    runs = [level_quotas(24, f"0:repo{i}") for i in range(400)]
    for lvl in LEVELS:
        mean = sum(q[lvl] for q in runs) / len(runs)
        assert mean == pytest.approx(24 * PAPER_SHARES[lvl], abs=0.06), lvl
    with pytest.raises(ValueError):
        level_quotas(-1, "x")


def test_quotas_are_filled_level_by_level_without_verifying_everything():
    cands = [cand(lvl, i) for lvl in LEVELS for i in range(30)]
    verify = Verifier({"random": 3, "expression": 1, "statement": 2, "block": 2})
    quotas = {"random": 2, "expression": 8, "statement": 6, "block": 8}
    res = verify_to_quotas(cands, quotas, verify, batch=4)
    kept_levels = {lvl: sum(s.fill_type == FILL_OF[lvl] for s in res.kept) for lvl in LEVELS}
    assert kept_levels == quotas and res.report["short_levels"] == {}
    ids = {s.sample_id for s in res.kept}
    assert [s.sample_id for s in res.kept] == [s.sample_id for s in cands if s.sample_id in ids]  # candidate order
    assert all(s.judged_tests == (f"t.py::t{int(s.sample_id[3:])}",) for s in res.kept)  # the verified samples
    assert len(verify.seen) == len(set(verify.seen)) < len(cands)  # nothing twice, not everything
    assert len(res.outcomes) == len(verify.seen) and res.report["verified_per_level"]["random"] >= 4
    # deterministic
    again = verify_to_quotas(cands, quotas, Verifier(verify.every), batch=4)
    assert [s.sample_id for s in again.kept] == [s.sample_id for s in res.kept]


def test_a_short_level_gets_more_candidates():
    cands = [cand(lvl, i) for lvl in LEVELS for i in range(1, 12)] + [cand("random", 0)]
    verify = Verifier({"random": 5, "expression": 1, "statement": 1, "block": 1})
    asked = []

    def more(needs, round_):
        asked.append((dict(needs), round_))
        return [cand("random", i) for i in range(100 * round_, 100 * round_ + 20)] + [cands[0]]  # + a duplicate

    res = verify_to_quotas(cands, {"random": 4, "expression": 3, "statement": 3, "block": 3}, verify, more=more)
    assert asked[0] == ({"random": 1}, 1)  # random 0, 5, 10 of the first twelve verify; one more is needed
    assert sum(s.fill_type == FILL_SPAN for s in res.kept) == 4 and len(res.kept) == 13
    assert res.report["extra_rounds"] == len(asked) and res.report["extra_candidates"] == 20 * len(asked)


def test_an_exhausted_level_leaves_its_slots_to_the_others():
    cands = [cand(lvl, i) for lvl in LEVELS for i in range(10)]
    verify = Verifier({"random": 0, "expression": 1, "statement": 1, "block": 1})  # no random survives
    res = verify_to_quotas(cands, {"random": 2, "expression": 8, "statement": 6, "block": 8}, verify,
                           more=lambda needs, r: [], max_extra_rounds=2)
    counts = {lvl: sum(s.fill_type == FILL_OF[lvl] for s in res.kept) for lvl in LEVELS}
    assert len(res.kept) == 24 and counts["random"] == 0 and res.report["short_levels"] == {"random": 2}
    assert counts == res.report["kept_per_level"] and sum(counts.values()) == 24
    # the two slots went to the levels furthest below their expected counts (24 x paper share)
    assert counts == {"random": 0, "expression": 9, "statement": 6, "block": 9}


def test_whole_suite_candidates_are_a_reserve_verified_only_when_a_level_is_short():
    suite = lambda lvl, i: replace(cand(lvl, i), selection_rule="suite")  # noqa: E731 - no test ran the code
    cands = [suite(lvl, i) for lvl in LEVELS for i in range(0, 10)] + \
        [cand(lvl, i) for lvl in LEVELS for i in range(10, 20)]
    verify = Verifier(dict.fromkeys(LEVELS, 1))
    asked = []
    res = verify_to_quotas(cands, {"random": 1, "expression": 3, "statement": 2, "block": 3}, verify,
                           more=lambda needs, r: asked.append(needs) or [])
    assert len(res.kept) == 9 and not asked  # enough without them: not one whole-suite candidate verified
    assert all(int(s[3:]) >= 10 for s in verify.seen)
    # a level short after the extra rounds (none of its covered candidates verify) falls back on the reserve
    verify = Verifier({"random": 1, "expression": 1, "statement": 1, "block": 7})
    res = verify_to_quotas(cands, {"random": 1, "expression": 3, "statement": 2, "block": 3}, verify,
                           more=lambda needs, r: asked.append(dict(needs)) or [], max_extra_rounds=1)
    assert asked == [{"block": 2}]  # masking more came first
    reserved = [s for s in verify.seen if s.startswith("blo") and int(s[3:]) < 10]
    assert reserved and verify.seen.index(reserved[0]) > max(verify.seen.index(s) for s in verify.seen
                                                            if int(s[3:]) >= 10)
    assert sum(s.fill_type == FILL_BLOCK for s in res.kept) == 3 and res.report["short_levels"] == {}


def test_candidates_whose_tests_run_the_masked_code_come_first_and_importers_ones_after_masking_more():
    rule = lambda lvl, i, r: replace(cand(lvl, i), selection_rule=r)  # noqa: E731
    cands = [rule(lvl, i, "importers") for lvl in LEVELS for i in range(0, 10)] + \
        [rule(lvl, i, "coverage") for lvl in LEVELS for i in range(10, 14)] + \
        [rule(lvl, i, "suite") for lvl in LEVELS for i in range(30, 34)]
    verify = Verifier(dict.fromkeys(LEVELS, 2))  # half verify
    asked = []
    res = verify_to_quotas(cands, {"random": 1, "expression": 3, "statement": 2, "block": 3}, verify,
                           more=lambda needs, r: asked.append((r, dict(needs))) or [])
    kind = lambda s: "coverage" if 10 <= int(s[3:]) < 14 else "importers" if int(s[3:]) < 10 else "suite"  # noqa: E731
    for lvl in LEVELS:
        seen = [kind(s) for s in verify.seen if s.startswith(lvl[:3])]
        assert seen == sorted(seen, key=["coverage", "importers", "suite"].index), (lvl, seen)
        assert "suite" not in seen  # the importers tier was enough
    # random (quota 1) and statement (quota 2) are met by their covered candidates alone
    assert all(kind(s) == "coverage" for s in verify.seen if s[:3] in ("ran", "sta"))
    # expression and block need a third: masking more is asked for first (twice), then the importers tier
    assert asked == [(1, {"expression": 1, "block": 1}), (2, {"expression": 1, "block": 1})]
    assert any(kind(s) == "importers" for s in verify.seen if s.startswith("blo"))
    assert len(res.kept) == 9 and res.report["short_levels"] == {}


def test_extra_candidates_whose_tests_run_the_masked_code_come_before_the_importers_tier():
    rule = lambda lvl, i, r: replace(cand(lvl, i), selection_rule=r)  # noqa: E731
    cands = [rule("block", i, "importers") for i in range(0, 10)] + [rule("block", i, "coverage") for i in range(10, 12)]
    extra = [rule("block", i, "coverage") for i in range(20, 30)]
    verify = Verifier(dict.fromkeys(LEVELS, 1))
    res = verify_to_quotas(cands, {"random": 0, "expression": 0, "statement": 0, "block": 4}, verify,
                           more=lambda needs, r: extra if r == 1 else [])
    assert len(res.kept) == 4 and all(int(s[3:]) >= 10 for s in verify.seen)  # no importers candidate verified
    assert res.report["extra_rounds"] == 1 and res.report["extra_candidates"] == 10


def test_too_few_candidates_keep_what_verifies():
    cands = [cand("expression", i) for i in range(3)] + [cand("random", 0, FILL_MULTI_LINE)]
    res = verify_to_quotas(cands, {"random": 1, "expression": 2, "statement": 2, "block": 2},
                           Verifier(dict.fromkeys(LEVELS, 1)))
    assert len(res.kept) == 4 and res.report["short_levels"] == {"statement": 2, "block": 2}


def test_the_kept_mix_of_many_repositories_is_within_tolerance_of_the_paper():
    """50 repositories of 24: levels verify at very different rates, yet the kept mix stays near the paper's."""
    per_fill = dict.fromkeys(FILL_OF.values(), 0)
    for r in range(50):
        cands = [cand(lvl, i) for lvl in LEVELS for i in range(40 if lvl != "random" else 8)]
        verify = Verifier({"random": 2, "expression": 3, "statement": 2, "block": 1})
        res = verify_to_quotas(cands, level_quotas(24, f"0:repo{r}"), verify)
        for s in res.kept:
            per_fill[s.fill_type] += 1
    assert sum(per_fill.values()) == 1200
    assert mix_within_tolerance(per_fill, MIX_TOLERANCE_PP) and mix_within_tolerance(per_fill, 1.0)


def test_level_mask_draws_only_that_levels_kinds():
    base = MaskConfig(samples_per_repo=24)
    assert level_mask(base, "random", 9).mix == {"single_line": 1, "multi_line": 1, "span": 1}
    blocks = level_mask(base, "block", 9)
    assert blocks.samples_per_repo == 9 and blocks.mix == {"grammar": 1}
    assert {CATEGORY_LEVEL[c] for c in blocks.category_weights} == {"block"}
