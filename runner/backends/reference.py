"""Reference completers for checking environments and samples: `oracle` returns the ground truth
(every verified sample should pass), `null` returns the neutral fill (every one should fail)."""
from __future__ import annotations

from typing import Sequence

from execrepobench_metric.execution.surface import null_fill

from .base import Backend, Generation, Request


class OracleBackend(Backend):
    name = "oracle"
    needs_prompt = False

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation((r.sample.middle_code,) * r.n) for r in requests]


class NullBackend(Backend):
    name = "null"
    needs_prompt = False

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation(((null_fill(r.sample) or ""),) * r.n) for r in requests]
