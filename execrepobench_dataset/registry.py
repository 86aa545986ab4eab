"""The one registry style of the project: a name -> "module:Class" table whose modules are imported only
when their entry is asked for, so a missing optional dependency (vllm, torch, ray) breaks only its own
entry.  The generation backends (`runner/backends/base.py`) and the executors
(`execrepobench_metric/execution/executors/registry.py`) are such tables."""
from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Iterator

from .errors import UsageError


def import_named(target: str) -> Any:
    """The object a "module:name" string names, its module imported now."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


class LazyRegistry(Mapping):
    """name -> "module:Class" of one `kind` of thing (read-only); `load(name)` imports and returns the class,
    an unknown name is a `UsageError` listing the known ones."""

    def __init__(self, kind: str, entries: Mapping[str, str]) -> None:
        self.kind = kind
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> str:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def load(self, name: str) -> Any:
        if name not in self._entries:
            raise UsageError(f"unknown {self.kind} {name!r}; available: {', '.join(sorted(self._entries))}")
        return import_named(self._entries[name])
