"""Choose the masked middles of ExecRepoBench samples, following the paper's masking method.

Four kinds of mask: random single line, random multi-line, random span, and grammar-based masks of
ten tree-sitter node categories (`grammar.py`), drawn from the files as `parsed_files.py` prepares them.
Every candidate passes the same filters (length, no ``#``, no duplicate middle within a repository).  All
randomness comes from RNGs seeded by ``sha256(f"{seed}:{repo_name}:{kind}")``, so a run is reproducible for
a given seed.
"""
from __future__ import annotations

import collections
import hashlib
import os
import random
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Collection, Mapping, Optional

from execrepobench_dataset.record import FILL_MULTI_LINE, FILL_SINGLE_LINE, FILL_SPAN, LEVEL_TO_FILL

from .grammar import CATEGORIES, CATEGORY_LEVEL, DEFAULT_CATEGORY_WEIGHTS, _walk
from .levels import level_of_node
from .parsed_files import Region, _prepare, _Source

KINDS = ("single_line", "multi_line", "span", "grammar")  # also the largest-remainder tie order
DEFAULT_MIX = MappingProxyType({"single_line": 0.03, "multi_line": 0.03, "span": 0.03, "grammar": 0.91})

# Random kinds: (node_type, category, fill_type); their level is "random".
RANDOM_KINDS = MappingProxyType({"single_line": ("line", "single_line", FILL_SINGLE_LINE),
                                 "multi_line": ("lines", "multi_line", FILL_MULTI_LINE),
                                 "span": ("span", "span", FILL_SPAN)})

EXCLUDED_DIRS = frozenset({"tests", "test", "testing", "docs", "doc", "build", "dist", ".git",
                           ".tox", ".venv", "venv", "node_modules", "__pycache__"})
EXCLUDED_FILES = frozenset({"setup.py", "conftest.py", "tests.py", "test.py"})


@dataclass(frozen=True)
class Mask:
    file_name: str
    start_byte: int  # UTF-8 byte offsets of the middle in the file
    end_byte: int
    fill_type: str  # a FILL_* constant from execrepobench_dataset.record
    node_type: str  # tree-sitter type, or "line" / "lines" / "span"
    category: str  # grammar category ("import", "if", ...) or "single_line"/"multi_line"/"span"
    level: str  # "block" / "statement" / "expression" / "random"


@dataclass(frozen=True)
class MaskConfig:
    samples_per_repo: int = 24
    mix: Mapping[str, float] = field(default_factory=lambda: DEFAULT_MIX, hash=False)
    category_weights: Mapping[str, float] = field(default_factory=lambda: DEFAULT_CATEGORY_WEIGHTS,
                                                  hash=False)
    whole_node_probability: float = 0.8
    max_whole_node_lines: int = 10  # whole-node masks only for nodes spanning fewer lines
    max_span_chars: int = 30
    max_multi_lines: int = 10
    min_middle_chars: int = 10  # exclusive bound: len(middle.strip()) > 10
    max_middle_chars: int = 512  # exclusive bound
    max_attempts_factor: int = 50

    def __post_init__(self) -> None:
        quotas(self.samples_per_repo, self.mix)  # validates both
        bad = set(self.category_weights) - set(CATEGORIES)
        if bad or any(w < 0 for w in self.category_weights.values()):
            raise ValueError(f"category_weights: unknown categories {sorted(bad)} or negative weight")


@dataclass
class MaskResult:
    masks: list[Mask]  # kinds in KINDS order, each in draw order
    dropped: collections.Counter  # filter reason -> count
    skipped_files: dict[str, str]  # file -> reason
    shortfall: dict[str, int]  # kind -> how many fewer than the quota (only kinds that fell short)


def candidate_files(root: Path, exclude: Collection[str] = ()) -> list[str]:
    """The repository's maskable ``.py`` files: sorted, repo-relative POSIX paths.  `exclude`:
    repo-relative files or folders left out too (the test paths the builder found)."""
    root = Path(root)
    skip = {p.strip("/") for p in exclude}
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS and not d.endswith(".egg-info")]
        for name in filenames:
            if (name.endswith(".py") and name not in EXCLUDED_FILES and not name.startswith("test_")
                    and not name.endswith("_test.py") and os.path.isfile(os.path.join(dirpath, name))):
                rel = Path(dirpath, name).relative_to(root).as_posix()
                if not any(rel == p or rel.startswith(p + "/") for p in skip):
                    found.append(rel)
    return sorted(found)


