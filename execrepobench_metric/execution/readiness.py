"""Is a repository ready to judge on this machine: its environment made from the record's lock and its
gold check passed (the ground truth passes, the null fill fails, judged by the metric's own judge).

`prepare_repository` does both for one repository and records the outcome in the cache
(prepared/KEY.json), so a second call reuses what is done; it never raises for the repository's own
failures.  `execrepobench_metric.prepare` runs it over a dataset's repositories; a Ray node
(`executors/ray.py`) runs it for the repository of the batch it was given.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Sequence

from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.environments.layout import cache_root
from execrepobench_metric.environments.venvs import ensure_environment, find_environment

from .fills import null_fill
from .judge import judge
from .verdict import JudgeConfig


@dataclass(frozen=True)
class PrepareConfig:
    workers: int = 2
    gold_samples: int = 3  # samples per repository whose ground truth / null fill are judged
    timeout_s: float | None = None  # None: each sample's time budget
    allow_weak_sandbox: bool = False
    progress: bool = True


@dataclass(frozen=True)
class RepoStatus:
    repo_name: str
    env_key: str
    ready: bool
    reason: str = ""  # why it is not ready ("" when ready)
    checked: tuple[str, ...] = ()  # sample ids of the gold check
    time_s: float = 0.0
    reused: bool = False  # ready from an earlier run

    def to_dict(self) -> dict:
        return {**asdict(self), "checked": list(self.checked)}


def _status_file(env_key: str):
    return cache_root() / "prepared" / f"{env_key}.json"


def _record_status(status: RepoStatus) -> RepoStatus:
    path = _status_file(status.env_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(status.to_dict(), indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return status


def _earlier(record: RepoRecord, checked: tuple[str, ...]) -> RepoStatus | None:
    try:
        data = json.loads(_status_file(record.env_key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("ready") is True and tuple(data.get("checked", ())) == checked and find_environment(record.env_key):
        return RepoStatus(record.repo_name, record.env_key, True, "", checked, 0.0, reused=True)
    return None


def gold_check(samples: Sequence[Sample], config: JudgeConfig) -> str:
    """"" when every ground truth passes and every null fill fails, else the first reason why not."""
    for s in samples:
        gold = judge(s, s.middle_code, config)
        if not gold.passed:
            why = gold.detail or ", ".join(gold.failing_tests[:3]) or gold.stderr_tail[-200:]
            return f"gold check: the ground truth of sample {s.sample_id} did not pass ({gold.reason}: {why})"
        fill = null_fill(s)
        if fill is not None and judge(s, fill, config).passed:
            return f"gold check: the null fill {fill!r} of sample {s.sample_id} passed (the sample cannot discriminate)"
    return ""


def prepare_repository(record: RepoRecord, samples: Sequence[Sample], config: PrepareConfig,
                       judge_config: JudgeConfig) -> RepoStatus:
    """Environment + gold check of one repository (never raises for the repository's own failures)."""
    t0 = time.monotonic()
    mine = sorted((s for s in samples if s.repo_name == record.repo_name), key=lambda s: s.sample_id)
    other_keys = sorted({s.env_key for s in mine if s.env_key != record.env_key})
    if other_keys:
        return RepoStatus(record.repo_name, record.env_key, False, f"samples name env_key {other_keys[0]}, the "
                          f"repository record {record.env_key}: the dataset is inconsistent")
    chosen = tuple(mine[:config.gold_samples])
    checked = tuple(s.sample_id for s in chosen)
    if (earlier := _earlier(record, checked)) is not None:
        return earlier
    try:
        ensure_environment(record)
        reason = gold_check(chosen, judge_config)
    except Exception as exc:  # noqa: BLE001 - one repository's failure is its own status, whatever it is
        reason = f"{type(exc).__name__}: {exc}" if not str(exc).startswith(record.repo_name) else str(exc)
    status = RepoStatus(record.repo_name, record.env_key, not reason, reason, checked,
                        round(time.monotonic() - t0, 2))
    return _record_status(status)
