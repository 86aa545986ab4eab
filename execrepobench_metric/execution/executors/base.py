"""What every executor shares: its config (`ExecutorConfig`), the work it is handed (`Batch`), what it
streams back (`Done`), what ran where (`Tally`), the `Executor` interface, and `split` (items cut into
batches).  The executors themselves: `local.py`, `ray.py`; `registry.py` opens the one a config names.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord

from ..verdict import JudgeConfig

EXECUTORS = ("local", "ray")
RAY_EXTRA_HINT = "pip install 'execrepobench[ray]'"


@dataclass(frozen=True)
class ExecutorConfig:
    name: str = "local"  # one of EXECUTORS
    ray_address: str | None = None  # ray: "auto", "HOST:PORT", None (RAY_ADDRESS, else a local instance)
    batch_size: int = 4  # ray: most items per task (a batch's results land together)
    gold_samples: int = 1  # ray: samples per repository whose ground truth / null fill each node checks
    max_retries: int = 3  # ray: a task whose node dies is run again elsewhere, this many times at most

    def __post_init__(self) -> None:
        if self.name not in EXECUTORS:
            raise UsageError(f"executor {self.name!r}: expected one of {', '.join(EXECUTORS)}")
        if self.batch_size < 1 or self.gold_samples < 0 or self.max_retries < 0:
            raise UsageError("executor: batch_size must be >= 1, gold_samples and max_retries >= 0")


@dataclass(frozen=True)
class Batch:
    """Items of one repository.  `record` says how a node makes the environment (None: it must be
    in the node's cache already); `gold` are samples whose ground truth must pass and null fill fail
    on the node before its verdicts count (prepare's gold check; empty for the builder)."""

    repo_name: str
    env_key: str
    items: tuple[Any, ...]
    record: RepoRecord | None = None
    gold: tuple[Sample, ...] = ()


@dataclass(frozen=True)
class Done:
    item: Any
    value: Any  # fn(item); None when `error`
    node: str  # where it ran ("local" for the local executor)
    error: str = ""  # the harness's reason the item could not run there


@dataclass
class Tally:
    """What ran where: items per node, and the nodes' environment events."""

    items: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    prepared: dict = field(default_factory=dict)  # node -> set of env keys it made ready

    def to_dict(self) -> dict:
        return {"items_per_node": dict(sorted(self.items.items())),
                "errors_per_node": dict(sorted(self.errors.items())),
                "environments_per_node": {n: sorted(k) for n, k in sorted(self.prepared.items())}}


class Executor(ABC):
    name: str = ""
    parallelism: int = 1  # how many items can run at once
    shares_filesystem: bool = True  # items run on this machine (evidence folders can be written directly)

    def __init__(self) -> None:
        self.tally = Tally()

    @classmethod
    @abstractmethod
    def open(cls, config: "ExecutorConfig", workers: int) -> "Executor":
        """The executor `config` names, ready (connected, for Ray); `workers`: a local pool's size."""

    @abstractmethod
    def map(self, fn: Callable[[Any], Any], batches: Sequence[Batch], judge: JudgeConfig) -> Iterator[Done]:
        """fn(item) for every item of every batch, yielded as each lands (any order), exactly once.
        `judge`: the isolation every node must provide and the settings of its gold check."""

    def count(self, done: Done) -> Done:
        self.tally.items[done.node] += 1
        if done.error:
            self.tally.errors[done.node] += 1
        return done

    def report(self) -> dict:
        return {"executor": self.name, "parallelism": self.parallelism, **self.tally.to_dict()}

    def close(self) -> None:
        pass

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def split(items: Sequence[Any], max_size: int, min_parts: int = 1) -> list[tuple[Any, ...]]:
    """`items` cut into near-equal consecutive parts of at most `max_size`, at least `min_parts` of
    them (when there are that many items), so a small repository still spreads over the cluster."""
    if not items:
        return []
    parts = min(len(items), max(min_parts, math.ceil(len(items) / max(1, max_size))))
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for n in range(parts):
        end = start + size + (1 if n < extra else 0)
        out.append(tuple(items[start:end]))
        start = end
    return out
