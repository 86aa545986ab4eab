"""A build's repositories on a Ray cluster: one task per repository, its whole pipeline on one node.

Driver side (`run_on_cluster`): connects with the judging executor's own setup (`RayExecutor`: `ray_address`
"auto", "HOST:PORT", or None for RAY_ADDRESS / a local instance; refused when no node offers a task's CPU and
memory), submits one task per repository - its `RepoJob`: the manifest entry (exclude_newer date resolved), the
seed and mask, the decided sandbox and the build's settings, nothing else - and yields each result as it lands
(`ray.wait`), so the driver alone writes OUT (and its per-repository journal there).  A task whose node dies is
run again elsewhere by Ray (`max_retries` of the executor config); each task's result is taken exactly once, so
a repository is never lost nor counted twice.  A task that still fails is that repository's error entry, with
the reason Ray gave.

Node side (`build_on_node`): runs the repository's stages (`repo_build.run_job`: source, lock, environment,
baselines, coverage, masking, context, verification, mutants) in the node's own cache (`EXECREPOBENCH_CACHE` of
its `ray start`, else ~/.cache/execrepobench) and a scratch folder of its own, verification on local threads
(the task's `workers`); what it fetches comes from the package index or the source named in the manifest
entry.  It returns the repository's records (samples, report, repository record, measurements), nothing else;
its report names the node.  A node that lacks the sandbox the driver decided refuses with that reason.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Iterator

import ray
from ray.exceptions import RayError

from execrepobench_metric.execution.surface import ExecutorConfig, Isolation, RayExecutor, node_name, strong_available

from .repo_build import RepoBuild, RepoJob, run_job


def _refusal(job: RepoJob, node: str, phase: str, reason: str) -> RepoBuild:
    spec = job.task.spec
    report = {"repo": spec.name, "source": spec.source, "inputs_hash": job.inputs_hash, "status": "error",
              "phase": phase, "reason": f"node {node}: {reason}", "samples": 0, "per_fill_type": {},
              "timings": {}, "time_s": 0.0, "node": node}
    return RepoBuild([], report, None, None)


def build_on_node(job: RepoJob) -> RepoBuild:
    """On a node: the repository's whole pipeline (see the module doc)."""
    node = node_name()
    if job.task.isolation is Isolation.BWRAP and (why := strong_available()) is not None:
        return _refusal(job, node, "environment", f"the bubblewrap sandbox the driver asked for is unavailable: {why}")
    with tempfile.TemporaryDirectory(prefix=f"execrepobench-build-{job.name}-") as scratch:
        return run_job(job, Path(scratch), None, node)


def run_on_cluster(jobs: list[RepoJob], config: ExecutorConfig) -> Iterator[tuple[RepoJob, RepoBuild]]:
    """(job, its result) of every job, as each task lands (any order); see the module doc."""
    if not jobs:
        return
    executor = RayExecutor(config)
    try:
        judge = jobs[0].task.judge
        executor._check_fits(judge)  # a task no node can hold would wait forever
        task = ray.remote(build_on_node).options(num_cpus=1, memory=judge.limits.address_space_bytes,
                                                 max_retries=config.max_retries, retry_exceptions=False)
        pending = {task.remote(job): job for job in jobs}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except RayError as exc:  # retries used up (nodes lost), or the task could not run at all
                    result = _refusal(job, "?", "cluster", f"Ray task failed: {type(exc).__name__}: "
                                                           f"{str(exc).strip()[:2000]}")
                yield job, result
    finally:
        executor.close()
