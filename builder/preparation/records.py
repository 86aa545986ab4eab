"""The repository record of a built repository: its license and the manifest entry that made it.

`draft_record` is made before the baseline (it is all an environment needs: python, pinned source,
lock); `final_record` adds what the baseline decided (the test command and the excluded tests).
"""
from __future__ import annotations

import dataclasses
import email.parser
import json
import tomllib
from pathlib import Path

from execrepobench_dataset.record import ContextFile
from execrepobench_dataset.repo_record import RepoRecord, environment_key

from ..sources.manifest import RepoSpec, parse_source
from ..sources.sources import FetchedSource

_LICENSE_CLASSIFIER = "License :: "


def _from_metadata(text: str) -> str:
    msg = email.parser.Parser().parsestr(text, headersonly=True)
    if expr := (msg.get("License-Expression") or "").strip():
        return expr
    declared = (msg.get("License") or "").strip()
    if declared and "\n" not in declared and len(declared) <= 80 and declared.upper() != "UNKNOWN":
        return declared
    classifiers = [c.split(" :: ")[-1] for c in msg.get_all("Classifier") or [] if c.startswith(_LICENSE_CLASSIFIER)]
    return "; ".join(c for c in classifiers if c not in ("OSI Approved",))


def _from_pyproject(text: str) -> str:
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError:
        return ""
    lic = project.get("license")
    if isinstance(lic, str):
        return lic.strip()
    if isinstance(lic, dict) and isinstance(lic.get("text"), str) and len(lic["text"]) <= 80:
        return lic["text"].strip()
    return "; ".join(c.split(" :: ")[-1] for c in project.get("classifiers", []) if isinstance(c, str)
                     and c.startswith(_LICENSE_CLASSIFIER) and not c.endswith("OSI Approved"))


def detect_license(root: Path) -> str:
    """License-Expression, else a short License field, else license classifiers, from the sdist's
    PKG-INFO (or pyproject.toml's [project]); "" when none says."""
    for name, reader in (("PKG-INFO", _from_metadata), ("pyproject.toml", _from_pyproject)):
        path = root / name
        if path.is_file():
            found = reader(path.read_text(encoding="utf-8", errors="replace"))
            if found:
                return found
    return ""


def _toml_value(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a valid TOML basic string


def manifest_entry(spec: RepoSpec, fetched: FetchedSource, python: str, samples_per_repo: int) -> str:
    """The [[repo]] entry as the builder used it (sha256 and python filled in).  A path source names
    only its folder's name (the folder itself is not published) with its tree hash in a comment."""
    ref = parse_source(spec.source)
    source, comment = spec.source, ""
    if ref.kind == "path":
        source, comment = f"path:{ref.name}", f"# a local folder, tree sha256 {fetched.source_hash}\n"
    fields = {"source": source, "name": spec.name,
              "sha256": fetched.source_hash if ref.kind == "pypi" else None, "python": python,
              "samples_per_repo": samples_per_repo, "extra_test_requires": list(spec.extra_test_requires),
              "test_paths": list(spec.test_paths), "pytest_args": list(spec.pytest_args),
              "exclude_tests": list(spec.exclude_tests), "env": dict(spec.env), "exclude_newer": spec.exclude_newer}
    lines = [f"{key} = {_toml_value(value)}" for key, value in fields.items() if value not in (None, [], {})]
    text = comment + "[[repo]]\n" + "\n".join(lines) + "\n"
    tomllib.loads(text)  # always valid TOML
    return text


def draft_record(spec: RepoSpec, fetched: FetchedSource, python: str, lock: tuple[str, ...],
                 samples_per_repo: int) -> RepoRecord:
    return RepoRecord(repo_name=spec.name, repo_source=fetched.pinned, python=python,
                      env_key=environment_key(python, fetched.pinned, lock, spec.exclude_newer or ""), lock=lock,
                      exclude_newer=spec.exclude_newer or "", test_command=(),
                      test_paths=tuple(spec.test_paths), pytest_args=tuple(spec.pytest_args),
                      excluded_tests=tuple(sorted(spec.exclude_tests)), env=tuple(f"{k}={v}" for k, v in spec.env),
                      license=detect_license(fetched.root),
                      manifest_entry=manifest_entry(spec, fetched, python, samples_per_repo))


def final_record(draft: RepoRecord, test_command: tuple[str, ...], excluded: tuple[str, ...]) -> RepoRecord:
    return dataclasses.replace(draft, test_command=tuple(test_command),
                               excluded_tests=tuple(sorted(set(excluded) | set(draft.excluded_tests))))


def with_files(record: RepoRecord, pool: dict[str, str]) -> RepoRecord:
    """The record with the repository's context pool (path -> code) as its `files`, sorted by path."""
    return dataclasses.replace(record, files=tuple(ContextFile(p, pool[p]) for p in sorted(pool)))
