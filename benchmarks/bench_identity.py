"""Is a build's identity content only?  Two builds of one manifest, the second with an empty cache at
another path and CPU-spinning processes running, must give byte-identical samples and one fingerprint.

    .venv/bin/python benchmarks/bench_identity.py --quickstart --out /tmp/identity [--load 4]
    .venv/bin/python benchmarks/bench_identity.py --out /tmp/identity --repo toolz --repo wsproto --repo xmltodict
    .venv/bin/python benchmarks/bench_identity.py --out /tmp/identity --a out/full --repo toolz ...  # A: a build made before

Each build runs `execrepobench build` in its own process with its own EXECREPOBENCH_CACHE (A quiet, B
under `--load` spinners, each in a session of its own).  Prints, per build, the wall time, the
fingerprints and the release-lock check; then whether `samples.jsonl` is byte-identical, which
repositories differ if not, and how much the two machines' measurements (kept apart from the samples)
differ: the ratio B/A of the measured CPU seconds.  Exit status 0 when the two builds are identical.
"""
from __future__ import annotations

import argparse
import hashlib
from dataclasses import replace
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from execrepobench.builder.release.release_lock import repo_digests
from execrepobench_dataset.load import open_dataset

sys.path.insert(0, str(Path(__file__).parent))
from _common import spinning  # noqa: E402


def build(out: Path, cache: Path, manifest_args: list[str], load: int) -> float:
    env = {**os.environ, "EXECREPOBENCH_CACHE": str(cache)}
    cmd = [str(Path(sys.executable).parent / "execrepobench"), "build", *manifest_args, "--out", str(out),
           "--no-progress"]
    t0 = time.monotonic()
    with spinning(load):
        done = subprocess.run(cmd, env=env)
    if done.returncode not in (0,):
        raise SystemExit(f"build into {out} exited {done.returncode}")
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="work folder: a/, b/ (builds) and cache-a/, cache-b/")
    ap.add_argument("--quickstart", action="store_true", help="the packaged quickstart manifest")
    ap.add_argument("--manifest", type=Path, default=None, help="another manifest (default: the packaged default)")
    ap.add_argument("--repo", action="append", default=[], help="only these repositories (repeatable)")
    ap.add_argument("--load", type=int, default=4, help="CPU-spinning processes during the second build")
    ap.add_argument("--a", type=Path, default=None,
                    help="use this finished build (of the same manifest) as build A; with --repo, its repositories "
                         "of that name are compared")
    args = ap.parse_args()
    manifest_args = (["--quickstart"] if args.quickstart else ["--manifest", str(args.manifest)] if args.manifest
                     else []) + [a for r in args.repo for a in ("--repo", r)]
    args.out.mkdir(parents=True, exist_ok=True)
    folders = {"a": args.a or args.out / "a", "b": args.out / "b"}
    wall = {"a": build(folders["a"], args.out / "cache-a", manifest_args, 0) if args.a is None else float("nan"),
            "b": build(folders["b"], args.out / "other-place" / "cache-b", manifest_args, args.load)}
    opened = {k: open_dataset(folders[k]) for k in ("a", "b")}
    if args.a is not None and args.repo:  # the repositories B built, from A's folder
        opened["a"] = replace(opened["a"], samples=tuple(s for s in opened["a"].samples if s.repo_name in args.repo),
                              repositories=tuple(r for r in opened["a"].repositories if r.repo_name in args.repo))
    raw = {k: b"".join((folders[k] / "repos" / name / "samples.jsonl").read_bytes()
                       for name in sorted({s.repo_name for s in opened[k].samples})) for k in ("a", "b")}
    for k in ("a", "b"):
        print(f"build {k}: {wall[k]:.0f} s (load {0 if k == 'a' else args.load}), {len(opened[k].samples)} samples, "
              f"fingerprint {opened[k].fingerprint}, samples.jsonl sha256 {hashlib.sha256(raw[k]).hexdigest()[:16]}")
    same = raw["a"] == raw["b"] and opened["a"].fingerprint == opened["b"].fingerprint
    print("samples (per repository files) byte-identical:", raw["a"] == raw["b"], "| same fingerprint:",
          opened["a"].fingerprint == opened["b"].fingerprint)
    da, db = repo_digests(opened["a"].samples), repo_digests(opened["b"].samples)
    for name in sorted(set(da) | set(db)):
        if da.get(name) != db.get(name):
            print(f"  differs: {name}")
    ma, mb = opened["a"].measurements_by_env(), opened["b"].measurements_by_env()
    ratios = [mb[k].samples[s].fixed_s / t.fixed_s for k in ma if k in mb for s, t in ma[k].samples.items()
              if t.fixed_s > 0 and s in mb[k].samples]
    if ratios:
        print(f"measured CPU seconds of each ground truth's run outside its tests, B/A: median "
              f"{statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f} ({len(ratios)} samples)"
              " - data about the machine, not part of the samples")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
