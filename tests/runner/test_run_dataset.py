"""`execrepobench run --dataset OWNER/NAME|FOLDER [--config] [--revision] [--limit N]`: published folders and
Hub ids (offline, through the real `huggingface_hub` reading a Hugging Face cache of the published layout),
the deterministic stratified subset, the run record in metrics.json, and oracle vs null through `compare`."""
import dataclasses
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from conftest import make_sample
from execrepobench.runner.cli import main
from execrepobench.runner.dataset_source import stratified_subset
from execrepobench_dataset.load import DatasetNotFound, open_dataset
from execrepobench_dataset.record import FILL_TYPES, write_jsonl
from sample_build import SAMPLES, judgeable_build, write_build

# (file, middle, judged test) of the fixture repository: every null fill fails these tests
SPECS = [("minirepo/mathx.py", "return low", "test_mathx.py::test_clamp_edges"),
         ("minirepo/mathx.py", "return high", "test_mathx.py::test_clamp_edges"),
         ("minirepo/mathx.py", "return value", "test_mathx.py::test_clamp_inside"),
         ("minirepo/mathx.py", 'raise ValueError("low must not exceed high")', "test_mathx.py::test_clamp_bad_bounds"),
         ("minirepo/mathx.py", "total = math.fsum(values)", "test_mathx.py::test_mean"),
         ("minirepo/mathx.py", "return total / len(values)", "test_mathx.py::test_mean"),
         ("minirepo/mathx.py", 'raise ValueError("mean of an empty sequence")', "test_mathx.py::test_mean"),
         ("minirepo/mathx.py", "acc += value", "test_mathx.py::test_running_total"),
         ("minirepo/mathx.py", "result.append(acc)", "test_mathx.py::test_running_total"),
         ("minirepo/mathx.py", "return result", "test_mathx.py::test_running_total"),
         ("minirepo/mathx.py", "steps.append(start)", "test_mathx.py::test_countdown"),
         ("minirepo/mathx.py", "return steps", "test_mathx.py::test_countdown"),
         ("minirepo/strings.py", "return slug[:limit]", "test_strings.py::test_slugify"),
         ("minirepo/strings.py", "lowered = text.strip().lower()", "test_strings.py::test_slugify"),
         ("minirepo/strings.py", "limit = clamp(max_length, 1, 200)", "test_strings.py::test_slugify"),
         ("minirepo/strings.py", "self.seen[base] = count + 1", "test_strings.py::test_slugger_unique"),
         ("minirepo/strings.py", "return base", "test_strings.py::test_slugger_unique")]


def hub_cache(published: Path, cache: Path, repo_id: str, commit: str = "c0ffee" + "0" * 34, ref: str = "main"):
    """`published` as the Hugging Face cache holds a downloaded dataset (offline, snapshot_download reads it)."""
    repo = cache / f"datasets--{repo_id.replace('/', '--')}"
    shutil.copytree(published, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / ref).write_text(commit)
    return repo / "snapshots" / commit


@pytest.fixture()
def hub(hf_hub_cache):
    return hf_hub_cache


def test_stratified_subset_is_deterministic_and_proportional():
    many = [dataclasses.replace(s, sample_id=f"{s.sample_id[:8]}-{i}") for i in range(20) for s in SAMPLES]
    picked = stratified_subset(many, 30)
    assert len(picked) == 30 and picked == stratified_subset(list(reversed(many)), 30)[::-1]
    assert [s for s in many if s in picked] == picked  # the dataset's order is kept
    full, got = Counter(s.fill_type for s in many), Counter(s.fill_type for s in picked)
    for fill in full:  # each fill type within one sample of its share
        assert abs(got[fill] - 30 * full[fill] / len(many)) < 1, (fill, got, full)
    assert stratified_subset(many, 1000) == many and stratified_subset(many, None) == many
    with pytest.raises(ValueError, match="--limit must be at least 1"):
        stratified_subset(many, 0)