def quotas(total: int, mix: Mapping[str, float]) -> dict[str, int]:
    """Split `total` samples over the kinds by the largest-remainder method (ties: KINDS order)."""
    if total < 0:
        raise ValueError(f"total must be >= 0, got {total}")
    unknown = set(mix) - set(KINDS)
    if unknown:
        raise ValueError(f"mix: unknown kinds {sorted(unknown)}; expected some of {KINDS}")
    weights = {k: Fraction(mix.get(k, 0)).limit_denominator(10**9) for k in KINDS}
    if any(w < 0 for w in weights.values()) or sum(weights.values()) == 0:
        raise ValueError(f"mix: weights must be >= 0 with a positive sum, got {dict(mix)}")
    exact = {k: total * w / sum(weights.values()) for k, w in weights.items()}
    result = {k: int(exact[k]) for k in KINDS}
    by_remainder = sorted(KINDS, key=lambda k: (-(exact[k] - result[k]), KINDS.index(k)))
    for k in by_remainder[: total - sum(result.values())]:
        result[k] += 1
    return result


def level_mask(base: MaskConfig, level: str, samples: int) -> MaskConfig:
    """A mask configuration that draws `samples` candidates of `level`'s kinds only (more candidates for a
    level that verification left short: verification/mix.py)."""
    if level == "random":
        return replace(base, samples_per_repo=samples, mix={"single_line": 1, "multi_line": 1, "span": 1})
    weights = {c: w for c, w in base.category_weights.items() if CATEGORY_LEVEL.get(c) == level and w > 0}
    return replace(base, samples_per_repo=samples, mix={"grammar": 1}, category_weights=weights)


def _random_mask(src: _Source, kind: str, start_char: int, end_char: int) -> Mask:
    node_type, category, fill_type = RANDOM_KINDS[kind]
    return Mask(src.name, src.byte(start_char), src.byte(end_char), fill_type, node_type, category,
                "random")


def _multi_line_pairs(src: _Source, config: MaskConfig) -> list[tuple[int, int]]:
    """(first, last) indices into src.lines of runs of 2..max_multi_lines lines, both non-blank."""
    if config.max_multi_lines not in src.pairs:
        rows, pairs = [row for row, _, _ in src.lines], []
        for i, row in enumerate(rows):
            j = i + 1
            while j < len(rows) and rows[j] - row < config.max_multi_lines:
                if src.inside(row, rows[j]):
                    pairs.append((i, j))
                j += 1
        src.pairs[config.max_multi_lines] = pairs
    return src.pairs[config.max_multi_lines]


def _span_min(config: MaskConfig) -> int:
    return max(1, min(config.min_middle_chars + 1, config.max_span_chars))


def _grammar_categories(src: _Source, config: MaskConfig) -> list[str]:
    return [c for c in CATEGORIES if src.nodes.get(c) and config.category_weights.get(c, 0) > 0]


def _draw_single_line(rng: random.Random, src: _Source, config: MaskConfig) -> Mask:
    _, start, end = rng.choice(src.lines)
    return _random_mask(src, "single_line", start, end)


def _draw_multi_line(rng: random.Random, src: _Source, config: MaskConfig) -> Mask:
    first, last = rng.choice(_multi_line_pairs(src, config))
    return _random_mask(src, "multi_line", src.lines[first][1], src.lines[last][2])


def _draw_span(rng: random.Random, src: _Source, config: MaskConfig) -> Mask:
    length = rng.randint(_span_min(config), min(config.max_span_chars, len(src.text)))
    if src.bad is not None:  # restricted: start inside one of its lines (the Region checks the end)
        _, first, last = rng.choice(src.lines)
        start = min(rng.randint(first, last), len(src.text) - length)
        return _random_mask(src, "span", start, start + length)
    start = rng.randint(0, len(src.text) - length)
    return _random_mask(src, "span", start, start + length)


