"""`execrepobench run`: build if needed -> generate -> evaluate -> report, in one command.

Folder layout under --out: build/ (samples.jsonl, build_report.*; skipped when --samples is given),
generations.jsonl, journal.jsonl, results.jsonl, metrics.json, latex.txt, chart.png, artifacts/
(evidence: with --keep-artifacts, and always for harness errors).  Every step resumes: the build
reuses finished repositories, generation skips done samples, evaluation replays its journal.

Harness errors stop the scores, never the record: a build in which some repository failed stops
before generation (`BuildFailed`: run again once fixed, finished repositories are reused); an
evaluation with `error` verdicts writes results.jsonl (error rows marked) and no score
(`HarnessError`).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from execrepobench_dataset.context import ContextResolver
from execrepobench_dataset.load import open_dataset
from execrepobench_metric.api import HarnessError, compute
from execrepobench_metric.cutoff import apply_cutoff, describe

from .backends.base import get_backend
from .generate import GenerateConfig, generate, read_generations
from .report import table, write_error_results, write_results


class BuildFailed(RuntimeError):
    """Some repositories failed to build (harness errors); `.summary` says which and why."""

    def __init__(self, summary: str) -> None:
        super().__init__(summary)
        self.summary = summary


@dataclass(frozen=True)
class RunConfig:
    out: Path
    backend: str = "baseline"
    model: str | None = None
    samples: Path | None = None  # use these instead of building
    manifest: Path | None = None
    quickstart: bool = False
    n: int = 1
    k: tuple[int, ...] = (1,)
    workers: int | None = None
    timeout_s: float | None = None  # None: each sample's time budget
    allow_exec: bool | None = None
    allow_weak_sandbox: bool = False
    progress: bool = True
    backend_options: dict = field(default_factory=dict)
    template: str | None = None  # prompt template for model backends; None / "official": resolve_template()
    max_new_tokens: int | None = None  # generation budget (None: prompts.MAX_GENERATION_TOKENS)
    keep_artifacts: bool = False  # keep every run's evidence under OUT/artifacts/
    executor: str = "local"  # where verification and judging run: "local" or "ray"
    ray_address: str | None = None  # with executor "ray": "auto", "HOST:PORT", None (RAY_ADDRESS / local instance)
    cutoff: str | None = None  # YYYY-MM-DD: generate for and score only samples released after that day


def _samples_path(config: RunConfig) -> Path:
    if config.samples is not None:
        return config.samples
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.manifest import default_manifest_path, load_manifest, quickstart_manifest_path
    from execrepobench_metric.executors import ExecutorConfig

    path = config.manifest or (quickstart_manifest_path() if config.quickstart else default_manifest_path())
    out = config.out / "build"
    summary = build(BuildConfig(manifest=load_manifest(path), out=out, progress=config.progress,
                                allow_weak_sandbox=config.allow_weak_sandbox,
                                executor=ExecutorConfig(config.executor, config.ray_address)))
    failed = [r for r in summary["repos"] if r["status"] == "error"]
    if failed:
        lines = [f"BUILD ERRORS: {len(failed)} of {len(summary['repos'])} repositories failed (harness errors); "
                 "nothing was generated or judged. Finished repositories are reused when you run again."]
        lines += [f"  {r['repo']} at {r.get('phase', '?')}: {str(r.get('reason', ''))[:200]}" for r in failed]
        lines.append(f"  details: {out / 'build_report.json'}")
        print("\n".join(lines), file=sys.stderr)
        raise BuildFailed("\n".join(lines))
    return out / "samples.jsonl"


def _needs_prompt(backend: str) -> bool:
    """The backend class's `needs_prompt`, read without making the backend (unknown names: get_backend says)."""
    import importlib

    from .backends.base import REGISTRY

    if backend not in REGISTRY:
        return False
    module, _, cls = REGISTRY[backend].partition(":")
    return bool(getattr(getattr(importlib.import_module(module), cls), "needs_prompt", True))


def _prompting(config: RunConfig, options: dict):
    """For model backends: (render(sample) -> (prompt, info), stop strings, template name), with the template
    (--template, else detected from the model name) and the model folder's own tokenizer and length.  Fills
    `options` with the stop strings and the generation budget."""
    from .prompts import MAX_GENERATION_TOKENS, build_prompt_for_sample, load_tokenizer, model_max_length
    from .templates import get_template, resolve_template

    if not config.model:
        raise ValueError(f"backend {config.backend!r} needs --model (a local model folder: its tokenizer builds "
                         "the prompts)")
    name = resolve_template(config.template, config.model)
    template = get_template(name)
    if config.template in (None, "official"):
        print(f"template: {name} (detected from the model name {config.model!r}; --template NAME to choose)")
    folder = Path(options.get("tokenizer") or config.model).expanduser()
    if not (folder / "tokenizer.json").is_file() or not (folder / "config.json").is_file():
        raise FileNotFoundError(f"model folder {str(folder)!r} has no tokenizer.json/config.json: prompts are "
                                "fitted with the model's own tokenizer, so --model must be a local model folder "
                                "(for --backend openai, serve the model under that folder path)")
    tokenizer, model_max = load_tokenizer(folder), model_max_length(folder)
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
    samples_file = _samples_path(config)
    opened = open_dataset(samples_file)  # the samples and, beside them, the repository records (context files)
    samples, resolver = list(opened.samples), ContextResolver(opened.repositories)
    if not samples:
        raise ValueError(f"{samples_file}: no samples to evaluate (see the build report beside it)")
    kept = None
    if config.cutoff is not None:  # before generation: the dropped samples need no completion
        _, samples, kept = apply_cutoff([[]] * len(samples), samples, config.cutoff)
        print(describe(kept))
    options, render, stops, template = dict(config.backend_options), None, (), None
    if _needs_prompt(config.backend):
        render, stops, template = _prompting(config, options)
    backend = get_backend(config.backend, config.model, **options)
    gen_path = config.out / "generations.jsonl"
    sampling = {k: options[k] for k in ("temperature", "top_p", "seed", "max_new_tokens") if options.get(k) is not None}
    if hasattr(getattr(backend, "sampling", None), "describe"):  # model backends: the settings in effect
        sampling = backend.sampling.describe()
    generate(samples, backend, gen_path, GenerateConfig(n=config.n, template=template, sampling=sampling,
                                                        progress=config.progress), render=render, stops=stops,
             with_context=resolver.materialise)
    completions = read_generations(gen_path, samples)
    name = config.model or config.backend
    try:
        result = compute(completions, samples, k=config.k, num_workers=config.workers, timeout=config.timeout_s,
                         allow_exec=config.allow_exec, allow_weak_sandbox=config.allow_weak_sandbox,
                         journal=config.out / "journal.jsonl", model_name=name, progress=config.progress,
                         keep_artifacts=config.keep_artifacts, artifacts_dir=config.out / "artifacts",
                         executor=config.executor, ray_address=config.ray_address,
                         # ray: the repository records beside the samples tell the nodes how to make environments
                         dataset=samples_file if config.executor == "ray" else None)
    except HarnessError as exc:
        print(write_error_results(config.out, exc.result), file=sys.stderr)
        raise
    if kept is not None:
        result["cutoff"] = kept  # counted over every sample, not only those generated for
    metrics = write_results(config.out, result, f"{name} on {len(samples)} ExecRepoBench samples")
    print(table(metrics))
    print(f"LaTeX: {metrics['latex']}")
    print(f"wrote {config.out}/ generations.jsonl results.jsonl metrics.json latex.txt chart.png")
    return metrics
