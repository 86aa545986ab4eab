"""The files masks are drawn from (`masking.py`), prepared once: decoded, parsed, their non-blank lines and
grammar nodes by category (`grammar.py`), restricted to a `Region` where one is given."""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Mapping, Optional, Protocol

from tree_sitter import Node

from .grammar import _category, _parser, _walk


class Region(Protocol):
    """Where masks may lie (a live snapshot's new code): `rows[file]` are the 0-based rows masks may cover
    (blank rows are neutral; files not named get no mask), `allows` the final word on one mask."""

    rows: Mapping[str, frozenset[int]]

    def allows(self, file: str, data: bytes, start_byte: int, end_byte: int) -> bool: ...


@dataclass
class _Source:
    name: str
    data: bytes
    text: str
    last_row: int
    lines: list[tuple[int, int, int]]  # non-blank lines: (row, first non-space char, end char)
    nodes: dict[str, list[Node]]  # category -> nodes, in document order
    pairs: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # cache for multi_line
    # with a Region: bad[i] = non-blank rows before row i outside it (a row range is inside when none is)
    bad: Optional[list[int]] = None

    def inside(self, first_row: int, last_row: int) -> bool:
        return self.bad is None or self.bad[last_row + 1] == self.bad[first_row]

    def byte(self, char_offset: int) -> int:
        return char_offset if len(self.text) == len(self.data) else len(self.text[:char_offset].encode())


def _restrict(src: _Source, rows: frozenset[int]) -> _Source:
    """Only the lines and nodes of `src` that lie inside `rows` (blank rows do not count)."""
    bad, count, non_blank = [0], 0, {row for row, _, _ in src.lines}
    for row in range(src.last_row + 2):
        count += row in non_blank and row not in rows
        bad.append(count)
    src.bad = bad
    src.lines = [line for line in src.lines if line[0] in rows]
    src.nodes = {c: kept for c, nodes in src.nodes.items()
                 if (kept := [n for n in nodes if src.inside(n.start_point.row, n.end_point.row)])}
    return src


def _prepare(files: Mapping[str, bytes], region: Optional[Region] = None) -> tuple[list[_Source], dict[str, str]]:
    sources, skipped = [], {}
    for name in sorted(files):
        if region is not None and not region.rows.get(name):
            continue  # no row of this file may be masked
        data = files[name]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            skipped[name] = f"not_utf8: {exc.reason} at byte {exc.start}"
            continue
        tree = _parser().parse(data)
        if tree.root_node.has_error:
            skipped[name] = "parse_error: tree-sitter reports a syntax error"
            continue
        lines, offset = [], 0
        for row, line in enumerate(text.split("\n")):
            content = line[:-1] if line.endswith("\r") else line
            if content.strip():
                lines.append((row, offset + len(content) - len(content.lstrip()), offset + len(content)))
            offset += len(line) + 1
        nodes = collections.defaultdict(list)
        for node in _walk(tree.root_node):
            category = _category(node)
            if category:
                nodes[category].append(node)
        last_row = text.count("\n") - (1 if text.endswith("\n") else 0)
        src = _Source(name, data, text, last_row, lines, dict(nodes))
        sources.append(src if region is None else _restrict(src, region.rows[name]))
    return sources, skipped
