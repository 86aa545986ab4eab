"""`prepare`: make a dataset's environments on this machine and prove each repository judges right.

Per repository (threads, one repository per worker), `execution.readiness.prepare_repository`: fetch the
pinned source, make the environment from the published lock (`ensure_environment`), then a gold check
with the metric's own judge on a few samples (the ground truth must pass, the null fill must fail).
The outcome, `ready` or the reason it is not, is returned and recorded in the cache
(prepared/KEY.json), so a second run reuses what is done (idempotent, resumable).  Nothing is
re-masked: the samples are the dataset's.  One repository's failure is its own status, never the end
of the run.  This module sits beside `api.py`: it opens datasets and drives the engine, from above it.
"""
from __future__ import annotations

import os
import shlex
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Iterable, Sequence

from tqdm import tqdm

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.load import OpenedDataset, open_dataset
from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord

from .environments.measured import keep as keep_measurements
from .environments.venvs import find_environment
from .errors import EnvironmentsMissing
from .execution.readiness import PrepareConfig, RepoStatus, prepare_repository
from .execution.sandbox import decide_isolation
from .execution.verdict import JudgeConfig

PREPARE_ENV_VAR = "EXECREPOBENCH_PREPARE"


def prepare_command(dataset: str | None, repos: Iterable[str]) -> str:
    words = ["execrepobench", "prepare", "--dataset", shlex.quote(str(dataset)) if dataset else "DATASET"]
    for name in sorted(set(repos)):
        words += ["--repo", shlex.quote(name)]
    return " ".join(words)


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
                    revision: str | None = None, *, opened: OpenedDataset | None = None) -> list[RepoStatus]:
    """Open `dataset` (builder folder, published folder or Hub id; `opened`: already opened, by the caller)
    and prepare its repositories (all, or those named).  Raises UsageError for a repository name the
    dataset does not have."""
    opened = opened if opened is not None else open_dataset(dataset, revision)
    known = {r.repo_name for r in opened.repositories} | {s.repo_name for s in opened.samples}
    unknown = sorted(set(repos) - known)
    if unknown:
        raise UsageError(f"--repo {', '.join(unknown)}: not in dataset {dataset} (it has: {', '.join(sorted(known))})")
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
                    config: PrepareConfig = PrepareConfig(), *, opened: OpenedDataset | None = None) -> None:
    """Before judging: every sample's environment is here, or is prepared (`prepare`, else
    EXECREPOBENCH_PREPARE=1, from the repository records of `dataset`; `opened`: that dataset, opened by the
    caller, read instead of opening it again), or EnvironmentsMissing is raised."""
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
    bad = [s for s in prepare_dataset(str(dataset), names, config, opened=opened) if not s.ready]
    if bad:
        raise EnvironmentsMissing("could not prepare " + "; ".join(f"{s.repo_name}: {s.reason}" for s in bad)
                                  + f". Nothing was judged. Retry with:\n  {command}", [s.repo_name for s in bad])
