"""Do canaries ever go off in an honest run for a reason of their own?  Judge, as the metric does (guard
enforcing, canaries planted, the CPU budgets `compute()` derives from the build's measurements, known verdicts
off), each picked sample's ground truth and its honest wrong completions (null fill, AST mutants: an operator
swapped, a constant off by one, a condition negated) and reformatted ground truth, `--rounds` times each (fresh
canaries every run), and count what the canaries said.

    .venv/bin/python benchmarks/bench_canaries.py --samples out/samples.jsonl [--per-repo 8] [--rounds 2]

Honest runs must give: no `tampering`, no canary check `off`, `fired` or made again (`rerun`), and every
passing run's canaries `held`.  Prints one line per run that does not, then the totals; exit status 1 then.
The Done-when figure of issue 36 is >= 1,000 such runs with 0 off.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the honest corpus's completions

from _common import metric_budgets  # noqa: E402
from check_ground_truths import pick  # noqa: E402
from honest_corpus import honest_completions  # noqa: E402

from execrepobench_metric.execution.judge import judge_safely  # noqa: E402
from execrepobench_metric.execution.verdict import JudgeConfig  # noqa: E402


def state_of(canaries: str) -> str:
    """held / off / fired / rerun (made again with fresh canaries) / "" (none planted)."""
    if "after a rerun with fresh canaries" in canaries:
        return "rerun"
    return canaries.split(":")[0].split(" (")[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=Path, required=True)
    ap.add_argument("--per-repo", type=int, default=8, help="random samples per repository (0: all)")
    ap.add_argument("--rounds", type=int, default=2, help="judgements of each completion (fresh canaries each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    samples = pick(args.samples, args.per_repo or 10**9, args.seed)
    config = JudgeConfig(known_verdicts=False, canaries=True)
    budgets = metric_budgets(args.samples, samples)
    work = [(s, kind, c) for s in samples for kind, c in [("truth", s.middle_code), *honest_completions(s)]
            for _ in range(args.rounds)]
    start = time.monotonic()
    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        verdicts = list(pool.map(lambda w: judge_safely(w[0], w[2], config, budget=budgets.get(w[0].sample_id)),
                                 work))
    states, reasons, bad = Counter(), Counter(), 0
    for (s, kind, _), v in zip(work, verdicts):
        state = state_of(v.canaries)
        states[state] += 1
        reasons[v.reason] += 1
        wrong = v.reason == "tampering" or state in ("off", "fired", "rerun") or (v.passed and state != "held")
        if wrong:
            bad += 1
            print(f"{s.repo_name} {s.file_name} {s.sample_id} {kind}: {v.reason}: {v.canaries} {v.detail[:200]}")
    repos = len({s.repo_name for s in samples})
    truths = Counter(v.reason for (_, kind, _), v in zip(work, verdicts) if kind == "truth")
    print(f"{len(work)} judged honest runs ({len(samples)} samples, {repos} repositories, {args.rounds} rounds) in "
          f"{time.monotonic() - start:.0f} s: verdicts {dict(reasons)}; canaries {dict(states)}; "
          f"{bad} run(s) where the canaries went off, fired or were made again; ground truths {dict(truths)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
