"""Per-sample test selection: which tests judge a masked region.

Rules, narrowest first (the rule used is recorded in the sample):
- "coverage": the tests that executed any line of the masked region at baseline (coverage.py, one
  dynamic context per test, collected once per repository).
- "importers": the region runs at import time (coverage saw it outside any test), so every test
  whose module imports the masked module, directly or through other repo modules, is judged.
- "suite": nothing narrower applies; the whole non-excluded suite.
Only tests that passed in every baseline run are ever judged.  The tests are returned in an order of
priority: those that ran the masked lines first.
"""
from __future__ import annotations

from typing import Collection, Mapping

from ..preparation.coverage import CoverageMap
from ..sampling.context import imported_paths

RULES = ("coverage", "importers", "suite")


class ImportGraph:
    """Which repo files each file imports, transitively; built once per repository."""

    def __init__(self, files: Mapping[str, str]) -> None:
        paths = set(files)
        self.direct = {f: imported_paths(code, f, paths) for f, code in files.items()}
        self._closure: dict[str, set[str]] = {}

    def reaches(self, start: str) -> set[str]:
        if start not in self._closure:
            seen, stack = set(), [start]
            while stack:
                for nxt in self.direct.get(stack.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            self._closure[start] = seen
        return self._closure[start]


def region_lines(prefix: str, middle: str) -> tuple[int, int]:
    first = prefix.count("\n") + 1
    return first, first + middle.count("\n")


def select_tests(file_name: str, prefix: str, middle: str, cov: CoverageMap, graph: ImportGraph,
                 judgeable: Collection[str], minimum_rule: str = "coverage") -> tuple[tuple[str, ...], str]:
    """(judged test ids, rule) for one masked region; `judgeable` = tests passing at baseline."""
    ok = set(judgeable)
    first, last = region_lines(prefix, middle)
    tests, at_import, _ = cov.tests_for(file_name, first, last)
    tests &= ok
    if minimum_rule == "coverage" and tests and not at_import:
        return tuple(sorted(tests)), "coverage"
    if minimum_rule in ("coverage", "importers"):
        files = {t.split("::")[0] for t in ok}
        importing = {f for f in files if file_name in graph.reaches(f) or f == file_name}
        chosen = {t for t in ok if t.split("::")[0] in importing} | tests
        if chosen:
            return covering_first(tests, chosen), "importers"
    return covering_first(tests, ok), "suite"


def covering_first(covering: set[str], chosen: set[str]) -> tuple[str, ...]:
    """The chosen tests, those that ran the masked lines first (the likeliest to catch a wrong fill:
    the judge runs them in this order and stops at the first failure)."""
    return (*sorted(covering & chosen), *sorted(chosen - covering))
