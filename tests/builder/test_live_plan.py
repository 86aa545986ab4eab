"""Live snapshots before the build: test requirements from what an sdist declares, the code new since the
baseline release, masks only inside it, and the candidate list."""
import textwrap
from pathlib import Path

import pytest

from execrepobench.builder.live.candidates import CandidateError, choose, load_candidates, parse_candidates
from execrepobench.builder.live.newcode import NewCode, changed_rows, new_code
from execrepobench.builder.live.requirements import declared_test_requirements
from execrepobench.builder.live.undeclared import guessed_requirements, imported_test_modules
from execrepobench.builder.sampling.masking import MaskConfig, sample_masks, split


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


PKG_INFO = """\
Metadata-Version: 2.1
Name: demo-pkg
Version: 1.0
Provides-Extra: test
Requires-Dist: pytest-timeout; extra == "test"
Provides-Extra: testing-extras
Requires-Dist: freezegun>=1.0; extra == "testing-extras"
Requires-Dist: oldlib; python_version < "3.0" and extra == "testing-extras"
Provides-Extra: speedups
Requires-Dist: ujson; extra == "speedups"
Provides-Extra: docs
Requires-Dist: furo; extra == "docs"

"""


def test_declared_requirements_from_tox_files_extras_groups_and_nox(tmp_path):
    root = write(tmp_path, {
        "PKG-INFO": PKG_INFO,
        "tox.ini": """\
            [tox]
            envlist = py311, lint
            [testenv]
            extras =
                unit: speedups
            deps =
                pytest
                hypothesis>=6
                py38: backports.zoneinfo
                unit-!py315t: railroad-diagrams
                docs: furo-theme
                {[base]deps}
                -r{toxinidir}/requirements-test.txt
            commands = pytest
            [testenv:lint]
            deps = flake8
            """,
        "requirements-test.txt": "pytest-mock==3.14.0  # pinned\n-e .\n--hash=sha256:abc\nmypy\n",
        "pyproject.toml": """\
            [project]
            name = "demo-pkg"
            [dependency-groups]
            test = ["pytest-asyncio"]
            test-extras = ["pyyaml", {include-group = "shared"}]
            shared = ["demo-pkg", "simplejson; sys_platform == 'nonexistent'", "tomli-w"]
            docs = ["sphinx"]
            """,
        "noxfile.py": """\
            import nox
            @nox.session
            def tests(session):
                session.install("-r", "ci/nox-test.txt")
                session.install(".[docs]", "trustme")
            @nox.session
            def lint(session):
                session.install("ruff")
            """,
        "ci/nox-test.txt": "pretend\n",
    })
    got = declared_test_requirements(root)
    names = [r.split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip() for r in got]
    # extras named like tests (not test/tests/testing: the lock installs those) and those tox installs
    assert "freezegun>=1.0" in got and "ujson" in got and "pytest-timeout" not in names
    assert "oldlib" not in names and "furo" in names  # a marker false here; nox's .[docs] names the docs extra
    assert "pyyaml" in got and "tomli-w" in got and "simplejson" not in names  # group with its include-group
    assert "pytest-asyncio" not in names  # the `test` group: the lock installs it
    assert "hypothesis>=6" in got and "pytest" in names and "pytest-mock==3.14.0" in got  # tox deps, -r followed
    assert "backports.zoneinfo" not in names and "furo-theme" not in names  # other factors' lines
    assert "railroad-diagrams" in got  # conditioned on test factors (pyparsing's tox.ini: `unit-!py315t:`)
    assert "trustme" in got and "pretend" in got  # nox test session, -r followed
    assert not {"flake8", "mypy", "ruff", "sphinx", "demo-pkg"} & set(names)  # tooling and the project itself
    assert len(names) == len(set(names))


