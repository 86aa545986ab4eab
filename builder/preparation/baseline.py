"""Baseline: run the repository's suite as shipped, N times, and classify every test.

A test that passes in every run is judgeable; one that fails in every run is `failing`; one whose
outcome changes between runs is `flaky`.  Failing and flaky tests are excluded from judging later.
Outcomes come from pytest's junit XML (via the metric's engine), never from stdout.
"""
from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from execrepobench_metric.defaults import PROBE_TIMEOUT_S
from execrepobench_metric.environments.venvs import Environment
from execrepobench_metric.execution.surface import (
    FAILED, Isolation, Limits, PASSED, PytestInvocation, SKIPPED, protected_paths, run_command, run_pytest)

from ..errors import BaselineError, CoverageError
from ..settings import RepoTask
from ..sources.manifest import RepoSpec


# The first baseline run's per-test wall limit (seconds): a test that takes longer waits for something this
# machine does not give; it is deselected in the other runs (the plugin's EXECREPOBENCH_TEST_WALL_S).
BASELINE_TEST_LIMIT_S = 60.0
WALL_LIMIT_ENV = "EXECREPOBENCH_TEST_WALL_S"
WALL_LIMIT_MARK = "per-test limit of"  # in the message of a test the limit stopped (the plugin's TestWallLimit)
# Markers that say a test needs what a build machine may not give (the network, a service, a long time):
# marked tests that fail in the first run are deselected in the others, as hung ones are.
NEEDS_MORE_MARKERS = ("network", "internet", "online", "requires_network", "needs_network", "slow", "integration",
                      "e2e", "external", "remote")


def full_output(result) -> str:
    return result.process.stdout_tail + "\n" + result.process.stderr_tail


def output_tail(result, lines: int = 12) -> str:
    """The last lines of a pytest run's stdout and stderr (what says why it failed)."""
    return "\n".join((result.process.stdout_tail + "\n" + result.process.stderr_tail).strip().splitlines()[-lines:])


