"""A judged run of a selection sees the same tests as the whole suite did: an excluded `test_x` does not
take a judged `test_x_y` with it (pytest's --deselect matches prefixes), a `.py` data file that the
repository's conftest collects is not imported as a test module because the selection names its file,
and a collector that makes two items of one id is not taken for a damaged evidence stream.  And the
ground truth of several files shares its runs even when the guard sees one of them do something: the
shared run says whose each event was."""
from __future__ import annotations

from dataclasses import replace

import pytest

from conftest import make_sample, prepared_local_repo
from execrepobench.builder.verification.ground_truth import check_ground_truth
from execrepobench.builder.settings import BuildSettings
from execrepobench.builder.verification.verify import verify_one, verify_samples
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

CONFTEST = '''import pytest


class Example(pytest.Item):
    def runtest(self):
        from selrepo.core import double
        assert double(int(self.path.read_text().split("=")[1].strip().split()[0])) > 0


class ExampleFile(pytest.File):
    def collect(self):
        yield Example.from_parent(self, name="example")


class Case(pytest.Item):
    def runtest(self):
        from selrepo.core import double
        assert double(2) == 4


class CaseFile(pytest.File):
    def collect(self):
        for _ in range(2):  # two cases of one id, like docopt-ng's testcases.docopt
            yield Case.from_parent(self, name="case")


def pytest_collect_file(file_path, parent):
    if file_path.parent.name == "examples" and file_path.suffix == ".py":
        return ExampleFile.from_parent(parent, path=file_path)
    if file_path.suffix == ".cases":
        return CaseFile.from_parent(parent, path=file_path)
'''


@pytest.fixture(scope="module")
def selrepo(tmp_path_factory):
    base = tmp_path_factory.mktemp("selrepo")
    repo = base / "selrepo"
    (repo / "selrepo").mkdir(parents=True)
    (repo / "tests" / "examples").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "selrepo"\nversion = "0.1"\n\n[build-system]\n'
                                         'requires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    (repo / "selrepo" / "__init__.py").write_text("")
    (repo / "selrepo" / "core.py").write_text("def double(x):\n    return x * 2\n")
    (repo / "selrepo" / "frames.py").write_text("import sys\n\n\ndef caller():\n"
                                                "    return sys._getframe(1).f_code.co_name\n")
    (repo / "selrepo" / "other.py").write_text("def triple(x):\n    return x * 3\n")
    (repo / "tests" / "test_more.py").write_text(
        "from selrepo.frames import caller\nfrom selrepo.other import triple\n\n\n"
        "def test_caller():\n    assert caller() == 'test_caller'\n\n\ndef test_triple():\n    assert triple(2) == 6\n")
    (repo / "tests" / "conftest.py").write_text(CONFTEST)
    # an example file: data for the conftest's collector; imported as a module it raises
    (repo / "tests" / "examples" / "sample.py").write_text("value = 3  # an example, not a test module\n"
                                                           "raise RuntimeError('not a test module')\n")
    (repo / "tests" / "twice.cases").write_text("two cases\n")
    (repo / "tests" / "test_doc.txt").write_text(">>> from selrepo.core import double\n>>> double(21)\n42\n")
    (repo / "selrepo" / "patcher.py").write_text("import unittest\n\n\ndef patch():\n"
                                                 "    unittest.TestCase.erb_marker = True\n    return 1\n")
    (repo / "tests" / "test_patch.py").write_text("from selrepo.patcher import patch\n\n\n"
                                                  "def test_patch():\n    assert patch() == 1\n")
    (repo / "tests" / "test_lazy.py").write_text("from selrepo.core import double\n\nCACHE = None\n\n\n"
                                                 "def test_lazy():\n    global CACHE\n    CACHE = double(2)\n"
                                                 "    assert CACHE == 4\n")
    (repo / "selrepo" / "extra.py").write_text("VALUE = 1\n")  # imported by one test module only
    (repo / "tests" / "test_imports_extra.py").write_text("import selrepo.extra\n\n\ndef test_imports():\n"
                                                          "    assert selrepo.extra.VALUE == 1\n")
    (repo / "tests" / "test_needs_extra.py").write_text("import selrepo\n\n\ndef test_needs():\n"
                                                        "    assert selrepo.extra.VALUE == 1  # only if collected\n")
    (repo / "tests" / "test_core.py").write_text(
        "from selrepo.core import double\n\n\ndef test_x():\n    assert False, 'fails at baseline: excluded'\n\n\n"
        "def test_x_y():\n    assert double(3) == 6\n")
    return prepared_local_repo(base, repo)


