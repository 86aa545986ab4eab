"""`execrepobench run`: build if needed -> generate -> evaluate -> report, in one command.

What is evaluated: a published dataset (`--dataset`: a published folder or a Hub id, with `--config` and
`--revision`), samples from a builder (`--samples`), or samples built first (`--manifest`, `--quickstart`);
`--limit N` judges a deterministic subset stratified by fill type (`dataset_source.stratified_subset`).

Folder layout under --out: build/ (samples.jsonl, build_report.*; only when building),
generations.jsonl, journal.jsonl, results.jsonl, metrics.json (the scores and `run`: what was run - the
dataset with its fingerprint, backend, model, template, sampling, n, k, package version), latex.txt,
chart.png, artifacts/ (evidence: with --keep-artifacts, and always for harness errors).  Every step
resumes: the build reuses finished repositories, generation skips done samples, evaluation replays its
journal.

Harness errors stop the scores, never the record: a build in which some repository failed stops
before generation (`BuildFailed`: run again once fixed, finished repositories are reused); an
evaluation with `error` verdicts writes results.jsonl (error rows marked) and no score
(`HarnessError`).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.load import OpenedDataset, open_dataset
from execrepobench_dataset.version import __version__
from execrepobench_metric.api import HarnessError, compute_with
from execrepobench_metric.cutoff import apply_cutoff, describe
from execrepobench_metric.prepare import PrepareConfig, ensure_prepared
from execrepobench_metric.execution.surface import require_opt_in
from execrepobench_metric.inputs import check_inputs
from execrepobench_metric.options import EvaluationOptions, RuntimeOptions

from .backends.base import get_backend
from .dataset_source import dataset_record, stratified_subset
from .errors import BuildFailed, ModelNotFound
from .generate import GenerateConfig, generate, read_generations
from .report import table, write_error_results, write_results
from .run_record import run_record

# engine settings of the model backends, recorded in metrics.json when given
ENGINE_OPTIONS = ("max_model_len", "gpu_memory_utilization", "dtype", "tensor_parallel_size", "trust_remote_code")


@dataclass(frozen=True)
class RunConfig:
    out: Path
    backend: str = "baseline"
    model: str | None = None
    dataset: str | None = None  # a published folder or a Hub dataset id
    config: str | None = None  # its samples' config (default exec_repo_bench)
    revision: str | None = None  # Hub revision (branch, tag or commit)
    samples: Path | None = None  # builder output: samples.jsonl (repositories.jsonl beside it)
    manifest: Path | None = None  # build from this manifest first
    quickstart: bool = False  # build from the packaged quickstart manifest first
    limit: int | None = None  # judge a deterministic subset of this many samples, stratified by fill type
    n: int = 1
    backend_options: dict = field(default_factory=dict)
    template: str | None = None  # prompt template for model backends; None / "official": resolve_template()
    max_new_tokens: int | None = None  # generation budget (None: prompts.MAX_GENERATION_TOKENS)
    # what is judged and scored (a cutoff also limits what is generated for); the model name and dataset are set here
    evaluation: EvaluationOptions = EvaluationOptions()
    # how it runs: the sandbox, executor and progress options apply to a build first too; journal and
    # artifacts go under `out`
    runtime: RuntimeOptions = RuntimeOptions()


def open_source(config: RunConfig) -> OpenedDataset:
    """The dataset to evaluate: --dataset (published folder or Hub id), --samples, or built first."""
    if config.dataset is not None:
        return open_dataset(config.dataset, config.revision, config.config)
    if config.config is not None or config.revision is not None:
        raise UsageError("--config and --revision choose what to read from a published dataset: give --dataset")
    if config.samples is not None:
        return open_dataset(config.samples)
    if config.manifest is None and not config.quickstart:
        raise UsageError("nothing to evaluate: give --dataset OWNER/NAME or a published folder, --samples "
                         "samples.jsonl, or --manifest [PATH] / --quickstart to build samples first")
    require_opt_in(config.runtime.allow_exec)  # judging follows the build: refuse before it, not hours after
    return open_dataset(_build(config))


def _build(config: RunConfig) -> Path:
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import load_manifest, quickstart_manifest_path
    from execrepobench_metric.execution.surface import ExecutorConfig

    path = config.manifest or quickstart_manifest_path()
    out = config.out / "build"
    runtime = config.runtime
    summary = build(BuildConfig(manifest=load_manifest(path), out=out, progress=runtime.progress,
                                allow_weak_sandbox=runtime.allow_weak_sandbox,
                                executor=ExecutorConfig(runtime.executor, runtime.ray_address)))
    failed = [r for r in summary["repos"] if r["status"] == "error"]
    if failed:
        lines = [f"BUILD ERRORS: {len(failed)} of {len(summary['repos'])} repositories failed (harness errors); "
                 "nothing was generated or judged. Finished repositories are reused when you run again."]
        lines += [f"  {r['repo']} at {r.get('phase', '?')}: {str(r.get('reason', ''))[:200]}" for r in failed]
        lines.append(f"  details: {out / 'build_report.json'}")
        print("\n".join(lines), file=sys.stderr)
        raise BuildFailed("\n".join(lines))
    return out / "samples.jsonl"


def _backend_class(backend: str):
    """The backend's class, read without making the backend (None for unknown names: get_backend says)."""
    from .backends.base import REGISTRY

    return REGISTRY.load(backend) if backend in REGISTRY else None


