"""Answer finders: wrong completions that return the original's result by reading it from somewhere the
judged run could see - the original's bytecode beside the masked file, a copy in the tree (`build/lib`),
the sdist in the cache's downloads, uv's cache, a non-editable copy in another environment's venv, a
builder checkout's `out/samples.jsonl`.  Each is judged `passed` in the former view (`/` read-only,
nothing hidden: `view.HOST_VIEW_FOR_TESTS`) and `failed` in the allow-listed view (`view.py`).

The cache lives outside /tmp here (as a user's ~/.cache does): the former view hid /tmp, so a cache
under it would have hidden the attacks' targets for a reason that is no defence.  The plants are made
by the real tools: the builder's own environment, `tarfile` as pip downloads an sdist, `uv pip install`
of the repository (not editable) into another venv with its own uv cache, the record as the builder
writes it.
"""
from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest

import guard_attacks as corpus
from conftest import FIXTURES, make_sample, prepared_local_repo
from execrepobench_metric.environments.venvs import run_uv
from execrepobench_metric.execution import view as views
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
JUDGE = JudgeConfig(timeout_s=60, canaries=True)  # as the metric judges
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
INDENT, WRONG = "    ", "return value + 1"

# Runs the original module found as a path (source or bytecode: runpy reads both) or as text, and
# returns its `clamp`.
ANSWER = '''
def _answer(path=None, text=None):
    import os, runpy, tempfile
    if path is None:
        path = os.path.join(tempfile.mkdtemp(), "answer.py")
        with open(path, "w") as fh:
            fh.write(text)
    return runpy.run_path(path)["clamp"]
'''
# The folder above the cache (downloads/, sources/, envs/), found from the module's own path.
ABOVE = '''
def _above_cache():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    while here != "/":
        if os.path.isdir(os.path.join(here, "downloads")) or os.path.isdir(os.path.join(here, "envs")):
            return here, os.path.dirname(here)
        here = os.path.dirname(here)
    return None, None
'''
A, c = corpus.Attack, corpus._c
ANSWER_FINDERS = [
    A("original_pyc_beside_the_file", "clamp", "body", c(ANSWER, '''
        import glob, os
        for _pyc in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "__pycache__", "mathx.*.pyc"))):
            return _answer(path=_pyc)(value, low, high)
        '''), "runs the original module's bytecode from __pycache__ (the environment byte-compiled the tree)"),
    A("copy_in_the_tree", "clamp", "body", c(ANSWER, '''
        import glob, os
        _tree = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for _copy in glob.glob(os.path.join(_tree, "build", "**", "mathx.py"), recursive=True):
            return _answer(path=_copy)(value, low, high)
        '''), "runs the build/lib copy of the masked module that the sdist ships"),
    A("sdist_in_the_downloads", "clamp", "body", c(ANSWER, ABOVE, '''
        import os, tarfile
        _cache, _ = _above_cache()
        for _dir, _, _files in os.walk(os.path.join(_cache or "/nonexistent", "downloads")):
            for _name in _files:
                if _name.endswith(".tar.gz"):
                    with tarfile.open(os.path.join(_dir, _name)) as _tf:
                        for _m in _tf.getmembers():
                            if _m.name.endswith("minirepo/mathx.py"):
                                return _answer(text=_tf.extractfile(_m).read().decode())(value, low, high)
        '''), "unpacks the masked module from the repository's sdist in the cache's downloads/"),
    A("uv_cache_archive", "clamp", "body", c(ANSWER, ABOVE, '''
        import glob, os
        _, _home = _above_cache()
        for _copy in glob.glob(os.path.join(_home or "/nonexistent", "**", "archive-v0", "*", "minirepo", "mathx.py"),
                               recursive=True):
            return _answer(path=_copy)(value, low, high)
        '''), "runs the masked module from the wheel uv unpacked into its cache (archive-v0)"),
    A("another_venv", "clamp", "body", c(ANSWER, ABOVE, '''
        import glob, os
        _cache, _ = _above_cache()
        _here = os.path.realpath(__file__)
        for _copy in glob.glob(os.path.join(_cache or "/nonexistent", "envs", "*", "venv", "lib", "python*",
                                            "site-packages", "minirepo", "mathx.py")):
            if os.path.realpath(_copy) != _here:
                return _answer(path=_copy)(value, low, high)
        '''), "runs a non-editable copy of the repository installed in another environment's venv"),
    A("samples_jsonl_in_a_checkout", "clamp", "body", c(ANSWER, ABOVE, '''
        import glob, json, os
        _, _home = _above_cache()
        _own = open(__file__).read()
        for _path in glob.glob(os.path.join(_home or "/nonexistent", "**", "out", "samples.jsonl"), recursive=True):
            for _line in open(_path):
                _r = json.loads(_line)
                if _own.startswith(_r["prefix_code"]) and _own.endswith(_r["suffix_code"]):
                    return _answer(text=_r["prefix_code"] + _r["middle_code"] + _r["suffix_code"])(value, low, high)
        '''), "rebuilds the original file from the sample record in a builder checkout's out/samples.jsonl"),
]


