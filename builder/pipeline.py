"""One repository through the builder's stages, in order - the one place that runs them:

    source (sources/) -> preparation (preparation/) -> candidates -> test selection + verification (verification/)

`run_repository` fetches the manifest entry's pinned tree, prepares it (lock, environment, test layout, baseline
with per-test coverage, repository record), takes its candidate samples from a `CandidateStep`, gives each the
tests that judge it and verifies them.  Two entry points run every repository through it: the benchmark build
(`build.py`: candidates masked from the sources, kept at the paper's level mix) and the official importer
(`official.py`: candidates read from the paper's released JSONL, every one verified).  What differs between them
is their candidate step and their settings (`settings.BuildSettings`, in the `RepoTask` each repository's run
is handed), nothing else.

One repository's failure - any exception, at any stage - is its result (`status: error`, the phase, the reason,
the traceback when the error was unexpected), never the end of the run.
"""
from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol

from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_metric.execution.surface import Executor

from .preparation.baseline import BaselineError, CoverageError
from .preparation.lock import EnvError
from .preparation.prepare import Prepared, prepare
from .preparation.records import with_files
from .preparation.testlayout import NoTestsFound
from .sampling.repo_files import read_pool
from .settings import RepoTask
from .sources.sources import FetchedSource, SourceError, fetch
from .verification.repo_verification import Verified, selector, verify_repo

# Errors whose message says it all; any other exception is reported with its traceback.
REPO_ERRORS = (SourceError, EnvError, BaselineError, NoTestsFound)


@dataclass(frozen=True)
class Scan:
    """What a candidate step finds in the fetched tree before anything is installed."""

    report: dict = field(default_factory=dict)
    found: tuple = ()  # handed back to `CandidateStep.candidates`
    refusal: str = ""  # set: this tree cannot give a candidate (the repository ends as a source error)


@dataclass(frozen=True)
class Candidates:
    """A repository's candidate samples, not yet given their tests nor verified."""

    samples: list[Sample]
    report: dict
    quotas: Mapping[str, int] | None = None  # kept per level (verification/mix.py); None: every one that verifies
    more: Callable[[dict[str, int], int], list[Sample]] | None = None  # extra candidates of short levels (quotas)
    files: Mapping[str, str] | None = None  # the context pool the repository record carries; None: none
    origin: Mapping[str, int] = field(default_factory=dict)  # sample id -> its line in the input it was read from


class CandidateStep(Protocol):
    """Where an entry point's candidates come from (`build.MaskedCandidates`, `official.OfficialLines`)."""

    phase: str  # the report's phase when making the candidates fails

    def scan(self, fetched: FetchedSource) -> Scan: ...

    def candidates(self, fetched: FetchedSource, prepared: Prepared, pool: dict[str, str], scan: Scan) -> Candidates:
        """`pool`: every .py file of the tree (path -> code)."""


@dataclass(frozen=True)
class RepoRun:
    """One repository's run through the stages."""

    status: str  # "ok" (something kept), "empty" or "error"
    report: dict  # pinned, the scan's, preparation's and candidates' parts; on error: phase, reason (traceback)
    timings: dict  # seconds: fetch_s, env_s, baseline_s, collect_checks_s, <phase>_s, verify_s (what ran)
    record: RepoRecord | None  # the repository record as published (None when preparation did not finish)
    candidates: Candidates | None
    selected: list[Sample]  # the candidates with their judged tests
    verified: Verified | None  # None: not verified (no verification asked, nothing to verify, or it failed)
    kept: list[Sample]


def run_repository(task: RepoTask, step: CandidateStep, workdir: Path, executor: Executor | None = None) -> RepoRun:
    """The task's repository through the stages (see the module doc), the baseline's coverage data written
    under `workdir`; verification on `executor` (default: local threads).  Never raises for the
    repository's sake."""
    spec, settings = task.spec, task.settings
    lap = _lap_clock()
    stage, parts, timings = "source", {}, {}
    say = _stage_line(spec.name) if not settings.progress else (lambda stage: None)  # no bars: a line a stage
    say(stage)
    record: RepoRecord | None = None
    made: Candidates | None = None
    selected: list[Sample] = []
    verified: Verified | None = None
    kept: list[Sample] = []
    try:
        fetched = fetch(spec)
        parts["pinned"] = fetched.pinned
        timings["fetch_s"] = lap()
        scan = step.scan(fetched)
        parts.update(scan.report)
        if scan.refusal:
            raise SourceError(scan.refusal)
        stage = "prepare"
        say("prepare (environment, baseline runs)")
        prepared = prepare(task, fetched, coverage_data=workdir / "coverage.sqlite")
        lap()
        record = prepared.record
        parts.update(prepared.report)
        timings.update(prepared.timings)
        stage = step.phase
        say(stage)
        pool = read_pool(fetched.root)  # every .py file: the import graph that selects tests
        made = step.candidates(fetched, prepared, pool, scan)
        record = with_files(record, made.files) if made.files is not None else record
        parts.update(made.report)
        timings[f"{stage}_s"] = lap()
        if made.samples:
            stage = "verification"
            say(f"verification ({len(made.samples)} candidates)")
            select = selector(prepared.baseline, prepared.coverage, pool, settings.selection_floor)
            selected = select(made.samples)
            if not settings.verify:
                kept = selected
            else:
                more = made.more
                verified = verify_repo(selected, prepared.baseline, prepared.coverage, task, made.quotas,
                                       more and (lambda needs, round_: select(more(needs, round_))),
                                       executor, prepared.record)
                kept = verified.kept
                timings["verify_s"] = lap()
        status = "ok" if kept else "empty"
    except Exception as exc:  # noqa: BLE001 - the boundary of one repository: report it, go on
        kept, status = [], "error"
        parts.update(phase=_phase(stage, exc), **error_entry(exc))
    say(f"{status}: {len(kept)} samples" + (f" ({parts.get('phase')}: {str(parts.get('reason'))[:200]})"
                                           if status == "error" else ""))
    return RepoRun(status, parts, timings, record, made, selected, verified, kept)


def _stage_line(name: str) -> Callable[[str], None]:
    """Prints `[HH:MM:SS] NAME: stage` on stderr, at once (a hang shows which stage it is in)."""
    def say(stage: str) -> None:
        try:
            print(f"[{time.strftime('%H:%M:%S')}] {name}: {stage}", file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr gone (a closed pipe): a progress line never fails a repository
            pass
    return say


def _lap_clock() -> Callable[[], float]:
    """A function that returns the seconds since it was last called (or made)."""
    mark = [time.monotonic()]

    def lap() -> float:
        now = time.monotonic()
        elapsed, mark[0] = now - mark[0], now
        return elapsed
    return lap


def error_entry(exc: Exception, expected: tuple[type[Exception], ...] = REPO_ERRORS) -> dict:
    """A report's `reason` for an exception, plus its `traceback` unless the error was expected."""
    if isinstance(exc, expected):
        return {"reason": str(exc)}
    return {"reason": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}


def _phase(stage: str, exc: Exception) -> str:
    """The phase a report names for an error raised in `stage` (a candidate step's phase names itself)."""
    if stage != "prepare":
        return stage
    if isinstance(exc, EnvError):
        return "environment"
    if isinstance(exc, CoverageError):
        return "coverage"  # the baseline's coverage run
    return "baseline"
