"""Honest wrong completions for the guard's fairness checks (tests/metric/test_guard_honest.py).

An honest model that is wrong must be judged `failed`, never `tampering`.  Per sample this makes the
null fill, AST mutants of the ground truth (an operator swapped, a constant off by one, a condition
negated) and the ground truth reformatted (same AST, other text: it must pass), and a fixture
repository whose tests exercise what legitimately swaps things while tests run: doctest (it swaps
`linecache.getlines`, `sys.stdout`, `sys.displayhook` while an example runs), tracebacks of
chained exceptions formatted while that swap is in place, pytest's lazily initialised helpers
(assertion diffs, `approx`, `raises(match=)`, warnings capture, logging capture), and the
repository's own lazily initialised module state.
"""
from __future__ import annotations

import ast
import subprocess
import textwrap
from pathlib import Path

from execrepobench_dataset.record import FILL_BLOCK, FILL_STATEMENT, Sample
from execrepobench_metric.execution.fills import null_fill

from workload import reformatted  # benchmarks/ (setup.cfg: pytest's pythonpath)

_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
         ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.And: ast.Or, ast.Or: ast.And,
         ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.FloorDiv: ast.Mod,
         ast.Mod: ast.FloorDiv, ast.Div: ast.Mult}


class _Mutate(ast.NodeTransformer):
    """Changes the `target`-th candidate node of its kind ("operator", "constant", "condition")."""

    def __init__(self, kind: str, target: int) -> None:
        self.kind, self.target, self.seen, self.done = kind, target, -1, False

    def _hit(self) -> bool:
        self.seen += 1
        if self.seen == self.target and not self.done:
            self.done = True
            return True
        return False

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if self.kind == "operator" and type(node.op) in _SWAP and self._hit():
            node.op = _SWAP[type(node.op)]()
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if self.kind == "operator" and type(node.op) in _SWAP and self._hit():
            node.op = _SWAP[type(node.op)]()
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if self.kind == "operator" and type(node.ops[0]) in _SWAP and self._hit():
            node.ops = [_SWAP[type(node.ops[0])](), *node.ops[1:]]
        return node

    def visit_Constant(self, node):
        if self.kind == "constant" and type(node.value) is int and self._hit():
            return ast.copy_location(ast.Constant(node.value + 1), node)
        if self.kind == "constant" and type(node.value) is str and node.value and self._hit():
            return ast.copy_location(ast.Constant(node.value[:-1]), node)
        return node

    def _negate(self, node):
        self.generic_visit(node)
        if self.kind == "condition" and self._hit():
            node.test = ast.UnaryOp(ast.Not(), node.test)
        return node

    visit_If = visit_While = visit_IfExp = visit_Assert = _negate


def _indent_of(sample: Sample) -> str:
    line = sample.prefix_code.rsplit("\n", 1)[-1]
    return line if not line.strip() else ""


def ast_mutants(sample: Sample, per_kind: int = 2) -> list[tuple[str, str]]:
    """(kind, completion): the ground truth with one node changed, that compiles and differs in
    its AST; only for masks whose middle parses as statements (after removing the first line's indent)."""
    indent = _indent_of(sample)
    lines = sample.middle_code.split("\n")
    if any(line and not line.startswith(indent) for line in lines[1:]):
        return []
    body = "\n".join([lines[0], *(line[len(indent):] for line in lines[1:])])
    try:
        tree = ast.parse(textwrap.dedent(body))
    except SyntaxError:
        return []
    original = ast.dump(tree)
    out = []
    for kind in ("operator", "constant", "condition"):
        for target in range(per_kind):
            mutant = _Mutate(kind, target).visit(ast.parse(textwrap.dedent(body)))
            if ast.dump(mutant) == original:
                break
            code = ast.unparse(mutant).split("\n")
            completion = "\n".join([code[0], *((indent + line) if line else line for line in code[1:])])
            if all(completion != c for _, c in out):
                out.append((f"{kind}_{target}", completion))
    return out


def honest_completions(sample: Sample) -> list[tuple[str, str]]:
    """(kind, completion): "null", the AST mutants, "reformatted" (the one that must pass)."""
    out = []
    fill = null_fill(sample)
    if fill is not None:
        out.append(("null", fill))
    out += ast_mutants(sample)
    variant = reformatted(sample)
    if variant is not None:
        out.append(("reformatted", variant))
    return out