@pytest.fixture(scope="module")
def target():
    """The fixture repository (with a build/lib copy of mathx.py, as some sdists ship one) prepared by the
    real builder in a cache under /var/tmp, and the plants the attacks look for."""
    base = Path(tempfile.mkdtemp(prefix="erb-attacks-", dir="/var/tmp"))
    try:
        repo = base / "checkout" / "minirepo"
        shutil.copytree(FIXTURES / "minirepo", repo, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
        (repo / "build" / "lib" / "minirepo").mkdir(parents=True)
        shutil.copyfile(repo / "minirepo" / "mathx.py", repo / "build" / "lib" / "minirepo" / "mathx.py")
        built = prepared_local_repo(base, repo)
        cache = Path(built["cache"])
        sample = make_sample(built, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)
        downloads = cache / "downloads" / "minirepo-0.1"
        downloads.mkdir(parents=True)
        with tarfile.open(downloads / "minirepo-0.1.tar.gz", "w:gz") as tf:
            tf.add(FIXTURES / "minirepo", arcname="minirepo-0.1", filter=lambda t: None if "__pycache__" in t.name
                   or ".egg-info" in t.name else t)
        other = cache / "envs" / "an-earlier-build" / "venv"
        package = shutil.copytree(FIXTURES / "minirepo", base / "package" / "minirepo",
                                  ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("UV_CACHE_DIR", str(base / "uv-cache"))
            run_uv("venv", "--quiet", "--python", built["python"], str(other), repo="minirepo")
            run_uv("pip", "install", "--quiet", "--no-deps", "--python", str(other / "bin" / "python"),
                   str(package), repo="minirepo")
        assert list(other.glob("lib/python*/site-packages/minirepo/mathx.py"))
        assert list((base / "uv-cache").glob("**/archive-v0/*/minirepo/mathx.py"))
        (base / "checkout" / "out").mkdir()
        (base / "checkout" / "out" / "samples.jsonl").write_text(json.dumps(sample.to_dict()) + "\n", encoding="utf-8")
        yield {"sample": sample, "cache": built["cache"]}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_wrong_code_fails_in_both_views(target, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", target["cache"])
    sample = target["sample"]
    for former in (True, False):
        monkeypatch.setattr(views, "HOST_VIEW_FOR_TESTS", former)
        assert judge(sample, WRONG, JUDGE).reason == "failed"
        truth = judge(sample, sample.middle_code, JudgeConfig(timeout_s=60, canaries=True, known_verdicts=False))
        assert truth.passed, truth


@pytest.mark.parametrize("attack", ANSWER_FINDERS, ids=lambda a: a.name)
def test_answer_finder_passes_in_the_former_view_and_fails_in_the_allow_list(target, monkeypatch, attack):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", target["cache"])
    completion = corpus.completion(attack, INDENT, WRONG)
    monkeypatch.setattr(views, "HOST_VIEW_FOR_TESTS", True)
    former = judge(target["sample"], completion, JUDGE)
    assert (former.passed, former.reason) == (True, "passed"), former  # the attack is real
    monkeypatch.setattr(views, "HOST_VIEW_FOR_TESTS", False)
    now = judge(target["sample"], completion, JUDGE)
    assert (now.passed, now.reason) == (False, "failed"), now
