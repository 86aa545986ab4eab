"""`execrepobench release`: build -> instruct -> publish on the fixture repository, resumable, with its summary."""
import json
import shutil

import pytest

from execrepobench.builder.release.release import ReleaseConfig, release
from execrepobench.builder.sources.manifest import parse_manifest


@pytest.mark.slow
@pytest.mark.sandbox
def test_release_builds_instructs_publishes_and_resumes(tmp_path, minirepo, offline_hf, monkeypatch):
    import datasets

    from execrepobench.builder import repo_build as build_mod
    from execrepobench.builder.instruct import instruct
    from execrepobench_dataset.repo_record import RepoRecord

    other = tmp_path / "otherrepo"  # the instruct corpus comes from another repository
    shutil.copytree(minirepo, other)
    (other / "minirepo" / "extra.py").write_text("def twice(values):\n    return [v * 2 for v in values]\n\n\n"
                                                 "def total(values):\n    return sum(twice(values)) + len(values)\n")
    bench = parse_manifest(f'[defaults]\nseed = 1\nsamples_per_repo = 4\n[[repo]]\nsource = "path:{minirepo}"\n'
                           'name = "minirepo"\n', tmp_path)
    inst = parse_manifest(f'[defaults]\nsamples_per_repo = 6\n[[repo]]\nsource = "path:{other}"\nname = "other"\n'
                          f'[[repo]]\nsource = "path:{minirepo}"\nname = "MiniRepo"\n', tmp_path)
    config = ReleaseConfig(out=tmp_path / "rel", manifest=bench, instruct_manifest=inst, progress=False,
                           build_options={"baseline_runs": 1}, compare_materialised=True)
    summary = release(config)
    assert json.loads((tmp_path / "rel" / "release_summary.json").read_text()) == summary
    assert summary["counts"]["samples"] == summary["stages"]["build"]["samples"] > 0
    assert summary["counts"]["repositories"] == 1 and summary["counts"]["instruct_records"] == 6
    assert summary["stages"]["instruct"]["refused_repos"] == 1  # "MiniRepo" is the benchmark's repository
    assert summary["targets"] == {"samples >= 1200": False, "repositories >= 50": False,
                                  "instruct_records >= 10000": False, "mix within 5 pp of the paper":
                                  summary["stages"]["build"]["mix_within_tolerance"]}
    sizes = summary["sizes"]
    assert 0 < sum(sizes["configs_bytes"].values()) < sizes["dataset_bytes"] < sizes["materialised_dataset_bytes"]
    assert set(summary["time_s"]) == {"build", "instruct", "publish", "total"}
    assert summary["fingerprints"]["dataset"] == summary["stages"]["publish"]["fingerprint"]
    assert not (tmp_path / "rel" / "dataset-materialised").exists()
    folder, cache = str(tmp_path / "rel" / "dataset"), str(offline_hf / "c")
    for name, split in (("exec_repo_bench", "test"), ("repositories", "train"), ("repo_instruct", "train")):
        ds = datasets.load_dataset(folder, name, split=split, cache_dir=cache)
        assert ds.num_rows == {"exec_repo_bench": summary["counts"]["samples"], "repositories": 1,
                               "repo_instruct": 6}[name]
    (row,) = datasets.load_dataset(folder, "repositories", split="train", cache_dir=cache)
    record = RepoRecord.from_dict(row)
    assert "minirepo/mathx.py" in record.file_map() and record.key_matches
    card = (tmp_path / "rel" / "dataset" / "README.md").read_text(encoding="utf-8")
    assert "](charts/mix.png)" in card and "records dropped (middle equal to a benchmark middle)" in card

    # Again: every stage reuses its finished work (nothing is built, masked or published again).
    monkeypatch.setattr(build_mod, "make_samples", lambda *a, **k: pytest.fail("masked again"))
    monkeypatch.setattr(instruct, "instruct_records", lambda *a, **k: pytest.fail("instruct made again"))
    again = release(config)
    assert again["stages"]["build"]["reused_repos"] == 1 and again["stages"]["instruct"]["reused_repos"] == 1
    assert again["stages"]["publish"]["reused"] is True
    assert again["fingerprints"] == summary["fingerprints"] and again["counts"] == summary["counts"]
