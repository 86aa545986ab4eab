"""Our metric vs the official procedure: same samples, same completions, interleaved; time and verdicts.

Official procedure (as the paper's harness does it): copy the whole repository to a temporary folder,
write the completed file, run the whole test suite with a 240 s timeout, and call the completion
correct when pytest exits 0.  Ours: `judge()` as the metric runs it (sandbox, the sample's judged
tests in their recorded order, stop at the first failure, the sample's time budget, known verdicts).

    .venv/bin/python benchmarks/bench_metric.py --samples out/full/samples.jsonl [--per-repo 2] [--repos 9]
    .venv/bin/python benchmarks/bench_metric.py --samples ... --repo tinydb --repo toolz  # another pick
    .venv/bin/python benchmarks/bench_metric.py --samples ... --selection suite    # agreement of our selection
    .venv/bin/python benchmarks/bench_metric.py --samples ... --suite-too  # both in one run (suite not timed)

Workload per sample (`benchmarks/workload.py`): ground truth, ground truth reformatted (same AST), null
fill, two wrong variants, one completion that never terminates.  Pairs run one after the other,
alternating which procedure goes first, so background load hits both alike.  Prints seconds and the
ratio per repository and overall, the agreement, and every disagreement with its reason: for each, the
official procedure on the unmodified repository and (when ours passed and the official failed) our
judge on the whole suite tell whether the official verdict is wrong or our selection missed a test.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from execrepobench_metric.environments.venvs import find_environment
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.process import run_command
from execrepobench_metric.execution.pytest_run import PytestInvocation, clean_env
from execrepobench_metric.execution.sandbox import decide_isolation
from execrepobench_metric.execution.verdict import JudgeConfig, Verdict

sys.path.insert(0, str(Path(__file__).parent))
from workload import workload  # noqa: E402
from _common import metric_budgets, spinning, verified_samples  # noqa: E402

OFFICIAL_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class Official:
    passed: bool
    reason: str  # "exit N" or "timeout"
    seconds: float


def official(sample, completion: str, timeout: float = OFFICIAL_TIMEOUT_S) -> Official:
    """Copy the repository, write the completed file, run the whole suite; pass = exit code 0."""
    t0 = time.monotonic()
    env = find_environment(sample.env_key)
    if env is None:
        raise SystemExit(f"environment {sample.env_key} missing: run `execrepobench prepare --dataset ...`")
    inv = PytestInvocation.from_test_command(sample.test_command, python=env.python, root=env.root, timeout_s=timeout)
    with tempfile.TemporaryDirectory(prefix="official-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(env.root, copy, symlinks=True)
        (copy / sample.file_name).write_text(sample.prefix_code + completion + sample.suffix_code, encoding="utf-8")
        run_env = clean_env(inv, home=Path(tmp))
        run_env["PYTHONPATH"] = f"{copy}:{copy / 'src'}"
        argv = [env.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *inv.pytest_args, *inv.test_paths]
        result = run_command(argv, cwd=copy, env=run_env, timeout_s=timeout)
    seconds = time.monotonic() - t0
    if result.timed_out:
        return Official(False, "timeout", seconds)
    return Official(result.returncode == 0, f"exit {result.returncode}", seconds)


def explain(sample, kind: str, ours: Verdict, theirs: Official, original: Official, conf: JudgeConfig,
            completion: str) -> str:
    """Why the two verdicts differ, from what can be checked."""
    if not theirs.passed and not original.passed:
        return (f"official verdict wrong: the unmodified repository already fails the whole-suite check "
                f"({original.reason}), so the official procedure fails every completion of it")
    if ours.passed:
        suite = judge(sample, completion, replace(conf, selection="suite"))
        if not suite.passed:
            return (f"selection missed it: our judge on the whole suite fails it too ({suite.reason}: "
                    f"{', '.join(suite.failing_tests[:3])})")
        return f"official {theirs.reason}, our judge passes it on the whole suite too (tests excluded at baseline?)"
    if ours.reason == "timeout":
        return f"ours timed out ({ours.detail}); official finished ({theirs.reason}) in {theirs.seconds:.1f} s"
    return f"ours {ours.reason}: {ours.detail or ', '.join(ours.failing_tests[:3])}"


def pick(path: Path, per_repo: int, repos: int, names: list[str] | None = None) -> list:
    """`per_repo` samples of each of the named repositories, or of the first `repos` by name."""
    by_repo: dict[str, list] = defaultdict(list)
    for s in verified_samples(path, 100_000):
        by_repo[s.repo_name].append(s)
    missing = sorted(set(names or ()) - set(by_repo))
    if missing:
        raise SystemExit(f"--repo: no verified samples of {', '.join(missing)} in {path}")
    chosen = list(dict.fromkeys(names)) if names else sorted(by_repo)[:repos]
    return [s for r in chosen for s in by_repo[r][:per_repo]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, required=True)
    ap.add_argument("--per-repo", type=int, default=2, help="samples per repository")
    ap.add_argument("--repos", type=int, default=9, help="repositories (the first by name that have samples)")
    ap.add_argument("--repo", action="append", default=None, metavar="NAME",
                    help="these repositories instead (repeatable; --repos is then ignored)")
    ap.add_argument("--selection", choices=("judged", "suite"), default="judged")
    ap.add_argument("--timeout", type=float, default=None,
                    help="our timeout (default: each sample's budgets, from the build's measurements)")
    ap.add_argument("--load", type=int, default=0, help="CPU-spinning processes while both procedures run")
    ap.add_argument("--suite-too", action="store_true",
                    help="also judge every completion by our judge on the whole suite (not timed): the agreement "
                         "figure of our test selection, in the same run")
    ap.add_argument("--json", type=Path, default=None, help="also write every row here")
    args = ap.parse_args()
    samples = pick(args.samples, args.per_repo, args.repos, args.repo)
    if not samples:
        print("no verified samples in", args.samples, file=sys.stderr)
        return 2
    conf = JudgeConfig(isolation=decide_isolation(allow_weak=False)[0], timeout_s=args.timeout,
                       selection=args.selection, canaries=True)  # as the metric judges: with canary tests
    budgets = metric_budgets(args.samples, samples, args.timeout, note=f"; load {args.load}")
    work = [(s, kind, c) for s in samples for kind, c in workload(s)]
    rows, originals = [], {}
    with spinning(args.load):
        for i, (s, kind, c) in enumerate(work):
            rows.append(_pair(i, len(work), s, kind, c, conf, budgets.get(s.sample_id), args.suite_too, originals))
    report(rows, originals, conf, args)
    return 0


def _pair(i: int, n: int, s, kind: str, c: str, conf: JudgeConfig, budget, suite_too: bool, originals: dict) -> dict:
    """One completion judged by both procedures, alternating which goes first."""
    pair = {}
    for which in (("ours", "official") if i % 2 == 0 else ("official", "ours")):
        t0 = time.monotonic()
        pair[which] = judge(s, c, conf, budget=budget) if which == "ours" else official(s, c)
        pair[which + "_s"] = time.monotonic() - t0
    if suite_too:
        pair["suite"] = judge(s, c, replace(conf, selection="suite"))
    if kind == "ground_truth":
        originals[s.sample_id] = pair["official"]
    print(f"[{i + 1}/{n}] {s.repo_name} {kind}: ours {pair['ours'].reason} {pair['ours_s']:.1f} s, "
          f"official {pair['official'].reason} {pair['official_s']:.1f} s", file=sys.stderr, flush=True)
    return {"sample": s, "kind": kind, "completion": c, **pair}


def report(rows: list[dict], originals: dict, conf: JudgeConfig, args) -> None:
    per_repo: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        per_repo[r["sample"].repo_name].append(r)
    print(f"{len({r['sample'].sample_id for r in rows})} samples of {len(per_repo)} repositories, {len(rows)} "
          f"completions, selection={args.selection}, sequential, interleaved")
    print(f"{'repository':20}{'n':>4}{'ours s':>10}{'official s':>12}{'ratio':>8}{'agree':>8}")
    for repo, got in sorted(per_repo.items()):
        ours, theirs = sum(r["ours_s"] for r in got), sum(r["official_s"] for r in got)
        agree = sum(r["ours"].passed == r["official"].passed for r in got)
        print(f"{repo:20}{len(got):4d}{ours:10.1f}{theirs:12.1f}{theirs / ours:8.1f}x{agree:5d}/{len(got)}")
    ours, theirs = sum(r["ours_s"] for r in rows), sum(r["official_s"] for r in rows)
    agree = sum(r["ours"].passed == r["official"].passed for r in rows)
    print(f"{'ALL':20}{len(rows):4d}{ours:10.1f}{theirs:12.1f}{theirs / ours:8.1f}x{agree:5d}/{len(rows)}"
          f"  agreement {agree / len(rows):.1%}")
    kinds = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        k = kinds[r["kind"]]
        k[0] += r["ours_s"]
        k[1] += r["official_s"]
        k[2] += 1
    print("per kind (ours s / official s / n): " + "; ".join(f"{k} {v[0]:.1f}/{v[1]:.1f}/{v[2]}" for k, v in kinds.items()))
    if args.suite_too:
        same = sum(r["ours"].passed == r["suite"].passed for r in rows)
        vs_official = sum(r["suite"].passed == r["official"].passed for r in rows)
        print(f"our selection vs our whole suite: {same}/{len(rows)} agree ({same / len(rows):.1%}); "
              f"our whole suite vs official: {vs_official}/{len(rows)} ({vs_official / len(rows):.1%})")
        for r in rows:
            if r["ours"].passed != r["suite"].passed:
                s = r["sample"]
                print(f"  selection differs: {s.repo_name} {s.sample_id[:12]} [{r['kind']}] judged={r['ours'].reason} "
                      f"suite={r['suite'].reason} {', '.join(r['suite'].failing_tests[:3])}")
    diffs = [r for r in rows if r["ours"].passed != r["official"].passed]
    print(f"disagreements: {len(diffs)}")
    for r in diffs:
        s = r["sample"]
        why = explain(s, r["kind"], r["ours"], r["official"], originals.get(s.sample_id, r["official"]), conf,
                      r["completion"])
        print(f"  {s.repo_name} {s.sample_id[:12]} {s.file_name} [{r['kind']}] ours={r['ours'].reason} "
              f"official={r['official'].reason}: {why}")
    if args.json:
        args.json.write_text("".join(json.dumps({
            "repo": r["sample"].repo_name, "sample_id": r["sample"].sample_id, "kind": r["kind"],
            "ours": r["ours"].reason, "ours_passed": r["ours"].passed, "ours_s": round(r["ours_s"], 3),
            "official": r["official"].reason, "official_passed": r["official"].passed,
            "official_s": round(r["official_s"], 3), "detail": r["ours"].detail,
            "suite": r["suite"].reason if "suite" in r else None}) + "\n" for r in rows))


if __name__ == "__main__":
    sys.exit(main())
