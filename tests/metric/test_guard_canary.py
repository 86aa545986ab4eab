"""Canary tests (execrepobench_metric/execution/canaries.py): a check whose expected outcome only the judge knows.

Planning and checking without a sandbox; then, in the real sandbox: honest completions keep their
verdicts with canaries; an attack that rewrites every outcome past every in-process check (guard
"blind": the evidence stream without refusals or integrity checks) or with the guard off is judged
`passed` without canaries and `tampering` with them; a repository with its own file / function
patterns collects them; one that reorders its tests is judged by a run with fresh canaries that does not stop at the first
failure (and says so).
"""
import dataclasses
import hashlib
import hmac
import json
import random
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

import guard_attacks as corpus
from conftest import make_sample, prepared_local_repo, write_local_repo
from execrepobench_metric.execution import canaries as canaries_module
from execrepobench_metric.execution.canaries import CanaryPlan, check_canaries, plan_canaries
from execrepobench_metric.execution.canary_config import read_collects
from execrepobench_metric.execution.canary_names import usable
from execrepobench_metric.execution.fills import null_fill
from execrepobench_metric.execution.guard import read_evidence
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.junit import parse_junit_file, results_by_nodeid
from execrepobench_metric.execution.sandbox import SandboxRun, ViewFile, _bwrap_args
from execrepobench_metric.execution.verdict import JudgeConfig

needs_bwrap = pytest.mark.sandbox  # fails where bwrap is required (CI), skips elsewhere: tests/conftest.py
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
WITH = JudgeConfig(timeout_s=60, canaries=True, known_verdicts=False, strict=False)  # lenient: the layers here alone
WITHOUT = dataclasses.replace(WITH, canaries=False)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _run_module(text: str) -> dict[str, bool]:
    """{function: passed} for a canary module's source, run here."""
    namespace: dict = {}
    exec(compile(text, "canary.py", "exec"), namespace)
    out = {}
    for name, fn in namespace.items():
        if callable(fn):
            try:
                fn()
                out[name] = True
            except AssertionError:
                out[name] = False
    return out


@pytest.fixture
def separate_files(monkeypatch):
    """Canaries in modules of their own (the placement where no judged test module can carry them)."""
    monkeypatch.setattr(canaries_module, "SEPARATE_FILES", True)


def test_the_repository_configuration_decides_the_names(tmp_path, separate_files):
    judged = ["checks/check_core.py::check_double", "checks/check_more.py::check_triple"]
    root = _tree(tmp_path / "a", {"setup.cfg": "[tool:pytest]\npython_files = check_*.py\npython_functions = check\n",
                                  "checks/check_core.py": "", "checks/check_more.py": ""})
    plan = plan_canaries(root, judged, [], random.Random(1))
    assert plan.off == "" and len(plan.files) == 2
    for f in plan.files:
        assert f.path.startswith("checks/check_") and not (root / f.path).exists()
    assert all(c.nodeid.split("::")[1].startswith("check") for c in plan.canaries)
    # the first file pytest's rules find wins: a pytest.ini in the tests' folder over the root's setup.cfg
    _tree(root, {"checks/pytest.ini": "[pytest]\npython_files = spec_*.py\n"})
    assert read_collects(root, ["checks/check_core.py"], []).python_files == ("spec_*.py",)
    assert read_collects(root, ["checks/check_core.py"], ["-o", "python_files=t_*.py"]).python_files == ("t_*.py",)
    toml = _tree(tmp_path / "b", {"pyproject.toml": '[tool.pytest.ini_options]\npython_files = ["*_spec.py"]\n'
                                                    'python_functions = ["it_*"]\n', "spec/a_spec.py": ""})
    plan = plan_canaries(toml, ["spec/a_spec.py::it_works"], [], random.Random(2))
    assert all(f.path.endswith("_spec.py") for f in plan.files) and all(
        c.nodeid.split("::")[1].startswith("it_") for c in plan.canaries), plan
    # what cannot be collected is said, not planted
    fixed = _tree(tmp_path / "c", {"tox.ini": "[pytest]\npython_files = tests.py\n", "tests.py": ""})
    assert "python_files (tests.py)" in plan_canaries(fixed, ["tests.py::test_a"], []).off
    assert plan_canaries(toml, ["spec/a_spec.py::it_works"], ["-p", "no:python"]).off
    assert plan_canaries(toml, [], []).off == "no judged tests"