def test_dev_requirements_only_when_nothing_names_tests(tmp_path):
    root = write(tmp_path / "a", {"setup.cfg": "[options.extras_require]\ndev =\n    pytest-mock\n    black\n",
                                  "dev-requirements.txt": "responses\n"})
    assert declared_test_requirements(root) == ("pytest-mock", "responses")
    root = write(tmp_path / "b", {"setup.cfg": "[options.extras_require]\ndev = pytest-mock\ntests-extra = trio\n"})
    assert declared_test_requirements(root) == ("trio",)
    assert declared_test_requirements(write(tmp_path / "c", {"setup.py": "x = 1\n"})) == ()


def test_imports_of_tests_that_nothing_declares(tmp_path):
    root = write(tmp_path, {
        "pkg/__init__.py": "",
        "tests/helpers.py": "X = 1\n",
        "tests/conftest.py": "import freezegun\n",
        "tests/test_a.py": """\
            import os, json
            import pytest
            from whatever import _
            import yaml
            from pkg import thing
            from helpers import X
            from . import sibling
            try:
                import numpy
            except ImportError:
                numpy = None
            def test_x():
                import pandas
            """,
    })
    modules = imported_test_modules(root, ["tests/test_a.py"])
    assert set(modules) == {"whatever", "yaml", "freezegun"}
    assert guessed_requirements(modules, ["freezegun>=1", "hypothesis"]) == ("whatever", "pyyaml")
    # pyparsing's tests import `railroad`, which its `diagrams` extra installs as railroad-diagrams (the PyPI
    # project `railroad` is another one)
    extras = ["railroad-diagrams ; extra == 'diagrams'", "jinja2"]
    assert guessed_requirements(["railroad", "jinja2", "yaml"], [], extras) == ("railroad-diagrams", "jinja2", "pyyaml")


@pytest.mark.pypi
def test_natsort_declares_hypothesis_only_in_tox_ini(private_cache):
    """The issue's example: natsort's test dependencies are in its tox.ini alone."""
    from execrepobench_metric.environments.sources import fetch_pypi

    root = fetch_pypi("natsort", "8.4.0", "45312c4a0e5507593da193dedd04abb1469253b601ecaf63445ad80f0a1ea581", "natsort").root
    got = declared_test_requirements(root)
    assert "hypothesis" in got and "pytest-mock" in got


OLD = "import os\n\n\ndef area(w, h):\n    return w * h\n\n\ndef unchanged():\n    return 'same text here'\n"
NEW = ("import os\n\n\ndef area(w, h):\n    if w < 0 or h < 0:\n        raise ValueError('negative side')\n"
       "    return w * h\n\n\ndef unchanged():\n    return 'same text here'\n\n\ndef perimeter(w, h):\n"
       "    return 2 * (w + h)  \n")


def test_changed_rows_and_what_counts_as_new():
    rows = changed_rows(OLD, NEW)
    lines = NEW.split("\n")
    assert {lines[r] for r in rows if lines[r].strip()} == {
        "    if w < 0 or h < 0:", "        raise ValueError('negative side')", "def perimeter(w, h):",
        "    return 2 * (w + h)  "}
    assert changed_rows(None, NEW) == frozenset(range(len(lines)))  # a new file is new as a whole
    assert changed_rows("a = 1\n", "a = 1   \n") == frozenset()  # trailing whitespace only: not new
    new = NewCode({"m.py": frozenset(r for r in rows if lines[r].strip())}, corpus=OLD)
    data = NEW.encode()

    def allows(text):
        start = data.index(text.encode())
        return new.allows("m.py", data, start, start + len(text.encode()))
    assert allows("raise ValueError('negative side')") and allows("2 * (w + h)")
    assert allows("    if w < 0 or h < 0:\n        raise ValueError('negative side')")
    assert not allows("return w * h")  # an old line
    assert not allows("raise ValueError('negative side')\n    return w * h")  # runs into an old line
    assert not allows("return 'same text here'")
    moved = NewCode({"m.py": frozenset(range(len(lines)))}, corpus=OLD)  # every row counts as changed...
    start = data.index(b"return w * h")
    assert not moved.allows("m.py", data, start, start + len(b"return w * h"))  # ...but the text was there


