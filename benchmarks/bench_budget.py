"""Do correct completions stay within their samples' time budgets when the machine is loaded?

    .venv/bin/python benchmarks/bench_budget.py --samples out/full/samples.jsonl [--load 4] [--limit 60]

For every verified sample (round-robin over repositories): the ground truth reformatted (same AST,
other bytes, so it really runs) judged with the sample's budget (`time_budget_s`, CPU seconds, plus the
wall-clock backstop), one run at a time while `--load` processes spin on the CPU (on a 2-core machine,
load 4 gives each run about a third of a core).  Prints how many runs were stopped by the budget
(target: none), and per run the CPU seconds it used against its budget, the largest ratio first: the
pytest process's own and its waited-for children's, as our collection plugin records them at the end of
the session (a run stopped before that shows none).
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

from execrepobench.builder.workload import reformatted
from execrepobench_metric.budget import run_limits
from execrepobench_metric.isolation import decide_isolation
from execrepobench_metric.judge import JudgeConfig, judge

sys.path.insert(0, str(Path(__file__).parent))
from _common import verified_samples  # noqa: E402


def _spin() -> None:
    # A session of its own: with the kernel's autogroup scheduling (sched_autogroup_enabled) CPU time is
    # shared between sessions first, and the sandbox starts each run in a new session, so spinners left in
    # this one would share a single group's share and hardly load the run at all.
    os.setsid()
    while True:
        pass


def run_cpu(evidence: Path) -> float:
    """CPU seconds the judged run recorded (the collection plugin's `.done` record), NaN when it has none.
    (RUSAGE_CHILDREN here would not see them: the sandbox's processes are not this process's to wait for.)"""
    try:
        return float(json.loads((evidence / "collected.json.done").read_text(encoding="utf-8"))["cpu_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return math.nan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--load", type=int, default=4, help="CPU-spinning processes while judging")
    args = ap.parse_args()
    samples = [s for s in verified_samples(args.samples, 10_000) if s.time_budget_s > 0][:args.limit]
    if not samples:
        print("no verified samples with a time budget in", args.samples, file=sys.stderr)
        return 2
    conf = JudgeConfig(isolation=decide_isolation(allow_weak=False)[0])
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)]
    for p in spinners:
        p.start()
    rows = []
    try:
        for s in samples:
            completion = reformatted(s)
            if completion is None:
                continue
            with tempfile.TemporaryDirectory(prefix="erb-budget-") as ev:
                t0 = time.monotonic()
                v = judge(s, completion, conf, evidence=Path(ev))
                cpu, wall = run_cpu(Path(ev)), time.monotonic() - t0
            backstop = run_limits(s.time_budget_s, None, conf.limits)[0]
            rows.append((cpu / s.time_budget_s, wall / backstop, s, v, cpu, wall))
    finally:
        for p in spinners:
            p.kill()
    over = [r for r in rows if r[3].reason == "timeout"]
    failed = [r for r in rows if not r[3].passed]
    print(f"{len(rows)} reformatted ground truths judged with their budgets under load {args.load} "
          f"(machine: {multiprocessing.cpu_count()} cores)")
    print(f"stopped by the budget: {len(over)}; not passed for any reason: {len(failed)}")
    print(f"{'repo':18}{'cpu s':>8}{'budget':>8}{'cpu/budget':>12}{'wall s':>8}{'wall/backstop':>15}  verdict")
    for ratio, wratio, s, v, cpu, wall in sorted(rows, key=lambda r: -r[0] if not math.isnan(r[0]) else math.inf)[:15]:
        print(f"{s.repo_name:18}{cpu:8.2f}{s.time_budget_s:8.1f}{ratio:12.2f}{wall:8.1f}{wratio:15.2f}  {v.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
