"""`execrepobench push-results RUN_DIR --repo OWNER/NAME`, and the publishing flags of `run` (--push-results,
--wandb): a finished run's results on the Hub (push_results.py) or in Weights & Biases (wandb_log.py)."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_push_results(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished `execrepobench run` / `evaluate` folder")
    p.add_argument("--repo", required=True, metavar="OWNER/NAME",
                   help="the Hub dataset of results (created when missing): one config per run")
    p.add_argument("--private", action="store_true", help="make a new dataset private")


def run_push_results(args: argparse.Namespace) -> int:
    from .push_results import push_results

    name = push_results(args.run_dir, args.repo, private=args.private)
    print(f"pushed {args.run_dir} to the dataset {args.repo}, config {name}: "
          f"load_dataset({args.repo!r}, {name!r}, split='latest')")
    return 0


def add_run_publishing(p: argparse.ArgumentParser) -> None:
    """The flags `run` takes to publish what it wrote (applied after a run with scores)."""
    g = p.add_argument_group("publishing the results")
    g.add_argument("--push-results", metavar="OWNER/NAME", default=None,
                   help="upload the scores, run record and per-sample details to this Hub dataset (one config per run)")
    g.add_argument("--wandb", metavar="PROJECT", default=None,
                   help="log the scores, run record and a per-sample table to this Weights & Biases project "
                        "(needs `pip install wandb`; WANDB_MODE=offline logs locally)")


def publish_run(args: argparse.Namespace) -> None:
    if getattr(args, "push_results", None):
        from .push_results import push_results

        name = push_results(args.out, args.push_results)
        print(f"pushed to the dataset {args.push_results}, config {name}")
    if getattr(args, "wandb", None):
        from .wandb_log import log_run

        print(f"logged to Weights & Biases: {log_run(args.out, args.wandb)}")


COMMANDS = {
    "push-results": ("upload a run's scores, run record and per-sample details to a Hub dataset (one config per "
                     "run)", add_push_results, run_push_results),
}
