"""The Ray executor on a real local Ray cluster: a head node that runs nothing and two worker nodes,
each with its own EXECREPOBENCH_CACHE (per-node `env_vars` of the raylet, which its workers inherit).
The driver (this process) keeps its own cache: results, journal and evidence land there.

Judged: the fixture repository built by the real builder in the session's cache (a `path:` source:
the driver ships its snapshot, each node makes the environment from the repository record itself)."""
import dataclasses
import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from execrepobench_dataset.record import read_jsonl, write_jsonl
from execrepobench_dataset.repo_record import environment_key, read_repo_records, write_repo_records
from execrepobench_metric import api
from execrepobench_metric.environments.venvs import environment_record
from execrepobench_metric.execution.fills import null_fill
from ray_nodes import NODE_CPUS, two_node_cluster

pytestmark = [pytest.mark.ray, pytest.mark.sandbox, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(cluster, {node: its cache}) - started once for the module, torn down after it."""
    with two_node_cluster(tmp_path_factory.mktemp("ray-nodes")) as started:
        yield started


def completions_of(samples):
    """Per sample: the ground truth (passes), the null fill (fails) and a wrong return (fails)."""
    return [[s.middle_code, null_fill(s) or "pass", "return None\n"] for s in samples]


def rows(result):
    return sorted((d["sample_id"], d["completion_index"], d["passed"], d["reason"], tuple(d["failing_tests"]))
                  for d in result["details"])


def node_environment(cache: Path, env_key: str) -> dict:
    return json.loads((cache / "envs" / env_key / "env.json").read_text())


def test_ray_verdicts_equal_local_and_every_node_makes_its_environment(built_minirepo, cluster, tmp_path,
                                                                       private_cache):
    ray_cluster, caches = cluster
    out = built_minirepo["out"]
    samples = list(read_jsonl(out / "samples.jsonl"))
    comps = completions_of(samples)
    local = api.compute(comps, samples, allow_exec=True, use_cache=False, progress=False)
    assert local["pass@1"] > 0 and local["verdicts/passed"] == len(samples) and local["harness_errors"] == 0
    assert local["executor"]["executor"] == "local"
    journal = tmp_path / "journal.jsonl"
    t0 = time.monotonic()
    remote = api.compute(comps, [s.sample_id for s in samples], dataset=str(out), allow_exec=True, use_cache=False,
                         progress=False, journal=journal, executor="ray", ray_address=ray_cluster.address)
    took = time.monotonic() - t0
    assert rows(remote) == rows(local)  # the same verdicts, reasons and failing tests
    assert remote["pass@1"] == local["pass@1"] and remote["harness_errors"] == 0
    counts = remote["executor"]["items_per_node"]
    assert sum(counts.values()) == 3 * len(samples) and len(counts) == 2, counts  # both nodes judged
    # every node made the environment itself, in its own cache, from the lock (same key, not copied)
    key = built_minirepo["env_key"]
    assert environment_record(key).env_key == key  # the driver's environment keeps the record it was made from
    for cache in caches.values():
        env = node_environment(cache, key)
        assert env["key"] == key and Path(env["python"]).is_relative_to(cache)
        assert Path(env["root"]).is_relative_to(cache)
        status = json.loads((cache / "prepared" / f"{key}.json").read_text())
        assert status["ready"] is True and len(status["checked"]) == 1  # prepare's gold check ran on the node
    readied = remote["executor"]["environments_per_node"]
    assert len(readied) == 2 and all(keys == [key] for keys in readied.values()), readied
    # the driver is the single record: its journal holds every verdict once
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert Counter((r["sample_id"], r["index"]) for r in lines) == Counter(
        (s.sample_id, j) for s in samples for j in range(3))
    print(f"ray run of {3 * len(samples)} judgements: {took:.1f} s, per node {counts}")
    # an interrupted driver resumes from its journal: only what it lacks is sent to the cluster again
    journal.write_text("".join(line + "\n" for line in journal.read_text().splitlines()[:5]))
    again = api.compute(comps, samples, dataset=str(out), allow_exec=True, use_cache=False, progress=False,
                        journal=journal, executor="ray", ray_address=ray_cluster.address)
    assert rows(again) == rows(local) and sum(again["executor"]["items_per_node"].values()) == 3 * len(samples) - 5
    assert len(journal.read_text().splitlines()) == 3 * len(samples)


def test_a_node_killed_mid_run_loses_no_verdict_and_counts_none_twice(built_minirepo, cluster, tmp_path):
    ray_cluster, caches = cluster
    out = built_minirepo["out"]
    samples = list(read_jsonl(out / "samples.jsonl"))
    comps = completions_of(samples)  # as in the test above: only the ground truth passes
    total = sum(len(c) for c in comps)
    journal = tmp_path / "journal.jsonl"
    victim = next(node for node, cache in caches.items() if cache.name == "b")
    killed = {}

    def kill_when_running() -> None:  # while the victim is in the middle of a judgement of its batch
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if any(caches[victim].joinpath("tmp").glob("execrepobench-evidence-*")):
                killed["landed"] = len(journal.read_text().splitlines()) if journal.exists() else 0
                ray_cluster.remove_node(victim, allow_graceful=False)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_running, daemon=True)
    killer.start()
    result = api.compute(comps, samples, dataset=str(out), allow_exec=True, use_cache=False, progress=False,
                         journal=journal, executor="ray", ray_address=ray_cluster.address)
    killer.join(timeout=60)
    caches.pop(victim)
    # the node died in the middle of the run, while it was judging (its evidence folder of a run existed)
    assert killed and killed["landed"] < total, killed
    assert result["harness_errors"] == 0 and len(result["details"]) == total
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    seen = Counter((r["sample_id"], r["index"]) for r in lines)
    assert seen == Counter((s.sample_id, j) for s, c in zip(samples, comps) for j in range(len(c)))  # each once
    expected = [(s.sample_id, j, j == 0) for s, c in zip(samples, comps) for j in range(len(c))]
    assert sorted((d["sample_id"], d["completion_index"], d["passed"]) for d in result["details"]) == sorted(expected)
    assert sum(result["executor"]["items_per_node"].values()) == total


def test_a_node_that_cannot_make_the_environment_gives_harness_errors(built_minirepo, cluster, tmp_path):
    """A repository record whose source no node can fetch: every verdict is an `error` naming the node and
    the reason, none is scored, cached or journalled."""
    ray_cluster, _ = cluster
    out = built_minirepo["out"]
    (record,) = read_repo_records(out / "repositories.jsonl")
    source = "path:minirepo#tree=" + "0" * 64  # a snapshot that exists nowhere
    key = environment_key(record.python, source, record.lock, record.exclude_newer)
    bad = tmp_path / "bad"
    bad.mkdir()
    samples = [dataclasses.replace(s, env_key=key) for s in read_jsonl(out / "samples.jsonl")][:2]
    write_jsonl(samples, bad / "samples.jsonl")
    write_repo_records([dataclasses.replace(record, repo_source=source, env_key=key)], bad / "repositories.jsonl")
    journal = tmp_path / "journal.jsonl"
    with pytest.raises(api.HarnessError) as info:
        api.compute([s.middle_code for s in samples], samples, dataset=str(bad), allow_exec=True, progress=False,
                    journal=journal, executor="ray", ray_address=ray_cluster.address)
    result = info.value.result
    assert result["harness_errors"] == len(samples) and result["verdicts/passed"] == 0
    for row in result["details"]:
        assert row["reason"] == "error" and row["harness_error"] is True
        assert "node " in row["detail"] and "not portable" in row["detail"], row["detail"]
        assert row["artifacts"]  # evidence of an error is always kept, on the driver
    assert not journal.exists() or not journal.read_text().strip()


def test_a_task_no_node_can_hold_is_refused_not_left_waiting(cluster):
    from execrepobench_metric.errors import ExecutorUnavailable
    from execrepobench_metric.execution.executors.base import ExecutorConfig
    from execrepobench_metric.execution.executors.registry import open_executor
    from execrepobench_metric.execution.limits import Limits
    from execrepobench_metric.execution.verdict import JudgeConfig

    ray_cluster, _ = cluster
    with open_executor(ExecutorConfig("ray", ray_cluster.address), 1) as executor:
        assert executor.parallelism == len(ray_cluster.worker_nodes) * NODE_CPUS  # the head offers none
        with pytest.raises(ExecutorUnavailable, match="no node of the Ray cluster offers 1 CPU and 64.0 GiB"):
            list(executor.map(str, [], JudgeConfig(limits=Limits(address_space_bytes=64 << 30))))
