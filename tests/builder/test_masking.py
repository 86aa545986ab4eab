"""Tests of builder/sampling/masking.py: the paper's masking method (random and grammar-based masks)."""
from __future__ import annotations

import collections
import dataclasses
import importlib.util
import random
from pathlib import Path

import pytest
import tree_sitter_python
from tree_sitter import Language, Parser

from execrepobench.builder.sampling.grammar import (
    CATEGORIES, CATEGORY_LEVEL, CATEGORY_NODE_TYPES, DEFAULT_CATEGORY_WEIGHTS,
)
from execrepobench.builder.sampling.masking import (
    DEFAULT_MIX, DROP_REASONS, KINDS, Mask, MaskConfig, MaskResult, _draw_grammar, _draw_span, candidate_files,
    quotas, sample_masks, split,
)
from execrepobench.builder.sampling.levels import level_of_node, level_of_type
from execrepobench.builder.sampling.parsed_files import _prepare
from execrepobench_dataset.record import (
    FILL_MULTI_LINE, FILL_SINGLE_LINE, FILL_SPAN, FILL_TYPES, LEVEL_TO_FILL,
)

PARSER = Parser(Language(tree_sitter_python.language()))

# Every grammar category appears, none nested in a node of its own category; non-ASCII text
# exercises the str <-> byte offset conversion.
ALL_CATEGORIES = '''"""Fixture module with every grammar category: héllo → wörld."""
from __future__ import annotations

import os
import collections.abc as cabc
from typing import Optional

# A comment that explains the constant below.
LIMIT_VALUE = 42
GREETING_TEXT = "grüße aus köln, ünïcode → fine"
counter_total: int = 0


class Accumulator:
    """Keep a running total of the values seen (naïve)."""

    def __init__(self, start: int = 0) -> None:
        self.total_value = start
        self.history_list = []

    def add_value(self, value: int) -> int:
        # record before adding
        self.history_list.append(value)
        self.total_value += value
        return self.total_value


def walk_directory(path: str) -> list[str]:
    found_names = []
    for entry in sorted(os.listdir(path)):
        if entry.endswith(".py"):
            found_names.append(os.path.join(path, entry))
        elif entry.startswith("."):
            continue
    return found_names


def countdown(number: int) -> Optional[int]:
    while number > 0:
        number -= 1
    print("countdown finished at", number, "→ done")
    return number
'''

# Only the import, function and return categories appear here.
FEW_CATEGORIES = '''import os
import sys


def join_paths():
    return os.path.join("alpha_directory", "beta_directory")


def platform_name():
    return sys.platform.upper().strip()
'''

CRLF = "import os\r\n\r\ndef some_function(argument):\r\n    value = os.path.basename(argument)\r\n    return value.upper()\r\n"

FIXTURES = {
    "pkg/all_categories.py": ALL_CATEGORIES.encode(),
    "pkg/few.py": FEW_CATEGORIES.encode(),
    "pkg/crlf.py": CRLF.encode(),
}
MIXED = MaskConfig(samples_per_repo=40,
                   mix={"single_line": 0.25, "multi_line": 0.25, "span": 0.25, "grammar": 0.25})


def _named_nodes(source: bytes):
    stack = [PARSER.parse(source).root_node]
    while stack:
        node = stack.pop()
        if node.is_named:
            yield node
        stack.extend(node.children)


def _node_at(source: bytes, mask: Mask):
    matches = [n for n in _named_nodes(source)
               if (n.start_byte, n.end_byte, n.type) == (mask.start_byte, mask.end_byte, mask.node_type)]
    assert matches, f"no {mask.node_type} node at {mask.start_byte}:{mask.end_byte}"
    return matches[0]


