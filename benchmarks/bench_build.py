"""Build time per repository, step by step, from a real build of a few manifest repositories.

    .venv/bin/python benchmarks/bench_build.py [--repo toolz --repo schema] [--samples-per-repo 8]

Prints, per repository: fetch, environment, baseline (3 runs + id-stability collections), coverage,
masking + context, verification seconds, and the share of the repository's time spent outside its
own test runs.  The first run of a repository includes the download and the environment; run it
twice to see the cached (second-run) cost.  For the BM25 saving of indexing once per repository
versus per sample, run `benchmarks/bench_context.py --repo <unpacked repo>` (it prints the ratio).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from execrepobench.builder.build import BuildConfig, build
from execrepobench.builder.sources.manifest import default_manifest_path, load_manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", default=None, help="manifest repositories (default: 3 small ones)")
    ap.add_argument("--samples-per-repo", type=int, default=8)
    args = ap.parse_args()
    manifest = load_manifest(default_manifest_path())
    from dataclasses import replace

    manifest = replace(manifest, samples_per_repo=args.samples_per_repo,
                       repos=tuple(replace(r, samples_per_repo=None) for r in manifest.repos))
    with tempfile.TemporaryDirectory() as tmp:
        summary = build(BuildConfig(manifest=manifest, out=Path(tmp), only=tuple(args.repo or ("schema", "inflection", "toolz"))))
    steps = ("fetch_s", "env_s", "baseline_s", "samples_s", "coverage_s", "verify_s")
    print(f"{'repo':16}" + "".join(f"{s[:-2]:>10}" for s in steps) + f"{'total':>9}{'samples':>9}")
    for r in summary["repos"]:
        t = r.get("timings", {})
        print(f"{r['repo']:16}" + "".join(f"{t.get(s, 0):10.1f}" for s in steps) + f"{r.get('time_s', 0):9.1f}"
              f"{r.get('samples', 0):9d}")
    total = sum(r.get("time_s", 0) for r in summary["repos"])
    masking = sum(r.get("timings", {}).get("samples_s", 0) for r in summary["repos"])
    print(f"masking + context ranking: {masking:.1f} s of {total:.1f} s ({masking / max(total, 1e-9):.1%})")


if __name__ == "__main__":
    main()
