"""The backend interface and a lazy registry (name -> "module:Class", imported on first use:
`execrepobench_dataset.registry`, the executors' style too)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Sequence

from execrepobench_dataset.record import Sample
from execrepobench_dataset.registry import LazyRegistry


@dataclass(frozen=True)
class Request:
    sample: Sample
    prompt: Any = None  # rendered prompt (str or chat messages) for model backends; None for offline ones
    n: int = 1


@dataclass(frozen=True)
class Generation:
    raw: tuple[str, ...]  # what the backend returned, one per sample drawn
    meta: dict = field(default_factory=dict)


class Backend(ABC):
    """Turns requests into n raw completions each.  `needs_prompt` False: works from the sample alone."""

    name = "backend"
    needs_prompt = True
    engine_options: tuple[str, ...] = ()  # the engine settings (run's flags) this backend takes

    def __init__(self, model: str | None = None, **options: Any) -> None:
        self.model = model
        self.options = options

    @abstractmethod
    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        ...


# name -> "module:Class"; modules are imported only when their backend is asked for, so a missing
# optional dependency (vllm, torch, an HTTP client) never breaks the others.
REGISTRY = LazyRegistry("backend", {
    "baseline": "execrepobench.runner.backends.baseline:BaselineBackend",
    "oracle": "execrepobench.runner.backends.reference:OracleBackend",
    "null": "execrepobench.runner.backends.reference:NullBackend",
    "transformers": "execrepobench.runner.backends.hf:TransformersBackend",
    "vllm": "execrepobench.runner.backends.vllm_backend:VLLMBackend",
    "openai": "execrepobench.runner.backends.openai_backend:OpenAIBackend",
})


def get_backend(name: str, model: str | None = None, **options: Any) -> Backend:
    """The backend `name` (an unknown name: `UsageError` listing the known ones), made with `model` and `options`."""
    return REGISTRY.load(name)(model=model, **options)
