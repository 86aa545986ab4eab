"""The one table of levels (builder/sampling/levels.py): every node type of the grammar placed, masking and
the checker agree on every node masking can reach, and the mislabels of issue 32 are gone."""
from __future__ import annotations

import dataclasses

import tree_sitter_python
from tree_sitter import Language

from conftest import make_sample
from execrepobench.builder.sampling.grammar import (
    CATEGORY_LEVEL, CATEGORY_NODE_TYPES, _category, _parser, _walk, check_fill_type,
)
from execrepobench.builder.sampling.levels import (
    BLOCK_TYPES, EXPRESSION_TYPES, NODE_LEVEL, STATEMENT_TYPES, UnknownNodeType, level_of_node, level_of_type,
)
from execrepobench.builder.sampling.masking import MaskConfig, sample_masks
from execrepobench_dataset.record import FILL_BLOCK, FILL_EXPRESSION, FILL_SPAN, FILL_STATEMENT, LEVEL_TO_FILL

import pytest


def _grammar_named_types() -> set[str]:
    """Every named, visible node type tree-sitter-python can produce (from the installed grammar itself)."""
    lang = Language(tree_sitter_python.language())
    return {lang.node_kind_for_id(i) for i in range(lang.node_kind_count)
            if lang.node_kind_is_named(i) and lang.node_kind_is_visible(i) and i not in lang.supertypes}


def test_every_node_type_of_the_grammar_has_exactly_one_level():
    grammar = _grammar_named_types()
    assert len(grammar) > 100
    assert not grammar - set(NODE_LEVEL), f"node types with no level: {sorted(grammar - set(NODE_LEVEL))}"
    assert not set(NODE_LEVEL) - grammar, f"levels for types the grammar lacks: {sorted(set(NODE_LEVEL) - grammar)}"
    assert len(BLOCK_TYPES) + len(STATEMENT_TYPES) + len(EXPRESSION_TYPES) == len(NODE_LEVEL)  # disjoint
    with pytest.raises(UnknownNodeType, match="no_such_node"):
        level_of_type("no_such_node")


def test_a_category_is_the_level_of_its_node_types():
    for category, types in CATEGORY_NODE_TYPES.items():
        assert {NODE_LEVEL[t] for t in types} == {CATEGORY_LEVEL[category]}, category


# A file with every construct of Python 3 tree-sitter parses, each inside a category node.
RICH = '''\
import os.path as osp
from . import sibling
from .pkg import (a, b as c)
from typing import *
from __future__ import annotations


@decorator(arg=1)
class Thing(Base, metaclass=Meta):
    """Doc."""
    field: int = 3

    @staticmethod
    def helper(a, *, b=1.5):  # a comment
        return a + \\
            b

    async def method[T](self, x: T, /, y=2, *args: int, z: "str" = "s", **kw) -> list[T] | None:
        global G
        nonlocal_value = lambda p, *q, r=1, **s: p
        try:
            with open(x) as fh, other() as (p, q):
                return [i ** 2 for i in fh if i]
        except* (ValueError, KeyError) as exc:
            raise RuntimeError("bad") from exc
        except OSError:
            pass
        else:
            del x[1:2, ::3]
        finally:
            assert y, f"{y!r:>{width}} {{}}\\n"
        match y:
            case [1, 2, *rest] | {"k": v, **others} if v:
                yield from rest
            case Point(x=0, y=yy) as pt:
                await pt
            case (1 | 2) | -1 | 1 + 2j | None | True | False | "s" "t":
                continue
            case _:
                break
        return {k: v for k, v in kw.items()}, {s for s in args}, (g for g in args), ...


def function(a, b):
    type Alias[K: int, *Ts, **P] = dict[K, tuple[*Ts]]
    total = 0
    total += a if b else -b
    while not (a and b or a is not None):
        a, *b = b, a
        if (n := len(b)) > 1 and a in b:
            print(a, sep="", *b, **{"end": ""})
        elif a[0].attr @ b:
            continue
        else:
            break
    for i, (j, k) in enumerate(zip(a, b)):
        yield i
    return total


def returns_one():
    if x:
        return some_call(x)
    return None
'''


def _nodes_masking_can_reach(source: bytes):
    """Every category node and each of its named descendants (what `_draw_grammar` may mask)."""
    for node in _walk(_parser().parse(source).root_node):
        if _category(node):
            yield from (n for n in _walk(node) if n.is_named)


