"""The `execrepobench` console script: one subcommand per stage of the pipeline."""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from execrepobench_dataset.errors import ExecRepoBenchError, HarnessFailure, UsageError
from execrepobench_metric.defaults import BASELINE_TIMEOUT_S
from execrepobench_metric.options import add_flags, from_args

from .cli_compare import COMMANDS as COMPARE_COMMANDS
from .cli_data import COMMANDS as DATA_COMMANDS
from .cli_metric import COMMANDS as METRIC_COMMANDS
from .cli_live import COMMANDS as LIVE_COMMANDS
from .cli_lm_eval import COMMANDS as LM_EVAL_COMMANDS
from .cli_push import COMMANDS as PUSH_COMMANDS, add_run_publishing, publish_run
from .cli_scale import add_scale_flags, scale_options
from .cli_prepare import COMMANDS as PREPARE_COMMANDS

USER_ERROR_EXIT = 2  # the user can act on it (bad input, a missing setup step): the message says what
HARNESS_ERROR_EXIT = 3  # results were written, but some work failed for the harness's reasons
# What every subcommand reports as the user's to fix: the project's own errors (the trees in each package's
# errors.py).  Anything else (a ValueError, an OSError, ... from a bug) is a crash: `crash_report`, exit 3.
USER_ERRORS = (ExecRepoBenchError,)
CRASH_EXIT = HARNESS_ERROR_EXIT  # the harness's fault, never the user's: the traceback and where to report it
DEFAULT_MANIFEST = Path("<the packaged default manifest>")  # `--manifest` given without a path
# The options (execrepobench_metric/options.py) a command sets itself instead of by a flag: option -> how.
EVALUATE_SETS: dict[str, str] = {}
RUN_SETS = {"model_name": "the --model name (else the --backend name)"}


def _add_executor(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help=f"where {what} runs: local threads (default) or a Ray cluster (pip install "
                        "'execrepobench[ray]'; each node makes the environments it needs from the repository records)")
    p.add_argument("--ray-address", default=None,
                   help="with --executor ray: 'auto' (the cluster this machine belongs to), HOST:PORT, or unset "
                        "(RAY_ADDRESS, else a Ray instance started on this machine)")


DTYPES = ("auto", "bfloat16", "float16", "float32")  # what vLLM and transformers (torch.<dtype>) both take