def test_canaries_are_drawn_afresh_mixed_in_and_the_failing_one_runs_last(tmp_path, separate_files):
    files = ["tests/a/test_one.py", "tests/test_two.py", "tests/test_zed.py"]
    root = _tree(tmp_path, {f: "" for f in files} | {"tests/test_clamp.py": "", "tests/clamp/x.py": ""})
    judged = [f"{f}::test_clamp_{i}" for i, f in enumerate(files)]
    places = set()
    for seed in range(40):
        plan = plan_canaries(root, judged, [], random.Random(seed))
        mixed, last = plan.files
        assert plan.targets[-1] == last.path  # after every judged test: the run stops at the first failure
        assert [t for t in plan.targets if t in files] == files  # the judged files keep pytest's order
        places.add(plan.targets.index(mixed.path))
        assert [c.expected for c in plan.canaries].count("failed") == 1
        assert {c.nodeid.split("::")[0] for c in plan.canaries if c.expected == "failed"} == {last.path}
        assert not {c.nodeid for c in plan.canaries} & set(judged)
        assert {c.nodeid.split("::")[1] for c in plan.canaries}.isdisjoint(t.split("::")[1] for t in judged)
        for f in plan.files:  # no name of the tree (a module or package of that name would clash)
            assert Path(f.path).name not in ("test_one.py", "test_two.py", "test_zed.py", "test_clamp.py", "clamp.py")
            ran = _run_module(f.text)
            for c in plan.canaries:
                if c.nodeid.startswith(f.path + "::"):
                    assert ran[c.nodeid.split("::")[1]] == (c.expected == "passed"), (f.text, c)
            assert f.mtime == (root / next(x for x in files if Path(x).parent == Path(f.path).parent)).stat().st_mtime
    assert places == {0, 1, 2, 3}  # before, between and after the judged files
    drawn = [plan_canaries(root, judged, []) for _ in range(2)]  # the operating system's random source
    assert drawn[0].ids != drawn[1].ids and isinstance(secrets.SystemRandom(), random.Random)


def test_names_drawn_from_keywords_and_builtins_are_never_used(tmp_path, separate_files):
    """The words of the judged ids name the canaries: a judged id made of keywords and builtins must not give
    `def with(...)` (the canary module would not compile: a collection error for an honest completion) or a
    helper `len` (the canaries beside it that call `len` would fail)."""
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/core.py": '"""\n>>> 1\n1\n"""\n',
                            "tests/test_with.py": ""})
    judged = ["pkg/core.py::pkg.core", "tests/test_with.py::test_with_class_len_sum_max_min_sorted"]
    helpers = set()
    for seed in range(60):
        plan = plan_canaries(root, judged, ["--doctest-modules"], random.Random(seed))
        assert plan.off == "", plan.off
        for f in plan.files:
            namespace: dict = {}
            exec(compile(f.text, f.path, "exec"), namespace)  # compiles
            names = [n for n in namespace if not n.startswith(("test", "__"))]
            helpers.update(names)
            assert all(usable(n) for n in names) and usable(Path(f.path).stem), (f.path, f.text)
            for c in plan.canaries:
                test = c.nodeid.split("::")[1]
                if c.nodeid.startswith(f.path + "::") and test in namespace:  # a test function: ends as drawn
                    try:
                        namespace[test]()
                        passed = True
                    except AssertionError:
                        passed = False
                    assert passed == (c.expected == "passed"), f.text
    assert helpers and not helpers & {"with", "class", "len", "sum", "max", "min", "sorted"}


def _pytest_outcomes(root: Path, plan: CanaryPlan, args: list[str]) -> dict[str, str]:
    """{node id: outcome} of a real pytest run of the plan's files (written into `root`) and targets."""
    for f in plan.files:
        (root / f.path).write_text(f.text, encoding="utf-8")
    junit = root / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={root}",
                    f"--junitxml={junit}", *args, *plan.targets], cwd=root, capture_output=True, timeout=120)
    collected = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
                                f"--rootdir={root}", *args, *plan.targets], cwd=root, capture_output=True, text=True,
                               timeout=120).stdout.splitlines()
    return results_by_nodeid([c for c in collected if "::" in c], parse_junit_file(junit))


