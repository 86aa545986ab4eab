"""Real-world test configurations and layouts: the builder neutralises the repository's conflicting
coverage / pytest settings and finds tests that pytest's defaults miss, without editing the repo."""
import tomllib

import pytest

from execrepobench.builder.build import BuildConfig, build
from execrepobench.builder.sources.manifest import parse_manifest
from execrepobench.builder.sampling.masking import candidate_files
from execrepobench.builder.preparation.testconfig import coverage_settings, filter_addopts, neutralise, pytest_config
from execrepobench.builder.preparation.testlayout import NoTestsFound, find_tests, modules_with_tests
from execrepobench_dataset.record import read_jsonl
from execrepobench_dataset.repo_record import read_repo_records
from execrepobench_metric.environments.venvs import find_environment
from fixture_repos import TESTS, UNITTEST, write_repo


def test_filter_addopts_removes_conflicting_options_only():
    kept, removed = filter_addopts("--cov=src --cov-report term-missing -ra -n auto -xvs --doctest-modules "
                                   "--cov tests --strict-markers -n4 --maxfail=2 -p no:warnings --pdb --color=yes")
    assert kept == ["-ra", "-vs", "--doctest-modules", "--strict-markers", "-p", "no:warnings", "--color=yes"]
    assert removed == ["--cov=src", "--cov-report", "term-missing", "-n", "auto", "-x", "--cov", "tests", "-n4",
                       "--maxfail=2", "--pdb"]
    assert filter_addopts("--cov --strict-markers") == (["--strict-markers"], ["--cov"])
    assert filter_addopts("-q -ra") == (["-q", "-ra"], [])


def test_pytest_config_follows_pytests_file_order(tmp_path):
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts = --cov=x\n")
    assert pytest_config(tmp_path) == ("setup.cfg", "--cov=x")
    (tmp_path / "tox.ini").write_text("[tox]\nenvlist = py\n")  # no [pytest] section: not a pytest config
    assert pytest_config(tmp_path) == ("setup.cfg", "--cov=x")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = ["-x", "--cov=y"]\n')
    assert pytest_config(tmp_path) == ("pyproject.toml", "-x --cov=y")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert pytest_config(tmp_path) == ("pytest.ini", "")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "pytest.ini").write_text("[pytest]\naddopts = -n 2\n")
    assert pytest_config(tmp_path, ("tests",)) == ("tests/pytest.ini", "-n 2")


def test_coverage_settings_and_neutralise(tmp_path):
    (tmp_path / ".coveragerc").write_text("[run]\nparallel = true\ndata_file = .cov/data\nsource = pkg\n"
                                          "[report]\nfail_under = 100\n")
    (tmp_path / "pyproject.toml").write_text('[tool.coverage.run]\nparallel = true\n[tool.pytest.ini_options]\n'
                                             'addopts = "--cov=pkg --cov-fail-under=100 -ra"\n')
    assert coverage_settings(tmp_path) == {".coveragerc": ["data_file", "fail_under", "parallel", "source"],
                                           "pyproject.toml": ["parallel"]}
    config = neutralise(tmp_path, (), (), installed=lambda dist: dist == "pytest-sugar")
    assert config.pytest_args == ("-o", "addopts=-ra", "-p", "no:sugar")
    assert config.report["addopts"] == {"file": "pyproject.toml", "removed": ["--cov=pkg", "--cov-fail-under=100"],
                                        "kept": ["-ra"]}
    assert config.report["coverage_settings_ignored"][".coveragerc"][0] == "data_file"
    # A manifest that overrides addopts itself is left alone.
    own = neutralise(tmp_path, ("-o", "addopts="), (), installed=lambda dist: False)
    assert own.pytest_args == () and "addopts" not in own.report


