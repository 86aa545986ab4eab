"""Executors without a cluster (fast tier): batching, the local executor, the one clear error when Ray is
missing, repository records for remote nodes, and the two things shipped between machines (evidence
folders, path snapshots).  The Ray executor itself runs on a real local cluster in test_ray.py."""
import json
import sys
import threading

import pytest

from execrepobench.runner.cli import main
from execrepobench_dataset.repo_record import RepoRecord, environment_key, write_repo_records
from execrepobench_metric import api
from execrepobench_metric.environments.layout import CACHE_ENV_VAR, env_dir
from execrepobench_metric.prepare import EnvironmentsMissing
from execrepobench_metric.environments.sources import pack_path_snapshot, path_snapshot_dir, unpack_path_snapshot
from execrepobench_metric.execution.evidence import pack_folder, unpack_folder
from execrepobench_metric.errors import ExecutorUnavailable
from execrepobench_metric.execution.executors.base import Batch, ExecutorConfig, split
from execrepobench_metric.execution.executors.local import LocalExecutor
from execrepobench_metric.execution.executors.registry import open_executor, require_executor
from test_inputs import MIDDLE, record


@pytest.mark.parametrize("n, size, parts, expected", [
    (0, 4, 1, []), (10, 4, 1, [4, 3, 3]), (8, 4, 1, [4, 4]), (3, 4, 2, [2, 1]), (5, 4, 8, [1] * 5),
    (12, 4, 2, [4, 4, 4]), (1, 1, 1, [1])])
def test_split_is_even_bounded_and_keeps_order(n, size, parts, expected):
    items = list(range(n))
    got = split(items, size, parts)
    assert [len(p) for p in got] == expected
    assert [x for p in got for x in p] == items  # consecutive, nothing lost or repeated


def test_executor_config_is_checked():
    with pytest.raises(ValueError, match="expected one of local, ray"):
        ExecutorConfig("dask")
    with pytest.raises(ValueError, match="batch_size"):
        ExecutorConfig("ray", batch_size=0)


def test_local_executor_runs_every_item_once_in_parallel_and_an_exception_is_its_items_error():
    started = []
    first_three = threading.Barrier(3, timeout=60)  # the first three wait for one another (timeout: no hang)

    def fn(x):
        started.append((x, threading.get_ident()))
        if x < 3:
            first_three.wait()
        if x == 3:
            raise OSError("disk full")
        return x * 10

    batches = [Batch("r1", "k1", (0, 1, 2)), Batch("r2", "k2", (3, 4, 5, 6))]
    with LocalExecutor(3) as executor:
        done = list(executor.map(fn, batches))
        report = executor.report()
    assert sorted(d.item for d in done) == list(range(7))
    assert {d.item: d.value for d in done if not d.error} == {0: 0, 1: 10, 2: 20, 4: 40, 5: 50, 6: 60}
    (failed,) = [d for d in done if d.error]
    assert failed.item == 3 and failed.value is None and failed.error == "OSError: disk full"
    assert sorted(x for x, _ in started[:3]) == [0, 1, 2]  # submitted in order: a repository's items together
    assert len({t for x, t in started if x < 3}) == 3  # ran on three threads at once (the barrier let them go)
    assert report == {"executor": "local", "parallelism": 3, "items_per_node": {"local": 7},
                      "errors_per_node": {"local": 1}, "environments_per_node": {}}


def test_asking_for_ray_without_ray_is_one_clear_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(ExecutorUnavailable, match=r"needs Ray, which is not installed here: pip install "
                                                  r"'execrepobench\[ray\]'"):
        open_executor(ExecutorConfig("ray"), 2)
    require_executor(ExecutorConfig("local"))  # the default needs nothing
    with pytest.raises(ExecutorUnavailable, match="needs Ray"):  # before any environment is looked for
        api.compute([MIDDLE], [record()], allow_exec=True, executor="ray")
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps(record()) + "\n")
    rc = main(["evaluate", "--samples", str(samples), "--reference-fill", "ground_truth", "--allow-exec",
               "--out", str(tmp_path / "out"), "--executor", "ray", "--no-progress"])
    assert rc == 2 and "needs Ray, which is not installed here" in capsys.readouterr().err
    assert not (tmp_path / "out" / "results.jsonl").exists()


