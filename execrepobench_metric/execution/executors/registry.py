"""Open the executor a config names (`EXECUTORS`): `local` here, `ray` imported only when asked for."""
from __future__ import annotations

import importlib.util

from execrepobench_metric.errors import ExecutorUnavailable

from .base import RAY_EXTRA_HINT, Executor, ExecutorConfig


def require_executor(config: ExecutorConfig) -> None:
    """Raises `ExecutorUnavailable` when the executor cannot run here (checked before any work)."""
    if config.name == "ray" and importlib.util.find_spec("ray") is None:
        raise ExecutorUnavailable(f"executor 'ray' needs Ray, which is not installed here: {RAY_EXTRA_HINT}")


def open_executor(config: ExecutorConfig, workers: int) -> Executor:
    """The executor `config` names (connected, for Ray); `workers`: the local pool's size."""
    require_executor(config)
    if config.name == "ray":
        from .ray import RayExecutor

        return RayExecutor(config)
    from .local import LocalExecutor

    return LocalExecutor(workers)
