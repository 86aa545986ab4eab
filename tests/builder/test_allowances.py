"""Placing what a shared ground-truth recording run saw (builder/verification/allowances.py): by the masked file the
guard named, a test module's change to every candidate of the run, anything else nowhere (None)."""
from __future__ import annotations

from conftest import make_sample
from execrepobench.builder.verification.allowances import attribute


def test_events_go_to_the_file_named_and_test_module_changes_to_all():
    a = make_sample(file_name="pkg/a.py", judged=("tests/unit/test_a.py::test_one",), sample_id="a")
    b = make_sample(file_name="pkg/b.py", judged=("tests/unit/test_a.py::test_two",), sample_id="b")
    c = make_sample(file_name="pkg/a.py", judged=("tests/unit/test_a.py::test_three",), sample_id="c")
    sources = [("sys._getframe", "pkg/a.py"), ("setattr:__bases__", "pkg/b.py"),
               ("integrity:tests:tests.unit.test_base.TestBase:parser", "")]  # a class the test module imports
    change = "integrity:tests:tests.unit.test_base.TestBase:parser"
    assert attribute([a, b, c], sources) == {"a": (change, "sys._getframe"), "b": (change, "setattr:__bases__"),
                                             "c": (change, "sys._getframe")}
    assert attribute([a, b], []) == {"a": (), "b": ()}


def test_an_event_with_no_owner_outside_the_test_modules_cannot_be_placed():
    a = make_sample(file_name="pkg/a.py", judged=("tests/test_a.py::test_one",), sample_id="a")
    assert attribute([a], [("integrity:module:unittest.case.TestCase:marker", "")]) is None
    assert attribute([a], [("thread.outlives", "")]) is None
    assert attribute([a], [("sys._getframe", "pkg/elsewhere.py")]) is None
