"""A candidate's test requirements nobody declared (`requirements.py` reads the declared ones).

`imported_test_modules` lists what the test files import at module level that neither the standard
library nor the sdist provides (funcy's tests import `whatever`).  `guessed_requirements` names their
distributions: one of the project's own extras that names the module (pyparsing's tests import `railroad`,
its `diagrams` extra has railroad-diagrams; the PyPI project `railroad` is another one), else a known
module -> distribution name, else the module's name.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .requirements import TOOLING

# module imported by tests -> its distribution, where the names differ
MODULE_DISTRIBUTIONS = {"yaml": "pyyaml", "dateutil": "python-dateutil", "jwt": "pyjwt", "PIL": "pillow",
                        "bs4": "beautifulsoup4", "attr": "attrs", "Crypto": "pycryptodome", "OpenSSL": "pyopenssl",
                        "serial": "pyserial", "google": "protobuf", "sklearn": "scikit-learn", "dns": "dnspython",
                        "git": "gitpython", "magic": "python-magic", "slugify": "python-slugify", "jose": "python-jose",
                        "multipart": "python-multipart", "dotenv": "python-dotenv", "lxml": "lxml"}


def imported_test_modules(root: Path, test_files: Iterable[str]) -> tuple[str, ...]:
    """Top-level modules the test files (and conftest.py files) import at module level, outside `try`, that
    are neither in the standard library nor anywhere in the sdist: distributions to guess."""
    local = {p.stem for p in root.rglob("*.py")} | {p.name for p in root.rglob("*") if p.is_dir()}
    found: list[str] = []
    files = [*test_files, *(p.relative_to(root).as_posix() for p in root.rglob("conftest.py"))]
    for rel in dict.fromkeys(files):
        try:
            tree = ast.parse((root / rel).read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:  # module level only: imports inside try/functions are optional or lazy
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in local and top not in found \
                        and top not in ("pytest", "_pytest", "py", "__future__"):
                    found.append(top)
    return tuple(found)


def _from_extras(module: str, extras: Iterable[str]) -> str | None:
    """The requirement of the project's extras whose name is the module's, or the module's plus a suffix or prefix
    (`railroad` -> `railroad-diagrams`)."""
    key = canonicalize_name(module)
    for line in extras:
        try:
            name = Requirement(line).name
        except InvalidRequirement:
            continue
        if canonicalize_name(name) == key or canonicalize_name(name).startswith(key + "-") \
                or canonicalize_name(name).endswith("-" + key):
            return name
    return None


def guessed_requirements(modules: Iterable[str], declared: Iterable[str], extras: Iterable[str] = ()) -> tuple[str, ...]:
    """Distributions for imported modules that no declared requirement names; `extras`: the requirement lines of
    every extra of the project, preferred where one names the module."""
    have = {canonicalize_name(Requirement(d).name) for d in declared}
    extras = list(extras)
    dists = [_from_extras(m, extras) or MODULE_DISTRIBUTIONS.get(m, m) for m in modules]
    return tuple(d for d in dict.fromkeys(dists) if canonicalize_name(d) not in have
                 and canonicalize_name(d) not in TOOLING)
