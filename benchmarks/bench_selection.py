"""Selection safety and speed on real repositories: every verified sample is judged with several
completions (ground truth, null fill, wrong variants) both with its selected tests and with the
whole suite; prints the agreement rate (target >= 99%), each disagreement with its cause, and the
median run time of a selected run vs a whole-suite run.

    .venv/bin/python benchmarks/bench_selection.py --samples out/full/samples.jsonl [--limit 40]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from execrepobench_metric.execution.sandbox import decide_isolation
from execrepobench_metric.execution.verdict import JudgeConfig

sys.path.insert(0, str(Path(__file__).parent))
from agreement import agreement  # noqa: E402
from _common import verified_samples  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=40, help="samples, spread over repositories")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    picked = verified_samples(args.samples, args.limit)
    report = agreement(picked, JudgeConfig(isolation=decide_isolation(allow_weak=False)[0], timeout_s=300), workers=args.workers)
    print(json.dumps({k: v for k, v in report.items() if k != "disagreements"}, indent=1))
    sel, suite = report["median_selected_s"], report["median_suite_s"]
    if sel and suite:
        print(f"median run: selected {sel:.2f} s vs whole suite {suite:.2f} s -> {suite / sel:.2f}x")
    for d in report["disagreements"]:
        print(f"DISAGREE {d['sample_id']} {d['file_name']} rule={d['rule']} variant={d['variant']}: "
              f"selected {d['selected_reason']} vs suite {d['suite_reason']}")
    return 0 if report["agreement"] is None or report["agreement"] >= 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