def test_configs_and_hub_ids_are_checked(tmp_path, hub):
    from execrepobench_dataset.publish import publish

    build = write_build(tmp_path / "OUT")
    published = tmp_path / "published"
    publish(build, published)
    with pytest.raises(DatasetNotFound, match="no config 'nope'; its sample configs: exec_repo_bench"):
        open_dataset(published, config="nope")
    with pytest.raises(DatasetNotFound, match="config 'repositories' holds repository records, not samples"):
        open_dataset(published, config="repositories")
    with pytest.raises(DatasetNotFound, match="builder has only its samples"):
        open_dataset(build, config="other")
    with pytest.raises(DatasetNotFound, match="me/absent: not in the Hugging Face cache.*hf download me/absent "
                                              "--repo-type dataset"):
        open_dataset("me/absent")
    snapshot = hub_cache(published, hub, "me/bench")
    opened = open_dataset("me/bench")
    assert opened.commit == snapshot.name and opened.folder == snapshot
    assert opened.fingerprint == open_dataset(published).fingerprint
    with pytest.raises(DatasetNotFound, match="me/bench at revision 'v9': not in the Hugging Face cache"):
        open_dataset("me/bench", revision="v9")
    hub_cache(published, hub, "me/bench", commit="d" * 40, ref="v2")
    assert open_dataset("me/bench", revision="v2").commit == "d" * 40
    with pytest.raises(DatasetNotFound, match="a local folder, which has no revisions: --revision"):
        open_dataset(published, revision="v2")  # not silently ignored (and recorded as if used)
    # an incomplete copy: named as such, not as a sample whose context cannot be found
    partial = tmp_path / "partial"
    shutil.copytree(published, partial)
    shutil.rmtree(partial / "data" / "repositories")
    with pytest.raises(DatasetNotFound, match="no `repositories` config .* an incomplete copy or download"):
        open_dataset(partial)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "README.md").write_text("---\n---\n")
    hub_cache(bare, hub, "me/bare")
    with pytest.raises(DatasetNotFound, match="or an incomplete download .*hf download me/bare --repo-type dataset"):
        open_dataset("me/bare")