def _check_invariants(files, result: MaskResult, config: MaskConfig = MaskConfig()):
    middles = []
    for mask in result.masks:
        source = files[mask.file_name]
        prefix, middle, suffix = split(source, mask)
        assert (prefix + middle + suffix).encode() == source
        assert len(prefix.encode()) == mask.start_byte
        assert middle.encode() == source[mask.start_byte:mask.end_byte]
        assert config.min_middle_chars < len(middle.strip()) < config.max_middle_chars
        assert "#" not in middle
        assert mask.fill_type in FILL_TYPES
        if mask.level == "random":
            assert (mask.category, mask.node_type, mask.fill_type) in {
                ("single_line", "line", FILL_SINGLE_LINE), ("multi_line", "lines", FILL_MULTI_LINE),
                ("span", "span", FILL_SPAN)}
        else:
            assert mask.category in CATEGORIES
            assert mask.fill_type == LEVEL_TO_FILL[mask.level]
            _node_at(source, mask)
        middles.append(middle)
    assert len(middles) == len(set(middles)), "duplicate middle within a repo"
    assert set(result.dropped) <= set(DROP_REASONS)


@pytest.mark.parametrize("seed", range(25))
def test_split_roundtrip_and_filters_over_seeds(seed):
    for config in (MaskConfig(), MIXED):
        result = sample_masks(FIXTURES, config, seed, "fixture/repo")
        assert result.masks
        _check_invariants(FIXTURES, result, config)
        assert sum(result.shortfall.values()) + len(result.masks) == config.samples_per_repo


def test_split_rejects_offsets_outside_or_inside_a_character():
    source = "x = 'é'\n".encode()
    with pytest.raises(ValueError):
        split(source, Mask("f.py", 3, 99, FILL_SPAN, "span", "span", "random"))
    with pytest.raises(UnicodeDecodeError):
        split(source, Mask("f.py", 0, 6, FILL_SPAN, "span", "span", "random"))  # inside the é


def test_determinism():
    a = sample_masks(FIXTURES, MIXED, 7, "fixture/repo")
    b = sample_masks(dict(reversed(list(FIXTURES.items()))), MIXED, 7, "fixture/repo")
    assert a.masks == b.masks and a.dropped == b.dropped
    assert sample_masks(FIXTURES, MIXED, 8, "fixture/repo").masks != a.masks
    assert sample_masks(FIXTURES, MIXED, 7, "other/repo").masks != a.masks


def test_quotas_largest_remainder():
    assert quotas(100, DEFAULT_MIX) == {"single_line": 3, "multi_line": 3, "span": 3, "grammar": 91}
    # 24 * (.03, .03, .03, .91) = (.72, .72, .72, 21.84): floors 0/0/0/21, the three leftover seats go
    # to grammar (.84), then single_line and multi_line (tie at .72, broken by kind order).
    assert quotas(24, DEFAULT_MIX) == {"single_line": 1, "multi_line": 1, "span": 0, "grammar": 22}
    assert quotas(0, DEFAULT_MIX) == dict.fromkeys(KINDS, 0)
    assert quotas(2, {"single_line": 1, "multi_line": 1, "span": 1}) == {
        "single_line": 1, "multi_line": 1, "span": 0, "grammar": 0}
    assert quotas(5, {"grammar": 1}) == {"single_line": 0, "multi_line": 0, "span": 0, "grammar": 5}
    for total in range(0, 300, 7):
        q = quotas(total, DEFAULT_MIX)
        assert sum(q.values()) == total
        assert all(abs(q[k] - total * DEFAULT_MIX[k]) < 1 for k in KINDS)
    for bad in ({"lines": 1.0}, {"span": -1, "grammar": 2}, {"span": 0}):
        with pytest.raises(ValueError):
            quotas(10, bad)
    with pytest.raises(ValueError):
        MaskConfig(category_weights={"loop": 1.0})


