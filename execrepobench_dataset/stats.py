"""The statistics people look at, computed once for the dataset card and the build report.

Samples per fill type (with the level mix next to the paper's) and per repository, middle length,
prompt length in tokens, judged tests per sample, ground-truth run time, and the share of candidates
dropped per reason (masking filters, then verification: the null-pass share is why we verify).

Prompt length is counted before any budget: the in-file code (prefix + suffix) and the sample's whole
ranked context (every other file of the repository).  Tokens are counted by `count_tokens`; the default
(`pretokens`, named `PRETOKENS_NAME`) is a deterministic count that needs no model files: the pieces of
Qwen2's pre-tokenizer split regex (letters for `\\p{L}`, digits for `\\p{N}`).  A BPE never merges across
these pieces, so each is at least one token; a large code vocabulary (Qwen2.5-Coder's 151K) encodes most
of them as exactly one.  Give a real tokenizer (`tokenizer_counter`) for exact counts.
"""
from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from .record import (FILL_BLOCK, FILL_EXPRESSION, FILL_MULTI_LINE, FILL_SINGLE_LINE, FILL_SPAN, FILL_STATEMENT,
                     FILL_TYPES, Sample)
from .repo_record import RepoRecord

# The paper's reported mix (ExecRepoBench, arXiv 2412.11990): samples per fill type.
PAPER_FILL_COUNTS = {FILL_SPAN: 42, FILL_SINGLE_LINE: 34, FILL_MULTI_LINE: 38, FILL_EXPRESSION: 407,
                     FILL_STATEMENT: 266, FILL_BLOCK: 377}
LEVELS = ("random", "expression", "statement", "block")
FILL_LEVEL = {FILL_SPAN: "random", FILL_SINGLE_LINE: "random", FILL_MULTI_LINE: "random",
              FILL_EXPRESSION: "expression", FILL_STATEMENT: "statement", FILL_BLOCK: "block"}
MIX_TOLERANCE_PP = 5.0  # a level's share may differ from the paper's by this many percentage points
DEFAULT_CONTEXT_TOKENS, DEFAULT_PROMPT_TOKENS = 4096, 8192 - 512  # the default prompt budgets (runner/prompts.py)
PRETOKENS_NAME = "Qwen2 pre-tokenizer pieces (deterministic, no model files)"
_PIECES = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|(?:_|[^\r\n\w])?[^\W\d_]+|\d| ?(?:_|[^\s\w])+[\r\n]*"
                     r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def pretokens(text: str) -> int:
    return sum(1 for _ in _PIECES.finditer(text))


def tokenizer_counter(path: str | Path) -> Callable[[str], int]:
    """A token counter from a `tokenizer.json` (or a folder holding one), with the `tokenizers` library."""
    from tokenizers import Tokenizer

    path = Path(path)
    tok = Tokenizer.from_file(str(path / "tokenizer.json" if path.is_dir() else path))
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids) if text else 0


def level_counts(per_fill: Mapping[str, int]) -> dict[str, int]:
    out = dict.fromkeys(LEVELS, 0)
    for fill, n in per_fill.items():
        out[FILL_LEVEL[fill]] += n
    return out


