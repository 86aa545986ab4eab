"""Fetching sources: git (local bare repo), path (tree hash), unsafe archives, and one real PyPI sdist."""
from __future__ import annotations

import io
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from execrepobench.builder.sources.manifest import RepoSpec, default_manifest_path, load_manifest
from execrepobench.builder.sources.sources import FetchedSource, SourceError, fetch, safe_extract, tree_hash
from execrepobench_metric.environments import sources
from execrepobench_metric.environments.layout import CACHE_ENV_VAR, downloads_dir, sources_dir

needs_git = pytest.mark.git
GIT_ID = ["-c", "user.email=test@example.com", "-c", "user.name=Test", "-c", "init.defaultBranch=main",
          "-c", "commit.gpgsign=false"]


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV_VAR, str(cache))
    return cache


# ---------------------------------------------------------------- git


@pytest.fixture()
def bare_repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A bare repo with two commits pushed from a work repo: (bare, first commit, second commit)."""
    bare, work = tmp_path / "origin.git", tmp_path / "work"
    git("init", "--bare", "--quiet", str(bare))
    git("init", "--quiet", str(work))
    (work / "pyproject.toml").write_text("[project]\nname = 'demo'\nversion = '0.1'\n")
    (work / "demo.py").write_text("def f():\n    return 1\n")
    git("add", ".", cwd=work)
    git("commit", "--quiet", "-m", "first", cwd=work)
    first = git("rev-parse", "HEAD", cwd=work).strip()
    (work / "demo.py").write_text("def f():\n    return 2\n")
    git("commit", "--quiet", "-am", "second", cwd=work)
    second = git("rev-parse", "HEAD", cwd=work).strip()
    git("push", "--quiet", str(bare), "HEAD:refs/heads/main", cwd=work)
    return bare, first, second


@needs_git
def test_git_fetch_good_commit(bare_repo, tmp_cache: Path) -> None:
    bare, first, second = bare_repo
    spec = RepoSpec(name="demo", source=f"git:{bare}@{first[:10]}")
    got = fetch(spec)
    assert isinstance(got, FetchedSource)
    assert got.version == got.source_hash == first and len(first) == 40
    assert got.pinned == f"git:{bare}@{first}"
    assert got.root.is_relative_to(sources_dir())
    assert (got.root / "pyproject.toml").is_file()
    assert (got.root / "demo.py").read_text() == "def f():\n    return 1\n"
    assert fetch(spec) == got  # idempotent: reuses the clone
    newer = fetch(RepoSpec(name="demo", source=f"git:{bare}@{second}"))
    assert newer.root != got.root and "return 2" in (newer.root / "demo.py").read_text()


@needs_git
def test_git_fetch_bad_commit(bare_repo, tmp_cache: Path) -> None:
    bare, _, _ = bare_repo
    missing = "deadbeef" * 5
    with pytest.raises(SourceError) as info:
        fetch(RepoSpec(name="demo", source=f"git:{bare}@{missing}"))
    assert missing in str(info.value) and "demo" in str(info.value)
    assert not any(p.name.startswith("git-") for p in sources_dir().glob("*"))


@needs_git
def test_git_fetch_bad_url(tmp_path: Path, tmp_cache: Path) -> None:
    with pytest.raises(SourceError, match="demo: git clone failed"):
        fetch(RepoSpec(name="demo", source=f"git:{tmp_path / 'nothing.git'}@abcdef1"))


# ---------------------------------------------------------------- path


@needs_git
def test_path_source_git_work_tree(tmp_path: Path, tmp_cache: Path) -> None:
    work = tmp_path / "proj"
    git("init", "--quiet", str(work))
    (work / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (work / "pkg").mkdir()
    (work / "pkg" / "mod.py").write_text("X = 1\n")
    git("add", ".", cwd=work)
    git("commit", "--quiet", "-m", "init", cwd=work)
    spec = RepoSpec(name="proj", source=f"path:{work}")
    (work / "untracked.py").write_text("Y = 1\n")
    first = fetch(spec)
    assert first.version == "local"
    assert first.pinned == f"path:proj#tree={first.source_hash}"  # no folder of this machine in the pin
    # the build works on a snapshot of the tracked files in the cache; the checkout is untouched
    assert first.root != work and first.root.is_relative_to(tmp_cache)
    assert (first.root / "pkg" / "mod.py").read_text() == "X = 1\n"
    assert not (first.root / "untracked.py").exists() and not (first.root / ".git").exists()
    # untracked junk (bytecode caches, scratch files) does not change the identity
    (work / "pkg" / "__pycache__").mkdir()
    (work / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"junk")
    (work / "scratch.txt").write_text("notes")
    assert fetch(spec).source_hash == first.source_hash
    # editing a tracked file does (working copy, no commit needed)
    (work / "pkg" / "mod.py").write_text("X = 2\n")
    assert fetch(spec).source_hash != first.source_hash


def test_path_source_plain_folder(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    (work / "pkg" / "__pycache__").mkdir(parents=True)
    (work / "pkg" / "mod.py").write_text("X = 1\n")
    before = tree_hash(work)
    (work / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"junk")
    (work / "pkg" / "stale.pyc").write_bytes(b"junk")
    (work / ".venv" / "lib").mkdir(parents=True)
    (work / ".venv" / "lib" / "x.py").write_text("junk")
    assert tree_hash(work) == before
    (work / "pkg" / "mod.py").write_text("X = 2\n")
    assert tree_hash(work) != before
    (work / "pkg" / "mod.py").write_text("X = 1\n")
    assert tree_hash(work) == before
    (work / "pkg" / "new.py").write_text("")
    assert tree_hash(work) != before


# ---------------------------------------------------------------- archives


def _tar_with(tmp_path: Path, members: list[tarfile.TarInfo]) -> Path:
    path = tmp_path / "evil-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for info in members:
            data = b"pwned\n" if info.isfile() else None
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


@pytest.mark.parametrize(
    "name,kind,link",
    [
        ("evil-1.0/../../escaped.txt", tarfile.REGTYPE, ""),
        ("/tmp/absolute-escaped.txt", tarfile.REGTYPE, ""),
        ("evil-1.0/link", tarfile.SYMTYPE, "../../outside"),
        ("evil-1.0/hard", tarfile.LNKTYPE, "../outside"),
    ],
)
def test_tar_path_traversal_rejected(tmp_path: Path, name: str, kind: bytes, link: str) -> None:
    ok = tarfile.TarInfo("evil-1.0/setup.py")
    bad = tarfile.TarInfo(name)
    bad.type, bad.linkname = kind, link
    archive = _tar_with(tmp_path, [ok, bad])
    dest = tmp_path / "out" / "dest"
    with pytest.raises(SourceError, match="evil"):
        safe_extract(archive, dest, repo="evil")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "out" / "escaped.txt").exists()
    assert not Path("/tmp/absolute-escaped.txt").exists()


def test_zip_path_traversal_rejected(tmp_path: Path) -> None:
    archive = tmp_path / "evil-1.0.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("evil-1.0/setup.py", "")
        zf.writestr("evil-1.0/../../escaped.txt", "pwned")
    with pytest.raises(SourceError, match="unsafe"):
        safe_extract(archive, tmp_path / "out" / "dest", repo="evil")
    assert not (tmp_path / "escaped.txt").exists()


def test_safe_archive_extracts(tmp_path: Path) -> None:
    top = tarfile.TarInfo(".")
    top.type = tarfile.DIRTYPE
    link = tarfile.TarInfo("good-1.0/pkg/README")  # a link that stays inside the tree is fine
    link.type, link.linkname = tarfile.SYMTYPE, "../setup.py"
    members = [top, tarfile.TarInfo("good-1.0/setup.py"), tarfile.TarInfo("good-1.0/pkg/a.py"), link]
    safe_extract(_tar_with(tmp_path, members), tmp_path / "out", repo="good")
    assert (tmp_path / "out" / "good-1.0" / "pkg" / "a.py").read_bytes() == b"pwned\n"
    assert (tmp_path / "out" / "good-1.0" / "pkg" / "README").read_bytes() == b"pwned\n"


# ---------------------------------------------------------------- real PyPI (network on first run)

@pytest.fixture(scope="session")
def persistent_cache(cache_dir) -> Path:
    """The session's private cache (conftest): downloads are shared by the tests of one run."""
    return cache_dir


