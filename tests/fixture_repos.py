"""Small repositories written by tests: a package, its tests and whatever setting a test is about."""
from __future__ import annotations

from pathlib import Path

PYPROJECT = ('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
             '[project]\nname = "{name}"\nversion = "0.1"\n[tool.setuptools]\npackages = ["{package}"]\n')
PACKAGE = '''def add(a, b):
    total = a + b
    return total


def scale(values, factor):
    result = [v * factor for v in values]
    return result


def describe(value):
    if value < 0:
        return "negative number"
    return "non-negative number"
'''
TESTS = '''from {package} import add, describe, scale


def test_add():
    assert add(2, 3) == 5


def test_scale():
    assert scale([1, 2], 3) == [3, 6]


def test_describe():
    assert describe(-1) == "negative number"
    assert describe(1) == "non-negative number"
'''
UNITTEST = '''import unittest

from {package} import add, describe, scale


class ArithmeticTests(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_scale(self):
        self.assertEqual(scale([1, 2], 3), [3, 6])

    def test_describe(self):
        self.assertEqual(describe(-1), "negative number")
'''


def write_repo(root: Path, name: str, files: dict[str, str] | None = None, *, tests: dict[str, str] | None = None,
               pyproject_extra: str = "") -> Path:
    """A setuptools project `name` with package `name` (add/scale/describe) and `tests/test_basic.py`
    (unless `tests` names other test files); `files` adds or replaces files (repo-relative)."""
    package = name.replace("-", "_")
    root.mkdir(parents=True, exist_ok=True)
    content = {"pyproject.toml": PYPROJECT.format(name=name, package=package) + pyproject_extra,
               f"{package}/__init__.py": "from .core import add, describe, scale  # noqa: F401\n",
               f"{package}/core.py": PACKAGE}
    content.update({k: v.format(package=package) for k, v in
                    (tests if tests is not None else {"tests/test_basic.py": TESTS}).items()})
    content.update(files or {})
    for rel, text in content.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
