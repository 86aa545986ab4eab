"""Manifest parsing: round trip, every kind of bad input, path: resolution, packaged manifests."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from execrepobench.builder.sources.manifest import (
    Manifest,
    ManifestError,
    RepoSpec,
    default_manifest_path,
    load_manifest,
    parse_manifest,
    parse_source,
    quickstart_manifest_path,
    with_resolution_date,
)

SHA = "a" * 64

GOOD = f"""
[defaults]
seed = 7
samples_per_repo = 12
python = "3.12"

[[repo]]
source = "pypi:toolz==1.2.0"
sha256 = "{SHA.upper()}"
name = "toolz-main"
python = "3.11"
extra_test_requires = ["pyyaml", "pytest<9"]
test_paths = ["toolz/tests"]
pytest_args = ["-o", "addopts="]
exclude_tests = ["tests/test_x.py::test_slow"]
env = {{ TZ = "UTC", A = "1" }}
samples_per_repo = 10

[[repo]]
source = "git:https://example.com/org/proj.git@0123456789abcdef0123456789abcdef01234567"

[[repo]]
source = "path:sub/checkout"
"""


def _write(tmp_path: Path, text: str, name: str = "m.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def good_file(tmp_path: Path) -> Path:
    (tmp_path / "sub" / "checkout").mkdir(parents=True)
    return _write(tmp_path, GOOD)


def test_good_manifest_round_trip(good_file: Path, tmp_path: Path) -> None:
    m = load_manifest(good_file)
    assert isinstance(m, Manifest)
    assert m.path == good_file.resolve()
    assert (m.seed, m.samples_per_repo, m.python) == (7, 12, "3.12")
    toolz, git, local = m.repos
    assert toolz == RepoSpec(
        name="toolz-main", source="pypi:toolz==1.2.0", sha256=SHA, python="3.11",
        extra_test_requires=("pyyaml", "pytest<9"), test_paths=("toolz/tests",),
        pytest_args=("-o", "addopts="), exclude_tests=("tests/test_x.py::test_slow",),
        env=(("A", "1"), ("TZ", "UTC")), samples_per_repo=10,
    )
    assert git.name == "proj" and git.sha256 is None and git.samples_per_repo is None
    assert git.ref.commit == "0123456789abcdef0123456789abcdef01234567"
    assert local.source == f"path:{(tmp_path / 'sub' / 'checkout').resolve()}"
    assert local.name == "checkout"
    assert m.samples_for(toolz) == 10 and m.samples_for(git) == 12
    assert m.python_for(toolz) == "3.11" and m.python_for(git) == "3.12"
    assert m.repo("proj") is git
    hash(m)  # frozen all the way down


def test_defaults_when_absent(tmp_path: Path) -> None:
    m = parse_manifest('[[repo]]\nsource = "pypi:six==1.17.0"\n', tmp_path)
    assert (m.seed, m.samples_per_repo, m.python, m.path) == (0, 24, None, None)
    current = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert m.python_for(m.repos[0]) == current
    assert m.repos[0].name == "six"


def test_relative_path_resolves_against_manifest_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proj").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = _write(tmp_path, '[[repo]]\nsource = "path:proj"\n')
    monkeypatch.chdir(elsewhere)  # the cwd must not matter
    assert load_manifest(path).repos[0].source == f"path:{(tmp_path / 'proj').resolve()}"
    # parse_manifest resolves against the base_dir it is given
    m = parse_manifest('[[repo]]\nsource = "path:../proj"\n', elsewhere)
    assert m.repos[0].source == f"path:{(tmp_path / 'proj').resolve()}"


BAD_CASES = [
    # (repo table body, expected entry fragment or None, key fragment)
    ('source = "pypi:toolz==1.2.0"\nbogus = 1', "pypi:toolz==1.2.0", "bogus"),
    ('source = "pypi:toolz==1.2.0"\nsamples_per_repo = "10"', "pypi:toolz==1.2.0", "samples_per_repo"),
    ('source = "pypi:toolz==1.2.0"\nsamples_per_repo = true', "pypi:toolz==1.2.0", "samples_per_repo"),
    ('source = "pypi:toolz==1.2.0"\nsamples_per_repo = 0', "pypi:toolz==1.2.0", "samples_per_repo"),
    ('source = "pypi:toolz==1.2.0"\ntest_paths = "tests"', "pypi:toolz==1.2.0", "test_paths"),
    ('source = "pypi:toolz==1.2.0"\npytest_args = ["-x", 3]', "pypi:toolz==1.2.0", "pytest_args"),
    ('source = "pypi:toolz==1.2.0"\nenv = { TZ = 1 }', "pypi:toolz==1.2.0", "env"),
    ('source = "pypi:toolz==1.2.0"\nenv = ["TZ=UTC"]', "pypi:toolz==1.2.0", "env"),
    ('source = "pypi:toolz==1.2.0"\npython = "3"', "pypi:toolz==1.2.0", "python"),
    ('source = "pypi:toolz==1.2.0"\nsha256 = "abc"', "pypi:toolz==1.2.0", "sha256"),
    ('source = "pypi:toolz==1.2.0"\nname = "bad name/x"', "pypi:toolz==1.2.0", "name"),
    ('source = "git:https://x/y.git@abcdef1"\nsha256 = "' + SHA + '"', "git:https://x/y.git@abcdef1", "sha256"),
    ('source = "pypi:toolz>=1.2.0"', "pypi:toolz>=1.2.0", "source"),
    ('source = "pypi:toolz"', "pypi:toolz", "source"),
    ('source = "pypi:toolz==1.2.0==3"', "pypi:toolz==1.2.0==3", "source"),
    ('source = "pypi:toolz==1.*"', "pypi:toolz==1.*", "source"),
    ('source = "git:https://x/y.git"', "git:https://x/y.git", "source"),
    ('source = "git:https://x/y.git@abc12"', "git:https://x/y.git@abc12", "source"),
    ('source = "git:https://x/y.git@main"', "git:https://x/y.git@main", "source"),
    ('source = "git:https://x/y.git@' + "a" * 41 + '"', "git:https://x/y.git@", "source"),
    ('source = "path:does/not/exist"', "path:does/not/exist", "source"),
    ('source = "svn:whatever"', "svn:whatever", "source"),
    ('source = 3', None, "source"),
    ('name = "x"', None, "source"),
]


@pytest.mark.parametrize("body,entry,key", BAD_CASES)
def test_bad_repo_entries(tmp_path: Path, body: str, entry: str | None, key: str) -> None:
    text = '[[repo]]\nsource = "pypi:six==1.17.0"\n\n[[repo]]\n' + body + "\n"
    path = _write(tmp_path, text)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    msg = str(info.value)
    assert str(path.resolve()) in msg
    assert "repo #2" in msg
    if entry is not None:
        assert entry in msg
    assert key in msg


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("[defaults]\nseed = 1\nsample_per_repo = 3\n", "sample_per_repo"),
        ('[defaults]\nseed = "1"\n', "seed"),
        ("[defaults]\nseed = -1\n", "seed"),
        ("[defaults]\npython = 3.11\n", "python"),
        ("defaults = 3\n", "defaults"),
        ('[[repos]]\nsource = "pypi:six==1.17.0"\n', "repos"),
        ('repo = "pypi:six==1.17.0"\n', "repo"),
        ("[[repo]\nsource = 1\n", "invalid TOML"),
    ],
)
def test_bad_top_level(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ManifestError, match=re.escape(fragment)) as info:
        load_manifest(path)
    assert str(path.resolve()) in str(info.value)


def test_duplicate_names_rejected(tmp_path: Path) -> None:
    text = (
        '[[repo]]\nsource = "pypi:python-slugify==9.2.0"\nname = "slug"\n\n'
        '[[repo]]\nsource = "pypi:awesome-slugify==1.6.5"\nname = "Slug"\n'
    )
    path = _write(tmp_path, text)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    msg = str(info.value)
    assert str(path.resolve()) in msg and "repo #2" in msg and "awesome-slugify" in msg
    assert "name" in msg and "duplicate" in msg and "repo #1" in msg


def test_missing_file_is_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="nope.toml"):
        load_manifest(tmp_path / "nope.toml")


def test_parse_source_kinds(tmp_path: Path) -> None:
    assert parse_source("pypi:docopt-ng==0.9.0").version == "0.9.0"
    ref = parse_source("git:git@github.com:org/repo.git@ABCDEF1")
    assert (ref.url, ref.commit, ref.name) == ("git@github.com:org/repo.git", "abcdef1", "repo")
    assert parse_source(f"path:{tmp_path}").path == tmp_path.resolve()


@pytest.mark.parametrize("which", [default_manifest_path, quickstart_manifest_path])
def test_packaged_manifests_parse(which) -> None:
    path = which()
    assert path.is_file()
    m = load_manifest(path)
    names = [r.name for r in m.repos]
    assert len(names) == len(set(names))
    for repo in m.repos:
        assert repo.source.startswith("pypi:"), repo
        assert repo.sha256 and re.fullmatch(r"[0-9a-f]{64}", repo.sha256), repo.name
        assert repo.exclude_newer == m.exclude_newer == "2026-12-01", repo.name  # every lock is date-bound


def test_exclude_newer_dates(tmp_path: Path) -> None:
    text = ('[defaults]\nexclude_newer = "2026-01-31"\n[[repo]]\nsource = "pypi:six==1.17.0"\n'
            '[[repo]]\nsource = "pypi:toolz==1.0.0"\nexclude_newer = "2025-06-01"\n')
    m = load_manifest(_write(tmp_path, text))
    assert [r.exclude_newer for r in m.repos] == ["2026-01-31", "2025-06-01"]  # a repo's own date wins
    for bad in ('"2026-02-30"', '"31.01.2026"', "2026-01-31"):
        with pytest.raises(ManifestError, match="exclude_newer"):
            load_manifest(_write(tmp_path, f"[defaults]\nexclude_newer = {bad}\n"))
    unbound = load_manifest(_write(tmp_path, '[[repo]]\nsource = "pypi:six==1.17.0"\n'))
    pinned, names = with_resolution_date(unbound, "2026-12-02")
    assert names == ["six"] and pinned.repos[0].exclude_newer == "2026-12-02"
    assert with_resolution_date(m, "2026-12-02") == (m, [])  # dates the manifest pins are kept


def test_default_manifest_size_and_pins() -> None:
    m = load_manifest(default_manifest_path())
    assert len(m.repos) >= 50
    by_name = {r.name: r for r in m.repos}
    assert "pytest<9" in by_name["docopt-ng"].extra_test_requires
    assert by_name["schema"].source == "pypi:schema==0.7.8"


def test_quickstart_is_small() -> None:
    m = load_manifest(quickstart_manifest_path())
    assert 1 <= len(m.repos) <= 3
    assert all(m.samples_for(r) == 8 for r in m.repos)
