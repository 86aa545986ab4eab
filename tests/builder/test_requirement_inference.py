"""One requirement inference for every manifest entry (build, live, release): `tests_require`, which entries
infer (bare ones) and which are authoritative (hand-written), the packaged manifests unchanged, and a real
lock of what was inferred for a local project."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from execrepobench.builder.live.requirements import declared_test_requirements
from execrepobench.builder.preparation.inference import RequirementsUnresolvable, infer_test_requirements
from execrepobench.builder.sources.manifest import (
    ManifestError, default_manifest_path, instruct_manifest_path, load_manifest, parse_manifest,
    quickstart_manifest_path,
)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_tests_require_of_setup_py_and_setup_cfg(tmp_path):
    literal = write(tmp_path / "a", {"setup.py": "from setuptools import setup\n"
                                                 "setup(name='a', tests_require=['hypothesis>=6', 'mock'])\n"})
    assert declared_test_requirements(literal) == ("hypothesis>=6", "mock")
    named = write(tmp_path / "b", {"setup.py": "from setuptools import setup\nTESTS = ('hypothesis',)\n"
                                               "setup(name='b', tests_require=TESTS)\n"})
    assert declared_test_requirements(named) == ("hypothesis",)
    cfg = write(tmp_path / "c", {"setup.cfg": "[options]\ntests_require =\n    pytest-mock\n    flake8\n"})
    assert declared_test_requirements(cfg) == ("pytest-mock",)  # tooling left out


def test_bare_entries_infer_and_hand_written_ones_are_authoritative(tmp_path):
    manifest = parse_manifest('[[repo]]\nsource = "pypi:a==1"\n\n[[repo]]\nsource = "pypi:b==1"\n'
                              'extra_test_requires = []\n', tmp_path)
    assert [r.infer_requirements for r in manifest.repos] == [True, False]
    off = parse_manifest('[defaults]\ninfer_requirements = false\n[[repo]]\nsource = "pypi:a==1"\n', tmp_path)
    assert not off.repos[0].infer_requirements
    with pytest.raises(ManifestError, match="infer_requirements.*expected true or false"):
        parse_manifest('[defaults]\ninfer_requirements = "yes"\n', tmp_path)


@pytest.mark.parametrize("path", [default_manifest_path(), quickstart_manifest_path(), instruct_manifest_path()],
                         ids=lambda p: p.name)
def test_the_packaged_manifests_infer_nothing(path):
    """Their entries were written by hand; inference would change their environment keys (the release locks)."""
    assert not any(r.infer_requirements for r in load_manifest(path).repos)


PROJECT = {
    "pyproject.toml": """\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "inferdemo"
        version = "0.1"
        """,
    "inferdemo/__init__.py": "def double(x):\n    return 2 * x\n",
    "tox.ini": "[testenv]\ndeps =\n    pytest\n    six\n    lint: ruff\n",
    "tests/test_demo.py": "import iniconfig\nimport six\nfrom inferdemo import double\n\n\n"
                          "def test_double():\n    assert double(2) == 4\n",
}


@pytest.mark.pypi
def test_inference_is_locked_and_reported(tmp_path):
    root = write(tmp_path / "inferdemo", PROJECT)
    got = infer_test_requirements("inferdemo", "0" * 64, root, "3.11", ("tests",), "2026-12-01")
    assert got.declared == ("pytest", "six")  # tox's deps; `lint:` is another factor
    assert got.guessed == ("iniconfig",)  # imported by the tests, declared nowhere
    assert got.requires == ("pytest", "six", "iniconfig") and got.used == "declared+imports"
    report = got.report()
    assert report["added"] == ["pytest", "six", "iniconfig"] and report["guessed_from_imports"] == ["iniconfig"]
    # A test import that names no distribution: the guessed part cannot be locked, the declared part is kept.
    write(root, {"tests/test_more.py": "import no_such_distribution_xq7\n\n\ndef test_x():\n    pass\n"})
    got = infer_test_requirements("inferdemo", "1" * 64, root, "3.11", ("tests",), "2026-12-01")
    assert got.used == "declared" and got.requires == ("pytest", "six") and got.lock_errors
    assert "no_such_distribution_xq7" in got.lock_errors[0]


@pytest.mark.pypi
def test_an_environment_that_cannot_be_locked_names_every_try(tmp_path):
    root = write(tmp_path / "broken", {**PROJECT, "pyproject.toml": PROJECT["pyproject.toml"] +
                                       'dependencies = ["no-such-distribution-xq7"]\n'})
    with pytest.raises(RequirementsUnresolvable, match="declared\\+imports.*\\| declared.*\\| none"):
        infer_test_requirements("broken", "2" * 64, root, "3.11", ("tests",), "2026-12-01")
