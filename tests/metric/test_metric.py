"""The metric as users call it: `evaluate.load(folder)` offline, `compute()`, and a real PyPI repo."""
import dataclasses
import doctest
from pathlib import Path

import pytest

from conftest import make_sample
from execrepobench_dataset.record import read_jsonl, write_jsonl
from execrepobench_metric import api
from execrepobench_metric.environments.venvs import find_environment
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.sandbox import Isolation, SandboxUnavailable, decide_isolation
from execrepobench_metric.execution.verdict import JudgeConfig

METRIC_DIR = Path(__file__).parents[2] / "execrepobench_metric"
needs_bwrap = pytest.mark.sandbox
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")


@pytest.fixture(scope="module")
def two_samples(built_minirepo):
    clamp = make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)
    slug = make_sample(built_minirepo, "minirepo/strings.py", "return slug[:limit]",
                       judged=("tests/test_strings.py::test_slugify",), fill_type="Random Single-line Completion")
    return [clamp, slug]


@needs_bwrap
def test_evaluate_load_offline(two_samples, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    import evaluate

    metric = evaluate.load(str(METRIC_DIR))
    preds = [[two_samples[0].middle_code, "return low"], [two_samples[1].middle_code, "return slug"]]
    out, report = metric.compute(predictions=preds, references=[s.to_dict() for s in two_samples], k=[1, 2],
                                 allow_exec=True, num_workers=2, return_details=True)
    assert out["pass@1"] == 0.5 and out["pass@2"] == 1.0
    assert out["pass@1/grammar-based: statement"] == 0.5 and out["pass@1/Random Single-line Completion"] == 0.5
    assert out["verdicts/passed"] == 2 and out["verdicts/failed"] == 2 and report["sandbox"] == "bwrap"
    assert out["es"] < 1.0 and out["pass@1/repo/minirepo"] == 0.5
    assert all(isinstance(v, (int, float)) for v in out.values()), out  # scores only, apart from the report
    wrong = [d for d in report["details"] if not d["passed"]]
    assert {d["completion_index"] for d in wrong} == {1} and all(d["failing_tests"] for d in wrong)
    assert report["latex"].endswith(f"& {100 * out['es']:.1f} & 50.0 \\\\")  # percent, as the paper prints it


CODE_EVAL_SHAPED = '''"""A metric shaped like evaluate's code_eval (its features and its compute arguments, nothing else)."""
import json

import datasets
import evaluate


class FirstMatch(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(description="first completion equals the masked code", citation="",
                                   inputs_description="", features=datasets.Features({
                                       "predictions": datasets.Sequence(datasets.Value("string")),
                                       "references": datasets.Value("string")}))

    def _compute(self, predictions, references, k=[1, 10, 100], num_workers=4, timeout=3.0):
        hits = [p[0] == json.loads(r)["middle_code"] for p, r in zip(predictions, references)]
        return {"first_match": sum(hits) / len(hits)}
'''


@needs_bwrap
def test_code_eval_habits_hf_allow_code_eval_and_combine(two_samples, tmp_path, monkeypatch, offline_hf):
    """Only HF_ALLOW_CODE_EVAL=1 set (no allow_exec): evaluate.load(folder).compute gives 0..1 scores, and the
    module works inside evaluate.combine next to a code_eval-shaped metric with code_eval's arguments."""
    import json

    import evaluate

    monkeypatch.delenv("EXECREPOBENCH_ALLOW_EXEC", raising=False)
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "1")
    refs = [json.dumps(s.to_dict()) for s in two_samples]  # the records' JSON text: every metric takes it
    preds = [[two_samples[0].middle_code], ["return slug"]]
    metric = evaluate.load(str(METRIC_DIR))
    scores = metric.compute(predictions=preds, references=refs, k=[1])
    assert scores["pass@1"] == 0.5 and 0 < scores["es"] < 1 and "details" not in scores
    (tmp_path / "first_match").mkdir()
    (tmp_path / "first_match" / "first_match.py").write_text(CODE_EVAL_SHAPED)
    combined = evaluate.combine([metric, evaluate.load(str(tmp_path / "first_match"))])
    out = combined.compute(predictions=preds, references=refs, k=[1], num_workers=2, timeout=120.0)
    assert out["first_match"] == 0.5 and out["pass@1"] == 0.5 and out["verdicts/failed"] == 1
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "0")
    from execrepobench_metric.execution.engine import ExecutionNotAllowed

    with pytest.raises(ExecutionNotAllowed, match="HF_ALLOW_CODE_EVAL=1"):
        metric.compute(predictions=preds, references=refs)


