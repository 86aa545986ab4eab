"""A build on the local executor against the same build on a two-node local Ray cluster, on this machine.

    .venv/bin/python benchmarks/bench_build_ray.py                       # the quickstart manifest
    .venv/bin/python benchmarks/bench_build_ray.py --manifest builder/manifests/default.toml --repo schema --repo toolz

Builds the manifest twice from empty caches: once with `--executor local` (threads, --workers runs at a time),
once with `--executor ray` on a `ray.cluster_utils.Cluster` started here - a head that runs nothing and two
worker nodes of --node-cpus CPUs, each with its own EXECREPOBENCH_CACHE (one Ray task per repository).  Checks
that both wrote byte-identical samples.jsonl and the same dataset fingerprint (exit 1 otherwise) and prints the
wall time of both, Ray's start-up, the repositories and samples per hour per node, and the overhead per task:
(the cluster's wall time - the local one's) / repositories.  On one machine the cluster cannot be faster (the
two nodes share its cores): the point is equal output and what a task costs.  Needs bubblewrap, the `ray`
extra and the package index (real PyPI sources; uv's download cache is shared, the builder's caches are not).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from execrepobench.builder.build import BuildConfig, build
from execrepobench.builder.sources.manifest import load_manifest, quickstart_manifest_path
from execrepobench_dataset.load import open_dataset
from execrepobench_metric.environments.layout import CACHE_ENV_VAR
from execrepobench_metric.execution.executors.base import ExecutorConfig


def one_build(manifest_path: Path, out: Path, cache: Path, executor: ExecutorConfig, args) -> tuple[float, dict]:
    os.environ[CACHE_ENV_VAR] = str(cache)  # the driver's own cache (the nodes have theirs)
    config = BuildConfig(manifest=load_manifest(manifest_path), out=out, only=tuple(args.repo), progress=False,
                         workers=args.workers, executor=executor)
    t0 = time.monotonic()
    summary = build(config)
    return time.monotonic() - t0, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=quickstart_manifest_path())
    ap.add_argument("--repo", action="append", default=[], help="only this repository (repeatable)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="runs at a time within a repository")
    ap.add_argument("--node-cpus", type=int, default=1, help="CPUs of each of the two worker nodes")
    args = ap.parse_args()
    from ray.cluster_utils import Cluster

    base = Path(tempfile.mkdtemp(prefix="bench-build-ray-"))
    local_s, local = one_build(args.manifest, base / "local", base / "cache-local", ExecutorConfig(), args)
    t0 = time.monotonic()
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "env_vars": {CACHE_ENV_VAR: str(base / "head")}})
    for name in ("a", "b"):
        cluster.add_node(num_cpus=args.node_cpus, memory=5 << 30,
                         env_vars={CACHE_ENV_VAR: str(base / f"node-{name}")})
    cluster.wait_for_nodes()
    start_s = time.monotonic() - t0
    try:
        on_ray = ExecutorConfig("ray", cluster.address)
        ray_s, remote = one_build(args.manifest, base / "ray", base / "cache-driver", on_ray, args)
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
    same_bytes = (base / "local" / "samples.jsonl").read_bytes() == (base / "ray" / "samples.jsonl").read_bytes()
    fingerprints = [open_dataset(base / which).fingerprint for which in ("local", "ray")]
    repos = len(local["repos"])
    print(json.dumps({
        "manifest": args.manifest.name, "repos": repos, "samples": local["totals"]["samples"],
        "samples_sha256": hashlib.sha256((base / "local" / "samples.jsonl").read_bytes()).hexdigest(),
        "identical_samples": same_bytes, "same_fingerprint": fingerprints[0] == fingerprints[1],
        "local_wall_s": round(local_s, 1), "ray_wall_s": round(ray_s, 1), "ray_start_s": round(start_s, 1),
        "ray_over_local": round(ray_s / max(1e-9, local_s), 2),
        "overhead_per_task_s": round((ray_s - local_s) / max(1, repos), 1),
        "per_node_local": local["executor"]["per_node"], "per_node_ray": remote["executor"]["per_node"],
    }, indent=1))
    return 0 if same_bytes and fingerprints[0] == fingerprints[1] else 1


if __name__ == "__main__":
    sys.exit(main())
