"""`run`'s flags for generation at scale: vLLM data parallelism, the openai backend's request settings and the
transformers backend's batch size.  Each flag belongs to one backend; given to another it is an error."""
from __future__ import annotations

import argparse
import json

from execrepobench_dataset.errors import UsageError

# option -> (flag, the backend that takes it)
SCALE_OPTIONS = {
    "data_parallel_size": ("--data-parallel-size", "vllm"),
    "concurrency": ("--concurrency", "openai"),
    "timeout_s": ("--request-timeout", "openai"),
    "retries": ("--retries", "openai"),
    "extra_body": ("--extra-body", "openai"),
    "batch_size": ("--batch-size", "transformers"),
}


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return number


def _not_negative(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return number


def _seconds(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {value}")
    return number


def _json_object(value: str) -> dict:
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}): {value[:80]}") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {value[:80]}")
    return parsed


def add_scale_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("generation at scale")
    g.add_argument("--data-parallel-size", type=_positive, default=None,
                   help="vllm: engines generating at once, each on its own GPUs (tensor-parallel-size each), the "
                        "samples split between them (default 1)")
    g.add_argument("--concurrency", type=_positive, default=None, help="openai: requests in flight at once (default 8)")
    g.add_argument("--request-timeout", type=_seconds, default=None,
                   help="openai: seconds per HTTP request before it is retried (default 600)")
    g.add_argument("--retries", type=_not_negative, default=None,
                   help="openai: retries of a failed request (connection error, timeout, 429, 5xx; default 4)")
    g.add_argument("--extra-body", type=_json_object, default=None, metavar="JSON",
                   help='openai: fields merged into every request, e.g. \'{"repetition_penalty": 1.0}\'')
    g.add_argument("--batch-size", type=_positive, default=None,
                   help="transformers: greedy prompts generated together, left-padded (default 1)")


def scale_options(args: argparse.Namespace) -> dict:
    """The backend options the flags give; a flag of another backend than --backend is a UsageError."""
    options = {key: getattr(args, flag[2:].replace("-", "_")) for key, (flag, _) in SCALE_OPTIONS.items()}
    options = {k: v for k, v in options.items() if v is not None}
    wrong = [SCALE_OPTIONS[k][0] + f" ({SCALE_OPTIONS[k][1]})" for k in options if SCALE_OPTIONS[k][1] != args.backend]
    if wrong:
        raise UsageError(f"{', '.join(wrong)}: not a setting of the {args.backend!r} backend")
    return options
