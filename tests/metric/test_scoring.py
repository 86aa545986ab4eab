import math
import re
from fractions import Fraction

import pytest

from conftest import make_sample
from execrepobench_dataset.record import (FILL_BLOCK, FILL_EXPRESSION, FILL_MULTI_LINE, FILL_SINGLE_LINE,
                                          FILL_SPAN, FILL_STATEMENT, FILL_TYPES)
from execrepobench_metric.scoring import (LATEX_COLUMNS, LATEX_HEADER, LEVEL_OF_FILL, edit_similarity, latex_row,
                                          pass_at_k, strip_code, summarize)


# ---------------------------------------------------------------- pass@k

def _direct(n, c, k):
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def test_pass_at_k_matches_combinatorial_formula_on_grid():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(_direct(n, c, k), abs=1e-12), (n, c, k)


@pytest.mark.parametrize("n,c,k,expected", [
    (10, 3, 1, 0.3), (1, 1, 1, 1.0), (1, 0, 1, 0.0), (5, 0, 5, 0.0), (5, 5, 1, 1.0),
    (10, 3, 2, 1 - 21 / 45), (4, 2, 3, 1.0),
])
def test_pass_at_k_known_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_large_n_is_stable():
    assert pass_at_k(200, 5, 100) == pytest.approx(_direct(200, 5, 100), rel=1e-12)
    assert pass_at_k(1000, 1, 1) == pytest.approx(0.001)


def test_pass_at_k_rejects_k_above_n_naming_both():
    with pytest.raises(ValueError, match=r"k=4.*n=3"):
        pass_at_k(3, 1, 4)


