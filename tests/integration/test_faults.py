"""Fault injection: one repository or one judgement that fails is a reported harness error, and the
rest of the build or evaluation completes with correct results; nothing unverified is shipped."""
import json

import pytest

import execrepobench.builder.pipeline as pipeline_module
from conftest import make_sample
from execrepobench.builder.build import BuildConfig, build
from execrepobench.builder.sources.manifest import parse_manifest
from execrepobench.runner import cli
from execrepobench_dataset.record import read_jsonl, write_jsonl
from execrepobench_metric import api
from execrepobench_metric.execution.engine import EngineConfig, judge_all
from fixture_repos import write_repo

pytestmark = pytest.mark.sandbox
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
SLUG_TESTS = ("tests/test_strings.py::test_slugify", "tests/test_strings.py::test_slugger_unique")
BOOM = "return slug  # boom"
NO_COVERAGE_DATA = '''import os, sys


def pytest_unconfigure(config):
    cov = sys.modules.get("coverage")
    current = cov.Coverage.current() if cov is not None else None
    if current is not None:  # under `coverage run` only: its data file is gone and it never saves again
        current.stop()
        for suffix in ("", "-journal"):
            if os.path.exists(current.config.data_file + suffix):
                os.remove(current.config.data_file + suffix)
        os._exit(0)
'''


@pytest.mark.slow
def test_a_repository_failing_at_each_phase_ships_nothing(tmp_path, monkeypatch):
    repos = {
        "good": write_repo(tmp_path / "good", "good"),
        "printer": write_repo(tmp_path / "printer", "printer",  # prints at import: broke the import probe
                              files={"printer/__init__.py": 'print("hello from printer", flush=True)\n'
                                                            "from .core import add, describe, scale  # noqa\n"}),
        "envfail": write_repo(tmp_path / "envfail", "envfail", files={"pyproject.toml": (
            '[build-system]\nrequires = []\nbuild-backend = "no_such_backend_anywhere"\n'
            '[project]\nname = "envfail"\nversion = "0"\n')}),
        "basefail": write_repo(tmp_path / "basefail", "basefail",
                               tests={"tests/test_bad.py": "def test_bad():\n    assert False\n"}),
        "slow": write_repo(tmp_path / "slow", "slow", tests={
            "tests/test_slow.py": "import time\n\n\ndef test_slow():\n    time.sleep(120)\n"}),
        "covfail": write_repo(tmp_path / "covfail", "covfail", files={"conftest.py": NO_COVERAGE_DATA}),
        "verifyfail": write_repo(tmp_path / "verifyfail", "verifyfail"),
    }
    text = "[defaults]\nsamples_per_repo = 2\n" + "".join(
        f'[[repo]]\nsource = "path:{root}"\nname = "{name}"\n' for name, root in repos.items())
    text += f'[[repo]]\nsource = "git:{tmp_path / "nowhere.git"}@{"0" * 40}"\nname = "nosource"\n'
    real_verify = pipeline_module.verify_repo

    def verify_or_break(samples, *args, **kwargs):
        if samples and samples[0].repo_name == "verifyfail":
            raise RuntimeError("injected verification failure")
        return real_verify(samples, *args, **kwargs)

    monkeypatch.setattr(pipeline_module, "verify_repo", verify_or_break)
    out = tmp_path / "out"
    summary = build(BuildConfig(manifest=parse_manifest(text, tmp_path), out=out, baseline_runs=1, gt_runs=1,
                                baseline_timeout_s=20, progress=False))
    by = {r["repo"]: r for r in summary["repos"]}
    assert by["good"]["status"] == "ok" and by["printer"]["status"] == "ok", (by["good"], by["printer"])
    assert by["printer"]["baseline"]["import_check"] == {"printer": "printer/__init__.py"}
    expected = {"nosource": "source", "envfail": "environment", "basefail": "baseline", "slow": "baseline",
                "covfail": "coverage", "verifyfail": "verification"}
    for name, phase in expected.items():
        rep = by[name]
        assert (rep["status"], rep["phase"]) == ("error", phase), rep
        assert rep["samples"] == 0 and list(read_jsonl(out / "repos" / name / "samples.jsonl")) == []
    assert "timed out" in by["slow"]["reason"] and "no coverage data" in by["covfail"]["reason"]
    assert "coverage run failed" in by["covfail"]["reason"]  # the baseline's coverage run, named as such
    assert "injected verification failure" in by["verifyfail"]["reason"] and "Traceback" in by["verifyfail"]["traceback"]
    assert "traceback" not in by["basefail"]  # an expected error says it all
    shipped = list(read_jsonl(out / "samples.jsonl"))
    assert {s.repo_name for s in shipped} == {"good", "printer"}
    assert len(shipped) == by["good"]["samples"] + by["printer"]["samples"]
    assert all(s.judged_tests and s.selection_rule for s in shipped)  # every shipped record was verified
    totals = summary["totals"]
    assert totals["repos_error"] == 6 and totals["errors_by_phase"]["baseline"] == 2
    assert totals["samples"] == len(shipped)
    assert cli.build_exit_code(summary) == cli.HARNESS_ERROR_EXIT
    assert "6 repositories failed" in (out / "build_report.md").read_text()


