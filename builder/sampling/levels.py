"""The paper's level of a masked tree-sitter node: one table, used by masking (`masking.py`), by the ten
grammar categories (`grammar.py`: a category's level is its node types' level) and by the checker that
re-derives a sample's fill type from its record (`grammar.check_fill_type`).

Every named node type of tree-sitter-python is in exactly one of the three sets below
(`tests/builder/test_fill_levels.py` enumerates the grammar's node types, so a grammar upgrade that adds one fails
there until it is placed).  Position enters in one way only: a node whose bytes are exactly one named
child's bytes (a `block` holding a single `return` statement, an `expression_statement` holding a call) is
the level of that child - the same masked text gets the same label whichever node reached it.
"""
from __future__ import annotations

from types import MappingProxyType

from tree_sitter import Node

from ..errors import UnknownNodeType

# Compound statements, their clauses and bodies: a block of code.
BLOCK_TYPES = frozenset("""
    module block if_statement elif_clause else_clause for_statement while_statement try_statement
    except_clause finally_clause with_statement match_statement case_clause function_definition
    class_definition decorated_definition
""".split())
# Simple statements (an `expression_statement` is an expression: the paper's category of that name is
# at expression level), comments and decorator lines.
STATEMENT_TYPES = frozenset("""
    import_statement import_from_statement future_import_statement return_statement raise_statement
    pass_statement break_statement continue_statement assert_statement delete_statement global_statement
    nonlocal_statement print_statement exec_statement type_alias_statement comment decorator
""".split())
# Everything inside a statement: expressions, patterns, parameters, parts of strings and imports.
EXPRESSION_TYPES = frozenset("""
    expression_statement assignment augmented_assignment
    aliased_import argument_list as_pattern as_pattern_target attribute await binary_operator
    boolean_operator call case_pattern chevron class_pattern comparison_operator complex_pattern
    concatenated_string conditional_expression constrained_type default_parameter dict_pattern dictionary
    dictionary_comprehension dictionary_splat dictionary_splat_pattern dotted_name ellipsis
    escape_interpolation escape_sequence expression_list false float for_in_clause format_expression
    format_specifier generator_expression generic_type identifier if_clause import_prefix integer
    interpolation keyword_argument keyword_pattern keyword_separator lambda lambda_parameters
    line_continuation list list_comprehension list_pattern list_splat list_splat_pattern member_type
    named_expression none not_operator pair parameters parenthesized_expression parenthesized_list_splat
    pattern_list positional_separator relative_import set set_comprehension slice splat_pattern splat_type
    string string_content string_end string_start subscript true tuple tuple_pattern type type_conversion
    type_parameter typed_default_parameter typed_parameter unary_operator union_pattern union_type
    wildcard_import with_clause with_item yield
""".split())

NODE_LEVEL = MappingProxyType({
    **dict.fromkeys(EXPRESSION_TYPES, "expression"), **dict.fromkeys(STATEMENT_TYPES, "statement"),
    **dict.fromkeys(BLOCK_TYPES, "block")})
"""Named tree-sitter node type -> the paper's level ("block" / "statement" / "expression")."""


def level_of_type(node_type: str) -> str:
    """The level of a node of this type (see `level_of_node` for the one positional rule)."""
    try:
        return NODE_LEVEL[node_type]
    except KeyError:
        raise UnknownNodeType(f"tree-sitter node type {node_type!r} has no level in "
                              "builder/sampling/levels.py") from None


def same_span_node(node: Node) -> Node:
    """The innermost node with exactly `node`'s bytes, reached through single named children."""
    while True:
        inner = [c for c in node.named_children if (c.start_byte, c.end_byte) == (node.start_byte, node.end_byte)]
        if len(inner) != 1 or len(node.named_children) != 1:
            return node
        node = inner[0]


def level_of_node(node: Node) -> str:
    """The level of masking exactly `node`'s bytes."""
    return level_of_type(same_span_node(node).type)
