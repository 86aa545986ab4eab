"""Rules of the test suite itself: a test needing a real thing (sandbox, Ray, browser, PyPI, git, ...) goes
through conftest's rule - skipped where it is missing, FAILED where it is required - and never skips on its
own; tests make `Sample`s with the one factory, conftest.make_sample."""
import ast
from pathlib import Path

import pytest

import conftest

TESTS = Path(__file__).resolve().parents[1]
SKIPS = {"skip", "skipif", "importorskip"}


def suite_modules() -> list[Path]:
    """The suite's own Python files (the fixture repositories' tests are data)."""
    return sorted(p for p in TESTS.rglob("*.py") if not {"fixtures", "data"} & set(p.relative_to(TESTS).parts))


def bare_skips(path: Path) -> list[str]:
    """Where `path` skips by itself: pytest.skip / importorskip / mark.skip(if), or those names imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    exceptions = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "Exception"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SKIPS and id(node) not in exceptions:  # not skip.Exception
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("pytest", "_pytest.outcomes"):
            found += [f"{path.name}:{node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if a.name in SKIPS]
    return found


def samples_made(path: Path) -> list[str]:
    return [f"{path.name}:{node.lineno}" for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Sample"]


def test_no_test_module_skips_by_itself():
    modules = suite_modules()
    assert len(modules) > 50 and TESTS / "conftest.py" in modules
    assert [hit for path in modules if path.name != "conftest.py" for hit in bare_skips(path)] == []


def test_the_check_sees_every_form_of_a_bare_skip(tmp_path):
    module = tmp_path / "test_x.py"
    module.write_text("import pytest\nfrom pytest import importorskip\n"
                      "needs = pytest.mark.skipif(True, reason='r')\n"
                      "def test_a():\n    pytest.skip('no bwrap')\n    pytest.importorskip('ray')\n"
                      "@pytest.mark.skip\ndef test_b():\n    pass\n"
                      "def test_c():\n    with pytest.raises(pytest.skip.Exception):\n        pass\n")  # not a skip
    assert sorted(hit.split(": ", 1)[1] for hit in bare_skips(module)) == [
        "from pytest import importorskip", "pytest.importorskip", "pytest.mark.skip", "pytest.mark.skipif",
        "pytest.skip"]


def test_samples_are_made_by_the_one_factory():
    made = [hit for path in suite_modules() if path.name != "conftest.py" for hit in samples_made(path)]
    assert made == [], "make Samples with conftest.make_sample (keyword overrides for any field)"
    assert samples_made(TESTS / "conftest.py")  # the factory itself


@pytest.fixture()
def fake_thing(monkeypatch):
    """A real thing that is missing here, required by EXECREPOBENCH_REQUIRE_FAKE."""
    monkeypatch.setitem(conftest.REAL_THINGS, "fake", ("a fake", ("EXECREPOBENCH_REQUIRE_FAKE",), lambda: "not here"))
    monkeypatch.delenv("EXECREPOBENCH_REQUIRE_FAKE", raising=False)
    return monkeypatch


def test_a_missing_real_thing_skips_on_a_developer_machine(fake_thing):
    with pytest.raises(pytest.skip.Exception, match="not here"):
        conftest.require("fake")


@pytest.mark.parametrize("value", ["1", "true"])
def test_a_missing_real_thing_fails_where_it_is_required(fake_thing, value):
    fake_thing.setenv("EXECREPOBENCH_REQUIRE_FAKE", value)
    with pytest.raises(pytest.fail.Exception, match="fake required here.*not here"):
        conftest.require("fake")


def test_ci_requires_the_sandbox_ray_browser_pypi_and_git():
    for marker in ("sandbox", "ray", "browser", "pypi", "git"):
        assert "CI" in conftest.REAL_THINGS[marker][1], marker
