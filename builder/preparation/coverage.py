"""Which tests ran which lines at baseline: the data of the baseline's coverage run (coverage.py, one dynamic
context per test), mapped per file and line.  Test selection (verification/selection.py) reads it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


@dataclass(frozen=True)
class CoverageMap:
    """file (repo-relative) -> line -> node ids of the tests that ran it ("" = outside any test)."""

    lines: Mapping[str, Mapping[int, frozenset[str]]]

    @classmethod
    def from_data_file(cls, data_file: Path, root: Path) -> "CoverageMap":
        from coverage import CoverageData

        data = CoverageData(basename=str(data_file))
        data.read()
        out: dict[str, dict[int, frozenset[str]]] = {}
        resolved = root.resolve()
        for measured in data.measured_files():
            # our coverage configuration stores paths relative to the run's root (relative_files)
            path = (Path(measured) if Path(measured).is_absolute() else resolved / measured).resolve()
            if not path.is_relative_to(resolved):
                continue
            by_line = data.contexts_by_lineno(measured)
            out[path.relative_to(resolved).as_posix()] = {ln: frozenset(c) for ln, c in by_line.items()}
        return cls(out)

    def tests_for(self, file_name: str, first: int, last: int) -> tuple[set[str], bool, bool]:
        """(tests that ran lines first..last, whether any ran at import time, whether any line ran)."""
        by_line = self.lines.get(file_name, {})
        hit = [by_line[ln] for ln in range(first, last + 1) if ln in by_line]
        if not hit:  # a region inside a multi-line statement: use the statement's recorded start line
            before = [ln for ln in by_line if ln < first]
            if before:
                hit = [by_line[max(before)]]
        contexts = set().union(*hit) if hit else set()
        return {c for c in contexts if c}, "" in contexts, bool(hit)
