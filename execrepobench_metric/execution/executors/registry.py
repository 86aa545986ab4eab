"""Open the executor a config names: `EXECUTORS`, a lazy registry (`execrepobench_dataset.registry`, the style
of the generation backends too): `local` here, `ray` imported only when asked for."""
from __future__ import annotations

import importlib.util

from execrepobench_dataset.registry import LazyRegistry
from execrepobench_metric.errors import ExecutorUnavailable

from .base import RAY_EXTRA_HINT, Executor, ExecutorConfig

EXECUTORS = LazyRegistry("executor", {
    "local": "execrepobench_metric.execution.executors.local:LocalExecutor",
    "ray": "execrepobench_metric.execution.executors.ray:RayExecutor",
})
NEEDS = {"ray": ("ray", RAY_EXTRA_HINT)}  # executor -> the optional package it needs, and how to install it


def require_executor(config: ExecutorConfig) -> None:
    """Raises `ExecutorUnavailable` when the executor cannot run here (checked before any work)."""
    package, hint = NEEDS.get(config.name, (None, ""))
    if package is not None and importlib.util.find_spec(package) is None:
        raise ExecutorUnavailable(f"executor {config.name!r} needs {package.capitalize()}, which is not installed "
                                  f"here: {hint}")


def open_executor(config: ExecutorConfig, workers: int) -> Executor:
    """The executor `config` names (connected, for Ray); `workers`: the local pool's size."""
    require_executor(config)
    return EXECUTORS.load(config.name).open(config, workers)
