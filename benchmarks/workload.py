"""The fixed mixed workload the metric benchmark judges per sample (bench_metric.py; bench_budget.py and
the tests use its reformatted ground truth and never-terminating completion).

Per sample: the ground truth; the ground truth reformatted (the same AST, different text: a correct
completion the judge cannot recognise by its bytes); the null fill; two wrong variants
(`agreement.mutants`); and a completion that never terminates.  A kind that cannot be made for a
sample (nothing to reformat, no compiling variant) is left out, never replaced by another kind.
"""
from __future__ import annotations

import ast
import re
import warnings

from execrepobench_dataset.record import Sample
from execrepobench_metric.execution.fills import null_fill

from agreement import compiles_in_place, mutants

# An expression that never returns and holds constant memory: int() is 0 forever, so no element passes.
HANG_EXPR = "next(_x for _x in iter(int, 1) if _x)"
KINDS = ("ground_truth", "reformatted", "null", "wrong_1", "wrong_2", "never_terminates")


def _tree(code: str) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.dump(ast.parse(code))
        except (SyntaxError, ValueError):
            return None


def reformatted(sample: Sample) -> str | None:
    """The middle rewritten so that the completed file's AST equals the original's and its text does
    not: a comment before a newline inside the middle, else a space next to punctuation, else
    redundant parentheses around the whole middle."""
    middle, want = sample.middle_code, _tree(sample.original_code)
    if want is None:
        return None
    candidates = []
    for m in re.finditer(r"\n", middle):
        candidates.append(middle[:m.start()] + "  # reformatted" + middle[m.start():])
    for m in re.finditer(r"[,(\[{=:+*/<>-]", middle):
        candidates.append(middle[:m.end()] + " " + middle[m.end():])
        candidates.append(middle[:m.start()] + " " + middle[m.start():])
    candidates.append(f"({middle})")
    for variant in candidates[:200]:
        if variant != middle and _tree(sample.prefix_code + variant + sample.suffix_code) == want:
            return variant
    return None


def never_terminating(sample: Sample) -> str | None:
    """A completion that loops forever when the masked region runs: the hang as a statement before the
    ground truth (a region that starts a statement), or as an expression evaluated before the ground
    truth's value, or in place of it."""
    middle = sample.middle_code
    line_start = sample.prefix_code.rsplit("\n", 1)[-1]
    candidates = []
    if not line_start.strip():  # the region starts a statement: hang there, then run the original
        candidates.append(f"{HANG_EXPR}\n{line_start}{middle}")
    candidates += [f"({HANG_EXPR}, ({middle}))[1]", HANG_EXPR, "while True: pass"]
    return next((c for c in candidates if compiles_in_place(sample, c)), None)


def workload(sample: Sample) -> list[tuple[str, str]]:
    """(kind, completion) for the kinds that can be made for `sample`, in KINDS order."""
    out = [("ground_truth", sample.middle_code)]
    variant = reformatted(sample)
    if variant is not None:
        out.append(("reformatted", variant))
    fill = null_fill(sample)
    if fill is not None:
        out.append(("null", fill))
    out += [(f"wrong_{i}", c) for i, (_, c) in enumerate(mutants(sample, limit=2), 1)]
    hang = never_terminating(sample)
    if hang is not None:
        out.append(("never_terminates", hang))
    return out
