"""The Ray executor: batches of one repository run as Ray tasks across a cluster.

Driver side (`RayExecutor.map`): connects (`ray_address`: "auto", "HOST:PORT", or None for
RAY_ADDRESS / a local instance), keeps about two tasks per CPU of the cluster in flight and yields
each item's result as its task lands (`ray.wait`), so the caller's journal and result cache - on the
driver - stay the single record.  A task whose node dies is run again elsewhere by Ray
(`max_retries`); results are taken from each task exactly once, and a task that still fails gives
its items back as harness errors.  Virtualenvs never travel: each task carries its repository's
record (and, for a `path:` source, the driver's snapshot of the tree, a few files).

Node side (`run_batch`): the node makes the environment from the record with `prepare`'s own code
(`prepare_repository`: fetch the pinned source, make the environment from the lock, gold check),
once per node under a lock, in the node's cache (`EXECREPOBENCH_CACHE` of the node's `ray start`,
else ~/.cache/execrepobench), then runs the batch's items in the sandbox as usual.  A node that
cannot make or check the environment, or lacks the sandbox the driver asked for, reports that
reason for every item of the batch: a harness error, never a model failure.

Each task asks Ray for 1 CPU and the memory of the sandbox's address-space limit; the sandbox and its
rlimits still apply inside the task (Ray's resources are bookkeeping only).
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable, Iterator, Sequence

import ray
from ray.exceptions import RayError

from execrepobench_dataset.files import file_lock
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.environments.layout import cache_root
from execrepobench_metric.environments.sources import pack_path_snapshot, unpack_path_snapshot
from execrepobench_metric.environments.venvs import find_environment
from execrepobench_metric.errors import ExecutorUnavailable

from ..readiness import PrepareConfig, prepare_repository
from ..sandbox import Isolation, strong_available
from ..verdict import JudgeConfig
from .base import Batch, Done, Executor, ExecutorConfig

_READY: dict[tuple, str] = {}  # per worker process: (job, env key, gold ids, isolation) -> "" or why not


def node_name() -> str:
    return f"{ray.util.get_node_ip_address()}/{ray.get_runtime_context().get_node_id()[:8]}"


def _node_lock(env_key: str):
    """One preparation of an environment per node at a time (tasks of a node share its cache)."""
    return file_lock(cache_root() / "prepared" / f".{env_key}.node.lock")


def _prepare(batch: Batch, judge: JudgeConfig, snapshot: bytes | None) -> str:
    where = f"node {node_name()}"
    if judge.isolation is Isolation.BWRAP and (why := strong_available()) is not None:
        return f"{where}: the bubblewrap sandbox the driver asked for is unavailable here: {why}"
    if batch.record is None:
        if find_environment(batch.env_key) is not None:
            return ""
        return (f"{where}: no environment {batch.env_key} of {batch.repo_name} in this node's cache, and no "
                "repository record to make it from (pass the dataset: dataset=... / --dataset)")
    config = PrepareConfig(workers=1, gold_samples=len(batch.gold), timeout_s=judge.timeout_s,
                           allow_weak_sandbox=judge.isolation is Isolation.WEAK, progress=False)
    try:
        if snapshot is not None:
            unpack_path_snapshot(batch.record.repo_source, snapshot, batch.repo_name)
        with _node_lock(batch.env_key):
            status = prepare_repository(batch.record, batch.gold, config, judge)
    except Exception as exc:  # noqa: BLE001 - whatever it is, it is this node's harness error for the batch
        return f"{where}: {batch.repo_name}: {type(exc).__name__}: {exc}"
    return "" if status.ready else f"{where}: {batch.repo_name} not ready: {status.reason}"


def node_ready(batch: Batch, judge: JudgeConfig, snapshot: bytes | None) -> str:
    """"" when this node can judge the batch's repository, else the reason (remembered for the job)."""
    memo = (ray.get_runtime_context().get_job_id(), batch.env_key, tuple(s.sample_id for s in batch.gold),
            str(judge.isolation))
    if memo not in _READY:
        _READY[memo] = _prepare(batch, judge, snapshot)
    return _READY[memo]


