"""The release lock: a packaged manifest ships what its build must give; a scheme change without a new
lock fails here; `fingerprint --expect` names the repositories that differ."""
import json
from dataclasses import replace

import pytest

from conftest import make_sample
from execrepobench.builder.sources.manifest import default_manifest_path, quickstart_manifest_path
from execrepobench.builder.release.release_lock import check, lock_of, manifest_sha256, packaged_lock, scheme_id
from execrepobench.runner.cli import main
from execrepobench_dataset.load import OpenedDataset, open_dataset
from execrepobench_dataset.record import write_jsonl

PACKAGED = [p for p in (quickstart_manifest_path(), default_manifest_path()) if packaged_lock(p).is_file()]


def test_the_quickstart_manifest_ships_its_release_lock():
    assert packaged_lock(quickstart_manifest_path()).is_file()


@pytest.mark.parametrize("manifest", PACKAGED, ids=lambda p: p.name)
def test_a_packaged_lock_was_written_by_this_scheme_for_this_manifest(manifest):
    lock = json.loads(packaged_lock(manifest).read_text(encoding="utf-8"))
    assert lock["manifest_sha256"] == manifest_sha256(manifest), (
        f"{manifest.name} changed but its release lock was not written again from a real build")
    assert lock["scheme"] == scheme_id(), (
        "the builder's scheme changed (what a build makes) but the packaged release lock was not written again: "
        f"build {manifest.name} and run `execrepobench fingerprint OUT --write-lock {packaged_lock(manifest).name} "
        f"--manifest {manifest.name}`")
    assert len(lock["fingerprint"]) == 64 and lock["samples"] > 0 and lock["repos"]


def _folder(tmp_path, samples):
    tmp_path.mkdir(parents=True, exist_ok=True)
    write_jsonl(samples, tmp_path / "samples.jsonl")
    return open_dataset(tmp_path)


def test_check_names_the_repositories_that_differ(tmp_path):
    a = make_sample(middle="1", prefix_code="x = ", sample_id="a1", repo_name="alpha")
    b = replace(a, sample_id="b1", repo_name="beta")
    built = _folder(tmp_path / "one", [a, b])
    manifest = tmp_path / "m.toml"
    manifest.write_text("[defaults]\nseed = 0\n", encoding="utf-8")
    lock = lock_of(built, manifest)
    assert check(built, lock).matches
    other = _folder(tmp_path / "two", [a, replace(b, sample_id="b2")])
    result = check(other, lock)
    assert not result.matches and any("beta: other sample ids" in line for line in result.lines), result
    assert not any("alpha" in line for line in result.lines)
    content = _folder(tmp_path / "three", [a, replace(b, judged_tests=("t.py::other",))])  # same ids, other content
    assert any("content differs" in line for line in check(content, lock).lines)
    assert isinstance(built, OpenedDataset)


def test_cli_fingerprint_expect_and_write_lock(tmp_path, capsys):
    a = make_sample(middle="1", prefix_code="x = ", sample_id="a1", repo_name="alpha")
    _folder(tmp_path / "build", [a])
    manifest = tmp_path / "m.toml"
    manifest.write_text("[defaults]\nseed = 0\n", encoding="utf-8")
    lock = tmp_path / "m.lock.json"
    assert main(["fingerprint", str(tmp_path / "build"), "--write-lock", str(lock), "--manifest", str(manifest)]) == 0
    assert main(["fingerprint", str(tmp_path / "build"), "--expect", str(lock)]) == 0
    assert "matches the release lock" in capsys.readouterr().out
    _folder(tmp_path / "other", [replace(a, sample_id="a2")])
    assert main(["fingerprint", str(tmp_path / "other"), "--expect", str(lock)]) == 1
    assert "alpha: other sample ids" in capsys.readouterr().out
    assert main(["fingerprint", str(tmp_path / "build"), "--expect", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the release lock" in capsys.readouterr().err
    assert main(["fingerprint", str(tmp_path / "build"), "--write-lock", str(lock)]) == 2  # which manifest?
