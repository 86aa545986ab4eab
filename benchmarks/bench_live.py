"""Yield of a live snapshot over the whole packaged candidate list: per candidate what happened, how many samples
and how long it took; then the share of candidates with a release in the window that gave >= 1 verified sample
(goal >= 50%), the samples in total (goal >= 300) and the wall time.

    .venv/bin/python benchmarks/bench_live.py [--months 6] [--samples-per-repo 24] [--out DIR]

The window is the last --months months (the days after today minus that many months, through today, UTC).
Each candidate with a release in the window is built for real (sdists, uv environments, sandboxed baselines and
verification): on a 2-core machine this takes about an hour for the packaged list.  --out keeps the builder
folder (re-running with the same folder reuses finished projects).
"""
from __future__ import annotations

import argparse
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from execrepobench.builder.live.candidates import load_candidates
from execrepobench.builder.live.report import live_markdown
from execrepobench.builder.live.snapshot import LiveConfig, snapshot
from execrepobench.builder.live.window import Window


def months_ago(today, months: int):
    year, month = divmod(today.year * 12 + today.month - 1 - months, 12)
    return today.replace(year=year, month=month + 1, day=min(today.day, 28))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--months", type=int, default=6)
    ap.add_argument("--samples-per-repo", type=int, default=24)
    ap.add_argument("--out", type=Path, default=None, help="builder folder to keep (default: a temporary one)")
    args = ap.parse_args()
    today = datetime.now(timezone.utc).date()
    window = Window.of(months_ago(today, args.months).isoformat(), today.isoformat())
    with tempfile.TemporaryDirectory() as tmp:
        config = LiveConfig(window=window, out=args.out or Path(tmp), candidates=load_candidates(),
                            samples_per_repo=args.samples_per_repo, progress=False)
        live = snapshot(config)["live"]
    print(live_markdown(live))
    t = live["totals"]
    print(f"yield: {t['projects_with_samples']}/{t['with_release_in_window']} candidates with a release in the window "
          f"gave >= 1 verified sample ({(t['yield'] or 0):.0%}; goal >= 50%); {t['samples']} samples (goal >= 300); "
          f"wall {live['wall_s'] / 60:.1f} min")


if __name__ == "__main__":
    main()
