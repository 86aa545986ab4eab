"""The repository record: everything a machine needs to judge a published repository's samples.

One record per repository: the pinned source, the Python version, the locked requirement set (exact
versions, with hashes where the resolver gave them), the test command and its parts, the license and
the manifest entry that made it.  Its environment key is a content hash of what defines the
environment (`environment_key`), never of a path: the same record gives the same key everywhere.
This module imports nothing from the other rooms.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from .errors import RecordError
from .record import ContextFile, _feature_of, check_fields, read_records
from .schemes import ENV_KEY_SCHEMA

ENV_KEY_CHARS = 24  # hex characters of the sha256 kept in a key (96 bits)
_PYTHON_RE = re.compile(r"^\d+\.\d+$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PATH_SOURCE_RE = re.compile(r"^path:[A-Za-z0-9][A-Za-z0-9._-]*#tree=[0-9a-f]{64}$")


def environment_key(python: str, repo_source: str, lock: Iterable[str], exclude_newer: str = "") -> str:
    """sha256 over the canonical JSON of {schema, python X.Y, pinned source, lock lines[, the lock's
    resolution date]}.

    The one definition of an environment's identity, used by the builder, `prepare` and the metric.
    `exclude_newer`: the date the lock was resolved against (`uv pip compile --exclude-newer`); records
    made before locks were date-bound have none, and their keys stay what they were.
    """
    if not _PYTHON_RE.match(python or ""):
        raise RecordError(f"environment key: python must be MAJOR.MINOR like '3.11', got {python!r}")
    data = {"schema": ENV_KEY_SCHEMA, "python": python, "source": repo_source, "lock": list(lock)}
    if exclude_newer:
        data["exclude_newer"] = exclude_newer
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:ENV_KEY_CHARS]


@dataclass(frozen=True)
class RepoRecord:
    repo_name: str
    repo_source: str  # pinned: "pypi:NAME==VER#sha256=HEX", "git:URL@COMMIT", "path:NAME#tree=HEX"
    python: str  # "3.11"
    env_key: str  # environment_key(python, repo_source, lock, exclude_newer)
    lock: tuple[str, ...]  # requirement lines: "name==version --hash=sha256:... ..."
    test_command: tuple[str, ...]  # as in the samples: [env K=V] python -m pytest ... -- paths
    test_paths: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()
    excluded_tests: tuple[str, ...] = ()
    env: tuple[str, ...] = ()  # "K=V"
    license: str = ""  # from the source's metadata; "" when unknown
    manifest_entry: str = ""  # TOML text of the [[repo]] entry as the builder used it
    # The context pool: every Python file of the repository (path + code, sorted by path), stored once
    # here; samples name their ranked context by path (`Sample.context_paths`).  Not part of env_key.
    files: tuple[ContextFile, ...] = ()
    # The date (YYYY-MM-DD) the lock was resolved against: no package uploaded after it was considered
    # (`uv pip compile --exclude-newer`); "" for records made before locks were date-bound.  Part of env_key.
    exclude_newer: str = ""

    def __post_init__(self) -> None:
        validate(self)

    def file_map(self) -> dict[str, str]:
        """path -> code of the repository's files."""
        return {f.path: f.code for f in self.files}

    @property
    def key_matches(self) -> bool:
        """The record's env_key is the hash of its own python, source and lock."""
        return self.env_key == environment_key(self.python, self.repo_source, self.lock, self.exclude_newer)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
             for f in dataclasses.fields(self)}
        d["files"] = [{"path": f.path, "code": f.code} for f in self.files]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RepoRecord":
        if not isinstance(data, Mapping):
            raise RecordError(f"repository record <not a mapping>: expected a mapping, got {type(data).__name__}")
        where = f"repository record {data.get('repo_name', '<no repo_name>')!r}"
        check_fields(cls, data, where)
        kwargs = dict(data)
        for name in _LIST_FIELDS:
            if name in kwargs:
                value = kwargs[name]
                if value is None:
                    value = ()
                if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                    raise RecordError(f"{where}: field {name} must be a list of strings, got {type(value).__name__}")
                kwargs[name] = tuple(value)
        try:
            kwargs["files"] = tuple(ContextFile(path=f["path"], code=f["code"]) if isinstance(f, Mapping)
                                    else ContextFile(*f) for f in data.get("files") or ())
        except (TypeError, KeyError, ValueError) as exc:
            raise RecordError(f"{where}: field files must be a list of {{path, code}}: {exc}") from None
        return cls(**kwargs)


_LIST_FIELDS = ("lock", "test_command", "test_paths", "pytest_args", "excluded_tests", "env")
_STR_FIELDS = ("repo_name", "repo_source", "python", "env_key", "license", "manifest_entry", "exclude_newer")


def validate(record: RepoRecord) -> None:
    where = f"repository record {record.repo_name!r}"
    for name in _STR_FIELDS:
        if not isinstance(getattr(record, name), str):
            raise RecordError(f"{where}: field {name} must be a string, got {type(getattr(record, name)).__name__}")
    for name in _LIST_FIELDS:
        if not all(isinstance(x, str) for x in getattr(record, name)):
            raise RecordError(f"{where}: field {name} must be a list of strings")
    if not record.repo_name:
        raise RecordError(f"{where}: field repo_name must not be empty")
    if not _PYTHON_RE.match(record.python):
        raise RecordError(f"{where}: field python must be MAJOR.MINOR like '3.11', got {record.python!r}")
    kind = record.repo_source.partition(":")[0]
    if kind not in ("pypi", "git", "path"):
        raise RecordError(f"{where}: field repo_source {record.repo_source!r} is not a pinned pypi:/git:/path: spec")
    if kind == "path" and not _PATH_SOURCE_RE.match(record.repo_source):
        raise RecordError(f"{where}: field repo_source {record.repo_source!r}: a path source is pinned as "
                          "'path:NAME#tree=SHA256' (no folder of the machine that built it)")
    if not re.fullmatch(r"[0-9a-f]{8,64}", record.env_key):
        raise RecordError(f"{where}: field env_key {record.env_key!r} is not a hex key")
    for item in record.env:
        if not _ENV_RE.match(item):
            raise RecordError(f"{where}: field env: {item!r} is not NAME=VALUE")
    for line in record.lock:
        if line.lstrip().startswith("-e") or "\n" in line:
            raise RecordError(f"{where}: field lock: {line[:60]!r} is not one pinned requirement")
    paths = [f.path for f in record.files]
    if not all(isinstance(f.path, str) and isinstance(f.code, str) for f in record.files):
        raise RecordError(f"{where}: field files must be a list of {{path: str, code: str}}")
    if paths != sorted(set(paths)) or any(p.startswith("/") or "\\" in p or not p for p in paths):
        raise RecordError(f"{where}: field files must hold distinct repo-relative POSIX paths, sorted")


def write_repo_records(records: Iterable[RepoRecord], path) -> int:
    """JSON lines, sorted by repository name, sorted keys: equal records give equal bytes."""
    rows = sorted(records, key=lambda r: r.repo_name)
    with open(path, "w", encoding="utf-8") as fh:
        for record in rows:
            fh.write(json.dumps(record.to_dict(), sort_keys=True, ensure_ascii=False) + "\n")
    return len(rows)


def read_repo_records(path) -> Iterator[RepoRecord]:
    return read_records(path, RepoRecord.from_dict)


def repo_features():
    """`datasets.Features` of a repository record, derived from the dataclass."""
    from datasets import Features

    return Features({f.name: _feature_of(str(f.type)) for f in dataclasses.fields(RepoRecord)})
