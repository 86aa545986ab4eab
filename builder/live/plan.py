"""One candidate before the build: its target and baseline releases, both sdists, whether the target ships
tests, the code new since the baseline, and its manifest entry (made, never hand-written)."""
from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path

from execrepobench_metric.environments.sources import fetch_pypi
from execrepobench_metric.errors import EnvError

from ..errors import NoTestsFound
from ..preparation.inference import RequirementsUnresolvable, infer_test_requirements, test_files  # noqa: F401
from ..preparation.testconfig import pytest_config
from ..preparation.testlayout import TEST_DIRS, _walk, defines_tests, find_tests, modules_with_tests
from ..sampling.masking import candidate_files
from ..sources.manifest import RepoSpec
from .index import ProjectReleases, Release
from .newcode import NewCode, new_code
from .window import Window, iso

# Per-candidate outcomes, in the order a candidate can end: the report counts each.
NO_RELEASE, NO_TESTS, SUITE_FAILS, NO_NEW_CODE, NO_SAMPLE, OK, ERROR = (
    "no_release_in_window", "no_tests", "suite_fails", "no_new_code", "no_verified_sample", "ok", "error")
STATUSES = (OK, NO_RELEASE, NO_TESTS, SUITE_FAILS, NO_NEW_CODE, NO_SAMPLE, ERROR)


@dataclass(frozen=True)
class Releases:
    target: Release | None  # the newest release uploaded in the window
    baseline: Release | None  # the newest uploaded on or before --after

    @classmethod
    def of(cls, project: ProjectReleases, window: Window) -> "Releases":
        return cls(project.newest(window.start, window.end), project.newest(None, window.start))

    def report(self, project: ProjectReleases) -> dict:
        latest = project.newest(None, project.fetched_at)
        describe = lambda r: {"version": r.version, "uploaded": iso(r.uploaded)} if r else None  # noqa: E731
        return {"target": describe(self.target), "baseline": describe(self.baseline), "latest": describe(latest)}

    def sample_fields(self) -> dict[str, str]:
        """What every sample of the candidate records about its release ("" where there is none)."""
        return {"release_date": iso(self.target.uploaded) if self.target else "",
                "baseline_version": self.baseline.version if self.baseline else "",
                "baseline_date": iso(self.baseline.uploaded) if self.baseline else ""}


@dataclass(frozen=True)
class Planned:
    """A candidate ready to build."""

    spec: RepoSpec
    new_code: NewCode
    fields: dict[str, str]
    report: dict = field(default_factory=dict)  # test layout, new code, requirements found


class Skip(Exception):
    """The candidate ends before the build with `status` (one of STATUSES) and a reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def ships_tests(root: Path, test_paths: tuple[str, ...]) -> bool:
    """Some file defines tests, or the pytest configuration collects doctests."""
    config = pytest_config(root, test_paths)
    if config and "doctest" in config[1]:
        return True
    files = [Path(p) for p in test_paths] if test_paths else list(_walk(root))
    return any(defines_tests(root / f) for f in files if (root / f).is_file()) or any(
        modules_with_tests(root, (p,)) for p in test_paths if (root / p).is_dir())


def test_requirements(name: str, source_hash: str, root: Path, test_paths: tuple[str, ...]) -> tuple[tuple, dict]:
    """(requirements for the manifest entry, report): the one inference of every manifest entry
    (`preparation/inference.py`), locked for the builder's default interpreter."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"  # what the builder's manifest defaults to
    try:
        inferred = infer_test_requirements(name, source_hash, root, python, test_paths)
    except RequirementsUnresolvable as exc:
        raise Skip(SUITE_FAILS, str(exc)) from None
    return inferred.requires, inferred.report()


def plan(name: str, releases: Releases) -> Planned:
    """Fetch both sdists (sha256 from the index), check the target ships tests, find its new code and make its
    manifest entry (test requirements from `test_requirements`); raises `Skip` for an outcome before the build,
    `SourceError` when a source cannot be had."""
    target, baseline = releases.target, releases.baseline
    assert target is not None
    got = fetch_pypi(name, target.version, target.sdist.sha256, name)
    try:
        layout = find_tests(got.root, repo=name)
    except NoTestsFound as exc:
        raise Skip(NO_TESTS, str(exc)) from None
    if not ships_tests(got.root, layout.paths):
        raise Skip(NO_TESTS, f"{name} {target.version}: its pytest configuration names tests, but no file of the "
                             "sdist defines any")
    old = fetch_pypi(name, baseline.version, baseline.sdist.sha256, name).root if baseline else None
    files = candidate_files(got.root, exclude=modules_with_tests(got.root, layout.paths))
    found = new_code(got.root, old, files)
    if not found.rows:
        raise Skip(NO_NEW_CODE, f"{name} {target.version}: no maskable file has a line added or changed since "
                                f"{baseline.version if baseline else '-'} ({len(files)} files compared)")
    requires, requirements = test_requirements(name, got.source_hash, got.root, layout.paths)
    spec = RepoSpec(name=name, source=f"pypi:{name}=={target.version}", sha256=target.sdist.sha256,
                    extra_test_requires=requires)
    report = {"test_layout": layout.report(), "new_code": found.stats(), "requirements": requirements}
    return Planned(spec, found, releases.sample_fields(), report)
