"""`execrepobench live`: a dated snapshot - samples masked only in code released in a window - as an ordinary
builder folder (`publish`, `prepare`, `evaluate` and `run` take it unchanged).

Per candidate, in list order: its releases from the index (`index.py`); the newest release uploaded in the
window is the target, the newest uploaded on or before `--after` the baseline; both sdists are fetched, the
target must ship tests, and its new code (`newcode.py`) is where masks may lie; its manifest entry is made
from what the sdist declares.  `--limit N` stops after the first N candidates with a release in the window.
Then the builder builds the planned candidates (one failing candidate is a report entry, never the end).
The report says per candidate what happened (`plan.STATUSES`) and how long it took.
"""
from __future__ import annotations

import json
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from tqdm import tqdm

from execrepobench_metric.defaults import LIVE_BASELINE_TIMEOUT_S
from execrepobench_metric.errors import SourceError

from ..build import BuildConfig, build
from ..errors import IndexQueryError, IndexUnavailable, LiveInputError, UnknownProject
from ..sources.manifest import Manifest
from .candidates import Candidate
from .index import IndexClient
from .plan import ERROR, NO_RELEASE, NO_SAMPLE, NO_TESTS, OK, SUITE_FAILS, Planned, Releases, Skip, plan
from .report import HOW_NEW, live_markdown, live_totals
from .window import Window

LIVE_REPORT = "live_report.json"
INDEX_DOWN_AFTER = 3  # candidates in a row the index did not answer, none answered before: the index is down


@dataclass(frozen=True)
class LiveConfig:
    window: Window
    out: Path
    candidates: tuple[Candidate, ...]
    candidates_name: str = "candidates.toml"  # the list's file name (a name, never a path), for the report
    named: bool = False  # the candidates were named on the command line: an unknown one is bad input
    limit: int | None = None
    samples_per_repo: int = 24
    seed: int = 0
    index_url: str | None = None
    progress: bool = True
    allow_weak_sandbox: bool = False
    # a baseline run longer than this fails the candidate (suite_fails): the benchmark keeps suites of about a
    # minute, and a suite that hangs without its hand-written options (werkzeug's dev-server tests) stops sooner
    baseline_timeout_s: float = LIVE_BASELINE_TIMEOUT_S
    build_options: Mapping[str, Any] = field(default_factory=dict)  # other BuildConfig fields (workers, ...)


def _ask(client: IndexClient, config: LiveConfig) -> list[tuple[Candidate, Any]]:
    """(candidate, its releases or the error) for the candidates to try: up to the --limit-th with a release
    in the window."""
    asked, in_window, down = [], 0, 0
    bar = tqdm(config.candidates, desc="index", unit="project", disable=not config.progress)
    for cand in bar:
        if config.limit and in_window >= config.limit:
            break
        t0 = time.monotonic()
        try:
            project = client.project(cand.name, fresh_after=config.window.end)
        except UnknownProject as exc:
            if config.named:
                raise LiveInputError(f"--candidate {cand.name}: {exc}") from None
            asked.append((cand, exc, time.monotonic() - t0))
            continue
        except IndexUnavailable as exc:
            down += 1
            if down >= INDEX_DOWN_AFTER and all(isinstance(a[1], IndexQueryError) for a in asked):
                raise LiveInputError(f"the package index does not answer ({exc}); nothing was built") from None
            asked.append((cand, exc, time.monotonic() - t0))
            continue
        down = 0
        releases = Releases.of(project, config.window)
        in_window += releases.target is not None
        asked.append((cand, (project, releases), time.monotonic() - t0))
    bar.close()
    return asked