def _sample_of(source: str, node, fill_type: str):
    data = source.encode()
    prefix, middle = data[:node.start_byte].decode(), data[node.start_byte:node.end_byte].decode()
    return make_sample(prefix_code=prefix, middle=middle, suffix_code=data[node.end_byte:].decode(),
                       fill_type=fill_type, node_type=node.type)


def test_every_reachable_node_type_is_placed_and_the_checker_agrees():
    source = RICH.encode()
    assert not _parser().parse(source).root_node.has_error
    seen = set()
    for node in _nodes_masking_can_reach(source):
        seen.add(node.type)
        right = LEVEL_TO_FILL[level_of_node(node)]
        assert check_fill_type(_sample_of(RICH, node, right)) is None, node.type
        wrong = next(f for f in (FILL_EXPRESSION, FILL_STATEMENT, FILL_BLOCK) if f != right)
        assert "labelled" in check_fill_type(_sample_of(RICH, node, wrong)), node.type
    # The file reaches most of the grammar (what it cannot: Python 2 print/exec, and a few rare ones).
    missing = set(NODE_LEVEL) - seen - {"module", "print_statement", "exec_statement", "chevron"}
    assert len(missing) <= 6, sorted(missing)


def test_masks_drawn_by_masking_pass_the_checker():
    config = MaskConfig(samples_per_repo=40, mix={"grammar": 1}, whole_node_probability=0.3, min_middle_chars=0)
    checked = set()
    for seed in range(15):
        for mask in sample_masks({"rich.py": RICH.encode()}, config, seed, "rich").masks:
            data = RICH.encode()
            sample = make_sample(prefix_code=data[:mask.start_byte].decode(),
                                 middle=data[mask.start_byte:mask.end_byte].decode(),
                                 suffix_code=data[mask.end_byte:].decode(), fill_type=mask.fill_type,
                                 node_type=mask.node_type)
            assert check_fill_type(sample) is None, (mask, sample.middle_code)
            checked.add(mask.node_type)
    assert len(checked) > 20


def _node(source: str, text: str, node_type: str):
    data = source.encode()
    start = data.index(text.encode())
    return next(n for n in _walk(_parser().parse(data).root_node)
                if n.type == node_type and n.start_byte == start and n.end_byte == start + len(text.encode()))


def test_the_mislabels_of_issue_32():
    # A body holding a `for ... yield` loop, below the top node: a block (it fell through to "expression").
    generator = "def gen(xs):\n    for x in xs:\n        yield x\n"
    assert level_of_node(_node(generator, "for x in xs:\n        yield x", "block")) == "block"
    # A body holding only `yield i` is that expression's bytes: an expression.
    assert level_of_node(_node(RICH, "yield i", "block")) == "expression"
    loop_body = next(n for n in _walk(_parser().parse(RICH.encode()).root_node)
                     if n.type == "block" and n.parent.type == "function_definition"
                     and b"enumerate" in RICH.encode()[n.start_byte:n.end_byte])
    assert level_of_node(loop_body) == "block"
    # A block holding one `return` is the return statement's bytes: a statement, as the statement itself is.
    ret_block = _node(RICH, "return some_call(x)", "block")
    assert level_of_node(ret_block) == level_of_node(_node(RICH, "return some_call(x)", "return_statement")) \
        == "statement"
    # Compound statements below the top node are blocks (try/with/match were "statement").
    for text, node_type in (("match y:", "match_statement"), ("with open(x)", "with_statement")):
        node = next(n for n in _walk(_parser().parse(RICH.encode()).root_node)
                    if n.type == node_type and RICH.encode()[n.start_byte:].startswith(text.encode()))
        assert level_of_node(node) == "block"
    # An expression statement is an expression wherever it is met (it was "statement" below the top node).
    assert level_of_node(_node(RICH, "yield i", "expression_statement")) == "expression"


def test_the_checker_reads_random_masks_and_names_a_missing_node():
    assert check_fill_type(make_sample(fill_type=FILL_SPAN, node_type="span")) is None
    assert "random mask" in check_fill_type(make_sample(fill_type=FILL_BLOCK, node_type="span"))
    sample = make_sample(prefix_code="x = ", middle="f(1)", fill_type=FILL_EXPRESSION, node_type="call")
    assert check_fill_type(sample) is None
    moved = dataclasses.replace(sample, node_type="return_statement")
    assert "no 'return_statement' node spans bytes 4..8" in check_fill_type(moved)