def run_batch(fn: Callable[[Any], Any], batch: Batch, judge: JudgeConfig, snapshot: bytes | None) -> dict:
    """On a node: ready the environment, then fn(item) for each item -> {node, ready, results}."""
    why = node_ready(batch, judge, snapshot)
    results = []
    for item in batch.items:
        if why:
            results.append((None, why))
            continue
        try:
            results.append((fn(item), ""))
        except Exception as exc:  # noqa: BLE001 - fn should not raise; if it does, the item is a harness error
            results.append((None, f"node {node_name()}: {type(exc).__name__}: {exc}"))
    return {"node": node_name(), "ready": not why, "results": results}


class RayExecutor(Executor):
    name = "ray"
    shares_filesystem = False

    def __init__(self, config: ExecutorConfig) -> None:
        super().__init__()
        self.config = config
        self.owns = not ray.is_initialized()
        if self.owns:
            try:
                ray.init(address=config.ray_address, log_to_driver=False, logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ExecutorUnavailable(f"cannot connect to the Ray cluster at {config.ray_address or 'RAY_ADDRESS'}"
                                          f": {exc}") from None
        self.parallelism = max(1, int(ray.cluster_resources().get("CPU", 0)))

    @classmethod
    def open(cls, config: ExecutorConfig, workers: int) -> "RayExecutor":
        return cls(config)  # the cluster's CPUs, not `workers`, say how many items run at once

    def _check_fits(self, judge: JudgeConfig) -> None:
        """A task no node can hold would wait forever: say so instead."""
        alive = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        need = judge.limits.address_space_bytes
        if not any(r.get("CPU", 0) >= 1 and r.get("memory", 0) >= need for r in alive):
            raise ExecutorUnavailable(f"no node of the Ray cluster offers 1 CPU and {need / 2**30:.1f} GiB of memory "
                                      "(a sandboxed run's address-space limit) to one task; nodes: "
                                      + ", ".join(f"{r.get('CPU', 0):g} CPU / {r.get('memory', 0) / 2**30:.1f} GiB"
                                                  for r in alive))

    def map(self, fn: Callable[[Any], Any], batches: Sequence[Batch], judge: JudgeConfig) -> Iterator[Done]:
        self._check_fits(judge)
        task = ray.remote(run_batch).options(num_cpus=1, memory=judge.limits.address_space_bytes,
                                             max_retries=self.config.max_retries, retry_exceptions=False)
        snapshots: dict[str, Any] = {}
        slim: dict[str, RepoRecord] = {}  # a node needs what makes the environment, not the context files
        for batch in batches:
            if batch.record is not None and batch.env_key not in snapshots:
                data = pack_path_snapshot(batch.record.repo_source)
                snapshots[batch.env_key] = ray.put(data) if data is not None else None
                slim[batch.env_key] = replace(batch.record, files=())
        todo = (replace(b, record=slim.get(b.env_key)) if b.record is not None else b for b in batches)
        pending: dict[Any, Batch] = {}
        while True:
            while len(pending) < 2 * self.parallelism and (batch := next(todo, None)) is not None:
                pending[task.remote(fn, batch, judge, snapshots.get(batch.env_key))] = batch
            if not pending:
                return
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                yield from self._landed(pending.pop(ref), ref)

    def _landed(self, batch: Batch, ref: Any) -> Iterator[Done]:
        try:
            out = ray.get(ref)
        except RayError as exc:  # retries used up (nodes lost), or the task could not run at all
            why = f"Ray task for {batch.repo_name} failed: {type(exc).__name__}: {str(exc).strip()[:2000]}"
            for item in batch.items:
                yield self.count(Done(item, None, "?", why))
            return
        if out["ready"]:
            self.tally.prepared.setdefault(out["node"], set()).add(batch.env_key)
        for item, (value, error) in zip(batch.items, out["results"]):
            yield self.count(Done(item, value, out["node"], error))

    def close(self) -> None:
        if self.owns and ray.is_initialized():
            ray.shutdown()