@needs_bwrap
def test_compute_by_sample_id_and_bad_input(two_samples, tmp_path):
    write_jsonl(two_samples, tmp_path / "samples.jsonl")
    ids = [s.sample_id for s in two_samples]
    out = api.compute([s.middle_code for s in two_samples], ids, dataset=tmp_path, allow_exec=True,
                      progress=False)
    assert out["pass@1"] == 1.0
    with pytest.raises(api.InputError, match="reference 1 \\(sample nope\\), field sample_id: unknown sample id"):
        api.compute(["a", "b"], [ids[0], "nope"], dataset=tmp_path, allow_exec=True)
    with pytest.raises(ValueError, match="reference 0 .*no dataset"):
        api.compute(["a"], [ids[0]], allow_exec=True)
    with pytest.raises(api.InputError, match=f"prediction 1 \\(sample {ids[1]}\\), field predictions: expected a str"):
        api.compute(["a", None], ids, dataset=tmp_path, allow_exec=True)
    with pytest.raises(ValueError, match="test_selection"):
        api.compute(["a"], ids[:1], dataset=tmp_path, test_selection="some")
    bad = two_samples[0].to_dict()
    bad["fill_type"] = "Random Line"
    with pytest.raises(ValueError, match="reference 0 .*field fill_type"):
        api.compute(["a"], [bad], allow_exec=True)


def test_weak_mode_only_when_accepted(two_samples, monkeypatch):
    import execrepobench_metric.execution.sandbox as sandbox

    monkeypatch.setattr(sandbox, "strong_available", lambda: "`bwrap` not found")
    with pytest.raises(SandboxUnavailable, match="bwrap"):
        decide_isolation(allow_weak=False)
    mode, note = decide_isolation(allow_weak=True)
    assert mode is Isolation.WEAK and "WEAK SANDBOX" in note
    clamp = two_samples[0]
    root = find_environment(clamp.env_key).root
    before = (root / clamp.file_name).read_text()
    weak = JudgeConfig(isolation=Isolation.WEAK, timeout_s=60)
    assert judge(clamp, clamp.middle_code, weak).passed
    assert not judge(clamp, "return value * 3", weak).passed
    assert (root / clamp.file_name).read_text() == before


def test_module_docstring_examples():
    import execrepobench_metric.evaluate_module as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 1 and result.failed == 0


@needs_bwrap
@pytest.mark.pypi
def test_real_pypi_repo_judges_the_completed_file(tmp_path, cache_dir):
    """isodate (src/ layout, editable install): a fill that breaks the package must fail, the gold pass."""
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import parse_manifest

    text = '[[repo]]\nsource = "pypi:isodate==0.7.2"\nsamples_per_repo = 3\n'
    build(BuildConfig(manifest=parse_manifest(text, tmp_path), out=tmp_path / "out", baseline_runs=1,
                      progress=False))
    samples = list(read_jsonl(tmp_path / "out" / "samples.jsonl"))
    out = api.compute([s.middle_code for s in samples], samples, allow_exec=True, progress=False,
                      use_cache=False)
    assert out["pass@1"] == 1.0, [d for d in out["details"] if not d["passed"]]
    # Mask the first import of the package's __init__: a broken fill breaks every test's import.
    init = next(s for s in samples)  # any sample gives the env and test command
    root = find_environment(init.env_key).root
    text_init = (root / "src/isodate/__init__.py").read_text()
    line = next(ln for ln in text_init.splitlines() if ln.startswith("from isodate."))
    start = text_init.index(line)
    context = [(c, score) for c, score in zip(init.context_paths, init.context_scores)
               if c != "src/isodate/__init__.py"]  # a sample's context never names its own file
    masked = dataclasses.replace(
        init, sample_id="isodate-init", file_name="src/isodate/__init__.py", prefix_code=text_init[:start],
        middle_code=line, suffix_code=text_init[start + len(line):], middle_start_byte=len(text_init[:start].encode()),
        middle_end_byte=len(text_init[:start].encode()) + len(line.encode()), judged_tests=(),
        context_paths=tuple(c for c, _ in context), context_scores=tuple(s for _, s in context))
    conf = JudgeConfig(timeout_s=120)
    assert judge(masked, line, conf).passed
    broken = judge(masked, "raise RuntimeError('broken fill')", conf)
    assert not broken.passed and broken.reason == "failed"
