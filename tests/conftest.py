import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
collect_ignore = ["fixtures"]  # fixture repositories carry their own tests; they are data here


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    """The shared download/environment cache (EXECREPOBENCH_CACHE or ~/.cache/execrepobench).

    Tests that need real PyPI sources and uv environments reuse it across runs, as a user would.
    """
    from execrepobench_metric.layout import cache_root

    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture()
def minirepo(tmp_path) -> Path:
    """A private copy of the fixture repository (tests may modify it)."""
    import shutil

    dest = tmp_path / "minirepo"
    shutil.copytree(FIXTURES / "minirepo", dest, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    return dest
