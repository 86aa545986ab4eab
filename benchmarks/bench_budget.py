"""Do correct completions stay within their samples' time budgets when the machine is loaded?

    .venv/bin/python benchmarks/bench_budget.py --samples out/full/samples.jsonl [--load 4] [--limit 60]

For every verified sample (round-robin over repositories): the ground truth reformatted (same AST,
other bytes, so it really runs) judged with the budget derived from the build's measurements
(`measurements.jsonl` beside the samples: CPU seconds for the run, collection and each test, plus the
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
import sys
import tempfile
import time
from pathlib import Path

from execrepobench_dataset.load import open_dataset
from execrepobench_metric.execution.budget import budgets_for, run_limits
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.sandbox import decide_isolation
from execrepobench_metric.execution.verdict import JudgeConfig

sys.path.insert(0, str(Path(__file__).parent))
from workload import reformatted  # noqa: E402
from _common import spinning, verified_samples  # noqa: E402


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
    opened = open_dataset(args.samples)
    budgets = budgets_for(opened.samples, opened.measurements_by_env())
    samples = [s for s in verified_samples(args.samples, 10_000) if s.sample_id in budgets][:args.limit]
    if not samples:
        print("no verified samples with measurements (measurements.jsonl) in", args.samples, file=sys.stderr)
        return 2
    conf = JudgeConfig(isolation=decide_isolation(allow_weak=False)[0])
    rows = []
    with spinning(args.load):
        for s in samples:
            completion = reformatted(s)
            if completion is None:
                continue
            budget = budgets[s.sample_id]
            with tempfile.TemporaryDirectory(prefix="erb-budget-") as ev:
                t0 = time.monotonic()
                v = judge(s, completion, conf, evidence=Path(ev), budget=budget)
                cpu, wall = run_cpu(Path(ev)), time.monotonic() - t0
            backstop = run_limits(budget, None, conf.limits)[0]
            rows.append((cpu / budget.run_s, wall / backstop, s, v, cpu, wall, budget.run_s))
    over = [r for r in rows if r[3].reason == "timeout"]
    failed = [r for r in rows if not r[3].passed]
    print(f"{len(rows)} reformatted ground truths judged with their budgets under load {args.load} "
          f"(machine: {multiprocessing.cpu_count()} cores)")
    print(f"stopped by the budget: {len(over)}; not passed for any reason: {len(failed)}")
    print(f"{'repo':18}{'cpu s':>8}{'budget':>8}{'cpu/budget':>12}{'wall s':>8}{'wall/backstop':>15}  verdict")
    for ratio, wratio, s, v, cpu, wall, run_s in sorted(rows, key=lambda r: -r[0] if not math.isnan(r[0])
                                                       else math.inf)[:15]:
        print(f"{s.repo_name:18}{cpu:8.2f}{run_s:8.1f}{ratio:12.2f}{wall:8.1f}{wratio:15.2f}  {v.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