def _at_least(low: float, kind=int):
    """An argparse type: a number of `kind` no smaller than `low`."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text} is below {low}")
        return value
    return parse


def _fraction(text: str) -> float:
    """An argparse type: a number in (0, 1]."""
    value = _at_least(0.0, float)(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not in (0, 1]")
    return value


def _add_build(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", type=Path, default=None,
                   help="TOML manifest of repositories (default: the packaged default manifest)")
    p.add_argument("--quickstart", action="store_true", help="use the small packaged quickstart manifest")
    p.add_argument("--out", type=Path, required=True, help="output folder (samples.jsonl, build_report.*)")
    p.add_argument("--repo", action="append", default=[], help="build only this repository (repeatable)")
    p.add_argument("--seed", type=int, default=None, help="override the manifest's seed")
    p.add_argument("--samples-per-repo", type=int, default=None, help="override the manifest's default")
    p.add_argument("--baseline-runs", type=int, default=3, help="baseline runs of each suite (default 3)")
    p.add_argument("--baseline-timeout", type=float, default=BASELINE_TIMEOUT_S,
                   help=f"seconds per baseline run (default {BASELINE_TIMEOUT_S:g})")
    p.add_argument("--allow-weak-sandbox", action="store_true",
                   help="without bubblewrap, run baselines and verification in the weak mode instead of refusing")
    p.add_argument("--context-with-tests", action="store_true",
                   help="rank each sample's context from test files too (default: the paper's pool - the files it "
                        "may mask, no tests/, test/, docs/, build/, setup.py)")
    p.add_argument("--mutants", type=int, default=3,
                   help="mutants of each verified ground truth judged for mutation adequacy (0: none; default 3)")
    p.add_argument("--min-mutant-kill", type=float, default=0.5,
                   help="drop a sample whose tests kill fewer than this share of its mutants (default 0.5)")
    _add_executor(p, "the build (one Ray task per repository)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _run_build(args: argparse.Namespace) -> int:
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench_metric.execution.surface import ExecutorConfig
    from execrepobench.builder.sources.manifest import default_manifest_path, load_manifest, quickstart_manifest_path

    path = args.manifest or (quickstart_manifest_path() if args.quickstart else default_manifest_path())
    manifest = load_manifest(path)
    if args.mutants < 0 or not 0.0 <= args.min_mutant_kill <= 1.0:
        raise UsageError(f"--mutants must be >= 0 (got {args.mutants}) and --min-mutant-kill within 0..1 "
                         f"(got {args.min_mutant_kill})")
    if args.seed is not None:
        manifest = replace(manifest, seed=args.seed)
    if args.samples_per_repo is not None:
        manifest = replace(manifest, samples_per_repo=args.samples_per_repo,
                           repos=tuple(replace(r, samples_per_repo=None) for r in manifest.repos))
    config = BuildConfig(manifest=manifest, out=args.out, baseline_runs=args.baseline_runs,
                         baseline_timeout_s=args.baseline_timeout, only=tuple(args.repo),
                         progress=not args.no_progress, allow_weak_sandbox=args.allow_weak_sandbox,
                         executor=ExecutorConfig(args.executor, args.ray_address), mutants=args.mutants,
                         min_mutant_kill=args.min_mutant_kill, context_tests=args.context_with_tests)
    summary = build(config)
    from execrepobench.builder.report import markdown

    print(markdown(summary))
    print(f"wrote {args.out / 'samples.jsonl'} and {args.out / 'build_report.md'}")
    return build_exit_code(summary)


def build_exit_code(summary: dict) -> int:
    """3: some repositories failed (harness errors: see the report); 1: none gave samples; else 0."""
    totals = summary["totals"]
    if totals.get("repos_error"):
        print(f"error: {totals['repos_error']} repositories failed ({totals.get('errors_by_phase')}); "
              "see build_report.json", file=sys.stderr)
        return HARNESS_ERROR_EXIT
    return 0 if totals["repos_ok"] else 1


def _add_evaluate(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--samples", type=Path, help="samples.jsonl written by `build`")
    which.add_argument("--dataset", help="a builder output folder, a published dataset folder, or a Hub dataset id")
    p.add_argument("--config", default=None, help="with --dataset: the samples' config (default exec_repo_bench)")
    p.add_argument("--revision", default=None, help="with a Hub dataset id: a branch, tag or commit")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--predictions", type=Path,
                     help='JSONL, one line per sample: {"sample_id": ..., "completion": str or [str, ...]}')
    src.add_argument("--reference-fill", choices=("ground_truth", "null"),
                     help="judge the ground truth (should pass) or the null fill (should fail): checks the setup")
    p.add_argument("--limit", type=_at_least(1), default=None,
                   help="judge only N samples: the deterministic subset, stratified by fill type, that `run --limit N` "
                        "judges (predictions for other samples are not needed)")
    p.add_argument("--duplicates", choices=("refuse", "first", "last"), default="refuse",
                   help="with --predictions: two lines for one sample_id are refused (default, naming the lines), "
                        "or the first or the last one counts")
    p.add_argument("--out", type=Path, required=True, help="results folder (results.jsonl, metrics.json)")
    add_flags(p.add_argument_group("evaluation and runtime options (execrepobench_metric/options.py)"),
              EVALUATE_SETS)


def _run_evaluate(args: argparse.Namespace) -> int:
    import json

    from execrepobench_dataset.load import open_dataset
    from execrepobench.runner.report import table, write_error_results, write_results
    from execrepobench_metric.api import HarnessError, InputError, compute_with
    from execrepobench_metric.cutoff import describe, released_after
    from execrepobench_metric.execution.surface import null_fill
    from execrepobench.runner.dataset_source import dataset_record, stratified_subset

    evaluation, runtime = from_args(args, journal=args.out / "journal.jsonl", artifacts_dir=args.out / "artifacts")
    if args.samples and (args.config or args.revision):
        raise InputError("--config and --revision choose what to read from a published dataset: give --dataset")
    opened = open_dataset(args.samples) if args.samples else open_dataset(args.dataset, args.revision, args.config)
    cutoff = evaluation.cutoff
    samples = list(opened.samples)
    if args.limit is not None:  # among the samples released after the cutoff, as `run` picks them
        samples = stratified_subset([s for s in samples if cutoff is None or released_after(s, cutoff)], args.limit)
    if args.reference_fill and args.model_name is None:  # the run is named after what was judged
        evaluation = replace(evaluation, model_name=args.reference_fill)
    scored = [cutoff is None or released_after(s, cutoff) for s in samples]  # the others need no completion
    if args.reference_fill == "ground_truth":
        preds = [s.middle_code for s in samples]
    elif args.reference_fill == "null":
        preds = [null_fill(s) or "" for s in samples]
    else:
        from execrepobench.runner.predictions import read_predictions

        by_id = read_predictions(args.predictions, args.duplicates)
        missing = [s.sample_id for s, kept in zip(samples, scored) if kept and s.sample_id not in by_id]
        if missing:
            raise InputError(f"{args.predictions}: no completion for {len(missing)} sample(s), e.g. {missing[:3]}")
        preds = [by_id.get(s.sample_id, "") for s in samples]
    args.out.mkdir(parents=True, exist_ok=True)
    # ray: the records beside --samples tell the nodes how to make the environments
    dataset = ((args.dataset if not args.revision else opened.folder) if args.dataset
               else (args.samples if runtime.executor == "ray" else None))
    try:
        out = compute_with(preds, samples, replace(evaluation, dataset=dataset), runtime)
    except HarnessError as exc:  # the rows it has, error rows marked, and no score; main() exits 3
        print(write_error_results(args.out, exc.result), file=sys.stderr)
        raise
    from execrepobench_dataset.version import __version__

    record = {"command": "evaluate", "package_version": __version__,
              "dataset": dataset_record(opened, samples, args.limit),
              "model": evaluation.model_name, "predictions": str(args.predictions) if args.predictions else None,
              "reference_fill": args.reference_fill, "k": list(evaluation.k),
              "test_selection": evaluation.test_selection, "timeout_s": evaluation.timeout,
              "executor": runtime.executor}
    metrics = write_results(args.out, out, evaluation.model_name, run=record)
    if "cutoff" in metrics:
        print(describe(metrics["cutoff"]))
    print(table(metrics, evaluation.k))
    print(f"LaTeX: {metrics['latex']}")
    print(f"wrote {args.out}/results.jsonl, metrics.json, latex.txt, chart.png")
    return 0


def _add_run(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", metavar="OWNER/NAME|FOLDER",
                     help="evaluate a published dataset: a Hub dataset id (read through the Hugging Face cache) or a "
                          "published folder")
    src.add_argument("--samples", type=Path, help="evaluate these builder samples (samples.jsonl)")
    src.add_argument("--manifest", type=Path, nargs="?", const=DEFAULT_MANIFEST,
                     help="build samples from this manifest first (no PATH: the packaged default manifest; hours)")
    src.add_argument("--quickstart", action="store_true", help="build from the small packaged quickstart manifest")
    p.add_argument("--config", default=None,
                   help="with --dataset: the samples' config (default exec_repo_bench)")
    p.add_argument("--revision", default=None, help="with --dataset OWNER/NAME: a branch, tag or commit of the Hub "
                                                    "dataset")
    p.add_argument("--limit", type=int, default=None,
                   help="judge only N samples: a deterministic subset, stratified by fill type")
    p.add_argument("--out", type=Path, required=True, help="results folder")
    p.add_argument("--backend", default="baseline",
                   help="generation backend: baseline, oracle, null (offline); transformers, vllm, openai (models)")
    p.add_argument("--model", default=None,
                   help="model backends: a local model folder or a Hugging Face Hub model id (OWNER/NAME, read through "
                        "the Hugging Face cache; downloaded unless HF_HUB_OFFLINE=1); openai: the served name")
    p.add_argument("--n", type=_at_least(1), default=1, help="completions per sample")
    add_flags(p.add_argument_group("evaluation and runtime options (execrepobench_metric/options.py; the sandbox "
                                   "and executor options apply to a build first too)"), RUN_SETS)
    g = p.add_argument_group("model backends (transformers, vllm, openai)")
    g.add_argument("--template", default=None,
                   help="prompt template (see runner/templates.py; default: detected from the --model name; "
                        "'official': the detected family's official ExecRepoBench prompt, as in the paper)")
    g.add_argument("--temperature", type=_at_least(0.0, float), default=None, help="0 (default): greedy; > 0: sampling")
    g.add_argument("--top-p", type=_fraction, default=None, help="nucleus sampling (default 1.0)")
    g.add_argument("--seed", type=_at_least(0), default=None, help="sampling seed (default 0; per sample derived from it)")
    g.add_argument("--max-new-tokens", type=_at_least(1), default=None, help="generation budget per completion (default 512)")
    g.add_argument("--tensor-parallel-size", type=_at_least(1), default=None, help="vllm: GPUs to shard the model over")
    g.add_argument("--max-model-len", type=_at_least(1), default=None,
                   help="vllm: the engine's context length; every prompt backend fits its prompts to it")
    g.add_argument("--gpu-memory-utilization", type=_fraction, default=None,
                   help="vllm: fraction of GPU memory for the engine (vLLM's default 0.9)")
    g.add_argument("--dtype", default=None, choices=DTYPES,
                   help="vllm, transformers: auto (default), bfloat16, float16, float32")
    g.add_argument("--trust-remote-code", action="store_true",
                   help="vllm, transformers: run the model repository's own Python code (off by default)")
    g.add_argument("--base-url", default=None,
                   help="openai: the server's URL, e.g. http://127.0.0.1:8000/v1 (default $OPENAI_BASE_URL)")
    add_scale_flags(p)
    add_run_publishing(p)


def _run_run(args: argparse.Namespace) -> int:
    from execrepobench.builder.sources.manifest import default_manifest_path
    from execrepobench.runner.run import RunConfig, run

    options = {key: getattr(args, key) for key in ("temperature", "top_p", "seed", "tensor_parallel_size", "base_url",
                                                   "max_model_len", "gpu_memory_utilization", "dtype")
               if getattr(args, key) is not None}
    if args.trust_remote_code:
        options["trust_remote_code"] = True
    options.update(scale_options(args))  # --data-parallel-size, --concurrency, --batch-size ...
    manifest = default_manifest_path() if args.manifest == DEFAULT_MANIFEST else args.manifest
    evaluation, runtime = from_args(args)
    config = RunConfig(out=args.out, backend=args.backend, model=args.model, dataset=args.dataset, config=args.config,
                       revision=args.revision, samples=args.samples, manifest=manifest, quickstart=args.quickstart,
                       limit=args.limit, n=args.n, backend_options=options, template=args.template,
                       max_new_tokens=args.max_new_tokens, evaluation=evaluation, runtime=runtime)
    run(config)  # a harness failure: run() wrote what it could and printed what failed
    publish_run(args)  # --push-results, --wandb: what run() wrote
    return 0


# name -> (help, add arguments, run); later stages register here.
COMMANDS = {
    "build": ("build verified samples from a manifest of repositories", _add_build, _run_build),
    "evaluate": ("judge completions of samples by running their tests in the sandbox", _add_evaluate,
                 _run_evaluate),
    "run": ("generate, judge and report on a dataset (published, builder samples, or built first)", _add_run,
            _run_run),
}
COMMANDS.update(DATA_COMMANDS)
COMMANDS.update(METRIC_COMMANDS)
COMMANDS.update(PREPARE_COMMANDS)
COMMANDS.update(COMPARE_COMMANDS)
COMMANDS.update(LIVE_COMMANDS)
COMMANDS.update(LM_EVAL_COMMANDS)
COMMANDS.update(PUSH_COMMANDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="execrepobench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add, _) in COMMANDS.items():
        add(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    try:
        _check_out(args)
        return COMMANDS[args.command][2](args)
    except HarnessFailure:  # the command wrote what it could and printed what failed
        return HARNESS_ERROR_EXIT
    except USER_ERRORS as exc:  # the one place a user's error becomes its message and exit code 2
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    except Exception:  # noqa: BLE001 - a bug: said as one, with what is needed to fix it
        print(crash_report(argv if argv is not None else sys.argv[1:]), file=sys.stderr)
        return CRASH_EXIT


def _check_out(args: argparse.Namespace) -> None:
    """Every command's --out is a folder (made if missing): an existing file there is the user's to fix."""
    out = getattr(args, "out", None)
    if isinstance(out, Path) and out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: a file, not a folder; --out must be a folder (it is made if missing)")


def crash_report(argv: list[str]) -> str:
    """The traceback of the exception being handled, said to be a bug (not the user's mistake), with the
    command and versions to report."""
    import platform
    import traceback

    from execrepobench_dataset.version import __version__

    return (f"{traceback.format_exc().rstrip()}\n\n"
            "execrepobench crashed: this is a bug in execrepobench, not a mistake in what you gave it.\n"
            "Please report it in the project's issue tracker with the traceback above and these lines:\n"
            f"  command: execrepobench {' '.join(argv)}\n"
            f"  execrepobench {__version__}, Python {platform.python_version()}, {platform.platform()}")


if __name__ == "__main__":
    sys.exit(main())
