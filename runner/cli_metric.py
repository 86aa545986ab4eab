"""`execrepobench publish-metric`: the metric as an `evaluate` module folder, optionally pushed to a Space."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_publish_metric(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True,
                   help="folder to write the module into: OUT/execrepobench/ (evaluate.load('OUT/execrepobench'))")
    p.add_argument("--push-to-hub", metavar="USER/NAME", default=None,
                   help="create (or reuse) this Gradio Space and upload the module: evaluate.load('USER/NAME'); "
                        "NAME is also the module's name")
    p.add_argument("--requirement", default=None,
                   help="the pip requirement line the Space installs (default: execrepobench==<this version>; "
                        "e.g. a git+https URL of this project)")
    p.add_argument("--dataset", metavar="OWNER/NAME", default=None,
                   help="the benchmark's Hub dataset: the Space card's `datasets:` (linked both ways) and its examples")
    p.add_argument("--code-url", default=None, help="where the project's code lives (linked from the card)")
    p.add_argument("--overwrite", action="store_true", help="replace a module folder written before")
    p.add_argument("--private", action="store_true", help="make a new Space private")


def run_publish_metric(args: argparse.Namespace) -> int:
    from execrepobench_metric.hub_module import push_metric, write_metric_folder

    folder = write_metric_folder(args.out, repo_id=args.push_to_hub, requirement=args.requirement,
                                 overwrite=args.overwrite, dataset_id=args.dataset, code_url=args.code_url)
    print(f"wrote {folder}: evaluate.load({str(folder)!r})")
    if args.requirement is None:
        print(f"note: the Space installs {(folder / 'requirements.txt').read_text().strip()} from PyPI; until the "
              "package is published there, pass --requirement with a git+https URL of the code or a wheel URL")
    if args.push_to_hub:
        push_metric(folder, args.push_to_hub, private=args.private)
        print(f"pushed to the Space {args.push_to_hub}: evaluate.load({args.push_to_hub!r})")
    return 0


COMMANDS = {
    "publish-metric": ("write the metric as an evaluate module folder; optionally push it to a Space",
                       add_publish_metric, run_publish_metric),
}
