"""Environments made from repository records in another cache: `prepare`, the metric with environments
missing, tampered records, a failing gold check.  The fixture repository is a `path:` source, so the
other cache needs its snapshot copied in by hand (what the "not portable" message says)."""
import dataclasses
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from execrepobench.runner.cli import main
from execrepobench_dataset.record import read_jsonl, write_jsonl
from execrepobench_dataset.repo_record import read_repo_records, write_repo_records
from execrepobench_metric import api
from execrepobench_metric.environments.layout import CACHE_ENV_VAR, sources_dir
from execrepobench_metric.prepare import EnvironmentsMissing
from execrepobench_metric.environments.venvs import EnvError, ensure_environment, find_environment, lock_pins
from execrepobench_metric.execution.fills import null_fill

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The fixture repository built in its own cache A: (builder output folder, cache A)."""
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import parse_manifest

    base = tmp_path_factory.mktemp("prepare")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CACHE_ENV_VAR, str(base / "cacheA"))
        text = f'[[repo]]\nsource = "path:{FIXTURES / "minirepo"}"\nname = "minirepo"\nsamples_per_repo = 3\n'
        summary = build(BuildConfig(manifest=parse_manifest(text, base), out=base / "out", baseline_runs=1,
                                    progress=False, workers=2))
    assert summary["repos"][0]["status"] == "ok", summary["repos"][0]
    return base / "out", base / "cacheA"


def fresh_cache(monkeypatch, tmp_path, cache_a: Path | None = None) -> Path:
    """An empty cache at another path; with `cache_a`, the path source's snapshot is copied in by hand."""
    cache = tmp_path / "cacheB"
    monkeypatch.setenv(CACHE_ENV_VAR, str(cache))
    if cache_a is not None:
        for snap in (cache_a / "sources").glob("path-minirepo-*"):
            shutil.copytree(snap, sources_dir() / snap.name, symlinks=True)
    return cache


@pytest.mark.slow  # makes environments in a second cache (integration tier)
def test_prepare_makes_the_published_environment_in_another_cache(built, tmp_path, monkeypatch, capsys):
    out, cache_a = built
    samples = list(read_jsonl(out / "samples.jsonl"))
    (record,) = read_repo_records(out / "repositories.jsonl")
    assert record.key_matches and {s.env_key for s in samples} == {record.env_key}
    assert record.repo_source.startswith("path:minirepo#tree=") and record.lock and record.test_command
    cache = fresh_cache(monkeypatch, tmp_path)
    # The metric with the environment missing: one error naming the repository and the command, nothing judged.
    with pytest.raises(EnvironmentsMissing) as info:
        api.compute([s.middle_code for s in samples], samples, allow_exec=True, progress=False)
    message = str(info.value)
    assert "minirepo" in message and "execrepobench prepare --dataset DATASET --repo minirepo" in message
    with pytest.raises(EnvironmentsMissing, match=f"prepare --dataset {out} --repo minirepo"):
        api.compute([s.middle_code for s in samples], [s.sample_id for s in samples], dataset=out, allow_exec=True)
    assert not (cache / "results").exists() and not (cache / "envs").exists()
    # prepare: the path source is not in this cache -> not ready, said clearly, exit 1
    assert main(["prepare", "--dataset", str(out), "--no-progress"]) == 1
    said = capsys.readouterr().out
    assert "minirepo" in said and "NOT READY" in said and "not portable" in said
    # with the snapshot copied in, prepare makes the same environment key from the lock and gold-checks it
    fresh_cache(monkeypatch, tmp_path, cache_a)
    assert main(["prepare", "--dataset", str(out), "--no-progress", "--report", str(tmp_path / "st.json")]) == 0
    said = capsys.readouterr().out
    assert f"minirepo    {record.env_key}" in said and "ready" in said and "1/1 repositories ready" in said
    env = find_environment(record.env_key)
    assert env is not None and env.path.is_relative_to(cache) and env.root.is_relative_to(cache)
    assert lock_pins(env.freeze) == lock_pins(record.lock)  # exactly the locked versions
    # idempotent: a second run reuses it
    assert main(["prepare", "--dataset", str(out), "--repo", "minirepo", "--no-progress"]) == 0
    assert "ready (already prepared)" in capsys.readouterr().out
    gold = api.compute([s.middle_code for s in samples], samples, allow_exec=True, progress=False, use_cache=False)
    null = api.compute([null_fill(s) for s in samples], samples, allow_exec=True, progress=False, use_cache=False)
    assert gold["pass@1"] == 1.0 and null["pass@1"] == 0.0 and gold["verdicts/error"] == 0
    assert main(["prepare", "--dataset", str(out), "--repo", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err


@pytest.mark.slow  # makes environments in a second cache (integration tier)
def test_compute_prepares_when_asked(built, tmp_path, monkeypatch):
    out, cache_a = built
    samples = list(read_jsonl(out / "samples.jsonl"))
    fresh_cache(monkeypatch, tmp_path, cache_a)
    with pytest.raises(EnvironmentsMissing, match="prepare=True needs dataset="):
        api.compute([s.middle_code for s in samples], samples, allow_exec=True, prepare=True)
    monkeypatch.setenv("EXECREPOBENCH_PREPARE", "1")
    result = api.compute([s.middle_code for s in samples], [s.sample_id for s in samples], dataset=str(out),
                         allow_exec=True, progress=False)
    assert result["pass@1"] == 1.0 and find_environment(samples[0].env_key) is not None


def test_tampered_record_and_failing_gold_check(built, tmp_path, monkeypatch, capsys):
    out, cache_a = built
    (record,) = read_repo_records(out / "repositories.jsonl")
    fresh_cache(monkeypatch, tmp_path, cache_a)
    with pytest.raises(EnvError, match="minirepo: env_key .* is not the hash"):
        ensure_environment(dataclasses.replace(record, lock=record.lock[1:]))
    # a sample whose ground truth cannot pass (its judged test does not exist): the repository is not ready
    bad = tmp_path / "bad"
    bad.mkdir()
    samples = [dataclasses.replace(s, judged_tests=("tests/test_mathx.py::test_not_there",))
               for s in read_jsonl(out / "samples.jsonl")]
    write_jsonl(samples, bad / "samples.jsonl")
    write_repo_records([record], bad / "repositories.jsonl")
    assert main(["prepare", "--dataset", str(bad), "--gold-samples", "1", "--no-progress"]) == 1
    said = capsys.readouterr().out
    assert "NOT READY: gold check: the ground truth of sample" in said and "missing_tests" in said


def test_published_folder_names_no_machine_path(built, tmp_path):
    """A path: source used to leak its folder into pins, keys and the card: nothing of this machine is published."""
    from execrepobench_dataset.publish import publish

    out, cache_a = built
    publish(out, tmp_path / "published")
    files = [p for p in (tmp_path / "published").rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"README.md", "train-00000-of-00001.parquet"}
    for path in files:
        data = path.read_bytes()
        for needle in (str(cache_a), str(Path(__file__).resolve().parents[2]), str(out), str(tmp_path),
                       "/tmp/pytest-of"):
            assert needle.encode() not in data, (path, needle)
    assert "not portable" in (tmp_path / "published" / "README.md").read_text()  # the card says so for path:
    for report in (out / "build_report.json", *(out / "repos").glob("*/report.json")):  # local, but shared too
        assert str(cache_a) not in report.read_text(encoding="utf-8"), report
