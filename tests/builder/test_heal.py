"""Suites that heal (builder/preparation/heal.py): each repair read from real pytest output, and the error
that remains names every repair tried and ends with pytest's own words."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from execrepobench.builder.preparation.heal import repair
from execrepobench.builder.sources.manifest import RepoSpec


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def pytest_output(root: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=root,
                          capture_output=True, text=True, timeout=120)
    return proc.stdout + "\n" + proc.stderr


def test_an_addopts_option_of_a_plugin_that_is_not_installed_is_removed(tmp_path):
    root = project(tmp_path, {"setup.cfg": "[tool:pytest]\naddopts = -ra --flakes --strict-markers\n",
                              "tests/test_a.py": "def test_a():\n    assert True\n"})
    output = pytest_output(root, "tests")
    spec = RepoSpec(name="demo", source="pypi:demo==1", test_paths=("tests",))
    fixed, made = repair(spec, root, output, ["-ra", "--flakes", "--strict-markers"])
    assert made.kind == "addopts_option_removed" and made.detail["removed"] == ["--flakes"]
    assert fixed.pytest_args == ("-o", "addopts=-ra --strict-markers")
    assert "passed" in pytest_output(root, *fixed.pytest_args, "tests")  # the repair works


def test_an_addopts_plugin_that_cannot_be_imported_is_removed(tmp_path):
    root = project(tmp_path, {"pytest.ini": "[pytest]\naddopts = -p no_such_plugin_xq -q\n",
                              "tests/test_a.py": "def test_a():\n    assert True\n"})
    output = pytest_output(root, "tests")
    spec = RepoSpec(name="demo", source="pypi:demo==1", test_paths=("tests",))
    fixed, made = repair(spec, root, output, ["-p", "no_such_plugin_xq", "-q"])
    assert made.kind == "addopts_plugin_removed" and fixed.pytest_args == ("-o", "addopts=-q")
    assert "passed" in pytest_output(root, *fixed.pytest_args, "tests")


def test_collection_errors_narrow_the_suite_to_the_files_that_collect(tmp_path):
    root = project(tmp_path, {"tests/__init__.py": "",
                              "tests/test_good.py": "def test_good():\n    assert True\n",
                              "tests/test_also.py": "def test_also():\n    assert 1\n",
                              "tests/test_helper_missing.py": "from tests.common import helper\n\n\n"
                                                              "def test_h():\n    helper()\n"})
    output = pytest_output(root, "tests")
    assert "error" in output.lower()
    spec = RepoSpec(name="demo", source="pypi:demo==1", test_paths=("tests",))
    fixed, made = repair(spec, root, output, [])
    assert made.kind == "suite_narrowed" and made.detail["left_out"] == ["tests/test_helper_missing.py"]
    assert sorted(fixed.test_paths) == ["tests/test_also.py", "tests/test_good.py"]
    assert "2 passed" in pytest_output(root, *fixed.test_paths)


def test_nothing_to_repair_is_said(tmp_path):
    root = project(tmp_path, {"tests/test_a.py": "def test_a():\n    assert False\n"})
    spec = RepoSpec(name="demo", source="pypi:demo==1", test_paths=("tests",))
    assert repair(spec, root, pytest_output(root, "tests"), []) is None


def test_the_baseline_loop_repairs_then_names_what_it_tried(tmp_path, monkeypatch):
    """prepare's loop: a repair is made from the error's output and the run tried again with the healed spec;
    when nothing more applies, the error names the repairs tried and keeps pytest's words."""
    import pytest

    from execrepobench.builder.preparation import prepare as prep
    from execrepobench.builder.preparation.baseline import BaselineError

    root = project(tmp_path, {"pytest.ini": "[pytest]\naddopts = --flakes\n",
                              "tests/test_a.py": "def test_a():\n    assert False\n"})
    said = pytest_output(root, "tests")
    seen = []

    def fake_run(env, root_, spec, modules, task, **kwargs):  # what run_baseline raises for these outputs
        seen.append(spec.pytest_args)
        output = said if len(seen) == 1 else pytest_output(root, *spec.pytest_args, "tests")
        raise BaselineError(f"{spec.name}: no test passes at baseline", output)

    monkeypatch.setattr(prep, "run_baseline", fake_run)
    spec = RepoSpec(name="demo", source="pypi:demo==1", test_paths=("tests",))
    with pytest.raises(BaselineError, match=r"repairs tried: addopts_option_removed .*--flakes") as info:
        prep._healed_baseline(None, root, spec, [], None, None)
    assert seen == [(), ("-o", "addopts=")] and "assert False" in info.value.output