@pytest.fixture(scope="module")
def faulty(built_minirepo):
    import dataclasses

    gold = make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)
    slug = make_sample(built_minirepo, "minirepo/strings.py", "return slug[:limit]",
                       fill_type="Random Single-line Completion", judged=SLUG_TESTS)
    malformed = dataclasses.replace(slug, sample_id="malformed-command", test_command=("make", "test"))
    return gold, slug, malformed


@pytest.fixture()
def raising_judge(monkeypatch):
    """The judge raises for the completion "return slug  # boom" (fault injection)."""
    import execrepobench_metric.execution.judge as judge_module

    real = judge_module.judge

    def judge_or_raise(sample, completion, config, evidence=None, budget=None):
        if completion == BOOM:
            raise RuntimeError("injected judge failure")
        return real(sample, completion, config, evidence, budget)

    monkeypatch.setattr(judge_module, "judge", judge_or_raise)
    return lambda: monkeypatch.setattr(judge_module, "judge", real)


def test_a_raising_judge_is_a_harness_error_and_the_rest_is_judged(faulty, raising_judge, tmp_path):
    gold, slug, _ = faulty
    preds = [[gold.middle_code, "return low"], [BOOM, slug.middle_code]]
    journal = tmp_path / "journal.jsonl"
    with pytest.raises(api.HarnessError, match="1 of 4 judgement") as info:
        api.compute(preds, [gold, slug], allow_exec=True, progress=False, use_cache=False, journal=journal,
                    artifacts_dir=tmp_path / "artifacts", num_workers=2)
    result = info.value.result
    assert result["harness_errors"] == 1 and result["verdicts/passed"] == 2 and result["verdicts/failed"] == 1
    rows = {(d["sample_id"], d["completion_index"]): d for d in result["details"]}
    assert rows[(gold.sample_id, 0)]["passed"] and rows[(slug.sample_id, 1)]["passed"]
    assert rows[(gold.sample_id, 1)]["reason"] == "failed" and not rows[(gold.sample_id, 1)]["harness_error"]
    row = rows[(slug.sample_id, 0)]
    assert row["reason"] == "error" and row["harness_error"] and "RuntimeError: injected judge failure" in row["detail"]
    folder = tmp_path / row["artifacts"]
    assert folder.parent.parent == tmp_path / "artifacts" and "Traceback" in (folder / "traceback.txt").read_text()
    assert json.loads((folder / "verdict.json").read_text())["reason"] == "error"
    assert not rows[(gold.sample_id, 0)]["artifacts"]  # kept only for errors unless asked
    # errors are not journalled: the next run keeps the finished verdicts and retries the error
    assert {json.loads(line)["verdict"]["reason"] for line in journal.read_text().splitlines()} == {"passed", "failed"}
    raising_judge()  # the fault is gone
    again = api.compute(preds, [gold, slug], allow_exec=True, progress=False, use_cache=False, journal=journal)
    assert again["harness_errors"] == 0 and again["verdicts/failed"] == 2 and again["verdicts/passed"] == 2