def _draw_grammar(rng: random.Random, src: _Source, config: MaskConfig) -> Mask:
    categories = _grammar_categories(src, config)
    category = rng.choices(categories, weights=[config.category_weights[c] for c in categories])[0]
    node = rng.choice(src.nodes[category])
    rows = node.end_point.row - node.start_point.row + 1
    eligible = (rows < config.max_whole_node_lines and node.start_point.row > 0
                and node.end_point.row < src.last_row)
    target = node
    if not (eligible and rng.random() < config.whole_node_probability):
        descendants = [n for n in _walk(node) if n.is_named][1:]
        if descendants:
            target = rng.choice(descendants)
    level = level_of_node(target)  # the one table (levels.py), whole node or descendant alike
    return Mask(src.name, target.start_byte, target.end_byte, LEVEL_TO_FILL[level], target.type,
                category, level)


# kind -> (does this file have candidates of the kind?, draw one mask from the file)
_KIND_TABLE = MappingProxyType({
    "single_line": (lambda s, c: bool(s.lines), _draw_single_line),
    "multi_line": (lambda s, c: bool(_multi_line_pairs(s, c)), _draw_multi_line),
    "span": (lambda s, c: len(s.text) >= _span_min(c) and (s.bad is None or bool(s.lines)), _draw_span),
    "grammar": (lambda s, c: bool(_grammar_categories(s, c)), _draw_grammar),
})


def _rng(seed: int, repo_name: str, kind: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{repo_name}:{kind}".encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest, "big"))


# Filters in the order they are checked: (drop reason, rejects(middle, middles kept so far, config)).
_FILTERS = (
    ("too_short", lambda middle, seen, config: len(middle.strip()) <= config.min_middle_chars),
    ("too_long", lambda middle, seen, config: len(middle.strip()) >= config.max_middle_chars),
    ("has_hash", lambda middle, seen, config: "#" in middle),
    ("duplicate", lambda middle, seen, config: middle in seen),
)
NOT_IN_REGION = "not_new"  # drop reason of a mask the Region refuses
DROP_REASONS = tuple(reason for reason, _ in _FILTERS)


def sample_masks(files: Mapping[str, bytes], config: MaskConfig, seed: int, repo_name: str,
                 region: Optional[Region] = None) -> MaskResult:
    """Draw the repository's masks: per kind, its quota of filtered, distinct middles; with a `region`, only
    masks inside it."""
    sources, skipped = _prepare(files, region)
    result = MaskResult([], collections.Counter(), skipped, {})
    seen: set[str] = set()
    for kind, want in quotas(config.samples_per_repo, config.mix).items():
        has_candidates, draw = _KIND_TABLE[kind]
        pool = [s for s in sources if has_candidates(s, config)]
        rng = _rng(seed, repo_name, kind)
        got = attempts = 0
        while pool and got < want and attempts < config.max_attempts_factor * want:
            attempts += 1
            src = rng.choice(pool)
            mask = draw(rng, src, config)
            if region is not None and not region.allows(src.name, src.data, mask.start_byte, mask.end_byte):
                result.dropped[NOT_IN_REGION] += 1
                continue
            middle = src.data[mask.start_byte:mask.end_byte].decode("utf-8")
            reason = next((r for r, rejects in _FILTERS if rejects(middle, seen, config)), None)
            if reason:
                result.dropped[reason] += 1
                continue
            seen.add(middle)
            result.masks.append(mask)
            got += 1
        if got < want:
            result.shortfall[kind] = want - got
    return result


def split(source: bytes, mask: Mask) -> tuple[str, str, str]:
    """(prefix, middle, suffix) of `source` around `mask`, decoded as UTF-8."""
    if not 0 <= mask.start_byte <= mask.end_byte <= len(source):
        raise ValueError(f"mask {mask.start_byte}:{mask.end_byte} outside a {len(source)}-byte file")
    return (source[:mask.start_byte].decode("utf-8"),
            source[mask.start_byte:mask.end_byte].decode("utf-8"),
            source[mask.end_byte:].decode("utf-8"))