def test_a_build_without_progress_bars_says_each_stage(tmp_path, capsys):
    from execrepobench.builder.pipeline import run_repository
    from execrepobench.builder.settings import BuildSettings, RepoTask
    from execrepobench_metric.execution.sandbox import Isolation

    class NoStep:
        phase = "masking"

    spec = RepoSpec(name="gone", source=f"path:{tmp_path / 'missing'}")
    task = RepoTask(spec, BuildSettings(progress=True), list(Isolation)[0])
    quiet = run_repository(task, NoStep(), tmp_path)
    assert quiet.status == "error" and capsys.readouterr().err == ""
    run = run_repository(RepoTask(spec, BuildSettings(progress=False), list(Isolation)[0]), NoStep(), tmp_path)
    err = capsys.readouterr().err.splitlines()
    assert run.status == "error" and err[0].endswith("gone: source") and "gone: error: 0 samples (source:" in err[-1]


HANGS = {
    "pyproject.toml": """\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "hangdemo"
        version = "0.1"
        """,
    "hangdemo/__init__.py": "def double(x):\n    return 2 * x\n",
    "tests/test_demo.py": """\
        import socket
        import time

        from hangdemo import double


        def test_double():
            assert double(2) == 4


        def test_waits_for_a_server():
            time.sleep(600)  # a server that never answers
        """,
}


@pytest.mark.pypi
def test_a_hanging_test_is_found_in_the_first_run_and_deselected_in_the_others(tmp_path, monkeypatch):
    from execrepobench.builder.preparation import baseline as bl
    from execrepobench.builder.preparation import prepare as prep
    from execrepobench.builder.sources.manifest import parse_manifest
    from execrepobench.builder.sources.sources import fetch
    from execrepobench_metric.execution.sandbox import decide_isolation

    monkeypatch.setattr(prep, "BASELINE_TEST_LIMIT_S", 3.0)
    seen = []
    real = bl.run_pytest
    monkeypatch.setattr(bl, "run_pytest", lambda inv, **kw: seen.append(inv) or real(inv, **kw))
    repo = project(tmp_path / "hangdemo", HANGS)
    manifest = parse_manifest(f'[[repo]]\nsource = "path:{repo}"\nextra_test_requires = []\n', tmp_path)
    spec = manifest.repos[0]
    from execrepobench.builder.settings import BuildSettings, RepoTask

    task = RepoTask(spec, BuildSettings(baseline_runs=2, baseline_timeout_s=300), decide_isolation(False)[0],
                    manifest.python)
    prepared = prep.prepare(task, fetch(spec))
    hung = "tests/test_demo.py::test_waits_for_a_server"
    assert prepared.baseline.hung == (hung,) and hung in prepared.baseline.excluded
    assert prepared.baseline.passing == ("tests/test_demo.py::test_double",)
    assert prepared.report["baseline"]["hung_tests"] == [hung]
    runs = [inv for inv in seen if not inv.collect_only and not inv.select]
    assert bl.WALL_LIMIT_ENV in runs[0].env and hung not in runs[0].deselect
    assert all(hung in inv.deselect and bl.WALL_LIMIT_ENV not in inv.env for inv in runs[1:]) and len(runs) >= 2
    assert bl.WALL_LIMIT_ENV not in " ".join(prepared.baseline.test_command)  # not in the judged command


def test_a_fixture_the_limit_stopped_stops_the_next_tests_that_ask_for_it_at_once(tmp_path):
    """A fixture that waits for a server (function-scoped: each test would wait again) is stopped once by the
    first run's per-test limit; the other tests that ask for it stop at once, each named as hung."""
    from execrepobench.builder.preparation import baseline as bl
    from execrepobench_metric.execution.surface import Isolation, PytestInvocation, run_pytest

    root = project(tmp_path, {"tests/test_server.py": """\
        import time

        import pytest


        @pytest.fixture
        def server():
            time.sleep(600)  # a server that never answers


        def test_fine():
            assert True


        @pytest.mark.parametrize("n", range(4))
        def test_asks(server, n):
            assert n >= 0
        """})
    inv = PytestInvocation(python=sys.executable, root=root, test_paths=("tests",), timeout_s=120,
                           env={bl.WALL_LIMIT_ENV: "3"})
    run = run_pytest(inv, isolation=Isolation.WEAK)
    hung = sorted(t for t, m in run.messages.items() if bl.WALL_LIMIT_MARK in m)
    assert hung == [f"tests/test_server.py::test_asks[{n}]" for n in range(4)], run.messages
    assert run.outcomes["tests/test_server.py::test_fine"] == "passed"
    # only the first waited out the limit; the others stopped at once, before the fixture ran
    assert all("did in an earlier test" in run.messages[t] for t in hung[1:]), run.messages


SERVERS = {
    "pyproject.toml": HANGS["pyproject.toml"].replace("hangdemo", "serverdemo"),
    "serverdemo/__init__.py": "def double(x):\n    return 2 * x\n",
    "tests/test_demo.py": """\
        import time

        import pytest

        from serverdemo import double


        @pytest.fixture
        def server():
            time.sleep(600)  # a server that never answers


        @pytest.mark.parametrize("n", range(6))
        def test_with_server(server, n):
            assert double(n) == 2 * n
        """,
}


