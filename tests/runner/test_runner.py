"""Runner: backends registry, the offline baseline, resumable generation, post-processing, `run`."""
import json
import re

import pytest

from conftest import make_sample
from execrepobench.runner.backends.base import get_backend
from execrepobench.runner.backends.baseline import complete
from execrepobench.runner.generate import GenerateConfig, GenerationsMismatch, generate, read_generations
from execrepobench_dataset.errors import UsageError
from execrepobench.runner.postprocess import clean
from execrepobench_dataset.record import ContextFile


LINE = {"fill_type": "Random Single-line Completion", "node_type": "line", "sample_id": "s",
        "repo_source": "path:/r#tree=0", "builder_version": "t"}  # the baseline backend's samples below


def test_unknown_backend_lists_available():
    with pytest.raises(ValueError, match="unknown backend 'gpt'.*baseline.*null.*oracle"):
        get_backend("gpt")


def test_baseline_continues_the_best_matching_repository_line():
    ctx = [ContextFile("a.py", "def area(r):\n    r2 = r * r\n    return 3.14159 * r2\n")]
    s = make_sample(middle="return 3.14159 * r2", prefix_code="def area2(r):\n    r2 = r * r\n    ",
                    context_code=tuple(ctx), **LINE)
    assert complete(s) == "return 3.14159 * r2"
    partial = make_sample(middle="14159 * r2", prefix_code="def area2(r):\n    r2 = r * r\n    return 3.",
                          context_code=tuple(ctx), **LINE)
    assert complete(partial) == "14159 * r2"
    unknown = make_sample(middle="zzz_unknown()", prefix_code="x = 1\n", **LINE)
    assert complete(unknown) in ("", "x = 1")  # nothing better: a floor


@pytest.mark.parametrize("raw, stops, expected", [
    ("return x\n<|file_sep|>junk", ["<|file_sep|>"], "return x\n"),
    ("```python\nreturn x\n```\nexplanation", [], "return x"),
    ("a<|endoftext|>b<|file_sep|>", ["<|file_sep|>", "<|endoftext|>"], "a"),
    ("plain", [], "plain"),
])
def test_postprocess(raw, stops, expected):
    assert clean(raw, stops) == expected


def test_generation_resumes_without_duplicates(built_minirepo, tmp_path):
    samples = [make_sample(built_minirepo, "minirepo/mathx.py", "return value"),
               make_sample(built_minirepo, "minirepo/mathx.py", "acc += value")]
    out = tmp_path / "gen.jsonl"
    oracle = get_backend("oracle")
    assert generate(samples[:1], oracle, out, GenerateConfig(progress=False)) == 1
    with out.open("a") as fh:
        fh.write('{"sample_id": "cut-by-an-interrupt"')  # a half-written last line
        fh.write("\n")
    assert generate(samples, oracle, out, GenerateConfig(progress=False)) == 1  # only the missing one
    assert read_generations(out, samples) == [["return value"], ["acc += value"]]
    # another backend, n or sampling: not this run's completions - refused, naming what differs, file unchanged
    before = out.read_text()
    cases = ((get_backend("null"), GenerateConfig(progress=False), "backend 'oracle' (this run: 'null')"),
             (oracle, GenerateConfig(n=2, progress=False), "n 1 (this run: 2)"),
             (oracle, GenerateConfig(sampling={"temperature": 0.8}, progress=False), "sampling {}"))
    for other, config, said in cases:
        with pytest.raises(GenerationsMismatch, match=re.escape(said)):
            generate(samples, other, out, config)
    assert out.read_text() == before
    with pytest.raises(UsageError, match="--n must be at least 1"):
        generate(samples, oracle, tmp_path / "n0.jsonl", GenerateConfig(n=0, progress=False))
    assert not (tmp_path / "n0.jsonl").exists()
    with pytest.raises(ValueError, match="no generation for 1 sample"):
        read_generations(out, samples + [make_sample(built_minirepo, "minirepo/mathx.py", "return low")])


@pytest.mark.sandbox
def test_run_command_end_to_end(built_minirepo, tmp_path):
    from execrepobench.runner.cli import main
    from execrepobench_dataset.record import write_jsonl

    samples = [make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                           judged=("tests/test_mathx.py::test_clamp_inside",))]
    write_jsonl(samples, tmp_path / "samples.jsonl")
    rc = main(["run", "--samples", str(tmp_path / "samples.jsonl"), "--backend", "oracle", "--out",
               str(tmp_path / "res"), "--allow-exec", "--no-progress"])
    assert rc == 0
    metrics = json.loads((tmp_path / "res" / "metrics.json").read_text())
    assert metrics["pass@1"] == 1.0
    assert (tmp_path / "res" / "chart.png").read_bytes()[:4] == b"\x89PNG"
    assert len((tmp_path / "res" / "results.jsonl").read_text().splitlines()) == 1
    assert main(["run", "--samples", str(tmp_path / "samples.jsonl"), "--backend", "nope",
                 "--out", str(tmp_path / "r2")]) == 2


def test_the_canary_line_names_passed_runs_only():
    """A failed run needs no canary (one stopped at its first failure has the check off): the table says
    nothing of it; a passed run judged without the check is named."""
    from execrepobench.runner.report import table

    base = {"n_samples": 3, "n_completions": 3, "es": 0.5, "pass@1": 1 / 3, "verdicts/passed": 1,
            "verdicts/failed": 2, "sandbox": "bwrap", "canaries": {"held": 1, "off": 2}}
    quiet = table({**base, "canaries_passed": {"held": 1}}, (1,))
    assert "canary" not in quiet and "verdicts: {'passed': 1, 'failed': 2}" in quiet
    said = table({**base, "canaries": {"off": 3}, "canaries_passed": {"off": 1}}, (1,))
    assert "canary check off in 1 passed run(s)" in said
