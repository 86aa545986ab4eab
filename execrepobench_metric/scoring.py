"""Turn per-sample verdicts and completions into ExecRepoBench scores.

All scores are fractions in 0..1, as `evaluate`'s `code_eval` returns them: pass@k is the unbiased
estimator, and edit similarity (ES) is rapidfuzz ``fuzz.ratio`` / 100.  Only what people read prints
percent, as the paper reports them: the LaTeX row (`latex_row`), the terminal table and the charts,
each saying so.  Group means are micro-averages over samples (each sample weighs the same), as the
official script averages.

Reference: the official evaluation, QwenLM/Qwen2.5-Coder
``qwencoder-eval/base/benchmarks/ExecRepoBench/eval.py`` (``evaluate_es_score``,
``evaluate_all_correctness``) and ``utils/utils.py`` (``remove_comments``, ``cal_edit_sim``):

* ES there is ``fuzzywuzzy.fuzz.ratio`` (an int) of ``.strip()``-ed texts after
  ``remove_comments``, which for Python deletes every triple-quoted string by regex (docstrings,
  but also ``x = \"\"\"...\"\"\"``), does NOT delete ``#`` comments (that line is commented out), and
  drops blank lines.  We deliberately differ: tree-sitter removes ``#`` comments and
  standalone string statements (docstrings) only, keeps all other strings, and we use rapidfuzz's
  float ratio.  Scores can therefore differ slightly from the official numbers.
* Its LaTeX row is, per fill type in the order of ``FILL_TYPES``, the ES value then the pass@1
  value, then the overall ES and pass@1.  The script names its variables the wrong way round
  (``pass_at_1 = results[f"{k}:es"]``) but the printed values are ES first; ``LATEX_COLUMNS``
  keeps that order and labels it correctly.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

from rapidfuzz import fuzz

from execrepobench_dataset.record import (FILL_BLOCK, FILL_EXPRESSION, FILL_MULTI_LINE, FILL_SINGLE_LINE,
                                          FILL_SPAN, FILL_STATEMENT, FILL_TYPES, LEVEL_TO_FILL, Sample)

# Fill type -> level group: the three random kinds form one group; grammar-based ones are their level.
LEVEL_OF_FILL: dict[str, str] = {
    FILL_SPAN: "random",
    FILL_SINGLE_LINE: "random",
    FILL_MULTI_LINE: "random",
    **{fill: level for level, fill in LEVEL_TO_FILL.items()},
}
LEVELS = ("random", "expression", "statement", "block")

# The paper's table columns: (label, summary-key suffix); each group is rendered "ES & Pass@1".
# "" is the overall (Average) group.  Order = official eval.py's `keys` list, then the average.
LATEX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Random Span", FILL_SPAN),
    ("Random Single-line", FILL_SINGLE_LINE),
    ("Random Multi-line", FILL_MULTI_LINE),
    ("Expression", FILL_EXPRESSION),
    ("Statement", FILL_STATEMENT),
    ("Block", FILL_BLOCK),
    ("Average", ""),
)
LATEX_HEADER = (
    "Model & " + " & ".join(rf"\multicolumn{{2}}{{c}}{{{label}}}" for label, _ in LATEX_COLUMNS) + r" \\" + "\n"
    + " & " + " & ".join("ES & Pass@1" for _ in LATEX_COLUMNS) + r" \\"
)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), as a fraction in 0..1.

    Computed as 1 - prod_{i=n-c+1..n} (1 - k/i), which never forms large binomials.
    """
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"pass_at_k: {name} must be an integer, got {value!r}")
    if k < 1:
        raise ValueError(f"pass_at_k: k must be >= 1, got k={k}")
    if k > n:
        raise ValueError(f"pass_at_k: k={k} exceeds the number of completions n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: c={c} must be between 0 and n={n}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


try:  # tree-sitter is a hard dependency of the project; the line-based fallback is a safety net.
    import tree_sitter
    import tree_sitter_python

    _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
except Exception:  # pragma: no cover - exercised only without tree-sitter
    _PARSER = None

_STRING_TYPES = frozenset({"string", "concatenated_string"})


def _is_string_statement(node) -> bool:
    named = node.named_children
    return node.type == "expression_statement" and len(named) == 1 and named[0].type in _STRING_TYPES


def _drop_blank(text: str) -> str:
    lines = (line.rstrip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line.strip())


def strip_code(code: str) -> str:
    """`code` without comments, docstrings (any standalone string statement) and blank lines.

    Trailing whitespace is removed from each line, so `x = 1  # note` becomes `x = 1`.  Strings
    that are part of an expression (`x = "# not a comment"`) are kept.  tree-sitter tolerates
    fragments that do not parse (completion middles often start or end mid-statement).
    """
    if _PARSER is None:  # pragma: no cover
        return _drop_blank("\n".join(line for line in code.split("\n") if not line.lstrip().startswith("#")))
    data = code.encode("utf-8")
    cuts: list[tuple[int, int]] = []
    stack = [_PARSER.parse(data).root_node]
    while stack:
        node = stack.pop()
        if node.type == "comment" or _is_string_statement(node):
            cuts.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    pieces, pos = [], 0
    for start, end in sorted(cuts):
        if start >= pos:  # ranges never nest (we do not descend into a cut node); be safe anyway
            pieces.append(data[pos:start])
            pos = end
    pieces.append(data[pos:])
    return _drop_blank(b"".join(pieces).decode("utf-8", errors="replace"))


def edit_similarity(completion: str, reference: str) -> float:
    """rapidfuzz `fuzz.ratio` of the stripped texts as a fraction (0..1); both empty after stripping -> 1."""
    a, b = strip_code(completion).strip(), strip_code(reference).strip()
    if not a and not b:
        return 1.0
    return float(fuzz.ratio(a, b)) / 100.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def summarize(samples: Sequence[Sample], verdict_passed: Sequence[Sequence[bool]],
              completions: Sequence[Sequence[str]], ks: Sequence[int] = (1,)) -> dict[str, float | int]:
    """Flat score dict: pass@k and ES (fractions, 0..1) overall and per fill type, level and repository.

    `verdict_passed[i][j]` says whether `completions[i][j]` (a completion of `samples[i]`) passed.
    Keys: `pass@K` / `es` overall; `pass@K/<fill type>`, `pass@K/level/<level>`,
    `pass@K/repo/<repo>` (likewise `es/...` and `n_samples/...`); `n_samples`, `n_completions`.
    pass@1 is always reported; another k only if every sample has at least k completions.
    A sample's ES is the mean ES over its completions.  Groups without samples are omitted.
    """
    if not len(samples) == len(verdict_passed) == len(completions):
        raise ValueError(f"summarize: {len(samples)} samples but {len(verdict_passed)} verdict lists "
                         f"and {len(completions)} completion lists")
    for i, (sample, verdicts, comps) in enumerate(zip(samples, verdict_passed, completions)):
        if len(verdicts) != len(comps) or not comps:
            raise ValueError(f"summarize: sample {i} ({sample.sample_id}) has {len(verdicts)} verdicts and "
                             f"{len(comps)} completions; need the same number, at least one")
    for k in ks:
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"summarize: ks must be positive integers, got {k!r}")
    out: dict[str, float | int] = {"n_samples": len(samples), "n_completions": sum(len(c) for c in completions)}
    if not samples:
        return out
    min_n = min(len(c) for c in completions)
    kept_ks = sorted({1, *(k for k in ks if k <= min_n)})

    per_sample = []  # (group suffixes, {metric: value})
    for sample, verdicts, comps in zip(samples, verdict_passed, completions):
        n, c = len(verdicts), sum(1 for v in verdicts if v)
        metrics = {f"pass@{k}": pass_at_k(n, c, k) for k in kept_ks}
        metrics["es"] = _mean([edit_similarity(comp, sample.middle_code) for comp in comps])
        groups = ("", f"/{sample.fill_type}", f"/level/{LEVEL_OF_FILL[sample.fill_type]}",
                  f"/repo/{sample.repo_name}")
        per_sample.append((groups, metrics))

    collected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for groups, metrics in per_sample:
        for group in groups:
            for name, value in metrics.items():
                collected[group][name].append(value)
    ordered = [""] + [f"/{f}" for f in FILL_TYPES] + [f"/level/{lv}" for lv in LEVELS]
    ordered += sorted(g for g in collected if g.startswith("/repo/"))
    for group in ordered:
        if group not in collected:
            continue
        for name, values in collected[group].items():
            out[name + group] = _mean(values)
        if group:
            out["n_samples" + group] = len(collected[group]["es"])
    return out


LATEX_SPECIAL = {"\\": r"\textbackslash{}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                 **{ch: "\\" + ch for ch in "&%$#_{}"}}


def _latex_escape(text: str) -> str:
    """`text` as literal LaTeX text: each of LaTeX's ten special characters is escaped (one pass, so the
    backslashes added are not escaped again); a line break becomes a space."""
    return "".join(LATEX_SPECIAL.get(ch, ch) for ch in " ".join(text.splitlines()))


def latex_row(summary: Mapping[str, float | int], model_name: str) -> str:
    """One table row `model & ES & Pass@1 & ... \\\\` in `LATEX_COLUMNS` order, in percent as the paper
    prints it (the scores are fractions); `-` where missing."""
    cells = [_latex_escape(model_name)]
    for _, fill in LATEX_COLUMNS:
        suffix = f"/{fill}" if fill else ""
        for metric in ("es", "pass@1"):
            value = summary.get(metric + suffix)
            cells.append("-" if value is None else f"{100.0 * value:.1f}")
    return " & ".join(cells) + r" \\"
