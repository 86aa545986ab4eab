"""Is per-sample test selection safe?  Judge several completions per sample both with the selected
tests and with the whole suite, and count identical verdicts.

Completions per sample: the ground truth, the null fill, and deliberately wrong variants made from
the ground truth (an operator flipped, a constant changed, two call arguments swapped).  Only
variants that differ from the ground truth and still compile are used.
"""
from __future__ import annotations

import re
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from tqdm import tqdm

from execrepobench_dataset.record import Sample
from execrepobench_metric.execution.fills import null_fill
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

# (name, pattern, replacement): the first match in the middle is rewritten.
MUTATIONS = (
    ("flip_compare", r"==", "!="), ("flip_compare", r"!=", "=="), ("flip_compare", r"(?<![<>=!])<(?![<=])", ">="),
    ("flip_compare", r"(?<![<>=!-])>(?![>=])", "<="), ("flip_arith", r"(?<![+=])\+(?![+=])", "-"),
    ("flip_arith", r"(?<![-=>])-(?![-=>])", "+"), ("flip_bool", r"\bTrue\b", "False"),
    ("flip_bool", r"\bFalse\b", "True"), ("flip_logic", r"\band\b", "or"), ("flip_logic", r"\bor\b", "and"),
    ("flip_not", r"\bif not\b", "if"), ("change_constant", r"(?<![\w.])(\d+)(?![\w.])", None),
    ("change_string", r"(['\"])([^'\"\n]{1,40})\1", None), ("drop_return_value", r"\breturn\b(?!\s*$)", "return None  #"),
)
_CALL_ARGS = re.compile(r"\(([^(),\n]+),\s*([^(),\n]+)\)")


def compiles_in_place(sample: Sample, fill: str) -> bool:
    """Does the file with `fill` in the masked place compile?"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(sample.prefix_code + fill + sample.suffix_code, sample.file_name, "exec", dont_inherit=True)
            return True
        except (SyntaxError, ValueError):
            return False


def mutants(sample: Sample, limit: int = 3) -> list[tuple[str, str]]:
    """Up to `limit` wrong variants (kind, completion) of the ground truth that still compile."""
    middle = sample.middle_code
    out: list[tuple[str, str]] = []
    seen = {middle}
    for name, pattern, repl in MUTATIONS:
        m = re.search(pattern, middle)
        if not m:
            continue
        if name == "change_constant":
            new = f"{int(m.group(1)) + 1}"
        elif name == "change_string":
            new = f"{m.group(1)}{m.group(2)}_x{m.group(1)}"
        else:
            new = repl
        variant = middle[:m.start()] + new + middle[m.end():]
        if variant not in seen and compiles_in_place(sample, variant):
            seen.add(variant)
            out.append((name, variant))
    m = _CALL_ARGS.search(middle)
    if m and m.group(1).strip() != m.group(2).strip():
        variant = middle[:m.start()] + f"({m.group(2)}, {m.group(1)})" + middle[m.end():]
        if variant not in seen and compiles_in_place(sample, variant):
            out.append(("swap_args", variant))
    return out[:limit]


@dataclass(frozen=True)
class Comparison:
    sample_id: str
    file_name: str
    fill_type: str
    rule: str
    variant: str
    selected_passed: bool
    suite_passed: bool
    selected_reason: str
    suite_reason: str
    selected_s: float
    suite_s: float

    @property
    def agrees(self) -> bool:
        return self.selected_passed == self.suite_passed


def suite_allowances(sample: Sample, config: JudgeConfig) -> Sample:
    """The sample as verification would have made it for the whole suite: the guard's allowances
    recorded from a ground-truth run of the suite (the sample's own cover its judged tests only)."""
    if config.guard == "off":
        return sample
    record = judge(sample, sample.middle_code, replace(config, selection="suite", guard="record"))
    return replace(sample, guard_allowed=record.guard_events)


def compare_sample(sample: Sample, config: JudgeConfig, mutant_limit: int = 3) -> list[Comparison]:
    variants = [("ground_truth", sample.middle_code)]
    fill = null_fill(sample)
    if fill is not None:
        variants.append(("null", fill))
    variants += mutants(sample, mutant_limit)
    out = []
    whole = suite_allowances(sample, config)
    for kind, completion in variants:
        sel = judge(sample, completion, replace(config, selection="judged"))
        suite = judge(whole, completion, replace(config, selection="suite"))
        out.append(Comparison(sample.sample_id, sample.file_name, sample.fill_type, sample.selection_rule, kind,
                              sel.passed, suite.passed, sel.reason, suite.reason, sel.duration_s, suite.duration_s))
    return out


def agreement(samples: list[Sample], config: JudgeConfig, *, workers: int = 2, mutant_limit: int = 3,
              progress: bool = True) -> dict:
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        rows = [c for part in tqdm(pool.map(lambda s: compare_sample(s, config, mutant_limit), samples),
                                   total=len(samples), desc="agreement", disable=not progress) for c in part]
    agree = sum(c.agrees for c in rows)
    by_rule = Counter((c.rule, c.agrees) for c in rows)
    sel_t = sorted(c.selected_s for c in rows)
    suite_t = sorted(c.suite_s for c in rows)
    return {
        "comparisons": len(rows),
        "agreement": round(agree / len(rows), 4) if rows else None,
        "by_rule": {rule: {"agree": by_rule[(rule, True)], "disagree": by_rule[(rule, False)]}
                    for rule in sorted({c.rule for c in rows})},
        "variants": dict(Counter(c.variant for c in rows)),
        "median_selected_s": sel_t[len(sel_t) // 2] if sel_t else None,
        "median_suite_s": suite_t[len(suite_t) // 2] if suite_t else None,
        "disagreements": [c.__dict__ for c in rows if not c.agrees],
    }
