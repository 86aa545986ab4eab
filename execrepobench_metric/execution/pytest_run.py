"""One pytest run of a repository's suite (or a selection of it) -> per-test outcomes.

Outcomes come from pytest's junit XML; the set of collected tests from a tiny collection plugin.
The exit code is recorded but never makes a pass on its own.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from execrepobench_metric.defaults import PYTEST_TIMEOUT_S
from .evidence import keep_run_files, write_command
from .guard import BOOTSTRAP, GuardEvidence, GuardSetup, precompile
from .guard_channel import GuardChannel
from .junit import (ERROR, FAILED, JunitError, junit_key, parse_junit_durations, parse_junit_file,
                    parse_junit_messages, results_by_nodeid)
from .limits import Limits
from .process import ProcessResult
from .sandbox import Isolation, SandboxRun, ViewFile, run_sandboxed

PLUGIN_DIR = Path(__file__).parent / "pytest_plugin"
PLUGIN_NAME = "_execrepobench_collect"
# Flags every run gets: quiet, no cache writes into the repo, no colour codes.
BASE_PYTEST_ARGS = ("-q", "-p", "no:cacheprovider", "--color=no")
COMMAND_PREFIX = ("python", "-m", "pytest", *BASE_PYTEST_ARGS)
# Our own coverage configuration: `--rcfile` makes coverage.py read only this file, so the
# repository's settings (`parallel`, `data_file`, `source`, `fail_under`, plugins...) never apply.
# Paths are stored relative to the run's directory, which is the project root in every isolation.
COVERAGE_RC = "[run]\nparallel = False\nrelative_files = True\nbranch = False\n"


def collected_files(node_ids: Iterable[str]) -> tuple[str, ...]:
    """The files (sorted) a run of these node ids gives pytest to collect: exactly what it collects."""
    return tuple(sorted({t.split("::")[0] for t in node_ids}))


@dataclass(frozen=True)
class PytestInvocation:
    """What to run: the repo's pytest arguments plus paths, deselections and an optional selection."""

    python: str  # the environment's interpreter
    root: Path  # project root: cwd and --rootdir, so node ids are root-relative
    pytest_args: tuple[str, ...] = ()
    test_paths: tuple[str, ...] = ()
    deselect: tuple[str, ...] = ()
    select: tuple[str, ...] = ()  # node ids; when given, only these run (instead of test_paths)
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = PYTEST_TIMEOUT_S
    coverage_data: Path | None = None  # when set: run under coverage.py, one context per test
    collect_only: bool = False
    max_fail: int = 0  # stop after this many failing tests (0: run everything); the verdict is decided then
    # CPU seconds per phase, for our plugin: {"collect": s, "tests": {node id: s}, "default": s} (None: no limits)
    phase_budgets: Mapping | None = None
    # With a selection: the files pytest is given, in this order (default: the selection's files, sorted)
    targets: tuple[str, ...] = ()

    def test_command(self) -> tuple[str, ...]:
        """The command a person would type (recorded in samples), without our bookkeeping flags:
        `[env K=V ...] python -m pytest BASE_ARGS PYTEST_ARGS -- TEST_PATHS`."""
        prefix = ("env", *(f"{k}={v}" for k, v in sorted(self.env.items()))) if self.env else ()
        return (*prefix, *COMMAND_PREFIX, *self.pytest_args, "--", *self.test_paths)

    @classmethod
    def from_test_command(cls, command: tuple[str, ...] | list[str], **kwargs) -> "PytestInvocation":
        """Inverse of `test_command`: the recorded command plus python/root/select/... keywords."""
        tokens = list(command)
        env: dict[str, str] = {}
        if tokens[:1] == ["env"]:
            tokens.pop(0)
            while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
                key, value = tokens.pop(0).split("=", 1)
                env[key] = value
        if tuple(tokens[:len(COMMAND_PREFIX)]) != COMMAND_PREFIX:
            raise ValueError(f"test command {' '.join(command)!r} does not start with {' '.join(COMMAND_PREFIX)!r}")
        rest = tokens[len(COMMAND_PREFIX):]
        split = rest.index("--") if "--" in rest else len(rest)
        return cls(pytest_args=tuple(rest[:split]), test_paths=tuple(rest[split + 1:]),
                   env={**env, **kwargs.pop("env", {})}, **kwargs)

    def argv(self, junit_path: Path) -> list[str]:
        # With a selection, pytest collects the selected tests' files and our plugin keeps only the
        # selected ids (EXECREPOBENCH_SELECT): an unknown id then cannot abort the whole run.
        targets = list(self.targets or collected_files(self.select)) if self.select else list(self.test_paths)
        runner = [self.python, "-m", "pytest"]
        if self.coverage_data is not None:
            rcfile = self.coverage_data.parent / "coveragerc"
            runner = [self.python, "-m", "coverage", "run", f"--rcfile={rcfile}",
                      f"--data-file={self.coverage_data}", f"--include={self.root}/*", "-m", "pytest"]
        argv = [*runner, *BASE_PYTEST_ARGS, *(["--collect-only"] if self.collect_only else []), "-p", PLUGIN_NAME,
                f"--rootdir={self.root}", f"--junitxml={junit_path}", "-o", "junit_logging=no",
                *self.pytest_args, *([f"--maxfail={self.max_fail}"] if self.max_fail else [])]
        for nodeid in self.deselect:
            argv += ["--deselect", nodeid]
        return argv + targets


