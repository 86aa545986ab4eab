"""`execrepobench live`: a dated snapshot of samples masked in code released after a date."""
from __future__ import annotations

import argparse
from pathlib import Path

from execrepobench_metric.defaults import LIVE_BASELINE_TIMEOUT_S


def add_live(p: argparse.ArgumentParser) -> None:
    p.add_argument("--after", required=True, metavar="YYYY-MM-DD",
                   help="releases uploaded on or before this day (UTC) are old: the baseline")
    p.add_argument("--before", default=None, metavar="YYYY-MM-DD",
                   help="the window's last day, inclusive (default: today, UTC)")
    p.add_argument("--candidates", type=Path, default=None,
                   help="candidate list: TOML [[candidate]] tables (name, note) or one name per line "
                        "(default: the packaged list)")
    p.add_argument("--candidate", action="append", default=[], metavar="NAME",
                   help="try only this project (repeatable; need not be on the list)")
    p.add_argument("--limit", type=int, default=None,
                   help="stop after the first N candidates with a release in the window")
    p.add_argument("--samples-per-repo", type=int, default=24, help="samples wanted per project (default 24)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--index-url", default=None,
                   help="the package index's simple API (default: $EXECREPOBENCH_INDEX_URL, else "
                        "https://pypi.org/simple/)")
    p.add_argument("--out", type=Path, required=True, help="output folder: an ordinary builder folder")
    p.add_argument("--baseline-timeout", type=float, default=LIVE_BASELINE_TIMEOUT_S,
                   help="seconds a baseline run may take before the candidate counts as suite_fails "
                        f"(default {LIVE_BASELINE_TIMEOUT_S:g})")
    p.add_argument("--allow-weak-sandbox", action="store_true",
                   help="without bubblewrap, run baselines and verification in the weak mode instead of refusing")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where each repository is built: local threads (default) or one Ray task per repository on "
                        "a cluster (pip install 'execrepobench[ray]'; each node keeps its own cache)")
    p.add_argument("--ray-address", default=None,
                   help="with --executor ray: 'auto', HOST:PORT, or unset (RAY_ADDRESS, else a local Ray instance)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run_live(args: argparse.Namespace) -> int:
    from execrepobench.builder.live.candidates import choose, load_candidates
    from execrepobench.builder.live.report import live_markdown
    from execrepobench.builder.live.snapshot import LiveConfig, snapshot
    from execrepobench.builder.live.window import Window
    from execrepobench_dataset.errors import UsageError
    from execrepobench_metric.execution.surface import ExecutorConfig

    window = Window.of(args.after, args.before)
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit must be a positive integer, got {args.limit}")
    if args.samples_per_repo < 1:
        raise UsageError(f"--samples-per-repo must be a positive integer, got {args.samples_per_repo}")
    candidates = choose(load_candidates(args.candidates), tuple(args.candidate))
    config = LiveConfig(window=window, out=args.out, candidates=candidates,
                        candidates_name=args.candidates.name if args.candidates else "candidates.toml",
                        named=bool(args.candidate), limit=args.limit, samples_per_repo=args.samples_per_repo,
                        seed=args.seed, index_url=args.index_url, progress=not args.no_progress,
                        allow_weak_sandbox=args.allow_weak_sandbox, baseline_timeout_s=args.baseline_timeout,
                        build_options={"executor": ExecutorConfig(args.executor, args.ray_address)})
    summary = snapshot(config)
    print(live_markdown(summary["live"]))
    print(f"wrote {args.out / 'samples.jsonl'} and {args.out / 'build_report.md'} (config "
          f"{window.config_name} when published)")
    return 0 if summary["live"]["totals"]["samples"] else 1


COMMANDS = {
    "live": ("build a dated snapshot: samples masked only in code released after a date", add_live, run_live),
}
