"""What `publish` reads, checked before (or, for the streamed instruct corpus, while) anything is written:
every record against its dataclass and its `datasets` features, every error naming file:line and field."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

from .errors import PublishError, RecordError
from .repo_record import RepoRecord


def check_value(value, feat, where: str, name: str = "") -> None:
    """`value` matches the `datasets` feature `feat`, else a PublishError naming file:line and the field."""
    from datasets import List, Value
    ok, want, items = False, f"of a supported feature (not {feat!r})", []
    if isinstance(feat, dict):  # Features or a struct
        ok, want = isinstance(value, dict) and set(value) == set(feat), f"an object with {sorted(feat)}"
        items = [(f"{name}.{k}" if name else k, value[k], f) for k, f in feat.items()] if ok else []
    elif isinstance(feat, List):
        ok, want = isinstance(value, list), "a list"
        items = [(f"{name}[{i}]", v, feat.feature) for i, v in enumerate(value)] if ok else []
    elif isinstance(feat, Value) and feat.dtype == "string":  # lone surrogates are no UTF-8
        ok, want = isinstance(value, str) and not re.search("[\ud800-\udfff]", value), "UTF-8 text"
    elif isinstance(feat, Value) and feat.dtype == "float64":
        ok, want = type(value) is float and value == value, "a number"
    elif isinstance(feat, Value) and feat.dtype == "int64":
        ok, want = type(value) is int and -2**63 <= value < 2**63, "a 64-bit integer"
    if not ok:
        raise PublishError(f"{where}: field {name or '<record>'} must be {want}, got {type(value).__name__} "
                           f"{json.dumps(value, ensure_ascii=False, default=str)[:60]}")
    for sub_name, sub_value, sub_feat in items:
        check_value(sub_value, sub_feat, where, sub_name)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file, streamed; only "\\n" ends a line (U+2028 may be inside strings)."""
    if not path.is_file():
        raise PublishError(f"{path}: not found")
    try:
        with open(path, encoding="utf-8", newline="\n") as fh:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    yield lineno, line
    except (OSError, UnicodeDecodeError) as exc:
        raise PublishError(f"{path}: cannot read it as UTF-8 text: {exc}") from None


def iter_records(path: Path, from_dict, feats, key: str) -> Iterator[dict]:
    """Validated records of a JSONL file as dicts, in file order, streamed; `key` must be unique."""
    seen: dict = {}
    for lineno, line in _lines(path):
        where = f"{path}:{lineno}"
        try:
            row = from_dict(json.loads(line)).to_dict()
        except (RecordError, TypeError, ValueError, KeyError) as exc:  # JSONDecodeError is a ValueError
            raise PublishError(f"{where}: {'not valid JSON: ' * isinstance(exc, json.JSONDecodeError)}{exc}") from None
        check_value(row, feats, where)
        if row[key] in seen:
            raise PublishError(f"{where}: duplicate {key} {row[key]!r} (also on line {seen[row[key]]})")
        seen[row[key]] = lineno
        yield row


def read_records(path: Path, from_dict, feats, key: str) -> list[dict]:
    """Validated records of a JSONL file as dicts, sorted by `key` (unique); at least one."""
    rows = list(iter_records(path, from_dict, feats, key))
    if not rows:
        raise PublishError(f"{path}: no records (the file is empty)")
    return sorted(rows, key=lambda r: r[key])


def read_json(path: Path, required: tuple[str, ...] = ()) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublishError(f"{path}: cannot read it as JSON: {exc}") from None
    if not isinstance(data, dict) or not all(k in data for k in required):
        raise PublishError(f"{path}: not a JSON object with the keys {', '.join(required)}")
    return data


def check_repositories(samples: list[dict], records: list[dict], where: Path) -> list[RepoRecord]:
    """Every sample has its repository's record, with the same pinned source and environment key, and every
    context path it names is one of that record's files; every record's key is the hash of its own content."""
    by_name = {r["repo_name"]: RepoRecord.from_dict(r) for r in records}
    for name, rec in by_name.items():
        if not rec.key_matches:
            raise PublishError(f"{where}: repository record {name!r}: env_key {rec.env_key} is not the hash of its "
                               "python, source and lock")
    paths = {name: {f.path for f in rec.files} for name, rec in by_name.items()}
    for s in samples:
        rec = by_name.get(s["repo_name"])
        if rec is None:
            raise PublishError(f"{where}: no repository record for {s['repo_name']!r} (sample {s['sample_id']})")
        if (s["repo_source"], s["env_key"]) != (rec.repo_source, rec.env_key):
            raise PublishError(f"{where}: sample {s['sample_id']}: repo_source/env_key differ from the repository "
                               f"record of {s['repo_name']!r}")
        missing = [p for p in s["context_paths"] if p not in paths[rec.repo_name]]
        if missing:
            raise PublishError(f"{where}: sample {s['sample_id']}: context path {missing[0]!r} is not among the "
                               f"files of repository {s['repo_name']!r}")
    return [by_name[n] for n in sorted(by_name)]