def test_find_tests_beyond_pytests_defaults(tmp_path):
    root = write_repo(tmp_path / "a", "pa", tests={"tests.py": UNITTEST})
    assert find_tests(root).paths == ("tests.py",) and find_tests(root).found_by == "search"
    root = write_repo(tmp_path / "b", "pb", tests={"tests/arith.py": UNITTEST, "tests/helpers.py": "X = 1\n",
                                                    "tests/__init__.py": ""})
    assert find_tests(root).paths == ("tests/arith.py",)
    root = write_repo(tmp_path / "c", "pc")
    assert find_tests(root).found_by == "pytest defaults" and find_tests(root).paths == ()
    assert find_tests(root, ("tests",)).found_by == "manifest"
    root = write_repo(tmp_path / "d", "pd", tests={"checks/arith.py": UNITTEST},
                      files={"setup.cfg": "[tool:pytest]\npython_files = checks/*.py\n"})
    assert find_tests(root).found_by == "configured"
    root = write_repo(tmp_path / "e", "pe", tests={"tests/util.py": "def helper():\n    return 1\n"})
    with pytest.raises(NoTestsFound, match=r"pe: no tests found; tried .*tests\.py.*tests/util\.py"):
        find_tests(root, repo="pe")


def test_a_test_path_that_holds_library_code_stays_maskable(tmp_path):
    # pydash-like: doctests of the package are collected (test path `pkg`), its modules are still sources
    root = write_repo(tmp_path / "a", "pkg", tests={"pkg/check_arith.py": UNITTEST, "tests/test_x.py": UNITTEST})
    excluded = modules_with_tests(root, ("pkg", "tests", "missing"))
    assert excluded == ("pkg/check_arith.py", "tests/test_x.py")
    files = candidate_files(root, exclude=excluded)
    assert "pkg/check_arith.py" not in files and any(f.startswith("pkg/") for f in files), files
    assert candidate_files(root, exclude=("pkg",)) == [f for f in files if not f.startswith("pkg/")]


def _entry(rep: dict) -> dict:
    """The manifest entry the build reports for a repository (TOML text), as a table."""
    return tomllib.loads(rep["manifest_entry"])["repo"][0]


def _build(tmp_path, repos: dict, **kw):
    text = "[defaults]\nsamples_per_repo = 2\n" + "".join(
        f'[[repo]]\nsource = "path:{root}"\nname = "{name}"\n' for name, root in repos.items())
    out = tmp_path / "out"
    summary = build(BuildConfig(manifest=parse_manifest(text, tmp_path), out=out, baseline_runs=1, gt_runs=1,
                                progress=False, **kw))
    return {r["repo"]: r for r in summary["repos"]}, out


