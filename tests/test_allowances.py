"""Placing what a shared ground-truth recording run saw (builder/verification/allowances.py): by the masked file the
guard named, a test module's change to every candidate of the run, anything else nowhere (None)."""
from __future__ import annotations

from execrepobench.builder.verification.allowances import attribute
from execrepobench_dataset.record import Sample


def _sample(sample_id: str, file_name: str, *tests: str) -> Sample:
    return Sample(sample_id=sample_id, repo_name="r", repo_source="pypi:r==1", file_name=file_name,
                  prefix_code="", middle_code="x", suffix_code="", context_code=(),
                  fill_type="grammar-based: statement", node_type="expression_statement", middle_start_byte=0,
                  middle_end_byte=1, env_key="e", seed=0, builder_version="0", judged_tests=tests)


def test_events_go_to_the_file_named_and_test_module_changes_to_all():
    a = _sample("a", "pkg/a.py", "tests/unit/test_a.py::test_one")
    b = _sample("b", "pkg/b.py", "tests/unit/test_a.py::test_two")
    c = _sample("c", "pkg/a.py", "tests/unit/test_a.py::test_three")
    sources = [("sys._getframe", "pkg/a.py"), ("setattr:__bases__", "pkg/b.py"),
               ("integrity:tests:tests.unit.test_base.TestBase:parser", "")]  # a class the test module imports
    change = "integrity:tests:tests.unit.test_base.TestBase:parser"
    assert attribute([a, b, c], sources) == {"a": (change, "sys._getframe"), "b": (change, "setattr:__bases__"),
                                             "c": (change, "sys._getframe")}
    assert attribute([a, b], []) == {"a": (), "b": ()}


def test_an_event_with_no_owner_outside_the_test_modules_cannot_be_placed():
    a = _sample("a", "pkg/a.py", "tests/test_a.py::test_one")
    assert attribute([a], [("integrity:module:unittest.case.TestCase:marker", "")]) is None
    assert attribute([a], [("thread.outlives", "")]) is None
    assert attribute([a], [("sys._getframe", "pkg/elsewhere.py")]) is None