def test_new_code_of_two_trees(tmp_path):
    old = write(tmp_path / "old", {"pkg/m.py": OLD, "pkg/same.py": "x = 1\n", "pkg/gone.py": "def g():\n    return 41\n"})
    new = write(tmp_path / "new", {"pkg/m.py": NEW, "pkg/same.py": "x = 1\n",
                                   "pkg/fresh.py": "def f():\n    return 1\n\n\ndef g():\n    return 41\n"})
    found = new_code(new, old, ["pkg/m.py", "pkg/same.py", "pkg/fresh.py"])
    assert set(found.rows) == {"pkg/m.py", "pkg/fresh.py"}
    assert found.new_files == {"pkg/fresh.py"} and found.rows["pkg/fresh.py"] == frozenset({0, 1, 4, 5})
    assert found.stats() == {"files_with_new_code": 2, "new_files": 1, "new_rows": 8}
    data = (new / "pkg/fresh.py").read_bytes()
    start = data.index(b"def g")  # a new file, but this function was in another file of the baseline: not new
    assert not found.allows("pkg/fresh.py", data, start, len(data))
    assert found.allows("pkg/fresh.py", data, 0, data.index(b"\n\n"))
    assert new_code(new, None, ["pkg/same.py"]).rows == {"pkg/same.py": frozenset({0})}  # no baseline: all new
    assert found.digest != new_code(new, None, ["pkg/m.py", "pkg/fresh.py"]).digest


def test_masks_lie_only_in_new_code():
    old = "\n".join(f"def old_{i}(x):\n    return x + {i} * 1000 - {i}\n" for i in range(40))
    new = old + "\n\ndef added(values):\n    total = sum(v * v for v in values)\n    return total / len(values)\n"
    lines = new.split("\n")
    region = NewCode({"m.py": frozenset(r for r in changed_rows(old, new) if lines[r].strip())}, corpus=old)
    config = MaskConfig(samples_per_repo=12, mix={"single_line": 1, "multi_line": 1, "span": 1, "grammar": 3})
    files = {"m.py": new.encode(), "other.py": old.encode()}
    result = sample_masks(files, config, 0, "demo", region)
    assert result.masks, result
    first_new = new.index("def added")
    for mask in result.masks:
        assert mask.file_name == "m.py" and mask.start_byte >= first_new
        prefix, middle, suffix = split(files["m.py"], mask)
        assert middle.strip() not in old
    assert sample_masks(files, config, 0, "demo", region).masks == result.masks  # deterministic
    assert any(m.file_name == "other.py" for m in sample_masks(files, config, 0, "demo").masks)  # unrestricted


def test_candidate_list():
    packaged = load_candidates()
    names = [c.name for c in packaged]
    assert len(names) >= 60 and all(c.note for c in packaged)
    assert not {"pluggy", "iniconfig", "packaging"} & set(names)  # pytest imports them
    assert {"natsort", "click", "toolz"} <= set(names)
    picked = choose(packaged, ("toolz", "not-on-the-list"))
    assert [c.name for c in picked] == ["toolz", "not-on-the-list"] and picked[0].note and picked[1].note
    assert [c.name for c in parse_candidates("six\n# comment\ntoolz  # fast\n", "list.txt")] == ["six", "toolz"]
    with pytest.raises(CandidateError, match="listed twice"):
        parse_candidates("Six\nsix\n", "list.txt")
    with pytest.raises(CandidateError, match=r"candidate #1: unknown field 'pin'"):
        parse_candidates('[[candidate]]\nname = "six"\npin = "1.0"\n', "c.toml")
    with pytest.raises(CandidateError, match="is not a project name"):
        parse_candidates("six ==1.0\n", "list.txt")