def test_real_pytest_collects_and_runs_the_canaries_as_drawn(tmp_path, separate_files):
    """The node ids the judge names are pytest's, and each canary ends as drawn: test functions under the
    repository's own patterns, and a doctest that must fail where module doctests are judged."""
    cases = {
        "functions": ({"setup.cfg": "[tool:pytest]\npython_files = check_*.py\npython_functions = check\n",
                       "checks/check_core.py": "def check_one():\n    assert True\n"},
                      ["checks/check_core.py::check_one"], []),
        "doctests": ({"pkg/__init__.py": "", "pkg/mod.py": 'def twice(x):\n    """\n    >>> twice(2)\n    4\n    """\n'
                      "    return 2 * x\n", "tests/test_mod.py": "from pkg.mod import twice\n\n\n"
                      "def test_twice():\n    assert twice(3) == 6\n"},
                     ["pkg/mod.py::pkg.mod.twice", "tests/test_mod.py::test_twice"], ["--doctest-modules"]),
        # schema's layout: a top-level test module with a test function named like it, whose node id is also
        # what the module docstring's doctest would be called - a function, so the canaries are functions
        "named-like-its-module": ({"schema.py": "def ok():\n    return 1\n",
                                   "test_schema.py": "from schema import ok\n\n\ndef test_schema():\n"
                                                     "    assert ok() == 1\n"},
                                  ["test_schema.py::test_schema"], []),
    }
    for kind, (files, judged, args) in cases.items():
        root = _tree(tmp_path / kind, files)
        plan = plan_canaries(root, judged, args, random.Random(7))
        assert plan.off == "", plan
        fails = next(c for c in plan.canaries if c.expected == "failed")
        if kind == "doctests":
            assert fails.nodeid.startswith(plan.targets[-1] + "::pkg.") and plan.targets[-1].startswith("pkg/")
        else:  # a test function that must fail
            assert fails.nodeid.rsplit("::", 1)[1].isidentifier(), fails
        got = _pytest_outcomes(root, plan, args)
        assert {t: got.get(t) for t in judged} == {t: "passed" for t in judged}, (kind, got)
        assert {c.nodeid: got.get(c.nodeid) for c in plan.canaries} == {c.nodeid: c.expected for c in plan.canaries}


def _plan() -> CanaryPlan:
    return CanaryPlan(canaries=(_c("t/test_m.py::test_a", "passed"), _c("t/test_l.py::test_b", "passed"),
                                _c("t/test_l.py::test_c", "failed"), _c("t/test_l.py::test_d", "passed")),
                      files=(ViewFile("t/test_m.py", ""), ViewFile("t/test_l.py", "")))


def _c(nodeid, expected):
    from execrepobench_metric.execution.canaries import Canary
    return Canary(nodeid, expected)


def _check(outcomes, *, collected=None, cross=None, unmatched=None, judged=("t/test_j.py::test_j",)):
    collected = collected or ("t/test_j.py::test_j", "t/test_m.py::test_a", "t/test_l.py::test_b",
                              "t/test_l.py::test_c", "t/test_l.py::test_d")
    return check_canaries(_plan(), collected=collected, outcomes=outcomes, cross=outcomes if cross is None else cross,
                          unmatched=unmatched or {}, judged=judged)


def test_what_the_canaries_say():
    honest = {"t/test_j.py::test_j": "passed", "t/test_m.py::test_a": "passed", "t/test_l.py::test_b": "passed",
              "t/test_l.py::test_c": "failed"}  # the run stopped at the failing canary: test_d never ran
    held = _check(honest)
    assert (held.state, held.exit_code, held.label) == ("held", 1, "held")
    assert _check({**honest, "t/test_l.py::test_d": "passed"}).state == "held"  # no stop (fail fast off)
    rewritten = _check({t: "passed" for t in [*honest, "t/test_l.py::test_d"]})
    assert (rewritten.state, rewritten.always) == ("fired", True) and "canary:passed" in rewritten.note
    assert _check(honest, cross={**honest, "t/test_l.py::test_c": "passed"}).state == "fired"  # junit alone says so
    assert _check({**honest, "t/test_m.py::test_a": "failed"}).note.startswith("canary:failed")
    missing = _check({k: v for k, v in honest.items() if k != "t/test_m.py::test_a"})
    assert (missing.state, missing.always) == ("fired", False) and missing.note.startswith("canary:missing")
    # a judged test failed: the run stopped there, canaries after it never ran - not evidence of anything
    stopped = _check({"t/test_m.py::test_a": "passed", "t/test_j.py::test_j": "failed"})
    assert stopped.state == "held" and "judged test did not pass" in stopped.note
    # a stream forged for the judged tests only (what a forger who cannot tell the canaries apart lists)
    assert _check({"t/test_j.py::test_j": "passed"}).state == "fired"
    # fail closed: a canary not collected or skipped while every judged test passed - run again with fresh
    # canaries; when the fresh ones are not run as drawn either, the completion did it (canaries always run)
    assert _check(honest, collected=("t/test_j.py::test_j",)).state == "rerun"
    skipped = _check({**honest, "t/test_m.py::test_a": "skipped"})
    assert skipped.state == "rerun" and "skipped" in skipped.note
    again = check_canaries(dataclasses.replace(_plan(), attempt=1), collected=("t/test_j.py::test_j",),
                           outcomes=honest, cross=honest, unmatched={}, judged=("t/test_j.py::test_j",))
    assert again.state == "fired" and "fresh canaries" in again.note
    # the failing canary ran before a judged test (a repository that reorders its tests): run again
    early = ("t/test_l.py::test_c", "t/test_j.py::test_j", "t/test_m.py::test_a", "t/test_l.py::test_b",
             "t/test_l.py::test_d")
    assert _check({"t/test_l.py::test_c": "failed"}, collected=early).state == "rerun"
    assert _check(honest, unmatched={"t.test_m": "error"}).state == "rerun"  # a canary module did not import
    assert _check(honest, unmatched={"t/test_l.py": "error"}).state == "rerun"
    assert _check(honest, unmatched={"t.test_m_more": "error"}).state == "held"  # another module's error
    assert check_canaries(None, collected=(), outcomes={}, cross={}, unmatched={}, judged=()).label == ""


