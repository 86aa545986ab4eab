"""Are kept samples valid on their own?  Judge each picked sample's ground truth on its judged tests, as
evaluation runs them (the CPU budgets `compute()` derives from the build's measurements; known verdicts off:
the run is made), and print every one that does not pass.

Verification shares ground-truth runs between candidates; this checks that what it kept passes alone.

    .venv/bin/python benchmarks/check_ground_truths.py --samples out/samples.jsonl [--per-repo 4] [--workers 2]

Exit status 1 when any picked ground truth does not pass.
"""
from __future__ import annotations

import argparse
import random
import sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import metric_budgets
from execrepobench_dataset.record import Sample, read_jsonl
from execrepobench_metric.execution.judge import judge_safely
from execrepobench_metric.execution.verdict import JudgeConfig


def pick(path: Path, per_repo: int, seed: int) -> list[Sample]:
    by_repo: dict[str, list[Sample]] = defaultdict(list)
    for s in read_jsonl(path):
        by_repo[s.repo_name].append(s)
    rng = random.Random(seed)
    return [s for repo in sorted(by_repo) for s in rng.sample(by_repo[repo], min(per_repo, len(by_repo[repo])))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=Path, required=True)
    ap.add_argument("--per-repo", type=int, default=4, help="random samples per repository (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    samples = pick(args.samples, args.per_repo or 10**9, args.seed)
    config = JudgeConfig(known_verdicts=False)
    budgets = metric_budgets(args.samples, samples)
    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        verdicts = list(pool.map(lambda s: judge_safely(s, s.middle_code, config, budget=budgets.get(s.sample_id)),
                                 samples))
    reasons = Counter(v.reason for v in verdicts)
    for s, v in zip(samples, verdicts):
        if not v.passed:
            print(f"{s.repo_name} {s.file_name} {s.sample_id}: {v.reason}: {', '.join(v.failing_tests[:2])} "
                  f"{v.detail[:160]}".rstrip())
    bad = len(samples) - reasons.get("passed", 0)
    print(f"{len(samples)} ground truths from {len({s.repo_name for s in samples})} repositories: "
          f"{reasons.get('passed', 0)} pass on their own, {bad} do not ({dict(reasons)})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
