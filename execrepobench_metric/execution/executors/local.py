"""The local executor: a thread pool on this machine (today's behaviour, the default).

Environments are not made here: the caller makes sure they are in this cache first (`compute`
prepares or raises `EnvironmentsMissing`; the builder made them itself).
"""
from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from itertools import islice
from typing import Any, Callable, Iterator, Sequence

from ..verdict import JudgeConfig
from .base import Batch, Done, Executor, ExecutorConfig

NODE = "local"


class LocalExecutor(Executor):
    name = "local"
    shares_filesystem = True

    def __init__(self, workers: int) -> None:
        super().__init__()
        self.parallelism = max(1, workers)

    @classmethod
    def open(cls, config: ExecutorConfig, workers: int) -> "LocalExecutor":
        return cls(workers)

    def map(self, fn: Callable[[Any], Any], batches: Sequence[Batch],
            judge: JudgeConfig | None = None) -> Iterator[Done]:
        items = [item for batch in batches for item in batch.items]  # batches come grouped by repository
        with ThreadPoolExecutor(max_workers=self.parallelism) as pool:
            todo = iter(items)  # at most 2 x parallelism in flight, in order: a repository's file cache stays warm
            running = {pool.submit(fn, item): item for item in islice(todo, 2 * self.parallelism)}
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    item = running.pop(future)
                    try:
                        done = Done(item, future.result(), NODE)
                    except Exception as exc:  # noqa: BLE001 - fn should not raise; if it does: a harness error
                        done = Done(item, None, NODE, f"{type(exc).__name__}: {exc}")
                    yield self.count(done)
                    running.update({pool.submit(fn, nxt): nxt for nxt in islice(todo, 1)})
