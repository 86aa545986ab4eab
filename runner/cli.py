"""The `execrepobench` console script: one subcommand per stage of the pipeline."""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path


def _add_build(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", type=Path, default=None,
                   help="TOML manifest of repositories (default: the packaged default manifest)")
    p.add_argument("--quickstart", action="store_true", help="use the small packaged quickstart manifest")
    p.add_argument("--out", type=Path, required=True, help="output folder (samples.jsonl, build_report.*)")
    p.add_argument("--repo", action="append", default=[], help="build only this repository (repeatable)")
    p.add_argument("--seed", type=int, default=None, help="override the manifest's seed")
    p.add_argument("--samples-per-repo", type=int, default=None, help="override the manifest's default")
    p.add_argument("--baseline-runs", type=int, default=3, help="baseline runs of each suite (default 3)")
    p.add_argument("--baseline-timeout", type=float, default=900.0, help="seconds per baseline run")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _run_build(args: argparse.Namespace) -> int:
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.manifest import (ManifestError, default_manifest_path, load_manifest,
                                                quickstart_manifest_path)

    path = args.manifest or (quickstart_manifest_path() if args.quickstart else default_manifest_path())
    try:
        manifest = load_manifest(path)
    except (ManifestError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.seed is not None:
        manifest = replace(manifest, seed=args.seed)
    if args.samples_per_repo is not None:
        manifest = replace(manifest, samples_per_repo=args.samples_per_repo,
                           repos=tuple(replace(r, samples_per_repo=None) for r in manifest.repos))
    config = BuildConfig(manifest=manifest, out=args.out, baseline_runs=args.baseline_runs,
                         baseline_timeout_s=args.baseline_timeout, only=tuple(args.repo),
                         progress=not args.no_progress)
    try:
        summary = build(config)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from execrepobench.builder.report import markdown

    print(markdown(summary))
    print(f"wrote {args.out / 'samples.jsonl'} and {args.out / 'build_report.md'}")
    return 0 if summary["totals"]["repos_ok"] else 1


# name -> (help, add arguments, run); later stages register here.
COMMANDS = {
    "build": ("build verified-ready samples from a manifest of repositories", _add_build, _run_build),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="execrepobench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add, _) in COMMANDS.items():
        add(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    return COMMANDS[args.command][2](args)


if __name__ == "__main__":
    sys.exit(main())