@dataclass(frozen=True)
class PytestRun:
    outcomes: dict[str, str | None]  # collected node id -> passed/failed/error/skipped, None = no report
    collected: tuple[str, ...]
    process: ProcessResult
    error: str | None  # why the run produced no usable report, else None
    finished: bool = False  # pytest reached the end of its session (our plugin's second record)
    unmatched: dict[str, str] = field(default_factory=dict)  # junit entries of no collected test (collection errors)
    plugin_outcomes: dict[str, str] = field(default_factory=dict)  # the plugin's independent record
    durations: dict[str, float] = field(default_factory=dict)  # collected node id -> junit seconds (estimates only)
    guard: GuardEvidence | None = None  # the guard's stream, when the run was guarded
    messages: dict[str, str] = field(default_factory=dict)  # failed/errored node id -> its message's first line
    # What the run measured (our plugin; CPU seconds of pytest and the children it waited for): the whole
    # run, start-up and collection, each test.  None/empty when the run did not finish.
    cpu_s: float | None = None
    collect_cpu_s: float | None = None
    test_cpu_s: dict[str, float] = field(default_factory=dict)

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode

    @property
    def fixed_s(self) -> float:
        """The run's wall seconds outside its tests' junit times: sandbox, interpreter, pytest, collection, report."""
        return max(0.0, self.process.duration_s - sum(self.durations.values()))

    @property
    def fixed_cpu_s(self) -> float | None:
        """The run's CPU seconds outside its tests (start-up, collection, report); None when not measured.
        Rounded to the microsecond: the clocks tick far coarser, and a float difference (0.15 - 0.01 =
        0.13999999999999999) must not come out below the collection's own 0.14 that it contains."""
        return None if self.cpu_s is None else round(max(0.0, self.cpu_s - sum(self.test_cpu_s.values())), 6)


def clean_env(inv: PytestInvocation, *, home: Path) -> dict[str, str]:
    """A small, fixed environment: none of the caller's variables leak into the repo's tests.

    Bytecode writing is off so no stale `.pyc` of an original file can shadow a completed one.
    """
    venv_bin = str(Path(inv.python).parent)
    env = {
        "PATH": os.pathsep.join((venv_bin, "/usr/local/bin", "/usr/bin", "/bin")),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(PLUGIN_DIR),
        "VIRTUAL_ENV": str(Path(venv_bin).parent),
    }
    env.update(inv.env)
    if inv.coverage_data is not None:
        env["EXECREPOBENCH_COVERAGE_CONTEXTS"] = "1"
    if "PYTHONPATH" in inv.env:
        env["PYTHONPATH"] = os.pathsep.join((str(PLUGIN_DIR), inv.env["PYTHONPATH"]))
    return env