@dataclass(frozen=True)
class Baseline:
    passing: tuple[str, ...]
    failing: tuple[str, ...]
    flaky: tuple[str, ...]
    skipped: tuple[str, ...]
    runs: int
    durations_s: tuple[float, ...]
    test_command: tuple[str, ...]
    import_check: dict = field(default_factory=dict)  # top-level module -> file it imports from
    timings: dict = field(default_factory=dict)  # import_check_s, baseline_runs_s, collect_checks_s (wall)
    # node id -> its most CPU seconds over the plain runs (our plugin's measurement; junit seconds where a
    # run measured none)
    test_seconds: dict = field(default_factory=dict)
    fixed_s: float = 0.0  # a run's CPU seconds outside its tests (start-up, collection, report), fastest run
    recovered: tuple[str, ...] = ()  # tests that flipped in the whole-suite runs, then passed every re-run
    # "file::test[" of parametrized tests whose ids change from one process to the next: every id of them is
    # excluded, by this prefix (the ids of the moment would make the record differ from build to build)
    varying: tuple[str, ...] = ()
    hung: tuple[str, ...] = ()  # stopped by the first run's per-test wall limit, deselected in the others
    # marked as needing the network, a service or time (NEEDS_MORE_MARKERS), failed in the first run,
    # deselected in the others
    marked_failing: tuple[str, ...] = ()

    def estimate_s(self, tests) -> float:
        """CPU seconds a run of only `tests` should take (an overestimate: the whole suite's collection)."""
        return self.fixed_s + sum(self.test_seconds.get(t, 0.0) for t in tests)

    @property
    def excluded(self) -> tuple[str, ...]:
        """Failing and flaky tests, the parametrized tests whose ids vary by their `file::test[` prefix."""
        flaky = {t for t in self.flaky if not t.startswith(self.varying)} if self.varying else set(self.flaky)
        return tuple(sorted(set(self.failing) | flaky | set(self.varying)))

    def summary(self) -> dict:
        return {"passing": len(self.passing), "failing": len(self.failing), "flaky": len(self.flaky),
                "skipped": len(self.skipped), "runs": self.runs,
                "median_suite_s": round(sorted(self.durations_s)[len(self.durations_s) // 2], 3),
                "failing_tests": list(self.failing), "flaky_tests": list(self.flaky),
                # flipped in the suite runs (a loaded machine), then passed every re-run of their own: judged
                "recovered_tests": list(self.recovered), "varying_ids": list(self.varying),
                "hung_tests": list(self.hung), "marked_failing_tests": list(self.marked_failing),
                "import_check": self.import_check}


def invocation(env: Environment, root: Path, spec: RepoSpec, timeout_s: float) -> PytestInvocation:
    args = list(spec.pytest_args)
    if env.has("hypothesis") and not any(a.startswith("--hypothesis-seed") for a in args):
        args.append("--hypothesis-seed=0")  # hypothesis suites need a fixed seed for steady run time
    if env.has("pytest-randomly"):
        args += ["-p", "no:randomly"]
    return PytestInvocation(python=env.python, root=root, pytest_args=tuple(args),
                            test_paths=tuple(spec.test_paths), deselect=tuple(spec.exclude_tests),
                            env=dict(spec.env), timeout_s=timeout_s)


def as_judged(inv: PytestInvocation) -> tuple[str, ...]:
    """The paths a judged run keeps read-only (test paths, conftests, pytest configuration): the baseline
    runs with them read-only too, so a test that writes there fails here and is never judged."""
    return protected_paths(inv.root, inv.test_paths)


def unstable_ids(inv: PytestInvocation, seen: set[str], collections: int, isolation: Isolation,
                 workers: int = 1) -> set[str]:
    """Test ids missing from some collection under other hash seeds (e.g. parametrize over a set
    whose order follows `hash(None)`): such ids cannot be judged reliably."""
    def collect(seed: int) -> set[str]:
        run = run_pytest(replace(inv, collect_only=True, env={**inv.env, "PYTHONHASHSEED": str(seed)}),
                         isolation=isolation)
        return seen - set(run.collected)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return set().union(*pool.map(collect, range(1, collections + 1)))


def classify(per_run: list[dict[str, str | None]]) -> dict[str, str]:
    """{node id: passing|failing|flaky|skipped} over several runs' outcomes."""
    tests = sorted(set().union(*per_run)) if per_run else []
    kinds = {}
    for nodeid in tests:
        seen = {run.get(nodeid) for run in per_run}
        if seen == {PASSED}:
            kinds[nodeid] = "passing"
        elif seen == {SKIPPED}:
            kinds[nodeid] = "skipped"
        elif len(seen) == 1:
            kinds[nodeid] = "failing"  # failed, errored or never reported in every run
        else:
            kinds[nodeid] = "flaky"
    return kinds


def baseline_invocations(inv: PytestInvocation, runs: int, coverage_data: Path | None) -> list[PytestInvocation]:
    """The whole-suite runs that classify the tests: `runs` of them, the first under coverage.py when
    `coverage_data` is given (it is the longest, so it starts first), plus one plain run at least (the
    time estimates come from plain runs only)."""
    if coverage_data is None:
        return [inv] * runs
    return [replace(inv, coverage_data=coverage_data), *[inv] * max(1, runs - 1)]


def run_baseline(env: Environment, root: Path, spec: RepoSpec, modules: list[str], task: RepoTask, *,
                 collections: int = 5, coverage_data: Path | None = None, test_limit_s: float = 0.0) -> Baseline:
    """The suite runs under the same isolation the metric judges in, with the same paths read-only
    (tests that need the network or write outside the tree or into the tests fail here and are excluded).  Runs, and then collections, go `workers` at
    a time (on a loaded machine more tests look flaky: they are excluded, never judged wrongly).
    `coverage_data`: one of the runs is the coverage run (`baseline_invocations`), its outcomes counted
    like the others (a test must pass under coverage too), its data written there.  `test_limit_s` (> 0): the
    first run alone, each test limited to that many wall seconds; the tests it stopped (`hung`: they wait for
    the network, a server, a terminal) are deselected by node id in the other runs and count as failing, and
    so are the tests marked as needing more than this machine gives (NEEDS_MORE_MARKERS) that fail in it.  The
    task's settings say how many runs (`baseline_runs`), how long each may take and how many at a time."""
    repo, isolation, settings = spec.name, task.isolation, task.settings
    runs, timeout_s, workers = settings.baseline_runs, settings.baseline_timeout_s, settings.baseline_workers
    t0 = time.monotonic()
    import_check = check_imports(repo, env, root, modules) if modules else {}
    timings = {"import_check_s": time.monotonic() - t0}
    inv = invocation(env, root, spec, timeout_s)
    planned = baseline_invocations(inv, runs, coverage_data)
    hung: tuple[str, ...] = ()
    marked_failing: tuple[str, ...] = ()
    if test_limit_s > 0:  # the first run finds the tests that hang or need more; the others run without them
        first = run_pytest(replace(planned[0], env={**planned[0].env, WALL_LIMIT_ENV: f"{test_limit_s:g}"}),
                           isolation=isolation, readonly=as_judged(planned[0]))
        hung = tuple(sorted(t for t, m in first.messages.items() if WALL_LIMIT_MARK in m))
        marked_failing = tuple(sorted(t for t in marked_needing_more(inv, isolation) if t not in hung
                                      and first.outcomes.get(t, PASSED) not in (PASSED, SKIPPED)))
        planned = [planned[0], *(replace(one, deselect=(*one.deselect, *hung, *marked_failing))
                                 for one in planned[1:])]
        if not first.error and (hung or marked_failing) and PASSED not in first.outcomes.values():
            raise BaselineError(f"{repo}: no test passes here: {len(hung)} stopped by the per-test limit of "
                                f"{test_limit_s:g} s (e.g. {', '.join(hung[:3]) or '-'}), {len(marked_failing)} "
                                f"marked as needing the network, a service or time failed (e.g. "
                                f"{', '.join(marked_failing[:3]) or '-'}); the others failed or were skipped: "
                                + " | ".join(output_tail(first, 40).splitlines()[-8:]), full_output(first))
    gone = (*hung, *marked_failing)
    rest = planned[1:] if test_limit_s > 0 else planned
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(lambda one: run_pytest(one, isolation=isolation, readonly=as_judged(one)), rest))
    if test_limit_s > 0:
        results = [first, *(replace(r, outcomes={**r.outcomes, **dict.fromkeys(gone, FAILED)}) for r in results)]
    per_run, durations, seconds, fixed = [], [], {}, []
    # plain runs first: a suite that cannot run is a baseline error, not the coverage run's
    for i, (one, result) in enumerate(sorted(zip(planned, results), key=lambda p: p[0].coverage_data is not None)):
        what = "coverage run" if one.coverage_data is not None else f"baseline run {i + 1}"
        if result.error or (one.coverage_data is not None and not one.coverage_data.exists()):
            tail = output_tail(result, 40)
            error = CoverageError if one.coverage_data is not None else BaselineError
            raise error(f"{repo}: {what} failed: {result.error or 'no coverage data'}: "
                        + " | ".join(tail.splitlines()[-8:]), full_output(result))
        per_run.append(result.outcomes)
        if one.coverage_data is not None:
            continue  # coverage.py slows a run: its times would inflate every estimate
        durations.append(result.process.duration_s)
        measured = result.fixed_cpu_s is not None
        fixed.append(result.fixed_cpu_s if measured else result.fixed_s)
        for nodeid, s in (result.test_cpu_s if measured else result.durations).items():
            seconds[nodeid] = max(s, seconds.get(nodeid, 0.0))
    timings["baseline_runs_s"] = time.monotonic() - t0 - timings["import_check_s"]
    kinds = classify(per_run)
    kinds.update(dict.fromkeys(gone, "failing"))  # never re-run on their own: they would hang or fail again
    unstable = unstable_ids(inv, set(kinds), collections, isolation, workers)
    for nodeid in unstable:
        if kinds[nodeid] == "passing":
            kinds[nodeid] = "flaky"  # its id is not stable: a judged run might not find it
    absent = unstable | {t for run in per_run for t in kinds if t not in run}  # ids some process did not have
    varying = varying_ids(absent)
    kinds.update({t: "flaky" for t in kinds if varying and t.startswith(varying)})
    flipped = [t for t, k in kinds.items() if k == "flaky" and t not in absent and t not in gone]  # outcomes that flipped
    recovered = recheck_flipped(inv, flipped, runs, isolation)
    kinds.update({t: "passing" for t in recovered})
    kinds.update(dict.fromkeys(gone, "failing"))
    by_kind = Counter(kinds.values())
    if not by_kind["passing"]:
        tail = output_tail(results[0], 40)
        raise BaselineError(f"{repo}: no test passes at baseline ({dict(by_kind)}); pytest said: "
                            + " | ".join(tail.splitlines()[-8:]), full_output(results[0]))
    pick = lambda kind: tuple(t for t, k in kinds.items() if k == kind)  # noqa: E731
    timings["collect_checks_s"] = time.monotonic() - t0 - sum(timings.values())
    return Baseline(pick("passing"), pick("failing"), pick("flaky"), pick("skipped"), len(planned),
                    tuple(durations), inv.test_command(), import_check, {k: round(v, 2) for k, v in timings.items()},
                    seconds, min(fixed, default=0.0), recovered, varying, hung, marked_failing)


def marked_needing_more(inv: PytestInvocation, isolation: Isolation) -> set[str]:
    """The ids of the tests marked with one of NEEDS_MORE_MARKERS (one collection; the repository's own `-m`
    in addopts is overridden by this one, so tests it deselects are found too - they never ran)."""
    marked = (*inv.pytest_args, "-m", " or ".join(NEEDS_MORE_MARKERS))
    run = run_pytest(replace(inv, collect_only=True, pytest_args=marked), isolation=isolation, readonly=as_judged(inv))
    return set(run.collected)


def varying_ids(absent: set[str]) -> tuple[str, ...]:
    """`file::test[` of every parametrized test one of whose ids some run or collection did not have: a
    parametrize over a set ordered by address-based hashes (`hash(None)` before Python 3.12) gives other
    ids in every process, so which of them look flaky changes from build to build; the whole test is
    excluded.  (A test whose outcome flips is re-run instead: `recheck_flipped`.)"""
    return tuple(sorted({t.split("[", 1)[0] + "[" for t in absent if "[" in t}))


def recheck_flipped(inv: PytestInvocation, flipped: list[str], runs: int, isolation: Isolation) -> tuple[str, ...]:
    """Tests that passed in some whole-suite runs and not in others get `runs` more runs of their own, one
    at a time: those that pass every time are kept (a loaded machine must not drop what a quiet one keeps);
    the others stay flaky and are never judged."""
    if not flipped:
        return ()
    passed = set(flipped)
    for _ in range(runs):
        result = run_pytest(replace(inv, select=tuple(flipped), deselect=()), isolation=isolation,
                            readonly=as_judged(inv))
        passed &= {t for t in flipped if result.outcomes.get(t) == PASSED}
    return tuple(t for t in flipped if t in passed)


def top_level_modules(source_files: list[str]) -> list[str]:
    """Importable top-level names of the masked sources (`pkg` for pkg/x.py, src/pkg/x.py; `mod` for mod.py)."""
    names = set()
    for rel in source_files:
        parts = rel.split("/")
        if parts[0] == "src" and len(parts) > 1:
            parts = parts[1:]
        if len(parts) == 1:
            names.add(parts[0][:-3])
        else:
            names.add(parts[0])
    return sorted(n for n in names if n.isidentifier())


# Writes its answer to a file (argv[1]): a package that prints at import cannot garble it.
_WHERE = """import importlib, json, sys
out = {}
for name in sys.argv[2:]:
    try:
        out[name] = getattr(importlib.import_module(name), "__file__", None) or ""
    except Exception as exc:
        out[name] = "ERROR: " + type(exc).__name__
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    json.dump(out, fh)
"""


def check_imports(repo: str, env: Environment, root: Path, modules: list[str]) -> dict[str, str]:
    """Prove that the environment imports the repo's modules from the source tree being judged.

    Run from `/` (not the repo), so only the installation decides.  A module that resolves
    elsewhere (a stale copy in site-packages) would let a broken completion pass: refused.
    """
    with tempfile.TemporaryDirectory(prefix="erb-where-") as tmp:
        answer = Path(tmp) / "where.json"
        proc = run_command([env.python, "-c", _WHERE, str(answer), *modules], cwd=Path("/"), timeout_s=PROBE_TIMEOUT_S,
                           env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "HOME": tmp},
                           limits=Limits())
        try:
            found = json.loads(answer.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            why = "timed out" if proc.timed_out else f"exit code {proc.returncode}"
            raise BaselineError(f"{repo}: import check failed ({why}): {proc.stderr_tail.strip()[-300:]}") from None
    resolved_root = root.resolve()
    where = {}
    for module, file in found.items():
        if not file or file.startswith("ERROR"):
            where[module] = file or "namespace"  # not importable as installed: judged by its tests' own imports
        elif Path(file).resolve().is_relative_to(resolved_root):
            where[module] = Path(file).resolve().relative_to(resolved_root).as_posix()
        else:
            raise BaselineError(f"{repo}: module {module} is imported from {file}, outside the source tree "
                                f"{root}: a completion there would not be judged")
    return where