def test_a_stream_forged_with_the_key_is_caught_by_the_canaries():
    """What code the guard does not attribute could do (docs/judging.md): read the key and write a
    stream of its own, with every collected test passed.  Its chain is valid; the canaries are not."""
    key = secrets.token_bytes(32)
    collected = ["t/test_j.py::test_j", "t/test_m.py::test_a", "t/test_l.py::test_b", "t/test_l.py::test_c",
                 "t/test_l.py::test_d"]
    rows = [["hello", "enforce", "m.py"], ["collected", *collected]]
    rows += [["report", t, "call", "passed"] for t in collected] + [["finish", "0"], ["exit", "0"]]
    data, prev = b"", b""
    for seq, row in enumerate(rows, 1):
        body = "\t".join([str(seq), *row]).encode()
        prev = hmac.new(key, prev + body, hashlib.sha256).digest()
        data += body + b"\t" + prev.hex().encode() + b"\n"
    ev = read_evidence(data, key)
    assert ev.problem == "" and ev.finished and ev.exit_code == 0  # the stream itself holds
    check = check_canaries(_plan(), collected=ev.collected, outcomes=ev.outcomes, cross=ev.outcomes, unmatched={},
                           judged=("t/test_j.py::test_j",))
    assert (check.state, check.always) == ("fired", True), check


def test_added_files_are_read_only_in_the_view(tmp_path):
    run = SandboxRun(("true",), tmp_path, tmp_path / "out", {}, 5, added=(ViewFile("tests/test_x.py", ""),))
    args = _bwrap_args(run, tmp_path / "merged", None, tmp_path / "empty")  # the added files: the same in any view
    i = args.index(str(tmp_path / "merged" / "tests/test_x.py"))
    assert args[i - 1] == "--ro-bind" and args[i + 1] == str(tmp_path / "tests/test_x.py")


@pytest.fixture(scope="module")
def clamp(built_minirepo):
    return make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)


@needs_bwrap
def test_honest_completions_keep_their_verdicts(clamp, tmp_path):
    for completion in (clamp.middle_code, "return  value", null_fill(clamp),
                       "return value + 1", "return low", "return high"):
        for guard in ("enforce", "off"):
            config = dataclasses.replace(WITH, guard=guard)
            with_, without = judge(clamp, completion, config), judge(clamp, completion, WITHOUT)
            assert (with_.reason, with_.failing_tests) == (without.reason, without.failing_tests), (completion, with_)
            assert with_.reason in ("passed", "failed"), with_
            if with_.passed:
                assert with_.canaries == "held" and without.canaries == ""
    evidence = tmp_path / "evidence"
    v = judge(clamp, clamp.middle_code, WITH, evidence=evidence)
    planted = json.loads((evidence / "canaries.json").read_text())  # written after the run, never inside it
    selected = json.loads((evidence / "select.json").read_text())
    assert v.passed and set(selected) == set(CLAMP_TESTS) | set(planted["canaries"]) and selected == sorted(selected)
    assert sorted(planted["canaries"].values()).count("failed") == 1