def lock_record(name="r", source="pypi:r==1.0#sha256=" + "a" * 64):
    lock = ("six==1.16.0",)
    return RepoRecord(name, source, "3.11", environment_key("3.11", source, lock), lock,
                      ("python", "-m", "pytest", "--", "tests"))


def test_repository_records_for_remote_nodes(tmp_path, monkeypatch):
    """From the dataset's repositories.jsonl, else from the record kept with a local environment, else
    EnvironmentsMissing naming the repository (nothing judged)."""
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "cache"))
    rec = lock_record()
    sample = api.resolve_references([record(env_key=rec.env_key)])[0]
    with pytest.raises(EnvironmentsMissing, match="no repository record for r: .*Pass the dataset"):
        api.repository_records([sample], None)
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "samples.jsonl").write_text(json.dumps(record(env_key=rec.env_key)) + "\n")
    write_repo_records([rec], folder / "repositories.jsonl")
    assert api.repository_records([sample], folder) == {rec.env_key: rec}
    # an environment of this cache keeps the record it was made from (written by environments._make)
    env = env_dir(rec.env_key)
    (env / "venv" / "bin").mkdir(parents=True)
    (env / "venv" / "bin" / "python").symlink_to(sys.executable)
    (tmp_path / "root").mkdir()
    (env / "env.json").write_text(json.dumps({"schema": 2, "python": str(env / "venv/bin/python"),
                                              "root": str(tmp_path / "root"), "freeze": ["six==1.16.0"]}))
    with pytest.raises(EnvironmentsMissing):  # an environment made before records were kept with it
        api.repository_records([sample], None)
    (env / "record.json").write_text(json.dumps(rec.to_dict()))
    assert api.repository_records([sample], None) == {rec.env_key: rec}


def test_evidence_folders_travel_home(tmp_path):
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "junit.xml").write_text("<testsuite/>")
    (run / "sub" / "record.json").write_bytes(b"\x00\x01")
    files = pack_folder(run)
    assert files == {"junit.xml": b"<testsuite/>", "sub/record.json": b"\x00\x01"}
    unpack_folder(tmp_path / "home", {**files, "../escape.txt": b"x", "/abs.txt": b"y"})
    assert (tmp_path / "home" / "sub" / "record.json").read_bytes() == b"\x00\x01"
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "home" / "abs.txt").exists()
    assert pack_folder(tmp_path / "missing") == {}


def test_path_snapshots_travel_to_a_node_without_them(tmp_path, monkeypatch):
    tree = "ab" * 32
    pinned = f"path:mini#tree={tree}"
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "driver"))
    assert pack_path_snapshot(pinned) is None  # no snapshot here
    assert pack_path_snapshot("pypi:x==1#sha256=" + "0" * 64) is None  # not a path source
    snap = path_snapshot_dir("mini", tree)
    (snap / "pkg").mkdir(parents=True)
    (snap / "pyproject.toml").write_text("[project]\nname = 'mini'\n")
    (snap / "pkg" / "__init__.py").write_text("X = 1\n")
    data = pack_path_snapshot(pinned)
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "node"))
    unpack_path_snapshot(pinned, data, "mini")
    there = path_snapshot_dir("mini", tree)
    assert there.is_relative_to(tmp_path / "node") and (there / "pkg" / "__init__.py").read_text() == "X = 1\n"
    assert sorted(p.name for p in there.parent.iterdir()) == [there.name]  # no temporary left behind
    unpack_path_snapshot(pinned, b"not a tarball", "mini")  # already there: left as it is
    assert (there / "pyproject.toml").is_file()
