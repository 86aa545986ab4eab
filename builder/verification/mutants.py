"""Plausible wrong completions of a sample: AST-level mutants of its ground truth.

A sample whose judged tests cannot tell a wrong fill from the right one inflates scores even when its
null fill fails.  Verification judges up to `MUTANTS` mutants of the ground truth and records how many
its tests kill (`Sample.mutants_killed` / `mutants_total`); a sample whose tests kill fewer than a set
share is dropped (`weak_tests`).

Mutations, each confined to the masked middle: comparison operator swaps (`<` / `<=`, `==` / `!=`,
`in` / `not in`, `is` / `is not`, ...), arithmetic operator swaps (`+` / `-`, `*` / `//`, ...),
off-by-one integer constants, negated `if` / `while` / `assert` conditions and ternaries, dropped
return values (`return x` -> `return None`).  Only mutants whose completed file compiles and whose AST
differs from the ground truth's (and from each other's) are kept; which ones, of all candidates, is
decided by a hash of the sample id and the mutant: the same sample always gets the same mutants.
"""
from __future__ import annotations

import ast
import hashlib
import io
import tokenize
import warnings

from execrepobench_dataset.record import Sample

MUTANTS = 3  # mutants judged per sample
SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "+": "-", "-": "+", "*": "//",
         "/": "*", "//": "*", "%": "//", "and": "or", "or": "and", "is": "is not", "in": "not in"}


def _line_starts(text: str) -> list[int]:
    starts, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def _token_edits(text: str, lo: int, hi: int) -> list[tuple[int, int, str]]:
    """(start, end, replacement) in character offsets of `text`, for tokens inside [lo, hi)."""
    starts, edits = _line_starts(text), []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    for tok in tokens:
        a = starts[tok.start[0] - 1] + tok.start[1]
        b = starts[tok.end[0] - 1] + tok.end[1]
        if a < lo or b > hi:
            continue
        if tok.type == tokenize.OP and tok.string in SWAPS or tok.type == tokenize.NAME and tok.string in SWAPS:
            edits.append((a, b, SWAPS[tok.string]))
        elif tok.type == tokenize.NUMBER and tok.string.isdigit():
            edits.append((a, b, str(int(tok.string) + 1)))
    return edits


def _node_span(node: ast.AST, starts: list[int], text: str) -> tuple[int, int]:
    # ast offsets are UTF-8 byte columns; convert through each line's text
    def at(line: int, col: int) -> int:
        row = text[starts[line - 1]:starts[line]]
        return starts[line - 1] + len(row.encode("utf-8")[:col].decode("utf-8", errors="ignore"))
    return at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)


def _ast_edits(text: str, lo: int, hi: int) -> list[tuple[int, int, str]]:
    """Negated conditions and dropped return values, for nodes inside [lo, hi)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    starts, edits = _line_starts(text), []
    for node in ast.walk(tree):
        target = None
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            target, make = node.test, lambda seg: f"not ({seg})"
        elif isinstance(node, ast.Return) and node.value is not None:
            target, make = node.value, lambda seg: "None"
        if target is None:
            continue
        a, b = _node_span(target, starts, text)
        if lo <= a and b <= hi and text[a:b] != "None":
            edits.append((a, b, make(text[a:b])))
    return edits


def _dump(code: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError):
        return None


def mutants(sample: Sample, limit: int = MUTANTS) -> list[str]:
    """Up to `limit` mutated middles (completions) of `sample`'s ground truth, in a fixed order."""
    text = sample.original_code
    lo, hi = len(sample.prefix_code), len(sample.prefix_code) + len(sample.middle_code)
    original = _dump(text)
    if original is None:
        return []
    seen, found = {original}, []
    for a, b, new in sorted(set(_token_edits(text, lo, hi) + _ast_edits(text, lo, hi))):
        middle = sample.middle_code[:a - lo] + new + sample.middle_code[b - lo:]
        tree = _dump(sample.prefix_code + middle + sample.suffix_code)
        if tree is not None and tree not in seen:
            seen.add(tree)
            found.append(middle)
    rank = lambda m: hashlib.sha256(f"{sample.sample_id}\0{m}".encode()).hexdigest()  # noqa: E731
    return sorted(found, key=rank)[:limit]
