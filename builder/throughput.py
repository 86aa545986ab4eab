"""Throughput of a build, per node: repositories and samples per hour, from the reports as they land.

A node's rate is what it finished over the wall time of the build's fresh work so far (repositories reused
from an earlier build are not counted), so the rates of the nodes add up to the build's.  Never part of a
fingerprint: it measures a machine, not the benchmark.
"""
from __future__ import annotations

import time
from collections import defaultdict


class Throughput:
    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.repos: dict[str, int] = defaultdict(int)
        self.samples: dict[str, int] = defaultdict(int)
        self.busy_s: dict[str, float] = defaultdict(float)

    def add(self, report: dict) -> None:
        node = report.get("node", "local")
        self.repos[node] += 1
        self.samples[node] += report.get("samples", 0) if report.get("status") == "ok" else 0
        self.busy_s[node] += report.get("time_s", 0.0)

    def _hours(self) -> float:
        return max(1e-9, time.monotonic() - self.t0) / 3600

    def report(self) -> dict:
        hours = self._hours()
        return {"wall_s": round(hours * 3600, 1),
                "per_node": {node: {"repos": self.repos[node], "samples": self.samples[node],
                                    "repo_s": round(self.busy_s[node], 1),
                                    "repos_per_hour": round(self.repos[node] / hours, 1),
                                    "samples_per_hour": round(self.samples[node] / hours, 1)}
                             for node in sorted(self.repos)}}

    def line(self) -> str:
        """The progress bar's words: per node, repositories and samples per hour."""
        hours = self._hours()
        return ", ".join(f"{node} {self.repos[node] / hours:.0f} repo/h {self.samples[node] / hours:.0f} sample/h"
                         for node in sorted(self.repos))
