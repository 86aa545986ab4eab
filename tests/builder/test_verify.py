"""Test selection and sample verification (ground truth passes, null fill fails)."""
import dataclasses

import pytest

from conftest import make_sample
from execrepobench.builder.preparation.coverage import CoverageMap
from execrepobench.builder.verification.selection import ImportGraph, region_lines, select_tests
from execrepobench.builder.verification.verify import null_fill, verify_one
from execrepobench_dataset.record import FILL_BLOCK, FILL_EXPRESSION, FILL_SPAN
from execrepobench_metric.execution.verdict import JudgeConfig

FILES = {
    "pkg/__init__.py": "from .core import f\n",
    "pkg/core.py": "import os\n\ndef f(x):\n    y = x + 1\n    return y\n",
    "pkg/other.py": "def g():\n    return 2\n",
    "tests/test_core.py": "from pkg import f\n\ndef test_f():\n    assert f(1) == 2\n",
    "tests/test_other.py": "from pkg.other import g\n\ndef test_g():\n    assert g() == 2\n",
}
COV = CoverageMap({"pkg/core.py": {1: frozenset({""}), 3: frozenset({""}),
                                   4: frozenset({"tests/test_core.py::test_f"}),
                                   5: frozenset({"tests/test_core.py::test_f"})}})
ALL = ("tests/test_core.py::test_f", "tests/test_other.py::test_g", "tests/test_other.py::test_flaky")
JUDGEABLE = ALL[:2]


def _split(file, middle):
    text = FILES[file]
    i = text.index(middle)
    return text[:i], middle


def test_region_lines():
    assert region_lines("a\nb\n", "c\nd") == (3, 4)


def test_coverage_rule_for_lines_run_by_tests():
    prefix, middle = _split("pkg/core.py", "y = x + 1")
    assert select_tests("pkg/core.py", prefix, middle, COV, ImportGraph(FILES), JUDGEABLE) == \
        (("tests/test_core.py::test_f",), "coverage")


def test_importers_rule_for_import_time_code():
    prefix, middle = _split("pkg/core.py", "import os")
    tests, rule = select_tests("pkg/core.py", prefix, middle, COV, ImportGraph(FILES), JUDGEABLE)
    # test_core imports pkg, whose __init__ imports pkg.core; test_other imports pkg.other, which
    # (as a submodule) runs pkg/__init__ too.
    assert rule == "importers" and "tests/test_core.py::test_f" in tests
    assert "tests/test_other.py::test_flaky" not in tests  # never judge a test that was not passing


def test_suite_rule_when_nothing_narrower():
    prefix, middle = _split("pkg/other.py", "return 2")
    graph = ImportGraph({k: v for k, v in FILES.items() if k != "tests/test_other.py"})
    tests, rule = select_tests("pkg/other.py", prefix, middle, CoverageMap({}), graph, ("tests/test_core.py::test_f",))
    assert rule in ("importers", "suite") and tests == ("tests/test_core.py::test_f",)


def test_minimum_rule_widens():
    prefix, middle = _split("pkg/core.py", "y = x + 1")
    tests, rule = select_tests("pkg/core.py", prefix, middle, COV, ImportGraph(FILES), JUDGEABLE,
                               minimum_rule="suite")
    assert rule == "suite" and tests == tuple(sorted(JUDGEABLE))


@pytest.mark.parametrize("prefix, suffix, fill_type, expected", [
    ("def f():\n    ", "\n", FILL_BLOCK, "pass"),
    ("x = ", "\n", FILL_EXPRESSION, "None"),
    ("def ", "(a):\n    return a\n", FILL_EXPRESSION, "_"),  # a name position: only `_` compiles
    ("x = [1, ", "]\n", FILL_SPAN, ""),
])
def test_null_fill_rules(built_minirepo, prefix, suffix, fill_type, expected):
    s = make_sample(built_minirepo, "minirepo/mathx.py", "return value", fill_type=fill_type)
    s = dataclasses.replace(s, prefix_code=prefix, middle_code="zz", suffix_code=suffix,
                            middle_start_byte=len(prefix), middle_end_byte=len(prefix) + 2)
    assert null_fill(s) == expected


@pytest.mark.sandbox
def test_verify_keeps_discriminating_and_drops_untested(built_minirepo):
    conf = JudgeConfig(timeout_s=60)
    good = make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                       judged=("tests/test_mathx.py::test_clamp_inside",))
    out = verify_one(good, conf)
    assert out.kept and out.reason == "kept" and len(out.gt_runs_s) == 3
    untested = make_sample(built_minirepo, "minirepo/strings.py", 'return text.upper() + "!"',
                           judged=("tests/test_strings.py::test_slugify",))
    out = verify_one(untested, conf)
    assert not out.kept and out.reason == "null_passed"
    wrong_tests = make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                              judged=("tests/test_mathx.py::test_nonexistent",))
    out = verify_one(wrong_tests, conf)
    assert not out.kept and out.reason == "gt_failed" and "missing_tests" in out.detail


def test_selection_floor_widens_one_kind_only():
    from execrepobench.builder.verification.verify import with_selection

    block, expression = (make_sample(file_name="pkg/core.py", middle="y = x + 1", fill_type=fill,
                                     text=FILES["pkg/core.py"], sample_id=fill) for fill in (FILL_BLOCK, FILL_EXPRESSION))
    out = with_selection([block, expression], COV, ImportGraph(FILES), JUDGEABLE, floor={FILL_BLOCK: "suite"})
    assert [s.selection_rule for s in out] == ["suite", "coverage"]
