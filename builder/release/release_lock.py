"""The release lock: what a packaged manifest's build must give, so two labs can show they hold the
same benchmark.

A lock (`manifests/NAME.lock.json`, beside `NAME.toml`) records, for one build of the manifest: the
dataset fingerprint (`execrepobench_dataset.load.dataset_fingerprint`: content only), the sha256 of
`samples.jsonl`, a digest of each repository's sample ids, the manifest's own sha256 and the builder's
scheme (`scheme_id`: every identifier that changes what a build makes - bump the one that covers a change
of what samples are, e.g. `schemes.CONTEXT_SCHEME` for the context ranking).  `check` compares a build
with it and names the repositories that differ.  A lock is written from a real build
(`execrepobench fingerprint OUT --write-lock FILE`) whenever the scheme or the manifest changes; the
test suite fails while the packaged lock names another scheme or manifest than the code's.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from execrepobench_dataset.files import file_sha256
from execrepobench_dataset.load import OpenedDataset
from execrepobench_dataset.record import Sample
from execrepobench_dataset.schemes import RELEASE_LOCK_FORMAT, RELEASE_SCHEMES
from execrepobench_dataset.version import __version__


def scheme_id() -> str:
    """A digest of every identifier that changes what a build of the same manifest makes."""
    parts = {"builder": __version__, **RELEASE_SCHEMES}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def repo_digests(samples: Iterable[Sample]) -> dict[str, str]:
    """Per repository: sha256 over its sorted sample ids (what differs, when fingerprints do)."""
    ids: dict[str, list[str]] = {}
    for s in samples:
        ids.setdefault(s.repo_name, []).append(s.sample_id)
    return {name: hashlib.sha256("\n".join(sorted(v)).encode()).hexdigest()[:16] for name, v in sorted(ids.items())}


def manifest_sha256(path: Path) -> str:
    return file_sha256(path)


def lock_of(opened: OpenedDataset, manifest: Path) -> dict:
    """The lock a build (`opened`, a builder folder) gives for `manifest`."""
    samples_file = opened.folder / "samples.jsonl"
    return {"format": RELEASE_LOCK_FORMAT, "manifest": manifest.name, "manifest_sha256": manifest_sha256(manifest),
            "scheme": scheme_id(), "fingerprint": opened.fingerprint,
            "samples_jsonl_sha256": file_sha256(samples_file) if samples_file.is_file() else None,
            "samples": len(opened.samples), "repos": repo_digests(opened.samples)}


@dataclass(frozen=True)
class LockCheck:
    matches: bool
    lines: tuple[str, ...]  # what a person reads: the verdict, then what differs


def check(opened: OpenedDataset, lock: dict) -> LockCheck:
    """Does the dataset match the lock?  Names the repositories that differ (missing, extra, other ids)."""
    if opened.fingerprint == lock.get("fingerprint"):
        return LockCheck(True, (f"matches the release lock of {lock.get('manifest')}: fingerprint {opened.fingerprint}",))
    lines = [f"does NOT match the release lock of {lock.get('manifest')}: fingerprint {opened.fingerprint}, "
             f"expected {lock.get('fingerprint')}"]
    if lock.get("scheme") != scheme_id():
        lines.append(f"the lock was written by another builder scheme ({lock.get('scheme')}; this one is {scheme_id()})")
    have, want = repo_digests(opened.samples), dict(lock.get("repos") or {})
    for name in sorted(set(have) | set(want)):
        if name not in have:
            lines.append(f"  {name}: no samples in this build ({len(want)} repositories in the lock)")
        elif name not in want:
            lines.append(f"  {name}: not in the lock")
        elif have[name] != want[name]:
            lines.append(f"  {name}: other sample ids")
    if len(lines) == 1 + (lock.get("scheme") != scheme_id()):
        lines.append("  every repository has the lock's sample ids: the samples' or records' content differs "
                     "(judged tests, allowances, locks, context)")
    return LockCheck(False, tuple(lines))


def packaged_lock(manifest: Path) -> Path:
    """Where the lock of a packaged manifest lives: beside it, NAME.lock.json."""
    return manifest.with_name(manifest.stem + ".lock.json")