def share(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def mix_rows(per_fill: Mapping[str, int]) -> list[list]:
    """Per level: [level, ours, ours %, paper, paper %, difference in percentage points]."""
    ours, paper = level_counts(per_fill), level_counts(PAPER_FILL_COUNTS)
    n, m = sum(ours.values()), sum(paper.values())
    return [[lvl, ours[lvl], f"{share(ours[lvl], n):.1f}", paper[lvl], f"{share(paper[lvl], m):.1f}",
             f"{share(ours[lvl], n) - share(paper[lvl], m):+.1f}"] for lvl in LEVELS]


def mix_within_tolerance(per_fill: Mapping[str, int], tolerance_pp: float = MIX_TOLERANCE_PP) -> bool:
    return all(abs(float(row[-1])) <= tolerance_pp for row in mix_rows(per_fill))


@dataclass(frozen=True)
class Statistics:
    samples: int
    per_fill: dict[str, int]
    per_repo: dict[str, int]
    middle_chars: tuple[int, ...]
    middle_lines: tuple[int, ...]
    in_file_tokens: tuple[int, ...]
    context_tokens: tuple[int, ...]
    judged_tests: tuple[int, ...]
    gt_run_s: tuple[float, ...]  # ground-truth run time of the samples the build report has it for
    drops: tuple[tuple[str, str, int, int], ...]  # (stage, reason, count, candidates of that stage)
    tokenizer: str = PRETOKENS_NAME
    extra: dict = field(default_factory=dict)
    # mutation adequacy: the share of its mutants each sample's tests killed (samples with mutants only)
    mutant_kill: tuple[float, ...] = ()

    @property
    def default_prompt_tokens(self) -> tuple[int, ...]:
        """Tokens a default prompt keeps (context <= 4096, prompt <= 7680; template tokens not counted)."""
        out = []
        for infile, ctx in zip(self.in_file_tokens, self.context_tokens):
            kept_ctx = min(ctx, DEFAULT_CONTEXT_TOKENS)
            out.append(kept_ctx + min(infile, DEFAULT_PROMPT_TOKENS - kept_ctx))
        return tuple(out)


def _file_tokens(records: Iterable[RepoRecord], count: Callable[[str], int]) -> dict[str, dict[str, int]]:
    return {r.repo_name: {f.path: count(f.code) for f in r.files} for r in records}


def _drops(report: Mapping) -> tuple[tuple[str, str, int, int], ...]:
    totals = report.get("totals", {})
    rows = [("masking", reason, n, totals.get("candidates", 0)) for reason, n in totals.get("dropped", {}).items()]
    rows += [("verification", reason, n, totals.get("verify_candidates", 0))
             for reason, n in totals.get("dropped_verify", {}).items()]
    return tuple((stage, reason, int(n), int(whole)) for stage, reason, n, whole in rows)


def _gt_times(report: Mapping, ids: set[str]) -> tuple[float, ...]:
    times = {}
    for repo in report.get("repos", []):
        times.update(repo.get("kept_gt_run_s") or {})
    return tuple(float(times[i]) for i in sorted(ids) if i in times)


def compute_statistics(samples: Iterable[Sample], records: Iterable[RepoRecord], report: Mapping,
                       count_tokens: Callable[[str], int] | None = None, tokenizer: str | None = None) -> Statistics:
    """Statistics of `samples` (either context form), their repositories' records and the build report."""
    samples, records = list(samples), list(records)
    count = count_tokens or pretokens
    per_file = _file_tokens(records, count)
    context = []
    for s in samples:
        if s.context_code:
            context.append(sum(count(c.code) for c in s.context_code))
        else:
            repo = per_file.get(s.repo_name, {})
            context.append(sum(repo.get(p, 0) for p in s.context_paths))
    fills, repos = Counter(s.fill_type for s in samples), Counter(s.repo_name for s in samples)
    return Statistics(
        samples=len(samples), per_fill={f: fills.get(f, 0) for f in FILL_TYPES}, per_repo=dict(sorted(repos.items())),
        middle_chars=tuple(len(s.middle_code) for s in samples),
        middle_lines=tuple(s.middle_code.count("\n") + 1 for s in samples),
        in_file_tokens=tuple(count(s.prefix_code) + count(s.suffix_code) for s in samples),
        context_tokens=tuple(context), judged_tests=tuple(len(s.judged_tests) for s in samples),
        gt_run_s=_gt_times(report, {s.sample_id for s in samples}), drops=_drops(report),
        tokenizer=tokenizer or (PRETOKENS_NAME if count_tokens is None else "the given tokenizer"),
        mutant_kill=tuple(round(s.mutants_killed / s.mutants_total, 3) for s in samples if s.mutants_total))


def summary(values: Iterable[float]) -> list[str]:
    """[n, min, p10, median, p90, max] as text."""
    v = sorted(values)
    if not v:
        return ["0", "-", "-", "-", "-", "-"]
    q = statistics.quantiles(v, n=10, method="inclusive") if len(v) > 1 else [v[0]] * 9

    def fmt(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else f"{x:.2f}"
    return [str(len(v)), fmt(v[0]), fmt(q[0]), fmt(statistics.median(v)), fmt(q[-1]), fmt(v[-1])]


SUMMARY_HEAD = ["measure", "n", "min", "p10", "median", "p90", "max"]


def distribution_rows(stats: Statistics) -> list[list[str]]:
    rows = [("middle characters", stats.middle_chars), ("middle lines", stats.middle_lines),
            ("in-file tokens (prefix + suffix)", stats.in_file_tokens),
            ("context tokens (every ranked file)", stats.context_tokens),
            ("prompt tokens at the default budgets", stats.default_prompt_tokens),
            ("judged tests per sample", stats.judged_tests), ("ground-truth run time (s)", stats.gt_run_s),
            ("share of mutants killed (samples with mutants)", stats.mutant_kill)]
    return [[name, *summary(values)] for name, values in rows]


def drop_rows(stats: Statistics) -> list[list]:
    return [[stage, reason, n, whole, f"{share(n, whole):.1f}%"] for stage, reason, n, whole in stats.drops]