DOCREPO = {
    "pyproject.toml": '''
        [project]
        name = "docrepo"
        version = "0.1"

        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        ''',
    "docrepo/__init__.py": "",
    "docrepo/text.py": '''
        """Text helpers, tested by their doctests."""
        import re

        _WORD = None  # compiled on first use


        def words(text):
            """Split into words.

            >>> words("a b  c")
            ['a', 'b', 'c']
            >>> words("")
            []
            """
            global _WORD
            if _WORD is None:
                _WORD = re.compile(r"\\S+")
            return _WORD.findall(text)


        def clamp(value, low, high):
            """
            >>> clamp(5, 0, 3)
            3
            >>> clamp(-1, 0, 3)
            0
            >>> clamp(2, 0, 3)
            2
            """
            if value < low:
                return low
            if value > high:
                return high
            return value


        def parse_pair(text):
            """
            >>> parse_pair("a=1")
            ('a', 1)
            >>> parse_pair("b=22")
            ('b', 22)
            >>> parse_pair("oops")
            Traceback (most recent call last):
            ...
            ValueError: no '=' in 'oops'
            """
            key, sep, value = text.partition("=")
            if not sep:
                raise ValueError(f"no '=' in {text!r}")
            try:
                return key, int(value)
            except ValueError as exc:
                raise ValueError(f"bad value in {text!r}") from exc


        def scaled(values, factor=2):
            """
            >>> scaled([1, 2, 3])
            [2, 4, 6]
            >>> scaled([1.5, None], 3)
            [4.5]
            """
            return [v * factor for v in values if v is not None]
        ''',
    "docrepo/registry.py": '''
        """A registry initialised lazily on first use (module state rebound once)."""
        import logging
        import warnings

        _REGISTRY = None
        log = logging.getLogger(__name__)


        def _load():
            return {"one": 1, "two": 2, "three": 3}


        def lookup(name):
            global _REGISTRY
            if _REGISTRY is None:
                _REGISTRY = _load()
                log.info("registry loaded: %d names", len(_REGISTRY))
            if name not in _REGISTRY:
                warnings.warn(f"unknown name {name!r}", UserWarning)
                return None
            return _REGISTRY[name]


        def total(names):
            """
            >>> total(["one", "two"])
            3
            """
            result = 0
            for name in names:
                value = lookup(name)
                if value is not None:
                    result += value
            return result
        ''',
    "tests/__init__.py": "",
    "tests/test_text.py": '''
        import pytest

        from docrepo.registry import lookup, total
        from docrepo.text import clamp, parse_pair, scaled, words


        def test_words_long():
            assert words("alpha beta gamma delta") == ["alpha", "beta", "gamma", "delta"]


        def test_clamp_table():
            table = {(5, 0, 3): 3, (-1, 0, 3): 0, (2, 0, 3): 2, (3, 0, 3): 3}
            assert {k: clamp(*k) for k in table} == table


        def test_pair_errors():
            with pytest.raises(ValueError, match="no '='"):
                parse_pair("oops")
            with pytest.raises(ValueError, match="bad value"):
                parse_pair("a=x")


        def test_scaled_approx():
            assert scaled([0.1, 0.2], 3) == pytest.approx([0.3, 0.6])


        def test_registry(caplog):
            assert lookup("two") == 2
            with pytest.warns(UserWarning):
                assert lookup("nine") is None
            assert total(["one", "three"]) == 4
        ''',
}


def write_docrepo(root: Path) -> Path:
    for name, text in DOCREPO.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


DOCREPO_MANIFEST = '''[[repo]]
source = "path:{path}"
name = "docrepo"
test_paths = ["docrepo", "tests"]
pytest_args = ["--doctest-modules"]
'''


def fill_of(middle: str) -> str:
    """The fill type of a masked statement (several lines: a block)."""
    return FILL_BLOCK if "\n" in middle else FILL_STATEMENT


STABLE_SEEDS = range(4)  # collections a test id must appear in, under these hash seeds, to be judged


def collected_ids(built: dict) -> list[str]:
    """The repository's test ids that every collection under STABLE_SEEDS gives, in collection order:
    ids that follow set order (isodate parametrizes over a set, and on Python 3.11 `hash(None)` follows
    the address space layout) are left out, as the builder leaves them out (`unstable_ids`)."""
    command = built["test_command"]
    assert command[:3] == ("python", "-m", "pytest"), command
    listings = [subprocess.run([built["python"], "-m", "pytest", "--collect-only", *command[3:]],
                               cwd=built["root"], capture_output=True, text=True,
                               env={"PYTHONHASHSEED": str(seed)}).stdout.splitlines() for seed in STABLE_SEEDS]
    everywhere = set.intersection(*({line for line in listing if "::" in line} for listing in listings))
    return [line for line in listings[0] if line in everywhere]