def test_run_refuses_bad_sources_before_anything_runs(tmp_path, hub, capsys, monkeypatch):
    out = tmp_path / "res"
    assert main(["run", "--dataset", "me/absent", "--backend", "oracle", "--out", str(out)]) == 2
    assert "hf download me/absent --repo-type dataset" in capsys.readouterr().err
    build = write_build(tmp_path / "OUT")
    assert main(["run", "--samples", str(build / "samples.jsonl"), "--config", "x", "--backend", "oracle",
                 "--out", str(out)]) == 2
    assert "give --dataset" in capsys.readouterr().err
    assert main(["run", "--backend", "oracle", "--out", str(out)]) == 2
    assert "nothing to evaluate: give --dataset" in capsys.readouterr().err
    assert main(["run", "--dataset", str(build), "--config", "nope", "--backend", "oracle", "--out", str(out)]) == 2
    assert "config 'nope' asked for" in capsys.readouterr().err
    # a sample that judging would refuse: named before anything is generated
    assert main(["run", "--samples", str(build / "samples.jsonl"), "--backend", "oracle", "--allow-exec",
                 "--out", str(out)]) == 2
    assert "test_command" in capsys.readouterr().err and not (out / "generations.jsonl").exists()
    # no opt-in to run model code: refused before anything is generated (or built), not after
    monkeypatch.delenv("EXECREPOBENCH_ALLOW_EXEC", raising=False)
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    valid = judgeable_build(tmp_path / "VALID")
    assert main(["run", "--samples", str(valid / "samples.jsonl"), "--backend", "oracle", "--out", str(out)]) == 2
    assert "Opt in explicitly" in capsys.readouterr().err
    assert main(["run", "--quickstart", "--backend", "oracle", "--out", str(out)]) == 2
    assert "Opt in explicitly" in capsys.readouterr().err
    # environments missing from this cache: named (with how to make them) before anything is generated
    assert main(["run", "--samples", str(valid / "samples.jsonl"), "--backend", "oracle", "--allow-exec",
                 "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert "no environment in this cache for 2 repositories: alpha, beta" in said and "--prepare" in said
    assert not out.exists() or not any(out.iterdir())


@pytest.fixture()
def published_minirepo(built_minirepo, tmp_path):
    """A published folder of 17 samples of the fixture repository (fill types in turn), built by hand."""
    from execrepobench_dataset.publish import publish

    samples = [make_sample(built_minirepo, f, middle, judged=(f"tests/{test}",), fill_type=FILL_TYPES[i % 6],
                           selection_rule="coverage")  # verified: a ground truth's verdict is known
               for i, (f, middle, test) in enumerate(SPECS)]
    build = tmp_path / "build"
    build.mkdir()
    write_jsonl(samples, build / "samples.jsonl")
    shutil.copy(built_minirepo["out"] / "repositories.jsonl", build)
    report = json.loads((built_minirepo["out"] / "build_report.json").read_text())
    report.pop("samples_fingerprint", None)  # these samples are not the build's
    (build / "build_report.json").write_text(json.dumps(report))
    publish(build, tmp_path / "published")
    return tmp_path / "published"


@pytest.mark.sandbox
def test_run_limit_from_published_folder_and_hub_id_then_compare(published_minirepo, tmp_path, hub):
    """The issue's check: `run --dataset FOLDER --limit 12 --backend oracle` judges exactly 12 and records the
    fingerprint; the null fill of the same 12 through the Hub id; compare gives non-overlapping intervals."""
    fingerprint = open_dataset(published_minirepo).fingerprint
    oracle, null = tmp_path / "oracle", tmp_path / "null"
    assert main(["run", "--dataset", str(published_minirepo), "--limit", "12", "--backend", "oracle", "--out",
                 str(oracle), "--allow-exec", "--no-progress", "--k", "1", "--k", "2"]) == 0
    metrics = json.loads((oracle / "metrics.json").read_text())
    rows = (oracle / "results.jsonl").read_text().splitlines()
    assert len(rows) == 12 and metrics["n_samples"] == 12 and metrics["pass@1"] == 1.0
    # the oracle checks the environments end to end: each ground truth ran (no verdict taken from the build)
    assert not [r for r in rows if "known verdict" in json.loads(r)["detail"]]
    assert metrics["canaries_passed"] == {"held": 12}
    run = metrics["run"]
    assert run["dataset"]["fingerprint"] == fingerprint and run["dataset"]["samples"] == 12
    assert run["dataset"]["samples_in_dataset"] == len(SPECS) and run["dataset"]["limit"] == 12
    assert run["dataset"]["config"] == "exec_repo_bench" and run["dataset"]["kind"] == "published"
    assert (run["backend"], run["n"], run["k"], run["command"]) == ("oracle", 1, [1, 2], "run")
    from execrepobench_dataset.version import __version__

    assert run["package_version"] == __version__ and metrics["verdicts/passed"] == 12
    judged = Counter(json.loads(r)["fill_type"] for r in rows)
    assert sorted(judged.values()) == [2, 2, 2, 2, 2, 2]  # 17 samples, 3 of 6 fill types have 2 of them

    hub_cache(published_minirepo, hub, "me/minibench")
    assert main(["run", "--dataset", "me/minibench", "--limit", "12", "--backend", "null", "--out", str(null),
                 "--allow-exec", "--no-progress"]) == 0
    null_run = json.loads((null / "metrics.json").read_text())
    assert null_run["pass@1"] == 0.0 and null_run["run"]["dataset"]["fingerprint"] == fingerprint
    # every run failed: the canary check counted per run, and none of the passed runs (there are none)
    assert sum(null_run["canaries"].values()) == 12 and null_run["canaries_passed"] == {}
    assert null_run["run"]["dataset"]["commit"] and null_run["run"]["dataset"]["name"] == "me/minibench"
    assert null_run["run"]["dataset"]["sample_ids_sha256"] == run["dataset"]["sample_ids_sha256"]

    cmp = tmp_path / "cmp"
    assert main(["compare", str(oracle), str(null), "--out", str(cmp)]) == 0
    assert sorted(p.name for p in cmp.iterdir()) == ["comparison.json", "leaderboard.html", "leaderboard.md"]
    result = json.loads((cmp / "comparison.json").read_text())
    best, worst = result["models"]
    assert (best["label"], worst["label"]) == ("oracle", "null") and result["samples"]["compared"] == 12
    assert worst["pass@1_ci95"][1] < best["pass@1_ci95"][0]
    assert result["pairs"][0]["p_value"] < 0.01 and result["dataset"]["fingerprint"] == fingerprint

    # `evaluate --limit 12` judges the same 12 samples as `run --limit 12`; a reference fill names the run
    sub = tmp_path / "null-12"
    assert main(["evaluate", "--dataset", "me/minibench", "--reference-fill", "null", "--limit", "12", "--out",
                 str(sub), "--allow-exec", "--no-progress"]) == 0
    record = json.loads((sub / "metrics.json").read_text())["run"]
    assert record["dataset"]["sample_ids_sha256"] == run["dataset"]["sample_ids_sha256"]
    assert record["dataset"]["limit"] == 12 and record["model"] == "null"

    # `evaluate` records its run too, and `compare` takes it: the 12 samples it shares with the oracle run
    every = tmp_path / "null-all"
    assert main(["evaluate", "--dataset", "me/minibench", "--reference-fill", "null", "--out", str(every),
                 "--allow-exec", "--no-progress", "--model-name", "null-fill"]) == 0
    record = json.loads((every / "metrics.json").read_text())["run"]
    assert (record["command"], record["model"], record["reference_fill"]) == ("evaluate", "null-fill", "null")
    assert record["dataset"]["fingerprint"] == fingerprint and record["dataset"]["samples"] == len(SPECS)
    assert main(["compare", str(oracle), str(every), "--out", str(tmp_path / "cmp2")]) == 0
    result = json.loads((tmp_path / "cmp2" / "comparison.json").read_text())
    assert result["samples"] == {"compared": 12, "per_run": {"oracle": 12, "null-fill": len(SPECS)}}
