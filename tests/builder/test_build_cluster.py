"""The benchmark build with `--executor ray` on a real local Ray cluster: a head node that runs nothing and two
worker nodes, each with its own EXECREPOBENCH_CACHE and TMPDIR (per-node `env_vars` of the raylet, as in
test_ray.py).  One repository = one Ray task; the driver (this process, its own cache) only plans, collects
the records and writes OUT.

The quickstart manifest (real PyPI repositories) built on the cluster gives the samples of its release lock -
the local executor's build, byte for byte; then, with one repository's journal entry gone (an interrupted
driver), the build resumes with that repository alone, and the node running it is killed mid-build: it runs
again on the other node, nothing lost or counted twice."""
import hashlib
import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from ray_nodes import two_node_cluster

pytestmark = [pytest.mark.ray, pytest.mark.sandbox, pytest.mark.slow, pytest.mark.pypi]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(cluster, {node: its cache folder}), torn down after the module."""
    with two_node_cluster(tmp_path_factory.mktemp("ray-build-nodes")) as started:
        yield started


def _quickstart_build(out: Path, address: str) -> dict:
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import load_manifest, quickstart_manifest_path
    from execrepobench_metric.execution.executors.base import ExecutorConfig

    manifest = load_manifest(quickstart_manifest_path())
    return build(BuildConfig(manifest=manifest, out=out, progress=False, executor=ExecutorConfig("ray", address)))


def _lock() -> dict:
    from execrepobench.builder.release.release_lock import packaged_lock
    from execrepobench.builder.sources.manifest import quickstart_manifest_path

    return json.loads(packaged_lock(quickstart_manifest_path()).read_text())


def _matches_lock(out: Path) -> None:
    from execrepobench.builder.release.release_lock import check
    from execrepobench_dataset.load import open_dataset

    lock = _lock()
    assert hashlib.sha256((out / "samples.jsonl").read_bytes()).hexdigest() == lock["samples_jsonl_sha256"]
    verdict = check(open_dataset(out), lock)
    assert verdict.matches, verdict.lines  # the dataset fingerprint: samples and repository records


@pytest.fixture(scope="module")
def cluster_build(cluster, tmp_path_factory, private_cache):
    ray_cluster, caches = cluster
    out = tmp_path_factory.mktemp("cluster-build") / "out"
    before = set(private_cache.glob("envs/*/env.json"))  # the session's cache: earlier tests made environments
    summary = _quickstart_build(out, ray_cluster.address)
    return summary, out, set(private_cache.glob("envs/*/env.json")) - before


def test_quickstart_on_two_nodes_gives_the_local_release_lock(cluster, cluster_build, private_cache):
    _, caches = cluster
    summary, out, made_by_driver = cluster_build
    _matches_lock(out)
    by = {r["repo"]: r for r in summary["repos"]}
    assert set(by) == {"isodate", "schema"} and all(r["status"] == "ok" for r in by.values()), by
    # one task per repository, one at a time per 1-CPU node: each node built one, in its own cache
    nodes = {r["node"] for r in by.values()}
    assert len(nodes) == 2, nodes
    for cache in caches.values():
        made = [json.loads(p.read_text())["key"] for p in cache.glob("envs/*/env.json")]
        assert len(made) == 1 and made[0] in {r["env_key"] for r in by.values()}, made
    assert not made_by_driver  # the driver made no environment
    per_node = summary["executor"]["per_node"]
    assert summary["executor"]["executor"] == "ray" and set(per_node) == nodes
    assert all(n["repos"] == 1 and n["samples"] == 8 and n["samples_per_hour"] > 0 for n in per_node.values())
    assert "samples per hour" in (out / "build_report.md").read_text()


def test_a_repository_that_fails_on_a_node_is_reported_with_the_nodes_reason(cluster, tmp_path):
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import parse_manifest
    from execrepobench_metric.execution.executors.base import ExecutorConfig

    nowhere = f"{tmp_path / 'nowhere.git'}@{'0' * 40}"  # a git source no node can fetch
    text = f'[[repo]]\nsource = "git:{nowhere}"\nname = "nosource"\n'
    summary = build(BuildConfig(manifest=parse_manifest(text, tmp_path), out=tmp_path / "out", progress=False,
                                executor=ExecutorConfig("ray", cluster[0].address)))
    (rep,) = summary["repos"]
    assert (rep["status"], rep["phase"]) == ("error", "source"), rep
    assert rep["reason"].startswith(f"node {rep['node']}: ") and "nowhere.git" in rep["reason"], rep["reason"]
    assert summary["totals"]["repos_error"] == 1 and (tmp_path / "out" / "samples.jsonl").read_text() == ""


def test_resumed_driver_and_a_node_killed_mid_build_lose_and_repeat_nothing(cluster, cluster_build, tmp_path):
    ray_cluster, caches = cluster
    _, built, _ = cluster_build
    out = tmp_path / "out"
    shutil.copytree(built, out)
    (out / "repos" / "schema" / "report.json").unlink()  # the driver stopped before schema's record landed
    killed = {}

    def kill_the_node_building_schema() -> None:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            for node, cache in caches.items():
                if any(cache.joinpath("tmp").glob("execrepobench-build-schema-*")):
                    killed["cache"] = cache
                    ray_cluster.remove_node(node, allow_graceful=False)
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_node_building_schema, daemon=True)
    killer.start()
    summary = _quickstart_build(out, ray_cluster.address)
    killer.join(timeout=60)
    assert killed, "no node was seen building schema"
    by = {r["repo"]: r for r in summary["repos"]}
    assert [r["repo"] for r in summary["repos"]] == ["isodate", "schema"]  # each repository once
    assert by["isodate"].get("reused") is True  # from the journal: not sent again
    assert by["schema"]["status"] == "ok" and not by["schema"].get("reused"), by["schema"]
    survivor = next(node for node, cache in caches.items() if cache != killed["cache"])
    assert by["schema"]["node"].endswith(survivor.node_id[:8])  # schema ran again on the node that lived
    assert (caches[survivor] / "envs" / by["schema"]["env_key"] / "env.json").is_file()
    assert list(summary["executor"]["per_node"]) == [by["schema"]["node"]]  # only fresh work is counted
    _matches_lock(out)
