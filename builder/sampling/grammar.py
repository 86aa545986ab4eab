"""The grammar of grammar-based masks: the ten tree-sitter node categories (sampling weight, node types; their
level comes from `levels.py`, the one table of levels), the tree-sitter parser and walk that find them
(`masking.py` draws), and the checker that re-derives a sample's fill type from its record."""
from __future__ import annotations

import threading
from types import MappingProxyType
from typing import Optional

from execrepobench_dataset.record import FILL_MULTI_LINE, FILL_SINGLE_LINE, FILL_SPAN, LEVEL_TO_FILL, Sample

import tree_sitter_python
from tree_sitter import Language, Node, Parser

from .levels import level_of_node, level_of_type

# The ten grammar categories: (name, sampling weight, tree-sitter node types).
_CATEGORY_TABLE = (
    ("import", 0.10, "import_statement import_from_statement future_import_statement"),
    ("comment", 0.05, "comment"),
    ("return", 0.10, "return_statement"),
    ("if", 0.15, "if_statement"),
    ("for", 0.15, "for_statement"),
    ("while", 0.10, "while_statement"),
    ("class", 0.10, "class_definition"),
    ("function", 0.10, "function_definition"),
    ("assignment", 0.05, "assignment augmented_assignment"),
    ("expression_statement", 0.05, "expression_statement"),
)
CATEGORIES = tuple(row[0] for row in _CATEGORY_TABLE)
DEFAULT_CATEGORY_WEIGHTS = MappingProxyType({c: w for c, w, _ in _CATEGORY_TABLE})
CATEGORY_NODE_TYPES = MappingProxyType({c: frozenset(t.split()) for c, _, t in _CATEGORY_TABLE})
# A category's level is its node types' level in the one table (they agree: tests/builder/test_fill_levels.py).
CATEGORY_LEVEL = MappingProxyType({c: level_of_type(min(types)) for c, types in CATEGORY_NODE_TYPES.items()})
# A node of these categories counts only when none of its named children has a listed type (an
# expression_statement wrapping an assignment belongs to "assignment", not to both).
CATEGORY_EXCLUDED_CHILDREN = MappingProxyType({
    "expression_statement": frozenset({"assignment", "augmented_assignment"})})
_TYPE_TO_CATEGORY = {t: c for c, types in CATEGORY_NODE_TYPES.items() for t in types}

_PARSERS = threading.local()  # one tree-sitter parser per thread: repositories are built concurrently


def _parser() -> Parser:
    if not hasattr(_PARSERS, "parser"):
        _PARSERS.parser = Parser(Language(tree_sitter_python.language()))
    return _PARSERS.parser


def _walk(node: Node):
    """Pre-order walk of `node`'s subtree (the node itself first)."""
    cursor = node.walk()
    while True:
        yield cursor.node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _category(node: Node) -> Optional[str]:
    category = _TYPE_TO_CATEGORY.get(node.type)
    excluded = CATEGORY_EXCLUDED_CHILDREN.get(category, ())
    return None if any(child.type in excluded for child in node.named_children) else category


RANDOM_NODE_TYPES = MappingProxyType({"span": FILL_SPAN, "line": FILL_SINGLE_LINE, "lines": FILL_MULTI_LINE})


def check_fill_type(sample: Sample) -> Optional[str]:
    """Why `sample`'s fill type is not the one its record implies (None when it is): the file is parsed again
    from prefix + middle + suffix, the node of type `node_type` with exactly the middle's bytes is found and
    its level looked up in the one table (`levels.py`) - independent of the path masking took."""
    if sample.node_type in RANDOM_NODE_TYPES:
        want = RANDOM_NODE_TYPES[sample.node_type]
        return None if sample.fill_type == want else (
            f"node_type {sample.node_type!r} is a random mask ({want!r}), labelled {sample.fill_type!r}")
    data = (sample.prefix_code + sample.middle_code + sample.suffix_code).encode("utf-8")
    span = (sample.middle_start_byte, sample.middle_end_byte)
    node = next((n for n in _walk(_parser().parse(data).root_node)
                 if (n.start_byte, n.end_byte) == span and n.type == sample.node_type), None)
    if node is None:
        return f"no {sample.node_type!r} node spans bytes {span[0]}..{span[1]} of {sample.file_name}"
    want = LEVEL_TO_FILL[level_of_node(node)]
    return None if sample.fill_type == want else (
        f"a {sample.node_type!r} node masked whole is {want!r}, labelled {sample.fill_type!r}")