@pytest.mark.sandbox
@pytest.mark.slow
def test_conflicting_settings_and_hidden_tests_build(tmp_path):
    """Each repository carries settings or a layout that broke the builder; all build, the report
    says what was overridden or found, and the manifest entry it reports records the test paths."""
    settings = write_repo(tmp_path / "settings", "settingsrepo", files={
        ".coveragerc": "[run]\nparallel = true\ndata_file = .covdata/data\nsource = elsewhere\n"
                       "[report]\nfail_under = 100\n",
        # pytest-cov is not installed: without the override pytest stops at "unrecognized arguments"
        "setup.cfg": "[tool:pytest]\naddopts = --cov=settingsrepo --cov-report=term --cov-fail-under=100 -x -ra\n"})
    roottests = write_repo(tmp_path / "roottests", "roottests", tests={"tests.py": UNITTEST})
    folder = write_repo(tmp_path / "folder", "folderrepo", tests={"tests/arith.py": TESTS, "tests/__init__.py": ""})
    repos, out = _build(tmp_path, {"settingsrepo": settings, "roottests": roottests, "folderrepo": folder})
    for name, rep in repos.items():
        assert rep["status"] == "ok", (name, rep.get("reason"), rep.get("traceback"))
        assert rep["selection_rules"].get("coverage"), rep  # coverage data was written and read
    cfg = repos["settingsrepo"]["test_config"]
    assert cfg["addopts"]["removed"] == ["--cov=settingsrepo", "--cov-report=term", "--cov-fail-under=100", "-x"]
    assert cfg["coverage_settings_ignored"][".coveragerc"] == ["data_file", "fail_under", "parallel", "source"]
    assert repos["roottests"]["test_layout"] == {"test_paths": ["tests.py"], "found_by": "search"}
    assert _entry(repos["roottests"])["test_paths"] == ["tests.py"]
    assert _entry(repos["folderrepo"])["test_paths"] == ["tests/arith.py"]
    records = {r.repo_name: r for r in read_repo_records(out / "repositories.jsonl")}
    assert records["roottests"].test_paths == ("tests.py",)
    assert records["settingsrepo"].pytest_args == ("-o", "addopts=-ra")  # the override travels with the record
    assert repos["roottests"]["baseline"]["passing"] == 3
    samples = list(read_jsonl(out / "samples.jsonl"))
    assert {s.repo_name for s in samples} == set(repos)
    assert not any(s.file_name in ("tests.py", "tests/arith.py") for s in samples)  # tests are never masked
    assert all(s.judged_tests for s in samples)
    tree = find_environment(repos["settingsrepo"]["env_key"]).root  # the snapshot the runs saw: never written
    assert (tree / ".coveragerc").is_file() and not (tree / ".covdata").exists()
    assert not [p for p in tree.glob(".coverage*") if p.name != ".coveragerc"]
    md = (out / "build_report.md").read_text()
    assert "## Test configuration" in md and "tests found at ['tests.py']" in md


@pytest.mark.pypi
@pytest.mark.sandbox
def test_real_pypi_repos_with_parallel_coverage_and_root_tests_py(tmp_path):
    """python-slugify and sqlparse set coverage `parallel = true` (data lands in .coverage.<host>.<pid>.*,
    which ended their builds with "no coverage data"); jsonpointer keeps its unittest suite in a root
    tests.py that pytest's defaults do not collect."""
    text = ("[defaults]\nsamples_per_repo = 2\n"
            '[[repo]]\nsource = "pypi:python-slugify==9.2.0"\n'
            'sha256 = "cee32948083476013804de1667724fb1362dacb71e47b1d5d92adf8db6ee3298"\n'
            '[[repo]]\nsource = "pypi:sqlparse==0.6.1"\n'
            'sha256 = "ca722573f848ff2d30e40ea30f53a104b7dea7635ea9285891263eb2c58fb6e7"\n'
            '[[repo]]\nsource = "pypi:jsonpointer==3.0.0"\n'
            'sha256 = "2b2d729f2091522d61c3b31f82e11870f60b68f43fbc705cb76bf4b832af59ef"\n')
    out = tmp_path / "out"
    summary = build(BuildConfig(manifest=parse_manifest(text, tmp_path), out=out, baseline_runs=1, gt_runs=1,
                                progress=False))
    repos = {r["repo"]: r for r in summary["repos"]}
    for name, rep in repos.items():
        assert rep["status"] == "ok", (name, rep.get("phase"), rep.get("reason"))
        assert rep["samples"] >= 1 and rep["selection_rules"].get("coverage"), rep
    assert {"parallel", "relative_files", "source", "fail_under"} <= set(
        repos["python-slugify"]["test_config"]["coverage_settings_ignored"]["pyproject.toml"])
    assert "parallel" in repos["sqlparse"]["test_config"]["coverage_settings_ignored"]["pyproject.toml"]
    assert repos["jsonpointer"]["test_layout"] == {"test_paths": ["tests.py"], "found_by": "search"}
    assert _entry(repos["jsonpointer"])["test_paths"] == ["tests.py"]
    assert repos["jsonpointer"]["baseline"]["passing"] >= 20
    assert all(s.file_name != "tests.py" for s in read_jsonl(out / "samples.jsonl"))
