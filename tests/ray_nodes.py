"""A real local Ray cluster for the tests (`ray.cluster_utils.Cluster`): a head node that runs nothing and two
worker nodes, each with its own EXECREPOBENCH_CACHE and TMPDIR (per-node `env_vars` of the raylet, which its
workers inherit).  A node that dies is noticed within about two seconds (the kill tests)."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from execrepobench_metric.environments.layout import CACHE_ENV_VAR

NODE_CPUS = 1
NODE_MEMORY = 5 << 30  # Ray's bookkeeping: a task asks for the sandbox's 4 GiB address-space limit
FAST_FAILURE = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                "health_check_initial_delay_ms": 0}


@contextmanager
def two_node_cluster(base: Path) -> Iterator[tuple[object, dict[object, Path]]]:
    """(cluster, {node: its cache folder under `base`}); shut down (and Ray with it) on exit."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "env_vars": {CACHE_ENV_VAR: str(base / "head")}, "_system_config": FAST_FAILURE})
    caches = {}
    try:
        for name in ("a", "b"):  # a node's own temporary folder too: the kill tests watch it for running work
            (base / name / "tmp").mkdir(parents=True)
            node = cluster.add_node(num_cpus=NODE_CPUS, memory=NODE_MEMORY,
                                    env_vars={CACHE_ENV_VAR: str(base / name), "TMPDIR": str(base / name / "tmp")})
            caches[node] = base / name
        cluster.wait_for_nodes()
        yield cluster, caches
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