def _needs_prompt(backend: str) -> bool:
    return bool(getattr(_backend_class(backend), "needs_prompt", False))


def check_engine_options(backend: str, options: dict) -> None:
    """An engine setting the backend does not take is an error naming the backends that do."""
    taken = getattr(_backend_class(backend), "engine_options", ())
    unused = [k for k in ENGINE_OPTIONS if options.get(k) not in (None, False) and k not in taken]
    if unused and _backend_class(backend) is not None:
        flags = ", ".join("--" + k.replace("_", "-") for k in unused)
        raise UsageError(f"{flags}: not a setting of the {backend!r} backend (vllm takes every engine flag; "
                         "transformers --dtype, --trust-remote-code and --max-model-len; openai --max-model-len)")


def check_offline_flags(config: RunConfig, options: dict) -> None:
    """An offline backend (baseline, oracle, null) takes no model, template or sampling flag: one given would
    label the run as what it is not."""
    if _backend_class(config.backend) is None or _needs_prompt(config.backend):
        return
    given = {"--model": config.model, "--template": config.template, "--max-new-tokens": config.max_new_tokens,
             **{"--" + k.replace("_", "-"): options.get(k) for k in ("temperature", "top_p", "seed", "base_url")}}
    flags = [flag for flag, value in given.items() if value is not None]
    if flags:
        raise UsageError(f"{', '.join(flags)}: the {config.backend!r} backend is offline and takes no model, "
                         "template or sampling setting (the run is named after the backend); the model backends "
                         "are transformers, vllm and openai")


def _prompting(config: RunConfig, options: dict):
    """For model backends: (render(sample) -> (prompt, info), stop strings, template name), with the template
    (--template, else detected from the model name) and the model folder's own tokenizer and length.  Fills
    `options` with the stop strings and the generation budget."""
    from .prompts import MAX_GENERATION_TOKENS, build_prompt_for_sample, load_tokenizer, model_max_length
    from .templates import get_template, resolve_template

    from .backends.model_source import resolve_model

    if not config.model:
        raise UsageError(f"backend {config.backend!r} needs --model (a local model folder or a Hugging Face Hub "
                         "model id: its tokenizer builds the prompts)")
    name = resolve_template(config.template, config.model)
    template = get_template(name)
    if config.template in (None, "official"):
        print(f"template: {name} (detected from the model name {config.model!r}; --template NAME to choose)")
    folder = resolve_model(options.get("tokenizer") or config.model, config.backend,
                           tokenizer_only=config.backend == "openai").path  # served elsewhere: no weights here
    if not (folder / "tokenizer.json").is_file():
        raise ModelNotFound(f"model {options.get('tokenizer') or config.model!r} ({folder}) has no tokenizer.json: "
                            "prompts are fitted with the model's own tokenizer, so --model must be a model folder "
                            "or Hub id with one (for --backend openai, serve the model under that name)")
    options.setdefault("tokenizer", str(folder))  # openai: the special tokens sent as stop_token_ids
    tokenizer, model_max = load_tokenizer(folder), model_max_length(folder)
    if options.get("max_model_len"):  # the engine's context: prompts must fit it, not only the model's
        model_max = min(model_max or options["max_model_len"], options["max_model_len"])
    max_new = config.max_new_tokens or options.get("max_new_tokens") or MAX_GENERATION_TOKENS
    options["max_new_tokens"] = max_new
    options.setdefault("stop", list(template.stop))
    reserve = 64 if template.kind == "chat" else 0  # the chat template's role markers, not counted here

    def render(sample):
        p = build_prompt_for_sample(template, sample, tokenizer, max_generation_tokens=max_new, model_max=model_max,
                                    reserve_tokens=reserve)
        return p.text, {**p.info(), "truncated": p.truncated}

    return render, tuple(template.stop), name


