"""Throughput of the Ray executor against the local one, same samples and completions, on this machine.

    .venv/bin/python benchmarks/bench_ray.py                      # builds the fixture repository first
    .venv/bin/python benchmarks/bench_ray.py --samples out/quickstart/build/samples.jsonl --limit 12
    .venv/bin/python benchmarks/bench_ray.py --ray-address auto   # an existing cluster instead

Judges ground truth + null fill of each sample with `compute(executor="local")` (a thread pool of
--workers) and `compute(executor="ray")` on a Ray instance started here with as many CPUs (or the
cluster at --ray-address), result cache off, each --repeat times, alternating.  Prints judgements
per minute of both, the ratio, Ray's start-up time and its overhead per judgement.  On one machine
Ray cannot be faster than the threads: the point is that it is close and what it costs.
Needs bubblewrap and the `ray` extra; with --samples, the repositories.jsonl beside them.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from execrepobench_metric.api import compute
from execrepobench_metric.execution.fills import null_fill

sys.path.insert(0, str(Path(__file__).parent))
from _common import verified_samples  # noqa: E402

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "minirepo"


def build_fixture(out: Path) -> Path:
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import parse_manifest

    text = f'[[repo]]\nsource = "path:{FIXTURE}"\nname = "minirepo"\nsamples_per_repo = 6\n'
    summary = build(BuildConfig(manifest=parse_manifest(text, out), out=out, baseline_runs=1, progress=False))
    if summary["repos"][0]["status"] != "ok":
        raise SystemExit(f"fixture build failed: {summary['repos'][0]}")
    return out / "samples.jsonl"


def timed(samples, comps, dataset: Path, **kwargs) -> tuple[float, list]:
    t0 = time.monotonic()
    out = compute(comps, samples, dataset=str(dataset), allow_exec=True, use_cache=False, progress=False, **kwargs)
    rows = sorted((d["sample_id"], d["completion_index"], d["passed"], d["reason"]) for d in out["details"])
    return time.monotonic() - t0, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, default=None, help="default: build the fixture repository first")
    ap.add_argument("--limit", type=int, default=12, help="samples used (2 completions each)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local threads = Ray CPUs")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--ray-address", default=None, help="an existing cluster (default: start Ray here)")
    args = ap.parse_args()
    import ray

    tmp = tempfile.TemporaryDirectory(prefix="bench-ray-")
    path = args.samples or build_fixture(Path(tmp.name) / "out")
    samples = verified_samples(path, args.limit)
    if not samples:
        print("no verified samples in", path, file=sys.stderr)
        return 2
    comps = [[s.middle_code, null_fill(s) or "pass"] for s in samples]
    n = sum(len(c) for c in comps)
    t0 = time.monotonic()
    if args.ray_address:
        ray.init(address=args.ray_address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.workers, log_to_driver=False, include_dashboard=False)
    start_s = time.monotonic() - t0
    cpus = int(ray.cluster_resources().get("CPU", 0))
    first_s, first_rows = timed(samples, comps, path.parent, executor="ray")  # nodes check their environments
    local_s, ray_s = [], []
    for i in range(args.repeat):
        for which in (("local", "ray") if i % 2 == 0 else ("ray", "local")):
            took, rows = timed(samples, comps, path.parent, executor=which, num_workers=args.workers)
            if rows != first_rows:
                print(f"verdicts differ between local and ray ({which})", file=sys.stderr)
                return 1
            (local_s if which == "local" else ray_s).append(took)
    ray.shutdown()
    local, remote = statistics.median(local_s), statistics.median(ray_s)
    print(f"{len(samples)} samples, {n} judgements per run, {args.workers} local threads vs "
          f"{cpus} Ray CPUs, median of {args.repeat}; verdicts identical")
    print(f"local    : {local:7.1f} s  {60 * n / local:7.1f} judgements/min")
    print(f"ray      : {remote:7.1f} s  {60 * n / remote:7.1f} judgements/min")
    print(f"ratio    : ray/local throughput {local / remote:.2f}")
    print(f"overhead : {1000 * (remote - local) / n:+.0f} ms per judgement; Ray start {start_s:.1f} s; "
          f"first run (nodes check environments) {first_s:.1f} s")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
