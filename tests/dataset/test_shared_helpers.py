"""The small helpers the packages share instead of repeating them: a file's streaming sha256, INI reading,
a file lock, the lazy "module:Class" registry (backends and executors alike), and the field checks of the
records' `from_dict`."""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib

import pytest

from execrepobench_dataset.errors import ExecRepoBenchError, RecordError, UsageError
from execrepobench_dataset.files import BLOCK, file_lock, file_sha256, read_ini
from execrepobench_dataset.record import check_fields
from execrepobench_dataset.registry import LazyRegistry, import_named


def test_file_sha256_streams_past_one_block(tmp_path):
    data = bytes(range(256)) * (BLOCK // 256 * 2 + 3)  # more than two blocks, not a multiple of one
    (tmp_path / "f").write_bytes(data)
    assert file_sha256(tmp_path / "f") == hashlib.sha256(data).hexdigest()


def test_read_ini(tmp_path):
    (tmp_path / "tox.ini").write_text("[pytest]\naddopts = -p no:cacheprovider --cov=%(x)s\n")
    assert read_ini(tmp_path / "tox.ini").get("pytest", "addopts") == "-p no:cacheprovider --cov=%(x)s"  # no interpolation
    assert read_ini(tmp_path / "missing.ini").sections() == []  # as configparser reads a missing file
    (tmp_path / "bad.ini").write_text("no section header\n")
    assert read_ini(tmp_path / "bad.ini") is None
    (tmp_path / "latin.ini").write_bytes(b"[a]\nb = \xe9\n")
    assert read_ini(tmp_path / "latin.ini") is None
    assert read_ini(text="[testenv]\ndeps = x\n").get("testenv", "deps") == "x"


def test_file_lock_excludes_another_holder(tmp_path):
    path = tmp_path / "deep" / ".k.lock"
    with file_lock(path):
        with open(path, "w") as other:  # another open file description, as another thread or process has
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(path, "w") as other:  # released
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_lazy_registry():
    table = LazyRegistry("thing", {"sha": "hashlib:sha256", "gone": "no_such_module_here:X"})
    assert sorted(table) == ["gone", "sha"] and table["sha"] == "hashlib:sha256" and len(table) == 2
    assert table.load("sha") is hashlib.sha256 and import_named("hashlib:md5") is hashlib.md5
    with pytest.raises(UsageError, match=r"unknown thing 'nope'; available: gone, sha"):
        table.load("nope")
    with pytest.raises(ModuleNotFoundError):  # only the entry asked for is imported
        table.load("gone")


def test_backends_and_executors_share_the_registry_style():
    from execrepobench.runner.backends.base import REGISTRY, Backend
    from execrepobench_metric.execution.executors.base import EXECUTORS as NAMES, Executor
    from execrepobench_metric.execution.executors.registry import EXECUTORS

    assert isinstance(REGISTRY, LazyRegistry) and isinstance(EXECUTORS, LazyRegistry)
    assert tuple(EXECUTORS) == NAMES  # the names a config accepts are the names the registry opens
    assert issubclass(EXECUTORS.load("local"), Executor) and issubclass(REGISTRY.load("oracle"), Backend)
    with pytest.raises(ExecRepoBenchError, match="unknown executor"):
        EXECUTORS.load("slurm")


@dataclasses.dataclass(frozen=True)
class _Rec:
    a: str
    b: int = 0


def test_check_fields_names_the_record_and_the_fields():
    check_fields(_Rec, {"a": "x"}, "rec 1")
    with pytest.raises(RecordError, match=r"^rec 1: missing field\(s\) a$"):
        check_fields(_Rec, {"b": 1}, "rec 1")
    with pytest.raises(RecordError, match=r"^rec 1: unknown field\(s\) c, d$"):
        check_fields(_Rec, {"a": "x", "d": 1, "c": 2}, "rec 1")
    check_fields(_Rec, {"b": 1}, "rec 1", optional=("a",))
    check_fields(_Rec, {"a": "x", "old": 1}, "rec 1", ignored=("old",))
