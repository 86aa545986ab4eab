"""Samples judged per minute: our engine vs the official procedure, same samples and completions.

Official procedure (as the paper's harness does it): copy the whole repository to a temporary folder,
write the completed file, run the whole test suite, and call the completion correct when pytest
exits 0.  Ours: a private overlay view (no copy), only the sample's judged tests, verdict from junit.

    .venv/bin/python benchmarks/bench_metric.py --samples out/quickstart/samples.jsonl [--limit 20]

Needs samples made by `execrepobench build` (their environments in the cache) and bubblewrap.
Prints throughput of both, the ratio, and every verdict that differs, with both reasons.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from execrepobench.builder.agreement import mutants
from execrepobench_metric.environments import find_environment
from execrepobench_metric.fills import null_fill
from execrepobench_metric.isolation import decide_isolation
from execrepobench_metric.judge import JudgeConfig, judge
from execrepobench_metric.process import run_command
from execrepobench_metric.pytest_run import PytestInvocation, clean_env

sys.path.insert(0, str(Path(__file__).parent))
from _common import verified_samples  # noqa: E402


def official(sample, completion: str, timeout: float) -> tuple[bool, str]:
    env = find_environment(sample.env_key)
    if env is None:
        raise SystemExit(f"environment {sample.env_key} missing: run `execrepobench prepare --dataset ...`")
    python, root = env.python, env.root
    inv = PytestInvocation.from_test_command(sample.test_command, python=python, root=root, timeout_s=timeout)
    with tempfile.TemporaryDirectory(prefix="official-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(root, copy, symlinks=True)
        (copy / sample.file_name).write_text(sample.prefix_code + completion + sample.suffix_code, encoding="utf-8")
        env = clean_env(inv, home=Path(tmp))
        env["PYTHONPATH"] = f"{copy}:{copy / 'src'}"
        argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *inv.pytest_args, *inv.test_paths]
        result = run_command(argv, cwd=copy, env=env, timeout_s=timeout)
    if result.timed_out:
        return False, "timeout"
    return result.returncode == 0, f"exit {result.returncode}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=12, help="samples used (3-5 completions each)")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    samples = verified_samples(args.samples, args.limit)
    if not samples:
        print("no verified samples in", args.samples, file=sys.stderr)
        return 2
    work = []
    for s in samples:
        comps = [("ground_truth", s.middle_code)]
        fill = null_fill(s)
        if fill is not None:
            comps.append(("null", fill))
        comps += mutants(s, limit=2)
        work += [(s, kind, c) for kind, c in comps]
    conf = JudgeConfig(isolation=decide_isolation(allow_weak=False)[0], timeout_s=args.timeout)
    ours, theirs = [], []
    ours_s = theirs_s = 0.0
    # Interleaved (and alternating which goes first), so background load hits both procedures alike.
    for i, (s, _, c) in enumerate(work):
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            t0 = time.monotonic()
            if which == 0:
                ours.append(judge(s, c, conf))
                ours_s += time.monotonic() - t0
            else:
                theirs.append(official(s, c, args.timeout))
                theirs_s += time.monotonic() - t0
    n = len(work)
    print(f"{len(samples)} samples, {n} completions (ground truth, null, wrong variants), sequential, one core")
    print(f"ours     : {ours_s:7.1f} s  {60 * n / ours_s:7.1f} completions/min")
    print(f"official : {theirs_s:7.1f} s  {60 * n / theirs_s:7.1f} completions/min")
    print(f"speed-up : {theirs_s / ours_s:.2f}x")
    diffs = [(s, kind, o, t) for (s, kind, _), o, t in zip(work, ours, theirs) if o.passed != t[0]]
    print(f"verdicts that differ: {len(diffs)} of {n}")
    for s, kind, o, t in diffs:
        print(f"  {s.sample_id} {s.file_name} [{kind}] ours={'pass' if o.passed else 'fail'} ({o.reason}) "
              f"official={'pass' if t[0] else 'fail'} ({t[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
