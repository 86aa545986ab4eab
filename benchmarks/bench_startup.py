"""Where a judged run's time goes: sandbox set-up, interpreter start, pytest import, plugin and conftest
loading, collection, the tests, report writing and exit - on real samples of several repositories.

    .venv/bin/python benchmarks/bench_startup.py --samples out/full/samples.jsonl [--per-repo 2] [--repeat 3]

Needs samples made by `execrepobench build` (environments in the cache) and bubblewrap.  For each
sample: three probe runs in the same sandbox (`true`; `python -c pass`; `python -c "import pytest"`)
and its judged run (the ground truth, the sample's judged tests) with a timing plugin that stamps the
wall clock at pytest's hooks.  Prints the median seconds of each phase per repository and overall.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from execrepobench_metric.environments.venvs import find_environment
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.limits import Limits
from execrepobench_metric.execution.sandbox import SandboxRun, decide_isolation, run_sandboxed
from execrepobench_metric.execution.verdict import JudgeConfig

sys.path.insert(0, str(Path(__file__).parent))
from _common import verified_samples  # noqa: E402

# Stamps time.time() at pytest's hooks into EXECREPOBENCH_COLLECT_OUT + ".timing" (the run's folder).
TIMING_PLUGIN = '''import json, os, time
_T = {"plugin_import": time.time()}
def _save():
    path = os.environ.get("EXECREPOBENCH_COLLECT_OUT")
    if path:
        with open(path + ".timing", "w") as fh:
            json.dump(_T, fh)
def pytest_configure(config):
    _T["configure"] = time.time()
def pytest_collection(session):
    _T["collection_start"] = time.time()
def pytest_collection_finish(session):
    _T["collection_finish"] = time.time()
def pytest_runtest_logstart(nodeid, location):
    _T.setdefault("first_test", time.time())
def pytest_runtest_logfinish(nodeid, location):
    _T["last_test"] = time.time()
def pytest_sessionfinish(session, exitstatus):
    _T["sessionfinish"] = time.time()
def pytest_unconfigure(config):
    _T["unconfigure"] = time.time()
    _save()
'''
PHASES = ("sandbox", "interpreter", "pytest_import", "plugins_conftest", "collection", "tests", "report_exit")


def probe(argv: list[str], root: Path, python: str, isolation) -> float:
    """Wall seconds of one command in the sandbox (the same set-up as a judged run)."""
    with tempfile.TemporaryDirectory(prefix="erb-probe-") as tmp:
        env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
        run = SandboxRun(tuple(argv), root, Path(tmp), env, 120, replacement=None,
                         visible=(Path(python).parents[1],), limits=Limits())
        t0 = time.monotonic()
        run_sandboxed(run, isolation)
        return time.monotonic() - t0


def timed_judged_run(sample, conf: JudgeConfig, plugin_dir: Path) -> dict[str, float]:
    """The judged run of the ground truth with the timing plugin; phases from the host's start."""
    cmd = list(sample.test_command)
    at = cmd.index("--color=no") + 1
    cmd[at:at] = ["-p", "_erb_timing"]
    cmd = ["env", f"PYTHONPATH={plugin_dir}", *cmd[1:]] if cmd[0] == "env" else ["env", f"PYTHONPATH={plugin_dir}", *cmd]
    with tempfile.TemporaryDirectory(prefix="erb-ev-") as ev:
        start = time.time()
        verdict = judge(replace(sample, test_command=tuple(cmd)), sample.middle_code, conf, evidence=Path(ev))
        end = time.time()
        stamps = json.loads((Path(ev) / "collected.json.timing").read_text())
    return {"start": start, "end": end, **stamps, "passed": verdict.passed}


def phases(t: dict, sandbox_s: float, interp_s: float, import_s: float) -> dict[str, float]:
    first = t.get("first_test", t["collection_finish"])
    last = t.get("last_test", first)
    before_plugin = t["plugin_import"] - t["start"]
    return {"sandbox": sandbox_s, "interpreter": max(0.0, interp_s - sandbox_s),
            "pytest_import": max(0.0, import_s - interp_s),
            # -p plugins load while pytest parses its arguments: the rest of the time before ours is
            # pytest's own start-up beyond `import pytest` (entry points, config files)
            "plugins_conftest": max(0.0, before_plugin - import_s) + (t["collection_start"] - t["plugin_import"]),
            "collection": t["collection_finish"] - t["collection_start"],
            "tests": last - t["collection_finish"],
            "report_exit": t["end"] - last, "total": t["end"] - t["start"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, required=True)
    ap.add_argument("--per-repo", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--repo", action="append", default=None)
    args = ap.parse_args()
    samples = [s for s in verified_samples(args.samples, 10_000) if not args.repo or s.repo_name in args.repo]
    by_repo: dict[str, list] = defaultdict(list)
    for s in samples:
        if len(by_repo[s.repo_name]) < args.per_repo:
            by_repo[s.repo_name].append(s)
    isolation = decide_isolation(allow_weak=False)[0]
    conf = JudgeConfig(isolation=isolation, timeout_s=300, known_verdicts=False)  # the ground truth really runs
    with tempfile.TemporaryDirectory(prefix="erb-timing-", dir=Path.home()) as plugin_dir:
        (Path(plugin_dir) / "_erb_timing.py").write_text(TIMING_PLUGIN)
        rows: dict[str, list[dict]] = defaultdict(list)
        for repo, picked in sorted(by_repo.items()):
            for s in picked:
                env = find_environment(s.env_key)
                for _ in range(args.repeat):
                    sb = probe(["true"], env.root, env.python, isolation)
                    it = probe([env.python, "-c", "pass"], env.root, env.python, isolation)
                    im = probe([env.python, "-c", "import pytest"], env.root, env.python, isolation)
                    rows[repo].append(phases(timed_judged_run(s, conf, Path(plugin_dir)), sb, it, im))
    cols = (*PHASES, "total")
    print(f"{'repo':18}" + "".join(f"{c[:12]:>13}" for c in cols) + "   judged tests")
    every = []
    for repo, got in sorted(rows.items()):
        every += got
        med = {c: statistics.median(r[c] for r in got) for c in cols}
        tests = statistics.median(len(s.judged_tests) for s in by_repo[repo])
        print(f"{repo:18}" + "".join(f"{med[c]:13.3f}" for c in cols) + f"   {tests:g}")
    med = {c: statistics.median(r[c] for r in every) for c in cols}
    print(f"{'ALL (median)':18}" + "".join(f"{med[c]:13.3f}" for c in cols))
    share = {c: med[c] / med["total"] for c in PHASES}
    print("share of the median run: " + ", ".join(f"{c} {share[c]:.0%}" for c in PHASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