def run(config: RunConfig) -> dict:
    if config.n < 1:
        raise UsageError(f"--n must be at least 1 (completions per sample), got {config.n}")
    options = dict(config.backend_options)
    check_engine_options(config.backend, options)  # the flags first: nothing is opened for a bad one
    check_offline_flags(config, options)
    opened = open_source(config)  # the samples and the repository records (context files, environments)
    samples, resolver = list(opened.samples), opened.resolver
    if not samples:
        raise UsageError(f"{opened.name}: no samples to evaluate (see the build report beside it)")
    evaluation, runtime = config.evaluation, config.runtime
    if config.backend == "oracle":  # a check of the environments: the ground truths run, no recorded verdict
        runtime = replace(runtime, known_verdicts=False)
    kept = None
    if evaluation.cutoff is not None:  # first: --limit picks among the samples released after the cutoff
        _, samples, kept = apply_cutoff([[]] * len(samples), samples, evaluation.cutoff)
        print(describe(kept))
    samples = stratified_subset(samples, config.limit)
    # the samples and options judging will check, checked before anything is generated (one error names every item)
    check_inputs([""] * len(samples), samples, test_selection=evaluation.test_selection, k=evaluation.k)
    render, stops, template = None, (), None
    if _needs_prompt(config.backend):
        render, stops, template = _prompting(config, options)
    require_opt_in(runtime.allow_exec)  # before a model is loaded and completions are generated
    dataset = opened.name if opened.commit is None or opened.revision is None else opened.folder
    if runtime.executor == "local":  # the environments too (a Ray cluster's nodes make their own)
        ensure_prepared(samples, str(dataset), runtime.prepare,
                        PrepareConfig(workers=runtime.num_workers or os.cpu_count() or 1,
                                      allow_weak_sandbox=runtime.allow_weak_sandbox, progress=runtime.progress),
                        opened=opened)
    backend = get_backend(config.backend, config.model, **options)
    gen_path = config.out / "generations.jsonl"
    sampling = {k: options[k] for k in ("temperature", "top_p", "seed", "max_new_tokens") if options.get(k) is not None}
    if hasattr(getattr(backend, "sampling", None), "describe"):  # model backends: the settings in effect
        sampling = backend.sampling.describe()
    generate(samples, backend, gen_path, GenerateConfig(n=config.n, template=template, sampling=sampling,
                                                        progress=runtime.progress), render=render, stops=stops,
             with_context=resolver.materialise)
    completions = read_generations(gen_path, samples)
    name = config.model or config.backend
    try:
        result = compute_with(
            completions, samples,
            # the repository records: environments are prepared (or named, when missing) from them, and a Ray
            # cluster's nodes make theirs from them
            replace(evaluation, model_name=name, dataset=dataset),
            replace(runtime, journal=config.out / "journal.jsonl", artifacts_dir=config.out / "artifacts"),
            opened=opened, prepared=runtime.executor == "local")  # opened once, prepared once (above)
    except HarnessError as exc:
        print(write_error_results(config.out, exc.result), file=sys.stderr)
        raise
    if kept is not None:
        result["cutoff"] = kept  # counted over every sample, not only those generated for
    record = {"command": "run", "package_version": __version__,
              "dataset": dataset_record(opened, samples, config.limit), "backend": config.backend,
              "model": config.model, **getattr(backend, "model_source", {}), "template": template,
              "sampling": sampling, "n": config.n, "k": list(evaluation.k),
              "engine": {k: options[k] for k in ENGINE_OPTIONS if options.get(k) is not None},
              "test_selection": evaluation.test_selection, "timeout_s": evaluation.timeout,
              "executor": runtime.executor}
    machine = run_record(backend, sampling, result.get("budgets"), evaluation.timeout, options.get("engine_seed"))
    metrics = write_results(config.out, result, f"{name} on {len(samples)} ExecRepoBench samples", run=record,
                            record=machine)
    print(table(metrics, evaluation.k))
    print(f"LaTeX: {metrics['latex']}")
    print(f"wrote {config.out}/ generations.jsonl results.jsonl metrics.json results.json latex.txt chart.png")
    return metrics