def run_pytest(inv: PytestInvocation, *, isolation: Isolation, replacement: tuple[str, str] | None = None,
               readonly: tuple[str, ...] = (), limits: Limits | None = None,
               evidence: Path | None = None, guard: GuardSetup | None = None,
               added: tuple[ViewFile, ...] = ()) -> PytestRun:
    """Run pytest for `inv` in a private view of the tree (`sandbox.run_sandboxed`), with
    `replacement` applied and the `added` files in the view (read-only).  `evidence`: a folder that
    receives the command, the junit XML, the plugin's records, capped stdout/stderr and timing (kept
    even when the run raises).  `guard`: run pytest under the in-process guard and return its record
    too (and keep it in `evidence`)."""
    with tempfile.TemporaryDirectory(prefix="erb-run-") as tmp:
        out = Path(tmp)
        junit, collect = out / "junit.xml", out / "collected.json"
        home = Path("/tmp") if isolation is Isolation.BWRAP else out / "home"
        home.mkdir(exist_ok=True)
        env = clean_env(inv, home=home)
        env["EXECREPOBENCH_COLLECT_OUT"] = str(collect)
        if inv.select:
            (out / "select.json").write_text(json.dumps(list(inv.select)), encoding="utf-8")
            env["EXECREPOBENCH_SELECT"] = str(out / "select.json")
            env["EXECREPOBENCH_TEST_PATHS"] = json.dumps(list(inv.test_paths))  # what a whole-suite run names
        if inv.phase_budgets:
            (out / "budgets.json").write_text(json.dumps(dict(inv.phase_budgets)), encoding="utf-8")
            env["EXECREPOBENCH_BUDGETS"] = str(out / "budgets.json")
        wanted_coverage = inv.coverage_data
        if wanted_coverage is not None:  # written inside the run's writable folder, kept afterwards
            inv = dataclasses.replace(inv, coverage_data=out / "coverage.sqlite")
            (out / "coveragerc").write_text(COVERAGE_RC, encoding="utf-8")
        argv = inv.argv(junit)
        channel = GuardChannel(guard, out) if guard is not None else None
        if channel is not None:
            argv[1:3] = ["-m", BOOTSTRAP]  # python -m _execrepobench_guard <pytest args>
            env.update(channel.env())
            precompile(inv.python, PLUGIN_DIR)
        if evidence is not None:
            write_command(evidence, argv=argv, env=env, root=inv.root, isolation=Isolation(isolation),
                          timeout_s=inv.timeout_s)
        run = SandboxRun(tuple(argv), inv.root, out, env, inv.timeout_s, replacement=replacement,
                         readonly=readonly, visible=(Path(inv.python).parents[1], PLUGIN_DIR),
                         limits=limits or Limits(), pass_fds=channel.pass_fds if channel else (), added=added)
        if channel is not None:
            channel.start()  # the collector reads the stream while the process runs
        try:
            proc = run_sandboxed(run, isolation)
        except BaseException:
            if channel is not None:
                channel.close()
            raise
        guard_record = None
        if channel is not None:
            channel.stop()  # the process has ended: what arrives now is late
            guard_record = channel.read()
            if evidence is not None:
                channel.keep(evidence / "guard_stream.txt")
            channel.close()
        if evidence is not None:
            keep_run_files(evidence, out, proc)
        if wanted_coverage is not None and inv.coverage_data.exists():
            shutil.copyfile(inv.coverage_data, wanted_coverage)
        return dataclasses.replace(_read_run(out, junit, collect, proc, inv.timeout_s), guard=guard_record)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_run(out: Path, junit: Path, collect: Path, proc: ProcessResult, timeout_s: float) -> PytestRun:
    collected = _read_json(collect)
    collected = tuple(x for x in collected if isinstance(x, str)) if isinstance(collected, list) else ()
    done = _read_json(Path(str(collect) + ".done"))
    finished = isinstance(done, dict) and isinstance(done.get("outcomes"), dict)
    error = None
    try:
        junit_results = parse_junit_file(junit)
    except JunitError as exc:
        junit_results = {}
        error = str(exc)
    if proc.timed_out:
        error = f"timed out after {timeout_s:.0f} s"
    elif not collected and error is None:
        error = f"no tests collected (pytest exit code {proc.returncode})"
    matched = {junit_key(t) for t in collected}
    unmatched = {"::".join(k).strip(":"): v for k, v in junit_results.items() if k not in matched}
    seconds = parse_junit_durations(junit) if junit_results else {}
    said = parse_junit_messages(junit) if any(v in (FAILED, ERROR) for v in junit_results.values()) else {}
    messages = {t: said[junit_key(t)] for t in collected if junit_key(t) in said}
    messages.update({"::".join(k).strip(":"): m for k, m in said.items() if k not in matched})
    return PytestRun(results_by_nodeid(collected, junit_results), collected, proc, error, finished=finished,
                     plugin_outcomes=dict(done["outcomes"]) if finished else {}, unmatched=unmatched,
                     durations={t: seconds.get(junit_key(t), 0.0) for t in collected} if seconds else {},
                     messages=messages, **_measured(done if finished else None))


def _measured(done: dict | None) -> dict:
    """The plugin's measurements from its `.done` record (numbers only; anything else is dropped)."""
    if done is None:
        return {}
    number = lambda v: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else None  # noqa: E731
    tests = done.get("test_cpu_s") if isinstance(done.get("test_cpu_s"), dict) else {}
    return {"cpu_s": number(done.get("cpu_s")), "collect_cpu_s": number(done.get("collect_cpu_s")),
            "test_cpu_s": {str(k): n for k, v in tests.items() if (n := number(v)) is not None}}