@needs_bwrap
@pytest.mark.parametrize("attack", [a for a in corpus.ATTACKS if a.target == "clamp" and a.name != "mini_forge_exit"],
                         ids=lambda a: a.name)
def test_rewriting_every_outcome_past_every_in_process_check_is_caught(clamp, attack):
    """guard "blind": the stream is written, but nothing is refused or checked - as if the attack had got
    past attribution and integrity, or forged the stream with the key."""
    completion = corpus.completion(attack, "    ", "return value + 1")
    blind = dataclasses.replace(WITHOUT, guard="blind")
    assert judge(clamp, completion, blind).reason == "passed"  # the attack works past the in-process checks
    v = judge(clamp, completion, dataclasses.replace(blind, canaries=True))
    assert (v.reason, v.canaries.split(" ")[:2]) == ("tampering", ["fired:", "canary:passed"]), v


@needs_bwrap
@pytest.mark.parametrize("attack", [a for a in corpus.ATTACKS if a.target == "clamp"], ids=lambda a: a.name)
def test_with_the_guard_off_canaries_still_catch_rewritten_and_forged_outcomes(clamp, attack):
    completion = corpus.completion(attack, "    ", "return value + 1")
    off = dataclasses.replace(WITHOUT, guard="off", fail_fast=False)
    assert judge(clamp, completion, off).reason == "passed"
    v = judge(clamp, completion, dataclasses.replace(off, canaries=True))
    assert v.reason == "tampering" and "canary:passed" in v.detail, v


@pytest.fixture(scope="module")
def cfgrepo(tmp_path_factory):
    """Test files `check_*.py`, test functions `check*` (setup.cfg), a unittest class, two test files, and a
    conftest that runs the tests in reverse order when `-o reverse_items=1` is given."""
    base = tmp_path_factory.mktemp("cfgrepo")
    repo = write_local_repo(base, "cfgrepo", {
        "pyproject.toml": '[project]\nname = "cfgrepo"\nversion = "0.1"\n\n[build-system]\n'
                          'requires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                          '[tool.setuptools]\npackages = ["cfgrepo"]\n',
        "setup.cfg": "[tool:pytest]\npython_files = check_*.py\npython_functions = check\n",
        "cfgrepo/__init__.py": "", "cfgrepo/core.py": "def double(x):\n    return x * 2\n",
        "conftest.py": "def pytest_addoption(parser):\n    parser.addini('reverse_items', 'reverse', default='')\n\n\n"
                       "def pytest_collection_modifyitems(config, items):\n    if config.getini('reverse_items'):\n"
                       "        items.reverse()\n",
        "checks/check_core.py": "import unittest\n\nfrom cfgrepo.core import double\n\n\ndef check_double():\n"
                                "    assert double(4) == 8\n\n\nclass Doubling(unittest.TestCase):\n"
                                "    def test_more(self):\n        self.assertEqual(double(5), 10)\n",
        "checks/check_more.py": "from cfgrepo.core import double\n\n\ndef check_double_again():\n"
                                "    assert double(1) == 2\n"})
    return prepared_local_repo(base, repo)


@needs_bwrap
def test_own_patterns_collect_the_canaries_and_reordering_is_judged_with_fresh_canaries(cfgrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", cfgrepo["cache"])
    judged = ("checks/check_core.py::check_double", "checks/check_core.py::Doubling::test_more",
              "checks/check_more.py::check_double_again")
    sample = make_sample(cfgrepo, "cfgrepo/core.py", "return x * 2", judged=judged)
    truth, wrong = judge(sample, sample.middle_code, WITH), judge(sample, "return x + 2", WITH)
    assert truth.passed and truth.canaries.startswith("held"), truth
    assert wrong.reason == "failed" and wrong.failing_tests == judge(sample, "return x + 2", WITHOUT).failing_tests
    cut = sample.test_command.index("--")
    reversed_ = dataclasses.replace(sample, test_command=(*sample.test_command[:cut], "-o", "reverse_items=1",
                                                          *sample.test_command[cut:]))
    again = judge(reversed_, reversed_.middle_code, WITH)
    # the failing canary ran first and stopped the run: made again with fresh canaries, not stopping at the
    # first failure - never without canaries (an off-switch a completion could pull by reordering the tests)
    assert again.passed and again.canaries.startswith("held: after a rerun with fresh canaries (the repository "
                                                      "runs judged tests after a canary"), again
    assert judge(reversed_, "return x + 2", WITH).reason == "failed"