@pytest.mark.sandbox
@pytest.mark.slow
def test_a_selection_judges_what_the_whole_suite_ran(selrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", selrepo["cache"])
    judged = ("tests/examples/sample.py::example", "tests/test_core.py::test_x_y", "tests/twice.cases::case")
    sample = replace(make_sample(selrepo, "selrepo/core.py", "return x * 2", judged=judged),
                     excluded_tests=("tests/test_core.py::test_x",))
    conf = JudgeConfig(timeout_s=120)
    gold = judge(sample, sample.middle_code, replace(conf, known_verdicts=False, fail_fast=False))
    assert (gold.passed, gold.reason) == (True, "passed"), gold
    wrong = judge(sample, "return x * 3", conf)
    assert (wrong.passed, wrong.reason) == (False, "failed"), wrong
    for only in judged:  # each on its own, too
        one = replace(sample, judged_tests=(only,))
        assert judge(one, one.middle_code, replace(conf, known_verdicts=False)).passed, only
    out = verify_one(sample, conf)  # the builder's verification (guard recording, then enforcing) keeps it
    assert out.kept and out.reason == "kept", out


def _three(selrepo):
    frames = make_sample(selrepo, "selrepo/frames.py", "return sys._getframe(1).f_code.co_name",
                         judged=("tests/test_more.py::test_caller",))
    core = make_sample(selrepo, "selrepo/core.py", "return x * 2", judged=("tests/test_core.py::test_x_y",))
    other = make_sample(selrepo, "selrepo/other.py", "return x * 3", judged=("tests/test_more.py::test_triple",))
    return frames, core, other


@pytest.mark.sandbox
@pytest.mark.slow
def test_what_the_shared_run_saw_is_placed_by_the_file_it_came_from(selrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", selrepo["cache"])
    out = check_ground_truth(list(_three(selrepo)), JudgeConfig(timeout_s=120), rounds=2)
    assert [g.reason for g in out] == ["passed"] * 3, out
    assert [g.sample.guard_allowed for g in out] == [("sys._getframe",), (), ()]  # each file's own
    assert all(len(g.runs_s) == 2 and g.timing is not None and g.timing.collect_s > 0 for g in out)
    # no file records on its own: the shared recording run, then the second round by allowances
    shared, enforced = zip(*(g.costs for g in out))
    assert len(set(shared)) == 1 and shared[0][0].endswith("*")
    assert enforced[1] == enforced[2] != enforced[0] and all(len(runs) == 1 for _, runs in enforced)


@pytest.mark.sandbox
@pytest.mark.slow
def test_one_ground_truth_round_unless_the_guard_saw_something(selrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", selrepo["cache"])
    frames, core, other = _three(selrepo)
    quiet = check_ground_truth([core, other], JudgeConfig(timeout_s=120), rounds=1)
    assert [len(g.runs_s) for g in quiet] == [1, 1] and quiet[0].costs == quiet[1].costs  # one shared run
    out = check_ground_truth([frames, core, other], JudgeConfig(timeout_s=120), rounds=1)
    assert [g.reason for g in out] == ["passed"] * 3, out
    assert [g.sample.guard_allowed for g in out] == [("sys._getframe",), (), ()]
    # what the guard allowed frames.py is enforced in a second run; the shared recording run suffices for the others
    assert [len(g.runs_s) for g in out] == [2, 1, 1] and [len(g.costs) for g in out] == [2, 1, 1]


@pytest.mark.sandbox
@pytest.mark.slow
def test_a_test_modules_change_goes_to_its_tests_and_an_unplaceable_one_to_runs_per_file(selrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", selrepo["cache"])
    frames, core, other = _three(selrepo)
    lazy = make_sample(selrepo, "selrepo/core.py", "return x * 2", judged=("tests/test_lazy.py::test_lazy",))
    out = check_ground_truth([frames, lazy, other], JudgeConfig(timeout_s=120), rounds=1)
    assert [g.reason for g in out] == ["passed"] * 3, out
    allowed = [g.sample.guard_allowed for g in out]
    # a test module's change goes to every candidate of the shared run (verification shares a run only
    # between candidates with the same test files, who all load that module), the frame access to its file
    cache = [e for e in allowed[1] if e.startswith("integrity:tests:") and "CACHE" in e]
    assert len(cache) == 1 and allowed == [(cache[0], "sys._getframe"), tuple(cache), tuple(cache)], allowed
    assert [len(g.costs) for g in out] == [2, 2, 2]  # the shared run + enforcing by allowances: no per-file runs
    assert out[1].costs == out[2].costs != out[0].costs
    patched = make_sample(selrepo, "selrepo/patcher.py", "unittest.TestCase.erb_marker = True",
                          judged=("tests/test_patch.py::test_patch",))
    out = check_ground_truth([patched, core], JudgeConfig(timeout_s=120), rounds=1)
    assert [g.reason for g in out] == ["passed"] * 2, out
    assert any("erb_marker" in e for e in out[0].sample.guard_allowed) and out[1].sample.guard_allowed == ()
    # a change in a namespace no test module owns cannot be placed: each file records on its own
    assert [len(g.costs) for g in out] == [3, 2] and out[0].costs[0] == out[1].costs[0]


@pytest.mark.sandbox
@pytest.mark.slow
def test_a_ground_truth_that_passes_only_next_to_another_test_file_is_not_kept(selrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", selrepo["cache"])
    needs = make_sample(selrepo, "selrepo/core.py", "return x * 2",
                        judged=("tests/test_core.py::test_x_y", "tests/test_needs_extra.py::test_needs"))
    imports = make_sample(selrepo, "selrepo/other.py", "return x * 3",
                          judged=("tests/test_imports_extra.py::test_imports", "tests/test_more.py::test_triple"))
    alone = judge(needs, needs.middle_code, JudgeConfig(timeout_s=120, known_verdicts=False, fail_fast=False))
    assert alone.failing_tests == ("tests/test_needs_extra.py::test_needs",), alone  # what evaluation runs
    assert [g.passed for g in check_ground_truth([needs, imports], JudgeConfig(timeout_s=120), 1)] == [True, True]
    quiet = BuildSettings(workers=1, gt_runs=1, progress=False, mutants=0)
    # ground-truth runs shared only by the same test files
    needs_out, imports_out = verify_samples([needs, imports], JudgeConfig(timeout_s=120), quiet)
    assert (needs_out.reason, imports_out.reason) == ("gt_failed", "kept"), (needs_out, imports_out)


@pytest.mark.sandbox
@pytest.mark.slow
def test_what_pytest_binds_on_first_use_is_not_recorded_as_the_masked_files(selrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", selrepo["cache"])
    doc = make_sample(selrepo, "selrepo/core.py", "return x * 2", judged=("tests/test_doc.txt::test_doc.txt",))
    out = verify_one(doc, JudgeConfig(timeout_s=120))
    # pytest's doctest runner class is made on first use: bound before the guard's reference, it is not a
    # change (it was recorded, and so allowed to completions, as `integrity:module:_pytest.doctest:...`)
    assert out.kept and out.sample.guard_allowed == (), out
    assert judge(out.sample, "return x + x", JudgeConfig(timeout_s=120)).passed
    assert not judge(out.sample, "return x * 3", JudgeConfig(timeout_s=120)).passed
