"""The in-process guard's cost per judged run, and the false positives of the blocklist it replaced.

    .venv/bin/python benchmarks/bench_guard.py --samples out/quickstart/build/samples.jsonl [--limit 16] [--rounds 5]

1. Overhead: each sample's ground truth is judged with the guard off and on, interleaved (off-on,
   then on-off, ...) so that load on a shared machine hits both alike, `--rounds` times; prints per
   repository the median seconds per judged run with and without the guard and their ratio, and the
   ratio of the summed medians over all samples.
2. False positives on honest completions: the ground truth, the ground truth re-spaced (tokens
   rejoined), and the ground truth with a comment / a string that names the old blocklist's words -
   counted for the old blocklist (regexes over the completion's text) and judged with the guard.
Needs samples made by `execrepobench build` (their environments in the cache) and bubblewrap.
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
import tokenize
from collections import defaultdict
from pathlib import Path

from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from agreement import compiles_in_place  # noqa: E402
from _common import verified_samples  # noqa: E402
from guard_attacks import old_blocklist_hits  # noqa: E402

PHRASE = ("don't kill or fork the worker here: the signal handler, atexit hooks, ctypes, importlib, builtins, "
          "sys.modules and os._exit belong to pytest (see conftest and the junit report)")


def honest_variants(sample) -> dict[str, str]:
    """Completions with the ground truth's behaviour (only those that compile in place)."""
    gt = sample.middle_code
    out = {"ground truth": gt}
    try:
        toks = [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(gt).readline)]
        out["re-spaced"] = tokenize.untokenize(toks)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    lines = gt.split("\n")
    out["comment"] = "\n".join([lines[0] + f"  # {PHRASE}", *lines[1:]])
    indent = sample.prefix_code[len(sample.prefix_code.rstrip(" ")):]
    out["string"] = f"_note = {PHRASE!r}\n{indent}{gt}"
    return {k: v for k, v in out.items() if compiles_in_place(sample, v)}


def overhead(samples, rounds: int, timeout: float) -> None:
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    failures = []
    for r in range(rounds):
        for s in samples:
            for mode in (("off", "enforce") if r % 2 == 0 else ("enforce", "off")):
                t0 = time.monotonic()
                # known_verdicts=False: the ground truth really runs (its verdict is otherwise known from verification)
                v = judge(s, s.middle_code, JudgeConfig(timeout_s=timeout, guard=mode, known_verdicts=False))
                times[(s.sample_id, mode)].append(time.monotonic() - t0)
                if not v.passed:
                    failures.append((s.sample_id, mode, v.reason, v.detail[:120]))
    by_repo: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for s in samples:
        by_repo[s.repo_name].append((statistics.median(times[(s.sample_id, "off")]),
                                     statistics.median(times[(s.sample_id, "enforce")])))
    print(f"guard overhead per judged run ({len(samples)} samples x {rounds} rounds, ground truth, interleaved; "
          "the machine may be shared: compare the ratios, measured together)")
    print(f"{'repo':<16}{'samples':>8}{'off s':>10}{'on s':>10}{'on/off':>9}")
    for repo, pairs in sorted(by_repo.items()):
        off, on = sum(p[0] for p in pairs) / len(pairs), sum(p[1] for p in pairs) / len(pairs)
        print(f"{repo:<16}{len(pairs):>8}{off:>10.3f}{on:>10.3f}{on / off:>9.3f}")
    off = sum(p[0] for ps in by_repo.values() for p in ps)
    on = sum(p[1] for ps in by_repo.values() for p in ps)
    print(f"{'all':<16}{len(samples):>8}{off / len(samples):>10.3f}{on / len(samples):>10.3f}{on / off:>9.3f}"
          f"   (overhead {100 * (on / off - 1):+.1f}%)")
    print(f"ground truth not passed: {len(failures)} judged runs" + (f", e.g. {failures[:3]}" if failures else ""))


def false_positives(samples, all_samples, timeout: float) -> None:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in all_samples:
        for kind, completion in honest_variants(s).items():
            counts[kind][0] += 1
            counts[kind][1] += bool(old_blocklist_hits(completion, s.original_code))
    print("\nold blocklist on honest completions (every sample in the file):")
    for kind, (n, hit) in counts.items():
        print(f"  {kind:<14} {hit:>4} / {n:<4} failed as tampering")
    judged = passed = 0
    others = []
    for s in samples:
        for kind, completion in honest_variants(s).items():
            if kind in ("comment", "string"):
                judged += 1
                v = judge(s, completion, JudgeConfig(timeout_s=timeout))
                passed += v.passed
                if not v.passed:
                    others.append((s.sample_id, kind, v.reason, v.detail[:200]))
    print(f"guard on the comment/string variants: {passed} / {judged} passed")
    for row in others:
        print("  not passed:", *row)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    from execrepobench_dataset.record import read_jsonl

    samples = verified_samples(args.samples, args.limit)
    if not samples:
        print("no verified samples in", args.samples, file=sys.stderr)
        return 2
    probe = judge(samples[0], samples[0].middle_code, JudgeConfig(timeout_s=args.timeout))
    if probe.reason == "error":
        print(f"cannot judge: {probe.detail}", file=sys.stderr)
        return 2
    overhead(samples, args.rounds, args.timeout)
    false_positives(samples, [s for s in read_jsonl(args.samples) if s.judged_tests], args.timeout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