def test_config_defaults_follow_the_paper():
    config = MaskConfig()
    assert dict(config.mix) == {"single_line": 0.03, "multi_line": 0.03, "span": 0.03, "grammar": 0.91}
    assert dict(config.category_weights) == {
        "import": 0.10, "comment": 0.05, "return": 0.10, "if": 0.15, "for": 0.15, "while": 0.10,
        "class": 0.10, "function": 0.10, "assignment": 0.05, "expression_statement": 0.05}
    # The paper's ten weights sum to 0.95; sampling renormalises them.
    assert abs(sum(DEFAULT_CATEGORY_WEIGHTS.values()) - 0.95) < 1e-9
    hash(config)  # frozen and hashable despite the mapping fields
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.samples_per_repo = 3  # type: ignore[misc]


def test_absent_categories_never_chosen():
    files = {"few.py": FEW_CATEGORIES.encode()}
    config = MaskConfig(samples_per_repo=6, mix={"grammar": 1})
    seen = collections.Counter()
    for seed in range(60):
        result = sample_masks(files, config, seed, "few")
        _check_invariants(files, result, config)
        seen.update(m.category for m in result.masks)
    assert set(seen) <= {"import", "function", "return"}
    assert seen["function"] and seen["return"]
    # The three present categories (weights .10 each) are renormalised to a third each.
    (src,), _ = _prepare(files)
    rng = random.Random(1)
    counts = collections.Counter(_draw_grammar(rng, src, config).category for _ in range(6000))
    assert set(counts) == {"import", "function", "return"}
    assert all(abs(n / 6000 - 1 / 3) < 0.03 for n in counts.values())


def test_category_frequencies_follow_weights():
    (src,), _ = _prepare({"all.py": ALL_CATEGORIES.encode()})
    assert set(src.nodes) == set(CATEGORIES)
    rng, draws = random.Random(12345), 20000
    counts = collections.Counter(_draw_grammar(rng, src, MaskConfig()).category for _ in range(draws))
    total = sum(DEFAULT_CATEGORY_WEIGHTS.values())  # 0.95: renormalised
    for category, weight in DEFAULT_CATEGORY_WEIGHTS.items():
        assert abs(counts[category] / draws - weight / total) < 0.01, (category, counts[category] / draws)


def test_expression_statement_category_excludes_assignments():
    (src,), _ = _prepare({"all.py": ALL_CATEGORIES.encode()})
    for node in src.nodes["expression_statement"]:
        assert {c.type for c in node.named_children}.isdisjoint({"assignment", "augmented_assignment"})
    assert {n.type for n in src.nodes["assignment"]} == {"assignment", "augmented_assignment"}
    assert len(src.nodes["assignment"]) == 8


def _category_ancestor(node, category):
    while node is not None and node.type not in CATEGORY_NODE_TYPES[category]:
        node = node.parent
    return node


def test_whole_node_masks_are_full_nodes_and_follow_the_size_rule():
    source = ALL_CATEGORIES.encode()
    files = {"all.py": source}
    last_row = ALL_CATEGORIES.rstrip("\n").count("\n")
    config = MaskConfig(samples_per_repo=30, mix={"grammar": 1}, whole_node_probability=1.0)
    whole = descendant = 0
    for seed in range(40):
        for mask in sample_masks(files, config, seed, "all").masks:
            node = _node_at(source, mask)
            if mask.node_type in CATEGORY_NODE_TYPES[mask.category]:  # no same-category nesting here
                whole += 1
                assert mask.level == CATEGORY_LEVEL[mask.category]
                assert node.end_point.row - node.start_point.row + 1 < 10
                assert 0 < node.start_point.row and node.end_point.row < last_row
            else:  # a descendant, only drawn because its category node was too long or at a file end
                descendant += 1
                assert mask.level == level_of_node(node)
                outer = _category_ancestor(node.parent, mask.category)
                rows = outer.end_point.row - outer.start_point.row + 1
                assert rows >= 10 or outer.start_point.row == 0 or outer.end_point.row >= last_row
    assert whole and descendant
    # With probability 0 no mask is a whole category node.
    config = dataclasses.replace(config, whole_node_probability=0.0)
    for seed in range(20):
        for mask in sample_masks(files, config, seed, "all").masks:
            assert mask.node_type not in CATEGORY_NODE_TYPES[mask.category]


