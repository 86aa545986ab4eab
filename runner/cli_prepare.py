"""Subcommands for using a published dataset on this machine: `prepare` and `fingerprint`."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def add_prepare(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True,
                   help="a builder output folder, a published dataset folder, or a Hub dataset id (OWNER/NAME)")
    p.add_argument("--repo", action="append", default=[], help="prepare only this repository (repeatable)")
    p.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1),
                   help="repositories prepared at once (threads)")
    p.add_argument("--gold-samples", type=int, default=3,
                   help="samples per repository whose ground truth must pass and null fill must fail (default 3)")
    p.add_argument("--timeout", type=float, default=None,
                   help="wall seconds per judged run of the gold check (default: each sample's time budget)")
    p.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit) of a Hub dataset")
    p.add_argument("--allow-weak-sandbox", action="store_true", help="run the gold check without bubblewrap")
    p.add_argument("--report", type=Path, default=None, help="also write the statuses as JSON to this file")
    p.add_argument("--no-progress", action="store_true")


def run_prepare(args: argparse.Namespace) -> int:
    from execrepobench_dataset.errors import UsageError
    from execrepobench_metric.prepare import PrepareConfig, prepare_dataset

    if args.workers < 1 or args.gold_samples < 0:
        raise UsageError("--workers must be >= 1 and --gold-samples >= 0")
    config = PrepareConfig(workers=args.workers, gold_samples=args.gold_samples, timeout_s=args.timeout,
                           allow_weak_sandbox=args.allow_weak_sandbox, progress=not args.no_progress)
    statuses = prepare_dataset(args.dataset, tuple(args.repo), config, revision=args.revision)
    width = max([len(s.repo_name) for s in statuses] + [10])
    for s in statuses:
        state = ("ready" + (" (already prepared)" if s.reused else "")) if s.ready else f"NOT READY: {s.reason}"
        print(f"{s.repo_name:<{width}}  {s.env_key or '-':<24}  {state}")
    ready = sum(s.ready for s in statuses)
    print(f"{ready}/{len(statuses)} repositories ready")
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps([s.to_dict() for s in statuses], indent=1) + "\n", encoding="utf-8")
    return 0 if statuses and ready == len(statuses) else 1


def add_fingerprint(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="a builder output folder, a published dataset folder, or a Hub dataset id")
    p.add_argument("--revision", default=None, help="Hub revision of a Hub dataset")
    p.add_argument("--expect", default=None, metavar="LOCK",
                   help="check the dataset against a release lock: 'default' or 'quickstart' (the packaged "
                        "manifests' locks) or a NAME.lock.json file; exit 1 and name the repositories that differ")
    p.add_argument("--write-lock", type=Path, default=None, metavar="FILE",
                   help="write the release lock of this build (a builder output folder) of --manifest to FILE")
    p.add_argument("--manifest", type=Path, default=None, help="with --write-lock: the manifest that was built")


def _lock_file(name: str) -> Path:
    from execrepobench.builder.release.release_lock import packaged_lock
    from execrepobench.builder.sources.manifest import default_manifest_path, quickstart_manifest_path

    packaged = {"default": default_manifest_path, "quickstart": quickstart_manifest_path}
    return packaged_lock(packaged[name]()) if name in packaged else Path(name)


def run_fingerprint(args: argparse.Namespace) -> int:
    from execrepobench_dataset.errors import UsageError
    from execrepobench_dataset.load import open_dataset

    opened = open_dataset(args.dataset, args.revision)
    print(opened.fingerprint)
    if args.write_lock is not None:
        from execrepobench.builder.release.release_lock import lock_of

        if args.manifest is None or not args.manifest.is_file():
            raise UsageError("--write-lock needs --manifest TOML (the manifest this folder was built from)")
        args.write_lock.write_text(json.dumps(lock_of(opened, args.manifest), indent=1, sort_keys=True) + "\n",
                                   encoding="utf-8")
        print(f"wrote {args.write_lock}")
    if args.expect is not None:
        from execrepobench.builder.release.release_lock import check

        path = _lock_file(args.expect)
        try:
            lock = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--expect {args.expect}: cannot read the release lock {path}: {exc}") from exc
        result = check(opened, lock)
        print("\n".join(result.lines))
        return 0 if result.matches else 1
    return 0


COMMANDS = {
    "prepare": ("make a dataset's environments here (pinned sources, locks) and gold-check each repository",
                add_prepare, run_prepare),
    "fingerprint": ("print a dataset's fingerprint (the same for its builder folder, published folder and Hub id)",
                    add_fingerprint, run_fingerprint),
}
