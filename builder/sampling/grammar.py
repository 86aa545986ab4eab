"""The grammar of grammar-based masks: the ten tree-sitter node categories (sampling weight, level, node
types), the level of a masked node, and the tree-sitter parser and walk that find them (`masking.py` draws)."""
from __future__ import annotations

import threading
from types import MappingProxyType
from typing import Optional

import tree_sitter_python
from tree_sitter import Language, Node, Parser

# The ten grammar categories: (name, sampling weight, level, tree-sitter node types).
_CATEGORY_TABLE = (
    ("import", 0.10, "statement", "import_statement import_from_statement future_import_statement"),
    ("comment", 0.05, "statement", "comment"),
    ("return", 0.10, "statement", "return_statement"),
    ("if", 0.15, "block", "if_statement"),
    ("for", 0.15, "block", "for_statement"),
    ("while", 0.10, "block", "while_statement"),
    ("class", 0.10, "block", "class_definition"),
    ("function", 0.10, "block", "function_definition"),
    ("assignment", 0.05, "expression", "assignment augmented_assignment"),
    ("expression_statement", 0.05, "expression", "expression_statement"),
)
CATEGORIES = tuple(row[0] for row in _CATEGORY_TABLE)
DEFAULT_CATEGORY_WEIGHTS = MappingProxyType({c: w for c, w, _, _ in _CATEGORY_TABLE})
CATEGORY_LEVEL = MappingProxyType({c: level for c, _, level, _ in _CATEGORY_TABLE})
CATEGORY_NODE_TYPES = MappingProxyType({c: frozenset(t.split()) for c, _, _, t in _CATEGORY_TABLE})
# A node of these categories counts only when none of its named children has a listed type (an
# expression_statement wrapping an assignment belongs to "assignment", not to both).
CATEGORY_EXCLUDED_CHILDREN = MappingProxyType({
    "expression_statement": frozenset({"assignment", "augmented_assignment"})})
BLOCK_NODE_TYPES = frozenset(t for c, lvl in CATEGORY_LEVEL.items() if lvl == "block"
                             for t in CATEGORY_NODE_TYPES[c])
_TYPE_TO_CATEGORY = {t: c for c, types in CATEGORY_NODE_TYPES.items() for t in types}

_PARSERS = threading.local()  # one tree-sitter parser per thread: repositories are built concurrently


def _parser() -> Parser:
    if not hasattr(_PARSERS, "parser"):
        _PARSERS.parser = Parser(Language(tree_sitter_python.language()))
    return _PARSERS.parser


def level_of_type(node_type: str) -> str:
    """Level of a masked descendant, from its own tree-sitter type."""
    if node_type in BLOCK_NODE_TYPES:
        return "block"
    if node_type.endswith("_statement") or node_type == "comment":
        return "statement"
    return "expression"


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
