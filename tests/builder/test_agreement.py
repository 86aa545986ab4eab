"""Selection safety: verdicts with the selected tests equal verdicts with the whole suite."""
import pytest

from conftest import make_sample
from agreement import agreement, mutants  # benchmarks/
from execrepobench_metric.execution.verdict import JudgeConfig

needs_bwrap = pytest.mark.sandbox


def test_mutants_differ_and_compile(built_minirepo):
    s = make_sample(built_minirepo, "minirepo/mathx.py", "return total / len(values)")
    kinds = dict(mutants(s, limit=10))
    assert "flip_arith" not in kinds or kinds["flip_arith"] != s.middle_code
    assert all(v != s.middle_code for v in kinds.values()) and len(kinds) >= 1
    s2 = make_sample(built_minirepo, "minirepo/mathx.py", "result.append(acc)")
    assert all(v != s2.middle_code for _, v in mutants(s2))


@needs_bwrap
def test_agreement_on_fixture_samples(built_minirepo):
    samples = [
        make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                    judged=("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")),
        make_sample(built_minirepo, "minirepo/mathx.py", "acc += value", judged=("tests/test_mathx.py::test_running_total",)),
    ]
    report = agreement(samples, JudgeConfig(timeout_s=60), workers=2, progress=False)
    assert report["comparisons"] >= 4 and report["agreement"] == 1.0, report["disagreements"]


@needs_bwrap
@pytest.mark.pypi
def test_agreement_on_a_real_repository(tmp_path, cache_dir):
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import parse_manifest
    from execrepobench_dataset.record import read_jsonl

    text = '[[repo]]\nsource = "pypi:toolz==1.2.0"\ntest_paths = ["toolz/tests"]\nsamples_per_repo = 4\n'
    summary = build(BuildConfig(manifest=parse_manifest(text, tmp_path), out=tmp_path / "out", progress=False))
    assert summary["repos"][0]["status"] == "ok", summary["repos"][0]
    samples = list(read_jsonl(tmp_path / "out" / "samples.jsonl"))
    assert samples
    report = agreement(samples, JudgeConfig(timeout_s=120), workers=2, progress=False)
    assert report["comparisons"] >= 2 * len(samples)
    assert report["agreement"] >= 0.99, report["disagreements"]