def test_levels():
    assert [level_of_type(t) for t in ("if_statement", "class_definition", "function_definition",
                                       "for_statement", "while_statement")] == ["block"] * 5
    assert [level_of_type(t) for t in ("return_statement", "import_from_statement", "comment")] == ["statement"] * 3
    assert [level_of_type(t) for t in ("try_statement", "with_statement", "block")] == ["block"] * 3
    assert [level_of_type(t) for t in ("call", "assignment", "identifier", "expression_statement")] == ["expression"] * 4


def test_random_line_masks():
    config = MaskConfig(samples_per_repo=12, mix={"single_line": 1, "multi_line": 1})
    kinds = collections.Counter()
    for seed in range(30):
        result = sample_masks(FIXTURES, config, seed, "lines")
        _check_invariants(FIXTURES, result, config)
        for mask in result.masks:
            kinds[mask.category] += 1
            prefix, middle, suffix = split(FIXTURES[mask.file_name], mask)
            assert prefix.rpartition("\n")[2].strip() == ""  # indentation stays in the prefix
            assert not middle[0].isspace() and not middle.endswith(("\n", "\r"))
            assert suffix == "" or suffix.startswith(("\n", "\r\n"))
            newlines = middle.count("\n")
            if mask.category == "single_line":
                assert newlines == 0 and mask.fill_type == FILL_SINGLE_LINE
            else:
                assert 1 <= newlines <= 9 and mask.fill_type == FILL_MULTI_LINE
                assert middle.rpartition("\n")[2].strip()  # ends on a non-blank line
    assert kinds["single_line"] and kinds["multi_line"]


def test_span_masks():
    config = MaskConfig(samples_per_repo=20, mix={"span": 1})
    for seed in range(30):
        result = sample_masks(FIXTURES, config, seed, "spans")
        _check_invariants(FIXTURES, result, config)
        assert result.masks
        for mask in result.masks:
            middle = split(FIXTURES[mask.file_name], mask)[1]
            assert 11 <= len(middle) <= 30 and mask.level == "random"


def test_candidate_files(tmp_path: Path):
    keep = ["pkg/__init__.py", "pkg/core.py", "pkg/sub/testing_utils.py", "main.py", "pkg/contest.py"]
    drop = ["tests/test_core.py", "pkg/tests/helpers.py", "test/x.py", "testing/y.py", "docs/conf.py",
            "doc/a.py", "build/lib/pkg/core.py", "dist/z.py", ".git/hooks/h.py", ".tox/t.py",
            ".venv/lib/v.py", "venv/lib/v.py", "node_modules/n.py", "pkg/__pycache__/c.py",
            "pkg.egg-info/e.py", "setup.py", "pkg/conftest.py", "pkg/test_core.py", "pkg/core_test.py",
            "pkg/notes.txt", "pkg/core.pyc"]
    for rel in keep + drop:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    assert candidate_files(tmp_path) == sorted(keep)


def test_unparsable_and_non_utf8_files_are_skipped():
    files = {"good.py": ALL_CATEGORIES.encode(), "latin1.py": "name = 'café'\n".encode("latin-1"),
             "broken.py": b"def broken(:\n    return 1\n"}
    result = sample_masks(files, MaskConfig(samples_per_repo=30), 0, "mixed")
    assert set(result.skipped_files) == {"latin1.py", "broken.py"}
    assert result.skipped_files["latin1.py"].startswith("not_utf8")
    assert result.skipped_files["broken.py"].startswith("parse_error")
    assert result.masks and {m.file_name for m in result.masks} == {"good.py"}
    _check_invariants(files, result, MaskConfig(samples_per_repo=30))
    empty = sample_masks({"broken.py": files["broken.py"]}, MaskConfig(), 0, "none")
    assert empty.masks == [] and sum(empty.shortfall.values()) == MaskConfig().samples_per_repo


