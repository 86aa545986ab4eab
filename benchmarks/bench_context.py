"""Benchmark: one RepoContextIndex per repository vs a fresh index per sample.

Run on demand (print only):  .venv/bin/python benchmarks/bench_context.py [--repo DIR] [--per-file 3]

Default repository: the installed `datasets` package (its .py files, keyed "datasets/...").  For each
file, --per-file random line-span cut points (fixed seed) make the samples.  The shared index ranks all
samples; the fresh path (tokenize every file + build BM25 per sample, as a naive builder would) is
timed on a random subset of at most --fresh-max samples and extrapolated, to keep the default run short.
Both paths must return the same ranking on that subset.
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import random
import time

from execrepobench.builder.sampling.context import RepoContextIndex


def load_repo(repo: str | None) -> dict[str, str]:
    if repo:
        root = pathlib.Path(repo)
        files = sorted(root.rglob("*.py"))
    else:
        spec = importlib.util.find_spec("datasets")
        if spec is None or not spec.origin:
            raise SystemExit("`datasets` is not installed; pass --repo DIR")
        root = pathlib.Path(spec.origin).parent.parent
        files = sorted((root / "datasets").rglob("*.py"))
    out = {}
    for p in files:
        try:
            out[p.relative_to(root).as_posix()] = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def make_samples(files: dict[str, str], per_file: int, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    samples = []
    for name in sorted(files):
        lines = files[name].splitlines(keepends=True)
        if len(lines) < 2:
            continue
        for _ in range(per_file):
            start = rng.randrange(len(lines))
            end = min(len(lines), start + rng.randint(1, 5))
            samples.append((name, "".join(lines[:start]), "".join(lines[end:])))
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", help="directory of a repository (default: installed `datasets` package)")
    ap.add_argument("--per-file", type=int, default=3, help="cut points per file")
    ap.add_argument("--fresh-max", type=int, default=25, help="samples timed with a fresh index each")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    files = load_repo(args.repo)
    samples = make_samples(files, args.per_file, args.seed)
    print(f"repository: {len(files)} files, {sum(map(len, files.values())) / 1e6:.2f} MB; {len(samples)} samples")

    t0 = time.perf_counter()
    index = RepoContextIndex(files)
    t_build = time.perf_counter() - t0
    shared = [index.rank(*s) for s in samples]
    t_shared = time.perf_counter() - t0
    print(f"shared index: {t_shared:.2f} s total ({t_build:.2f} s tokenizing), "
          f"{t_shared / len(samples) * 1e3:.1f} ms/sample; stats {index.stats}")

    subset = sorted(random.Random(args.seed + 1).sample(range(len(samples)), min(args.fresh_max, len(samples))))
    tokenized = built = 0
    t0 = time.perf_counter()
    for i in subset:
        fresh = RepoContextIndex(files)
        got = fresh.rank(*samples[i])
        tokenized += fresh.stats["files_tokenized"]
        built += fresh.stats["bm25_built"]
        assert got == shared[i], f"fresh and shared rankings differ for {samples[i][0]}"
    t_fresh = time.perf_counter() - t0
    per_fresh = t_fresh / len(subset)
    est = per_fresh * len(samples)
    print(f"fresh index per sample: {t_fresh:.2f} s for {len(subset)} samples, {per_fresh * 1e3:.1f} ms/sample; "
          f"estimated {est:.1f} s for all {len(samples)}; files tokenized {tokenized} "
          f"(~{len(files) * len(samples)} for all), BM25 built {built}")
    print(f"files tokenized: shared {index.stats['files_tokenized']} vs fresh {len(files) * len(samples)} (all samples)")
    print(f"speed-up (fresh / shared, all samples): {est / t_shared:.1f}x; rankings identical on {len(subset)} samples")


if __name__ == "__main__":
    main()
