"""Mutation adequacy: mutants of the ground truth (pure) and their verdicts in verification (real sandbox)."""
import ast
from dataclasses import replace

import pytest

from conftest import make_sample
from execrepobench.builder.verification.mutants import mutants
from execrepobench.builder.settings import BuildSettings
from execrepobench.builder.verification.verify import verify_samples
from execrepobench_metric.execution.verdict import JudgeConfig

EDGES, INSIDE = "tests/test_mathx.py::test_clamp_edges", "tests/test_mathx.py::test_clamp_inside"


def test_mutants_stay_in_the_middle_compile_and_differ():
    s = make_sample(middle="if a < b and a > 0:\n        return a + 1\n    return b", prefix_code="def f(a, b):\n    ")
    found = mutants(s, limit=20)
    assert set(found) == {
        "if a <= b and a > 0:\n        return a + 1\n    return b",  # comparison swaps
        "if a < b and a >= 0:\n        return a + 1\n    return b",
        "if a < b or a > 0:\n        return a + 1\n    return b",  # boolean operator
        "if a < b and a > 1:\n        return a + 1\n    return b",  # off-by-one constants
        "if a < b and a > 0:\n        return a + 2\n    return b",
        "if a < b and a > 0:\n        return a - 1\n    return b",  # arithmetic
        "if not (a < b and a > 0):\n        return a + 1\n    return b",  # negated condition
        "if a < b and a > 0:\n        return None\n    return b",  # dropped return values
        "if a < b and a > 0:\n        return a + 1\n    return None"}
    original = ast.dump(ast.parse(s.original_code))
    for m in found:
        assert ast.dump(ast.parse(s.prefix_code + m + s.suffix_code)) != original
    assert mutants(s) == mutants(s) and len(mutants(s)) == 3 and set(mutants(s)) <= set(found)  # the same 3
    prefix_only = make_sample(middle="'text'", prefix_code="x = 1 + 2\ny = ")  # nothing in the middle to mutate
    assert mutants(prefix_only) == []


@pytest.mark.sandbox
def test_verification_counts_killed_mutants_and_drops_weak_tests(built_minirepo):
    # `value <= low` passes both clamp tests (none has value == low); negating the test or dropping the
    # return value fails them: 2 of 3 killed
    s = make_sample(built_minirepo, "minirepo/mathx.py", "if value < low:\n        return low",
                    judged=(INSIDE, EDGES), fill_type="grammar-based: block")
    assert len(mutants(s)) == 3
    conf = JudgeConfig(timeout_s=60)
    adequacy = BuildSettings(workers=1, gt_runs=1, progress=False, mutants=3, min_mutant_kill=0.5)
    (kept,) = verify_samples([s], conf, adequacy)
    assert kept.kept and (kept.sample.mutants_killed, kept.sample.mutants_total) == (2, 3), kept
    assert kept.mutant_runs == 3 and kept.mutant_s > 0  # what adequacy cost (the build report sums it)
    (weak,) = verify_samples([s], conf, replace(adequacy, min_mutant_kill=1.0))
    assert (weak.kept, weak.reason) == (False, "weak_tests") and "killed 2 of 3" in weak.detail, weak
    assert "value <= low" in weak.detail  # the surviving mutant, for a person to look at
    (off,) = verify_samples([s], conf, replace(adequacy, mutants=0))  # no mutants asked for
    assert off.kept and (off.sample.mutants_killed, off.sample.mutants_total) == (0, 0) and off.mutant_runs == 0


def test_build_report_gives_what_adequacy_cost():
    from execrepobench.builder.report import markdown, summarize
    from execrepobench.builder.sources.manifest import Manifest

    repos = [{"repo": "a", "status": "ok", "samples": 1, "null_runs_s": 10.0, "gt_runs_s": 20.0, "mutant_runs": 3,
              "mutant_runs_s": 6.0},
             {"repo": "b", "status": "ok", "samples": 1, "null_runs_s": 2.0, "gt_runs_s": 2.0}]  # built before
    summary = summarize(repos, Manifest(None, 0, 1, None, ()), "f")
    assert summary["totals"]["verify_run_s"] == {"null": 12.0, "gt": 22.0, "mutant": 6.0}
    assert summary["totals"]["mutant_runs"] == 3
    assert "Mutation adequacy: 3 mutant judgements, 6 run-seconds (15% of verification's 40" in markdown(summary)