@pytest.mark.parametrize("n,c,k", [(3, 4, 1), (3, -1, 1), (3, 1, 0)])
def test_pass_at_k_rejects_bad_arguments(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


# ---------------------------------------------------------------- strip_code / ES

SOURCE = '''"""Module doc."""

import os  # trailing

# full-line comment
class A:
    """Class doc."""

    def f(self):
        \'\'\'Func doc.\'\'\'
        x = "# not a comment"
        y = """kept triple"""
        "standalone string"
        return x  # why
'''

STRIPPED = '''import os
class A:
    def f(self):
        x = "# not a comment"
        y = """kept triple"""
        return x'''


def test_strip_code_removes_comments_docstrings_and_blank_lines():
    assert strip_code(SOURCE) == STRIPPED


def test_strip_code_keeps_plain_code_unchanged():
    code = "def f(a, b):\n    return a + b\nprint(f(1, 2))"
    assert strip_code(code) == code


def test_strip_code_tolerates_fragments():
    # A random-span middle: starts mid-expression, does not parse on its own.
    assert strip_code("ange(10)):\n    # c\n\n    total += i  # add\n    s = '#x'") == \
        "ange(10)):\n    total += i\n    s = '#x'"
    assert strip_code("") == ""
    assert strip_code("# only a comment\n\n") == ""


def test_edit_similarity_identical_is_1():
    assert edit_similarity("return a + b\n", "return a + b\n") == 1.0


def test_edit_similarity_ignores_comment_and_docstring_differences():
    ref = "x = compute(a, b)\nreturn x"
    comp = '"""Docstring."""\n# compute it\nx = compute(a, b)  # inline\n\nreturn x\n'
    assert edit_similarity(comp, ref) == 1.0
    assert edit_similarity("# nothing", "") == 1.0


def test_edit_similarity_different_code_is_low():
    assert edit_similarity("raise KeyError(key)", "return [v * 2 for v in data]") < 0.3
    assert edit_similarity("zzzz", "a + b") == 0.0
    assert edit_similarity("", "return x") == 0.0
    assert 0 < edit_similarity("return a + b", "return a - b") < 1


# ---------------------------------------------------------------- summarize / latex

def of(repo):
    """The fields of a sample of `repo` (its file `REPO/mod.py`, a function of a, b, x, y)."""
    return {"repo_name": repo, "repo_source": f"pypi:{repo}==1.0", "file_name": f"{repo}/mod.py", "env_key": "env",
            "prefix_code": "def f(a, b, x, y):\n    ", "node_type": "span"}


SAMPLES = [
    make_sample(sample_id="s1", fill_type=FILL_SPAN, middle="a + b", **of("toolz")),
    make_sample(sample_id="s2", fill_type=FILL_BLOCK, middle="return x\n", **of("toolz")),
    make_sample(sample_id="s3", fill_type=FILL_BLOCK, middle="return y", **of("attrs")),
    make_sample(sample_id="s4", fill_type=FILL_EXPRESSION, middle="x = a * b", **of("attrs")),
]
COMPLETIONS = [
    ["a + b", "zzzzz"],                      # ES 100, 0
    ["return x  # done\n", "return x"],      # ES 100, 100
    ["return y", "qqq"],                     # ES 100, 0
    ["x = a * b", "# c\nx = a * b"],         # ES 100, 100
]
VERDICTS = [[True, False], [True, True], [False, False], [False, True]]


def test_level_of_fill_covers_all_fill_types():
    assert set(LEVEL_OF_FILL) == set(FILL_TYPES)
    assert {LEVEL_OF_FILL[f] for f in (FILL_SPAN, FILL_SINGLE_LINE, FILL_MULTI_LINE)} == {"random"}
    assert (LEVEL_OF_FILL[FILL_EXPRESSION], LEVEL_OF_FILL[FILL_STATEMENT], LEVEL_OF_FILL[FILL_BLOCK]) == \
        ("expression", "statement", "block")


def test_summarize_exact_numbers():
    s = summarize(SAMPLES, VERDICTS, COMPLETIONS, ks=(1, 2, 3))
    expected = {
        "n_samples": 4, "n_completions": 8,
        "pass@1": 0.5, "pass@2": 0.75, "es": 0.75,
        f"pass@1/{FILL_SPAN}": 0.5, f"es/{FILL_SPAN}": 0.5, f"pass@2/{FILL_SPAN}": 1.0,
        f"pass@1/{FILL_BLOCK}": 0.5, f"es/{FILL_BLOCK}": 0.75, f"pass@2/{FILL_BLOCK}": 0.5,
        f"pass@1/{FILL_EXPRESSION}": 0.5, f"es/{FILL_EXPRESSION}": 1.0, f"pass@2/{FILL_EXPRESSION}": 1.0,
        "pass@1/level/random": 0.5, "es/level/random": 0.5,
        "pass@1/level/block": 0.5, "es/level/block": 0.75,
        "pass@1/level/expression": 0.5, "es/level/expression": 1.0,
        "pass@1/repo/toolz": 0.75, "es/repo/toolz": 0.75,
        "pass@1/repo/attrs": 0.25, "es/repo/attrs": 0.75,
        f"n_samples/{FILL_BLOCK}": 2, "n_samples/repo/attrs": 2, "n_samples/level/random": 1,
    }
    for key, value in expected.items():
        assert s[key] == pytest.approx(value), key
    # k above the smallest completion count is not reported; empty groups are omitted, not 0.
    assert not any(k.startswith("pass@3") for k in s)
    for fill in (FILL_SINGLE_LINE, FILL_MULTI_LINE, FILL_STATEMENT):
        assert f"pass@1/{fill}" not in s and f"es/{fill}" not in s
    assert "pass@1/level/statement" not in s
    assert all(isinstance(k, str) and isinstance(v, (int, float)) for k, v in s.items())


def test_summarize_reports_pass_at_1_even_if_not_requested_and_min_n_limits_k():
    samples = SAMPLES[:2]
    s = summarize(samples, [[True, False, False], [True, True]], [["a", "b", "c"], ["d", "e"]], ks=(2, 3))
    assert s["pass@1"] == pytest.approx((1 / 3 + 1) / 2)
    assert s["pass@2"] == pytest.approx(((1 - 1 / 3) + 1) / 2)
    assert "pass@3" not in s


def test_summarize_rejects_mismatched_inputs():
    with pytest.raises(ValueError):
        summarize(SAMPLES, VERDICTS[:3], COMPLETIONS)
    with pytest.raises(ValueError, match="s2"):
        summarize(SAMPLES, [[True, False], [True], [False, False], [False, True]], COMPLETIONS)
    with pytest.raises(ValueError):
        summarize(SAMPLES[:1], [[]], [[]])


def test_summarize_empty():
    assert summarize([], [], []) == {"n_samples": 0, "n_completions": 0}


def test_latex_row_column_order_and_labels():
    # Distinct values per column so any misordering or ES/Pass@1 swap is caught.
    summary = {"es": 0.7004, "pass@1": 0.07}  # fractions; the row prints percent
    for i, fill in enumerate(FILL_TYPES):
        summary[f"es/{fill}"] = 0.1 * (i + 1) + 0.005
        summary[f"pass@1/{fill}"] = 0.01 * (i + 1)
    row = latex_row(summary, "Model-7B")
    assert row == ("Model-7B & 10.5 & 1.0 & 20.5 & 2.0 & 30.5 & 3.0 & 40.5 & 4.0 & 50.5 & 5.0 & 60.5 & 6.0"
                   r" & 70.0 & 7.0 \\")
    assert [label for label, _ in LATEX_COLUMNS] == [
        "Random Span", "Random Single-line", "Random Multi-line", "Expression", "Statement", "Block", "Average"]
    top, sub = LATEX_HEADER.split("\n")
    for label, _ in LATEX_COLUMNS:
        assert label in top
    assert top.index("Random Span") < top.index("Random Multi-line") < top.index("Expression") \
        < top.index("Block") < top.index("Average")
    assert sub.split("&")[1:3] == [" ES ", " Pass@1 "] and sub.count("ES & Pass@1") == 7
    assert row.count("&") == sub.count("&") == 14


def test_latex_row_missing_groups_and_escaping():
    row = latex_row(summarize(SAMPLES, VERDICTS, COMPLETIONS), "qwen2.5_coder")
    assert row == r"qwen2.5\_coder & 50.0 & 50.0 & - & - & - & - & 100.0 & 50.0 & - & - & 75.0 & 50.0 & 75.0 & 50.0 \\"
    assert latex_row({}, "m") == "m" + " & -" * 14 + r" \\"


def test_latex_row_escapes_every_special_character_of_the_model_name_only():
    row = latex_row({"es": 0.5, "pass@1": 0.25}, "a_b&c%d#e$f{g}h~i^j\\k")
    name, *cells = row.removesuffix(r" \\").split(" & ")
    assert name == (r"a\_b\&c\%d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k")
    assert cells[-2:] == ["50.0", "25.0"] and cells[:-2] == ["-"] * 12  # the numbers stay as they are
    assert row.count(" & ") == 14 and row.endswith(r" \\")
    # no special character is left bare: each is escaped, or part of an escape's own \command{}
    bare = re.sub(r"\\(text\w+\{\}|[&%$#_{}])", "", name)
    assert not set(bare) & set("&%$#_{}~^\\"), bare
    assert latex_row({}, "two\nlines") == "two lines" + " & -" * 14 + r" \\"
