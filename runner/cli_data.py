"""Subcommands that make and publish data: `instruct`, `import-official`, `publish`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_instruct(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", type=Path, default=None, help="instruct manifest (default: the packaged one)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--benchmark-samples", type=Path, default=None,
                   help="the benchmark's samples.jsonl: its repositories are refused, its middles dropped")
    p.add_argument("--budget-chars", type=int, default=16000, help="characters of context + prefix + suffix")
    p.add_argument("--shard-rows", type=int, default=1000)
    p.add_argument("--no-progress", action="store_true")


def run_instruct(args: argparse.Namespace) -> int:
    from execrepobench.builder.instruct_build import build_instruct
    from execrepobench.builder.manifest import ManifestError, instruct_manifest_path, load_manifest

    if args.benchmark_samples is None:
        print("warning: no --benchmark-samples: the corpus is not decontaminated", file=sys.stderr)
    try:
        report = build_instruct(load_manifest(args.manifest or instruct_manifest_path()), args.out,
                                benchmark_samples=args.benchmark_samples, budget_chars=args.budget_chars,
                                shard_rows=args.shard_rows, progress=not args.no_progress)
    except (ManifestError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per judged run")
    p.add_argument("--no-progress", action="store_true")


def run_import_official(args: argparse.Namespace) -> int:
    from execrepobench.builder.official import OfficialFormatError, import_official

    try:
        report = import_official(args.jsonl, args.repos, args.out, verify=not args.no_verify, workers=args.workers,
                                 progress=not args.no_progress, baseline_runs=args.baseline_runs,
                                 gt_runs=args.gt_runs, python=args.python, judge_timeout_s=args.timeout)
    except (OfficialFormatError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report["overall"], indent=1))
    print(f"wrote {args.out}/samples.jsonl, all_samples.jsonl, import_report.json")
    return 0


def add_publish(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", type=Path, required=True, help="builder output folder (samples.jsonl + build_report.json)")
    p.add_argument("--instruct", type=Path, default=None, help="Repo-Instruct output folder (instruct.jsonl)")
    p.add_argument("--out", type=Path, required=True, help="dataset folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace a previously published folder")
    p.add_argument("--push-to-hub", metavar="REPO_ID", default=None)
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", default=None)


def run_publish(args: argparse.Namespace) -> int:
    from execrepobench_dataset.publish import PublishError, publish, push_to_hub

    try:
        summary = publish(args.samples, args.out, instruct_dir=args.instruct, overwrite=args.overwrite)
        if args.push_to_hub:
            push_to_hub(args.out, args.push_to_hub, private=args.private, revision=args.revision)
    except (PublishError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1, default=str))
    return 0


COMMANDS = {
    "instruct": ("build the Repo-Instruct corpus (chat records, decontaminated)", add_instruct, run_instruct),
    "import-official": ("convert and verify the official ExecRepoBench release", add_import_official,
                        run_import_official),
    "publish": ("write the Hugging Face dataset folder (parquet + card); optionally push it", add_publish,
                run_publish),
}
