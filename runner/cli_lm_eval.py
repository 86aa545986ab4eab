"""`execrepobench lm-eval-path`: the folder of the lm-evaluation-harness task shipped with the package, for
`lm_eval --include_path "$(execrepobench lm-eval-path)" --tasks execrepobench ...` (runner/lm_eval_task/)."""
from __future__ import annotations

import argparse
from pathlib import Path

TASK_FOLDER = Path(__file__).resolve().parent / "lm_eval_task"


def add_lm_eval_path(p: argparse.ArgumentParser) -> None:
    del p  # no arguments


def run_lm_eval_path(args: argparse.Namespace) -> int:
    del args
    print(TASK_FOLDER)
    return 0


COMMANDS = {
    "lm-eval-path": ("print the folder of the lm-evaluation-harness task (lm_eval --include_path FOLDER "
                     "--tasks execrepobench)", add_lm_eval_path, run_lm_eval_path),
}
