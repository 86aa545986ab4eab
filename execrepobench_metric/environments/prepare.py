"""`prepare`: make a dataset's environments on this machine and prove each repository judges right.

Per repository (threads, one repository per worker): fetch the pinned source, make the environment
from the published lock (`ensure_environment`), then a gold check with the metric's own judge on a
few samples (the ground truth must pass, the null fill must fail).  The outcome, `ready` or the
reason it is not, is returned and recorded in the cache (prepared/KEY.json), so a second run reuses
what is done (idempotent, resumable).  Nothing is re-masked: the samples are the dataset's.
One repository's failure is its own status, never the end of the run.
"""
from __future__ import annotations

import json
import os
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Iterable, Sequence

from tqdm import tqdm

from execrepobench_dataset.errors import ExecRepoBenchError
from execrepobench_dataset.load import open_dataset
from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.execution.fills import null_fill
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.sandbox import decide_isolation
from execrepobench_metric.execution.verdict import JudgeConfig

from .layout import cache_root
from .measured import keep as keep_measurements
from .venvs import ensure_environment, find_environment

PREPARE_ENV_VAR = "EXECREPOBENCH_PREPARE"


class EnvironmentsMissing(ExecRepoBenchError, RuntimeError):
    """Samples whose environments are not in this cache; the message lists the repositories and the
    `execrepobench prepare` command that makes them.  Nothing was judged."""

    def __init__(self, message: str, repos: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.repos = tuple(repos)


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


def prepare_command(dataset: str | None, repos: Iterable[str]) -> str:
    words = ["execrepobench", "prepare", "--dataset", shlex.quote(str(dataset)) if dataset else "DATASET"]
    for name in sorted(set(repos)):
        words += ["--repo", shlex.quote(name)]
    return " ".join(words)


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


def prepare_records(records: Sequence[RepoRecord], samples: Sequence[Sample],
                    config: PrepareConfig = PrepareConfig()) -> list[RepoStatus]:
    """Prepare every record, in parallel over repositories; statuses in the records' order."""
    isolation, _ = decide_isolation(config.allow_weak_sandbox)
    # the gold check runs the ground truth: its verdict must come from a run, not from verification
    jconf = replace(JudgeConfig(), isolation=isolation, timeout_s=config.timeout_s, known_verdicts=False)
    bar = tqdm(total=len(records), desc="prepare", unit="repo", disable=not config.progress)

    def work(record: RepoRecord) -> RepoStatus:
        status = prepare_repository(record, samples, config, jconf)
        bar.update(1)
        bar.set_postfix_str(record.repo_name)
        return status

    with ThreadPoolExecutor(max_workers=max(1, config.workers)) as pool:
        statuses = list(pool.map(work, records))
    bar.close()
    return statuses


def prepare_dataset(dataset: str, repos: Sequence[str] = (), config: PrepareConfig = PrepareConfig(),
                    revision: str | None = None) -> list[RepoStatus]:
    """Open `dataset` (builder folder, published folder or Hub id) and prepare its repositories (all, or
    those named).  Raises ValueError for a repository name the dataset does not have."""
    opened = open_dataset(dataset, revision)
    known = {r.repo_name for r in opened.repositories} | {s.repo_name for s in opened.samples}
    unknown = sorted(set(repos) - known)
    if unknown:
        raise ValueError(f"--repo {', '.join(unknown)}: not in dataset {dataset} (it has: {', '.join(sorted(known))})")
    wanted = set(repos) or known
    records = [r for r in opened.repositories if r.repo_name in wanted]
    without = sorted(wanted - {r.repo_name for r in records})
    statuses = prepare_records(records, opened.samples, config) if records else []
    for measured in opened.measurements:  # judging these samples by record later finds their budgets' data
        if measured.repo_name in wanted:
            keep_measurements(measured)
    key_of = {s.repo_name: s.env_key for s in opened.samples}
    statuses += [RepoStatus(name, key_of.get(name, ""), False, "the dataset has no repository record for it "
                            "(made by a builder without repositories.jsonl: rebuild and publish again)")
                 for name in without]
    return sorted(statuses, key=lambda s: s.repo_name)


def missing_repositories(samples: Sequence[Sample]) -> dict[str, str]:
    """{repo name: env key} of the samples whose environment is not in this cache."""
    missing: dict[str, str] = {}
    for key in sorted({s.env_key for s in samples}):
        if find_environment(key) is None:
            missing.update({s.repo_name: key for s in samples if s.env_key == key})
    return missing


def ensure_prepared(samples: Sequence[Sample], dataset: str | None, prepare: bool | None,
                    config: PrepareConfig = PrepareConfig()) -> None:
    """Before judging: every sample's environment is here, or is prepared (`prepare`, else
    EXECREPOBENCH_PREPARE=1, from the repository records of `dataset`), or EnvironmentsMissing is raised."""
    missing = missing_repositories(samples)
    if not missing:
        return
    if prepare is None:
        prepare = os.environ.get(PREPARE_ENV_VAR, "") in ("1", "true", "yes")
    names, command = sorted(missing), prepare_command(dataset, missing)
    if not prepare:
        raise EnvironmentsMissing(f"no environment in this cache for {len(names)} repositor"
                                  f"{'y' if len(names) == 1 else 'ies'}: {', '.join(names)}. Nothing was judged. "
                                  f"Make them with:\n  {command}\n(or let the command make them: --prepare; compute(): "
                                  f"prepare=True with dataset=...; or set {PREPARE_ENV_VAR}=1)", names)
    if dataset is None:
        raise EnvironmentsMissing(f"prepare=True needs dataset= (the repository records that say how to make the "
                                  f"environments of {', '.join(names)}). Nothing was judged.", names)
    bad = [s for s in prepare_dataset(str(dataset), names, config) if not s.ready]
    if bad:
        raise EnvironmentsMissing("could not prepare " + "; ".join(f"{s.repo_name}: {s.reason}" for s in bad)
                                  + f". Nothing was judged. Retry with:\n  {command}", [s.repo_name for s in bad])