def _plan_all(asked: list, config: LiveConfig) -> tuple[list[dict], dict[str, Planned]]:
    entries, planned = [], {}
    for cand, answer, index_s in tqdm(asked, desc="plan", unit="project", disable=not config.progress):
        entry: dict[str, Any] = {"candidate": cand.name, "note": cand.note}
        t0 = time.monotonic()
        if isinstance(answer, Exception):
            entry.update(status=ERROR, phase="index", reason=str(answer))
        else:
            project, releases = answer
            entry.update(releases.report(project))
            try:
                if releases.target is None:
                    raise Skip(NO_RELEASE, f"no release with an sdist uploaded in the window (latest: "
                                           f"{entry['latest']['version'] if entry['latest'] else 'none'})")
                got = plan(cand.name, releases)
                planned[cand.name] = got
                entry.update(got.report)
            except Skip as exc:
                entry.update(status=exc.status, reason=str(exc))
            except SourceError as exc:
                entry.update(status=ERROR, phase="source", reason=str(exc))
            except Exception as exc:  # noqa: BLE001 - one candidate's failure is its report entry
                entry.update(status=ERROR, phase="plan", reason=f"{type(exc).__name__}: {exc}",
                             traceback=traceback.format_exc()[-4000:])
        entry["plan_s"] = round(index_s + time.monotonic() - t0, 2)
        entries.append(entry)
    return entries, planned


def outcome(report: dict) -> str:
    """A built candidate's status from its build report entry."""
    if report["status"] == "ok":
        return OK
    if report["status"] == "empty":
        return NO_SAMPLE
    if report.get("phase") in ("environment", "baseline", "coverage"):
        return NO_TESTS if "no tests found" in str(report.get("reason", "")) else SUITE_FAILS
    return ERROR


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def snapshot(config: LiveConfig) -> dict:
    """Ask, plan, build; write the builder folder with a `live` section in build_report.json/.md and
    OUT/live_report.json.  Returns the build summary (with its `live` section)."""
    t0 = time.monotonic()
    client = IndexClient(config.index_url)
    asked = _ask(client, config)
    entries, planned = _plan_all(asked, config)
    config.out.mkdir(parents=True, exist_ok=True)  # what planning found, kept should the build be interrupted
    _write_json(config.out / LIVE_REPORT, {"window": config.window.to_dict(), "planned": sorted(planned),
                                           "candidates": [e if "status" in e else {**e, "status": "building"}
                                                          for e in entries]})
    specs = tuple(p.spec for p in planned.values())
    manifest = Manifest(path=None, seed=config.seed, samples_per_repo=config.samples_per_repo, python=None,
                        repos=specs)
    build_config = BuildConfig(manifest=manifest, out=config.out, progress=config.progress,
                               allow_weak_sandbox=config.allow_weak_sandbox, baseline_timeout_s=config.baseline_timeout_s,
                               regions={n: p.new_code for n, p in planned.items()},
                               sample_fields={n: p.fields for n, p in planned.items()}, **dict(config.build_options))
    summary = build(build_config)
    built = {r["repo"]: r for r in summary["repos"]}
    for entry in entries:
        report = built.get(entry["candidate"])
        if report is None:
            continue
        entry.update(status=outcome(report), samples=report.get("samples", 0), build_s=report.get("time_s", 0.0))
        if entry["status"] != OK:
            entry.update(phase=report.get("phase", ""), reason=str(report.get("reason", "")))
    for entry in entries:
        entry["time_s"] = round(entry["plan_s"] + entry.get("build_s", 0.0), 2)
    live = {"window": config.window.to_dict(), "window_text": config.window.describe(), "how_new": HOW_NEW,
            "index": client.url, "index_requests": client.requests, "candidates_list": config.candidates_name,
            "limit": config.limit, "candidates": entries, "wall_s": round(time.monotonic() - t0, 1)}
    live["totals"] = live_totals(entries)
    summary["manifest"] = f"live {config.window.config_name} ({config.candidates_name})"
    summary["live"] = live
    _write_json(config.out / "build_report.json", summary)
    md = config.out / "build_report.md"
    md.write_text(live_markdown(live) + "\n" + md.read_text(encoding="utf-8"), encoding="utf-8")
    _write_json(config.out / LIVE_REPORT, live)
    return summary
