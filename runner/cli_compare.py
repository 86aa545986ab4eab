"""`execrepobench compare`: a leaderboard over result folders of one dataset (see compare.py)."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR",
                   help="result folders of `execrepobench run` / `evaluate` (metrics.json + results.jsonl), "
                        "all of one dataset")
    p.add_argument("--out", type=Path, required=True,
                   help="folder for leaderboard.md, leaderboard.html and comparison.json")
    p.add_argument("--resamples", type=int, default=None,
                   help="bootstrap resamples and permutations, at least 100 (default 10000)")
    p.add_argument("--seed", type=int, default=None, help="seed of the resampling, >= 0 (default 0)")
    p.add_argument("--name", action="append", default=None, metavar="NAME",
                   help="display name of a run, once per RUN_DIR in their order (default: the model as run)")


def run_compare(args: argparse.Namespace) -> int:
    from .compare import DEFAULT_RESAMPLES, DEFAULT_SEED, check_settings, write_comparison

    resamples = DEFAULT_RESAMPLES if args.resamples is None else args.resamples
    seed = DEFAULT_SEED if args.seed is None else args.seed
    check_settings(resamples, seed, ("--resamples", "--seed"))
    result = write_comparison(args.runs, args.out, resamples, seed, args.name)
    for m in result["models"]:
        low, high = m["pass@1_ci95"]
        print(f"{('=' if m['tied'] else '') + str(m['rank']):>3}  {m['label']:40}  pass@1 {100 * m['pass@1']:5.1f}%  "
              f"[{100 * low:5.1f}, {100 * high:5.1f}]  ES {100 * m['es']:5.1f}%")
    if result["note"]:
        print(result["note"])
    print(f"compared on {result['samples']['compared']} samples; wrote {args.out}/leaderboard.md, "
          "leaderboard.html, comparison.json")
    return 0


COMMANDS = {
    "compare": ("a leaderboard over result folders of one dataset: intervals and p-values", add_compare,
                run_compare),
}