def test_a_malformed_test_command_is_an_error_verdict(faulty, tmp_path):
    """compute() refuses such a sample before judging (InputError); the engine, which judges whatever
    it is given, turns it into an `error` verdict and judges the others."""
    gold, _, malformed = faulty
    with pytest.raises(api.InputError, match="test_command"):
        api.compute([gold.middle_code, malformed.middle_code], [gold, malformed], allow_exec=True, progress=False)
    config = EngineConfig(allow_exec=True, use_cache=False, progress=False, artifacts=tmp_path / "ev")
    verdicts, _ = judge_all([gold, malformed], [[gold.middle_code], [malformed.middle_code]], config)
    assert verdicts[0][0].passed
    bad = verdicts[1][0]
    assert bad.reason == "error" and "does not start with" in bad.detail and bad.artifacts.startswith("ev/")
    assert "ValueError" in (tmp_path / bad.artifacts / "traceback.txt").read_text()


def test_keep_artifacts_records_every_run(faulty, tmp_path):
    gold, _, _ = faulty
    out = api.compute([[gold.middle_code, "return low", gold.middle_code]], [gold], allow_exec=True, progress=False,
                      keep_artifacts=True, artifacts_dir=tmp_path / "ev", use_cache=False)
    rows = out["details"]
    assert out["harness_errors"] == 0 and [d["artifacts"] for d in rows] == [f"ev/{gold.sample_id}/{j}" for j in range(3)]
    for row in rows:
        folder = tmp_path / row["artifacts"]
        names = {p.name for p in folder.iterdir()}
        assert {"command.json", "junit.xml", "collected.json", "collected.json.done", "stdout.txt", "stderr.txt",
                "run.json", "verdict.json", "completion.txt"} <= names, names
        command = json.loads((folder / "command.json").read_text())
        assert command["isolation"] == "bwrap" and "-m" in command["argv"] and "--junitxml" in " ".join(command["argv"])
        verdict = json.loads((folder / "verdict.json").read_text())
        assert verdict["env_key"] == gold.env_key and verdict["completion_index"] == int(folder.name)
        assert verdict["passed"] == row["passed"]
        done = json.loads((folder / "collected.json.done").read_text())
        assert isinstance(done["cpu_s"], float) and 0 < done["cpu_s"] < 60  # the run's own CPU (benchmarks)
    assert (tmp_path / rows[1]["artifacts"] / "completion.txt").read_text() == "return low"


def test_cli_evaluate_writes_rows_and_exits_3_on_harness_errors(faulty, raising_judge, tmp_path, capsys):
    gold, slug, _ = faulty
    write_jsonl([gold, slug], tmp_path / "samples.jsonl")
    (tmp_path / "preds.jsonl").write_text(json.dumps({"sample_id": gold.sample_id, "completion": gold.middle_code})
                                          + "\n" + json.dumps({"sample_id": slug.sample_id, "completion": BOOM}) + "\n")
    out = tmp_path / "res"
    out.mkdir()
    (out / "metrics.json").write_text("{}")  # from an earlier run: must not survive as this run's score
    rc = cli.main(["evaluate", "--samples", str(tmp_path / "samples.jsonl"), "--predictions",
                   str(tmp_path / "preds.jsonl"), "--out", str(out), "--allow-exec", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 3 and "HARNESS ERRORS: 1 of 2" in err and "No score" in err
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["harness_error"] for r in rows] == [False, True] and rows[0]["passed"]
    assert (out / rows[1]["artifacts"] / "verdict.json").is_file() and rows[1]["artifacts"].startswith("artifacts/")
    assert not (out / "metrics.json").exists() and not (out / "latex.txt").exists()
