"""Subcommands that make and publish data: `instruct`, `import-official`, `publish`."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from execrepobench_metric.defaults import VERIFY_TIMEOUT_S


def add_instruct(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", type=Path, default=None, help="instruct manifest (default: the packaged one)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--benchmark-samples", type=Path, default=None,
                   help="the benchmark's samples.jsonl: its repositories are refused, its middles dropped")
    p.add_argument("--budget-chars", type=int, default=16000, help="characters of context + prefix + suffix")
    p.add_argument("--shard-rows", type=int, default=1000)
    p.add_argument("--no-progress", action="store_true")


def run_instruct(args: argparse.Namespace) -> int:
    from execrepobench.builder.instruct.instruct_build import build_instruct
    from execrepobench.builder.sources.manifest import instruct_manifest_path, load_manifest

    if args.benchmark_samples is None:
        print("warning: no --benchmark-samples: the corpus is not decontaminated", file=sys.stderr)
    report = build_instruct(load_manifest(args.manifest or instruct_manifest_path()), args.out,
                            benchmark_samples=args.benchmark_samples, budget_chars=args.budget_chars,
                            shard_rows=args.shard_rows, progress=not args.no_progress)
    print(json.dumps({"totals": report["totals"], "refused_repos": report["refused_repos"]}, indent=1))
    return 0


def add_import_official(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jsonl", type=Path, required=True, help="the official exec_repo_bench.jsonl")
    p.add_argument("--repos", type=Path, required=True, help="the unpacked repos.zip (one folder per repo_name)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--no-verify", action="store_true", help="convert only; do not verify ground truth / null fill")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--baseline-runs", type=int, default=3)
    p.add_argument("--gt-runs", type=int, default=3)
    p.add_argument("--python", default=None, help="interpreter version for the environments (X.Y)")
    p.add_argument("--timeout", type=float, default=VERIFY_TIMEOUT_S,
                   help=f"seconds per judged run (default {VERIFY_TIMEOUT_S:g})")
    p.add_argument("--no-progress", action="store_true")


def run_import_official(args: argparse.Namespace) -> int:
    from execrepobench.builder.official import OFFICIAL_SETTINGS, import_official

    settings = replace(OFFICIAL_SETTINGS, verify=not args.no_verify, workers=args.workers,
                       progress=not args.no_progress, baseline_runs=args.baseline_runs, gt_runs=args.gt_runs,
                       judge_timeout_s=args.timeout)
    report = import_official(args.jsonl, args.repos, args.out, settings, python=args.python)
    print(json.dumps(report["overall"], indent=1))
    print(f"wrote {args.out}/samples.jsonl, all_samples.jsonl, import_report.json")
    if report["overall"].get("repos_error"):
        print(f"error: {report['overall']['repos_error']} repositories failed (see import_report.json)", file=sys.stderr)
        return 3  # harness errors: the others were imported
    return 0


def add_publish(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", type=Path, required=True, help="builder output folder (samples.jsonl + build_report.json)")
    p.add_argument("--instruct", type=Path, default=None, help="Repo-Instruct output folder (instruct.jsonl)")
    p.add_argument("--out", type=Path, required=True, help="dataset folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace a previously published folder")
    p.add_argument("--push-to-hub", metavar="REPO_ID", default=None)
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", default=None)
    p.add_argument("--context", choices=("reference", "materialised"), default="reference",
                   help="samples name their context by path (default) or also carry its code")
    p.add_argument("--license", default=None,
                   help="one Hub license id for the whole dataset (default: `other`, each repository's license in "
                        "LICENSES.md and the card)")
    p.add_argument("--metric-space", metavar="OWNER/NAME", default=None,
                   help="the metric's Space (`execrepobench publish-metric --push-to-hub`): linked from the card")
    p.add_argument("--code-url", default=None, help="where the project's code lives (linked from the card)")
    p.add_argument("--stats-tokenizer", type=Path, default=None,
                   help="tokenizer.json (or a model folder) counting the statistics' tokens")


def run_publish(args: argparse.Namespace) -> int:
    from execrepobench_dataset.publish import publish, push_to_hub
    from execrepobench_dataset.stats import tokenizer_counter

    counter = tokenizer_counter(args.stats_tokenizer) if args.stats_tokenizer else None
    summary = publish(args.samples, args.out, instruct_dir=args.instruct, overwrite=args.overwrite,
                      context=args.context, count_tokens=counter,
                      tokenizer_name=args.stats_tokenizer.name if args.stats_tokenizer else None,
                      license=args.license, repo_id=args.push_to_hub, metric_space=args.metric_space,
                      code_url=args.code_url)
    if args.push_to_hub:
        push_to_hub(args.out, args.push_to_hub, private=args.private, revision=args.revision)
    print(json.dumps(summary, indent=1, default=str))
    return 0


def add_release(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="release folder: build/, instruct/, dataset/, "
                   "release_summary.json")
    p.add_argument("--manifest", type=Path, default=None, help="benchmark manifest (default: the packaged one)")
    p.add_argument("--instruct-manifest", type=Path, default=None, help="Repo-Instruct manifest (default: packaged)")
    p.add_argument("--repo", action="append", default=[], help="benchmark repository to include (repeatable; "
                   "default: all)")
    p.add_argument("--instruct-repo", action="append", default=[], help="instruct repository to include "
                   "(repeatable; default: all)")
    p.add_argument("--samples-per-repo", type=int, default=None, help="override the benchmark manifest's default")
    p.add_argument("--workers", type=int, default=None, help="parallel verification runs (default: CPU count)")
    p.add_argument("--context", choices=("reference", "materialised"), default="reference",
                   help="how samples store their context in the published data (default: by reference)")
    p.add_argument("--compare-materialised", action="store_true",
                   help="also publish the materialised form once and report its size")
    p.add_argument("--stats-tokenizer", type=Path, default=None,
                   help="tokenizer.json (or a model folder) counting the statistics' tokens (default: "
                   "deterministic pre-tokenizer pieces)")
    p.add_argument("--license", default=None,
                   help="one Hub license id for the whole dataset (default: `other`, each repository's license in "
                        "LICENSES.md and the card)")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where each repository is built: local threads (default) or one Ray task per repository on "
                        "a cluster (pip install 'execrepobench[ray]'; each node keeps its own cache)")
    p.add_argument("--ray-address", default=None,
                   help="with --executor ray: 'auto', HOST:PORT, or unset (RAY_ADDRESS, else a local Ray instance)")
    p.add_argument("--push-to-hub", metavar="REPO_ID", default=None, help="push the published folder at the end")
    p.add_argument("--private", action="store_true")
    p.add_argument("--no-progress", action="store_true")


def run_release(args: argparse.Namespace) -> int:
    from execrepobench.builder.sources.manifest import default_manifest_path, instruct_manifest_path, load_manifest
    from execrepobench.builder.release.release import ReleaseConfig, release
    from execrepobench_dataset.publish import push_to_hub
    from execrepobench_dataset.stats import tokenizer_counter
    from execrepobench_metric.execution.surface import ExecutorConfig

    manifest = load_manifest(args.manifest or default_manifest_path())
    instruct = load_manifest(args.instruct_manifest or instruct_manifest_path())
    if args.samples_per_repo is not None:
        manifest = replace(manifest, samples_per_repo=args.samples_per_repo,
                           repos=tuple(replace(r, samples_per_repo=None) for r in manifest.repos))
    counter = tokenizer_counter(args.stats_tokenizer) if args.stats_tokenizer else None
    config = ReleaseConfig(out=args.out, manifest=manifest, instruct_manifest=instruct, only=tuple(args.repo),
                           instruct_only=tuple(args.instruct_repo), context=args.context, license=args.license,
                           build_options={"executor": ExecutorConfig(args.executor, args.ray_address),
                                          **({"workers": args.workers} if args.workers else {})},
                           compare_materialised=args.compare_materialised, count_tokens=counter,
                           tokenizer_name=args.stats_tokenizer.name if args.stats_tokenizer else None,
                           progress=not args.no_progress)
    summary = release(config)
    if args.push_to_hub:
        push_to_hub(args.out / "dataset", args.push_to_hub, private=args.private)
    shown = {k: summary[k] for k in ("counts", "per_level", "sizes", "fingerprints", "time_s", "targets")}
    print(json.dumps(shown, indent=1, sort_keys=True))
    print(f"wrote {args.out / 'dataset'} and {args.out / 'release_summary.json'}")
    return 0 if summary["counts"]["samples"] else 1


COMMANDS = {
    "instruct": ("build the Repo-Instruct corpus (chat records, decontaminated)", add_instruct, run_instruct),
    "import-official": ("convert and verify the official ExecRepoBench release", add_import_official,
                        run_import_official),
    "publish": ("write the Hugging Face dataset folder (parquet + card); optionally push it", add_publish,
                run_publish),
    "release": ("build -> instruct -> publish in one resumable command, with a summary", add_release, run_release),
}