@pytest.mark.pypi
def test_a_suite_whose_every_test_waits_for_a_server_says_so_after_one_wait(tmp_path, monkeypatch):
    """Every test asks for a fixture that waits for a server: the first run stops one (3 s), the rest at once,
    and the build ends there, naming them - not `no tests collected` after the other runs."""
    from execrepobench.builder.errors import BaselineError
    from execrepobench.builder.preparation import prepare as prep
    from execrepobench.builder.settings import BuildSettings, RepoTask
    from execrepobench.builder.sources.manifest import parse_manifest
    from execrepobench.builder.sources.sources import fetch
    from execrepobench_metric.execution.sandbox import decide_isolation

    monkeypatch.setattr(prep, "BASELINE_TEST_LIMIT_S", 3.0)
    repo = project(tmp_path / "serverdemo", SERVERS)
    manifest = parse_manifest(f'[[repo]]\nsource = "path:{repo}"\nextra_test_requires = []\n', tmp_path)
    task = RepoTask(manifest.repos[0], BuildSettings(baseline_runs=2, baseline_timeout_s=300),
                    decide_isolation(False)[0], manifest.python)
    with pytest.raises(BaselineError) as raised:
        prep.prepare(task, fetch(manifest.repos[0]))
    said = str(raised.value)
    assert "no test passes here: 6 stopped by the per-test limit of 3 s" in said, said
    assert "tests/test_demo.py::test_with_server[0]" in said


MARKED = {
    "pyproject.toml": HANGS["pyproject.toml"].replace("hangdemo", "markdemo"),
    "markdemo/__init__.py": "def double(x):\n    return 2 * x\n",
    "tests/test_demo.py": """\
        import socket

        import pytest

        from markdemo import double


        def test_double():
            assert double(2) == 4


        def test_wrong_here():
            assert double(2) == 5


        @pytest.mark.network
        def test_fetches_a_page():
            socket.create_connection(("127.0.0.1", 9), timeout=2)  # nothing listens: refused


        @pytest.mark.slow
        def test_slow_but_fine():
            assert double(3) == 6
        """,
}


@pytest.mark.pypi
def test_marked_tests_that_fail_in_the_first_run_are_deselected_in_the_others(tmp_path, monkeypatch):
    from execrepobench.builder.preparation import baseline as bl
    from execrepobench.builder.preparation import prepare as prep
    from execrepobench.builder.settings import BuildSettings, RepoTask
    from execrepobench.builder.sources.manifest import parse_manifest
    from execrepobench.builder.sources.sources import fetch
    from execrepobench_metric.execution.sandbox import decide_isolation

    seen = []
    real = bl.run_pytest
    monkeypatch.setattr(bl, "run_pytest", lambda inv, **kw: seen.append(inv) or real(inv, **kw))
    repo = project(tmp_path / "markdemo", MARKED)
    manifest = parse_manifest(f'[[repo]]\nsource = "path:{repo}"\nextra_test_requires = []\n', tmp_path)
    task = RepoTask(manifest.repos[0], BuildSettings(baseline_runs=2, baseline_timeout_s=300),
                    decide_isolation(False)[0], manifest.python)
    prepared = prep.prepare(task, fetch(manifest.repos[0]))
    network, wrong = "tests/test_demo.py::test_fetches_a_page", "tests/test_demo.py::test_wrong_here"
    baseline = prepared.baseline
    assert baseline.marked_failing == (network,) and network in baseline.failing and network in baseline.excluded
    assert wrong in baseline.failing and wrong not in baseline.marked_failing  # unmarked: run every time
    assert set(baseline.passing) == {"tests/test_demo.py::test_double", "tests/test_demo.py::test_slow_but_fine"}
    assert prepared.report["baseline"]["marked_failing_tests"] == [network]
    runs = [inv for inv in seen if not inv.collect_only and not inv.select]
    assert network not in runs[0].deselect and len(runs) >= 2
    assert all(network in inv.deselect and wrong not in inv.deselect for inv in runs[1:])
    assert network not in " ".join(baseline.test_command)  # the judged command is the repository's own


def test_a_plugin_that_crashes_pytest_is_switched_off(tmp_path):
    """pytest-isort's INTERNALERROR without the cache provider (dictdiffer 0.10.0's `tests` extra): the
    plugin's pytest11 entry point name is found in its dist-info and switched off."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    project(site, {"pytest_isort/__init__.py": "", "pytest_isort-4.0.0.dist-info/entry_points.txt":
                   "[pytest11]\nisort=pytest_isort\n"})
    output = (f'INTERNALERROR>   File "{site}/pluggy/_callers.py", line 1, in _multicall\n'
              f'INTERNALERROR>   File "{site}/pytest_isort/__init__.py", line 60, in pytest_sessionstart\n'
              "INTERNALERROR> AttributeError: 'Config' object has no attribute 'cache'\n")
    spec = RepoSpec(name="demo", source="pypi:demo==1", test_paths=("tests",))
    fixed, made = repair(spec, tmp_path, output, [])
    assert made.kind == "plugin_disabled" and made.detail["plugin"] == "isort"
    assert fixed.pytest_args == ("-p", "no:isort")
    assert repair(fixed, tmp_path, output, []) is None  # switched off already: nothing more to try