@pytest.fixture(scope="session")
def schema_spec() -> RepoSpec:
    return load_manifest(default_manifest_path()).repo("schema")


@pytest.mark.pypi
def test_pypi_fetch_real_sdist(persistent_cache: Path, schema_spec: RepoSpec, monkeypatch) -> None:
    assert schema_spec.source == "pypi:schema==0.7.8" and schema_spec.sha256
    got = fetch(schema_spec)
    assert got.source_hash == schema_spec.sha256
    assert got.pinned == f"pypi:schema==0.7.8#sha256={schema_spec.sha256}"
    assert got.version == "0.7.8" and got.name == "schema"
    assert got.root.is_relative_to(persistent_cache / "sources")
    assert got.root.parent.name == f"schema-0.7.8-{schema_spec.sha256[:12]}"
    assert (got.root / "test_schema.py").is_file() and (got.root / "setup.py").is_file()
    assert any(downloads_dir().joinpath("schema-0.7.8").glob("schema-0.7.8.tar.gz"))

    # second fetch: no pip, no network, same answer
    def no_pip(*args, **kwargs):
        raise AssertionError("second fetch must not download")

    monkeypatch.setattr(sources, "_pip_download", no_pip)
    monkeypatch.setattr(sources.subprocess, "run", no_pip)
    assert fetch(schema_spec) == got


@pytest.mark.pypi
def test_pypi_wrong_sha256(persistent_cache: Path, schema_spec: RepoSpec) -> None:
    fetch(schema_spec)  # make sure the download is there
    wrong = "0" * 64
    bad = RepoSpec(name="schema-pinned-wrong", source=schema_spec.source, sha256=wrong)
    with pytest.raises(SourceError) as info:
        fetch(bad)
    msg = str(info.value)
    assert "schema-pinned-wrong" in msg and wrong in msg and schema_spec.sha256 in msg
    assert fetch(schema_spec).root.is_dir()  # nothing already built was deleted


@pytest.mark.pypi
def test_pypi_unknown_version(persistent_cache: Path) -> None:
    with pytest.raises(SourceError) as info:
        fetch(RepoSpec(name="schema-missing", source="pypi:schema==0.0.0.999"))
    msg = str(info.value)
    assert msg.startswith("schema-missing:") and "schema==0.0.0.999" in msg
    assert "ERROR" in msg or "No matching distribution" in msg, msg


def test_pypi_pip_failure_reports_last_error(tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_run(cmd, **kwargs):
        assert cmd[1:] == ["-m", "pip", "download", "--no-deps", "--no-binary", "nopkg",
                           "nopkg==1.0", "-d", str(downloads_dir() / "nopkg-1.0")]
        stderr = "ERROR: Could not find a version\nERROR: No matching distribution found for nopkg==1.0\nWARNING: x\n"
        return subprocess.CompletedProcess(cmd, 1, "", stderr)

    monkeypatch.setattr(sources.subprocess, "run", fake_run)
    with pytest.raises(SourceError, match=r"^nopkg: .*No matching distribution found for nopkg==1\.0$"):
        fetch(RepoSpec(name="nopkg", source="pypi:nopkg==1.0"))
