"""The builder's part of a repository record: lock lines from uv's output, the manifest entry, the license."""
import tomllib

import pytest

from execrepobench.builder.preparation.lock import parse_compiled, resolve_lock
from execrepobench.builder.sources.manifest import RepoSpec
from execrepobench.builder.preparation.records import detect_license, manifest_entry
from execrepobench.builder.sources.sources import FetchedSource
from execrepobench_metric.environments.layout import CACHE_ENV_VAR
from execrepobench_metric.environments.venvs import EnvError, check_freeze, lock_pins

COMPILED = """-e /home/someone/cache/sources/demo-1.0-abc
attrs==25.1.0 \\
    --hash=sha256:aaaa \\
    --hash=sha256:bbbb
    # via demo
pytest==8.3.4 --hash=sha256:cccc
Typing_Extensions==4.12.2 ; python_full_version < '3.13' \\
    --hash=sha256:dddd
"""


def test_parse_compiled_joins_lines_and_drops_the_project():
    lock = parse_compiled(COMPILED)
    assert lock == ("attrs==25.1.0 --hash=sha256:aaaa --hash=sha256:bbbb", "pytest==8.3.4 --hash=sha256:cccc",
                    "Typing_Extensions==4.12.2 ; python_full_version < '3.13' --hash=sha256:dddd")
    assert not any("/home/someone" in line for line in lock)
    assert lock_pins(lock) == {"attrs": "25.1.0", "pytest": "8.3.4", "typing-extensions": "4.12.2"}


def test_freeze_must_match_the_lock():
    from sample_build import RECORDS

    record = RECORDS[0]  # alpha-dep==1.0, pytest==8.3.0
    check_freeze(record, ("alpha-dep==1.0", "-e file:///somewhere/alpha", "pytest==8.3.0"))
    with pytest.raises(EnvError, match="alpha: .*pytest: locked 8.3.0, installed 8.4.0"):
        check_freeze(record, ("alpha-dep==1.0", "pytest==8.4.0"))
    with pytest.raises(EnvError, match="not in the lock: six"):
        check_freeze(record, ("alpha-dep==1.0", "pytest==8.3.0", "six==1.16.0"))


def test_manifest_entry_is_toml_without_machine_paths(tmp_path):
    spec = RepoSpec(name="demo", source="pypi:demo==1.0", extra_test_requires=("pytest<9",), test_paths=("tests",),
                    pytest_args=("-o", "addopts="), exclude_tests=('tests/test_x.py::test_y["a"]',),
                    env=(("TZ", "UTC"),))
    fetched = FetchedSource("demo", "1.0", "pypi:demo==1.0#sha256=" + "e" * 64, "e" * 64, tmp_path)
    entry = tomllib.loads(manifest_entry(spec, fetched, "3.11", 8))["repo"][0]
    assert entry == {"source": "pypi:demo==1.0", "name": "demo", "sha256": "e" * 64, "python": "3.11",
                     "samples_per_repo": 8, "extra_test_requires": ["pytest<9"], "test_paths": ["tests"],
                     "pytest_args": ["-o", "addopts="], "exclude_tests": ['tests/test_x.py::test_y["a"]'],
                     "env": {"TZ": "UTC"}}
    (tmp_path / "checkout").mkdir()
    local = RepoSpec(name="mine", source=f"path:{tmp_path / 'checkout'}")
    text = manifest_entry(local, FetchedSource("mine", "local", "path:mine#tree=" + "f" * 64, "f" * 64, tmp_path),
                          "3.11", 4)
    assert str(tmp_path) not in text and tomllib.loads(text)["repo"][0]["source"] == "path:checkout"


@pytest.mark.parametrize("files,expected", [
    ({"PKG-INFO": "Metadata-Version: 2.4\nName: a\nLicense-Expression: MIT OR Apache-2.0\n\nbody"},
     "MIT OR Apache-2.0"),
    ({"PKG-INFO": "Metadata-Version: 2.1\nName: a\nLicense: BSD-3-Clause\n"}, "BSD-3-Clause"),
    ({"PKG-INFO": "Metadata-Version: 2.1\nName: a\nLicense: UNKNOWN\n"
                  "Classifier: License :: OSI Approved :: MIT License\n"}, "MIT License"),
    ({"pyproject.toml": '[project]\nname = "a"\nlicense = {text = "Apache 2.0"}\n'}, "Apache 2.0"),
    ({"setup.py": "from setuptools import setup\nsetup()\n"}, ""),
])
def test_detect_license(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert detect_license(tmp_path) == expected


def test_lock_of_the_fixture_repo_is_cached(tmp_path, monkeypatch):
    """Real uv: the fixture repository's lock pins pytest with hashes, names no path, and is reused."""
    from conftest import FIXTURES

    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "cache"))
    lock = resolve_lock("minirepo", "0" * 64, FIXTURES / "minirepo", "3.11")
    assert "pytest" in lock_pins(lock) and all("--hash=sha256:" in line for line in lock)
    assert not any(str(FIXTURES) in line or line.startswith("-e") for line in lock)
    assert resolve_lock("minirepo", "0" * 64, tmp_path / "not-used-when-cached", "3.11") == lock


def test_a_lock_is_resolved_as_of_its_date_and_cached_by_it(tmp_path, monkeypatch):
    """Real uv against the package index: pytest as of a date two years back is older than today's, the
    date is part of the lock's cache key, and of the environment key."""
    from conftest import FIXTURES
    from execrepobench_dataset.repo_record import environment_key

    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "cache"))
    old = resolve_lock("minirepo", "0" * 64, FIXTURES / "minirepo", "3.11", exclude_newer="2024-06-01")
    new = resolve_lock("minirepo", "0" * 64, FIXTURES / "minirepo", "3.11", exclude_newer="2026-12-01")
    old_pytest, new_pytest = lock_pins(old)["pytest"], lock_pins(new)["pytest"]
    assert old_pytest.startswith("8.2.") and int(new_pytest.split(".")[0]) >= 9, (old_pytest, new_pytest)
    assert resolve_lock("minirepo", "0" * 64, tmp_path / "gone", "3.11", exclude_newer="2024-06-01") == old  # cached
    source = "pypi:minirepo==1"
    assert environment_key("3.11", source, old, "2024-06-01") != environment_key("3.11", source, old)
    assert environment_key("3.11", source, old, "") == environment_key("3.11", source, old)  # older records' keys