def test_duplicates_dropped_and_shortfall_reported():
    files = {"a.py": b"value = compute_something(1)\n" * 40}
    config = MaskConfig(samples_per_repo=5, mix={"single_line": 1}, max_attempts_factor=10)
    result = sample_masks(files, config, 3, "dup")
    assert [split(files["a.py"], m)[1] for m in result.masks] == ["value = compute_something(1)"]
    assert result.dropped["duplicate"] == 5 * 10 - 1
    assert result.shortfall == {"single_line": 4}
    # Identical files in one repo: no middle appears twice.
    twins = {"a.py": ALL_CATEGORIES.encode(), "b.py": ALL_CATEGORIES.encode()}
    result = sample_masks(twins, MaskConfig(samples_per_repo=60), 0, "twins")
    _check_invariants(twins, result)
    assert result.dropped["duplicate"] > 0


def test_filters_count_reasons():
    files = {"c.py": b"# a comment that is long enough\nx = 1\nvery_long_name = " + b"1 + " * 200 + b"1\n"}
    config = MaskConfig(samples_per_repo=10, mix={"single_line": 1})
    result = sample_masks(files, config, 0, "reasons")
    assert DROP_REASONS == ("too_short", "too_long", "has_hash", "duplicate")
    assert {"too_short", "too_long", "has_hash"} <= set(result.dropped)
    assert result.masks == [] and result.shortfall == {"single_line": 10}


@pytest.mark.parametrize("package", ["tqdm", "rank_bm25"])
def test_real_installed_package(package):
    spec = importlib.util.find_spec(package)
    origin = Path(spec.origin)
    if origin.name == "__init__.py":
        root = origin.parent
        names = candidate_files(root)
    else:  # a single-module distribution
        root, names = origin.parent, [origin.name]
    files = {name: (root / name).read_bytes() for name in names}
    assert files
    config = MaskConfig(samples_per_repo=60)
    for seed in (0, 1):
        result = sample_masks(files, config, seed, package)
        assert not result.skipped_files
        _check_invariants(files, result, config)
        assert len(result.masks) >= 40
        assert sample_masks(files, config, seed, package).masks == result.masks


def test_whole_node_line_limit_is_exclusive():
    nine = "def nine_lines():\n" + "".join(f"    a{i} = {i}\n" for i in range(7)) + "    return a0\n"
    ten = "def ten_lines():\n" + "".join(f"    b{i} = {i}\n" for i in range(8)) + "    return b0\n"
    text = "import os\n\n" + nine + "\n" + ten + "\nVALUE = 1\n"
    (src,), _ = _prepare({"f.py": text.encode()})
    config = MaskConfig(category_weights={"function": 1.0}, whole_node_probability=1.0)
    rng, seen = random.Random(5), collections.Counter()
    for _ in range(400):
        mask = _draw_grammar(rng, src, config)
        node_text = text.encode()[mask.start_byte:mask.end_byte].decode()
        if mask.node_type == "function_definition":
            assert node_text.count("\n") + 1 == 9 and node_text.startswith("def nine_lines")
        seen[mask.node_type == "function_definition"] += 1
    assert seen[True] > 150 and seen[False] > 150  # the 10-line function only yields descendants


def test_span_draws_cover_11_to_30_characters():
    (src,), _ = _prepare({"all.py": ALL_CATEGORIES.encode()})
    rng = random.Random(9)
    lengths = collections.Counter()
    for _ in range(3000):
        mask = _draw_span(rng, src, MaskConfig())
        lengths[len(split(ALL_CATEGORIES.encode(), mask)[1])] += 1
    assert set(lengths) == set(range(11, 31))
    (tiny,), _ = _prepare({"t.py": b"x = 1\n"})  # shorter than 11 characters: no span candidates
    assert len(tiny.text) < 11
    assert sample_masks({"t.py": b"x = 1\n"}, MaskConfig(mix={"span": 1}), 0, "t").shortfall == {"span": 24}
