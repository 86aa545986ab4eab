"""`execrepobench run`: build if needed -> generate -> evaluate -> report, in one command.

Folder layout under --out: build/ (samples.jsonl, build_report.*; skipped when --samples is given),
generations.jsonl, journal.jsonl, results.jsonl, metrics.json, latex.txt, chart.png.  Every step
resumes: the build reuses finished repositories, generation skips done samples, evaluation replays
its journal.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from execrepobench_dataset.record import read_jsonl
from execrepobench_metric.api import compute

from .backends.base import get_backend
from .generate import GenerateConfig, generate, read_generations
from .report import table, write_results


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
    timeout_s: float = 300.0
    allow_exec: bool | None = None
    allow_weak_sandbox: bool = False
    progress: bool = True
    backend_options: dict = field(default_factory=dict)


def _samples_path(config: RunConfig) -> Path:
    if config.samples is not None:
        return config.samples
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.manifest import default_manifest_path, load_manifest, quickstart_manifest_path

    path = config.manifest or (quickstart_manifest_path() if config.quickstart else default_manifest_path())
    out = config.out / "build"
    build(BuildConfig(manifest=load_manifest(path), out=out, progress=config.progress))
    return out / "samples.jsonl"


def run(config: RunConfig) -> dict:
    samples_file = _samples_path(config)
    samples = list(read_jsonl(samples_file))
    if not samples:
        raise ValueError(f"{samples_file}: no samples to evaluate (see the build report beside it)")
    backend = get_backend(config.backend, config.model, **config.backend_options)
    gen_path = config.out / "generations.jsonl"
    generate(samples, backend, gen_path, GenerateConfig(n=config.n, progress=config.progress))
    completions = read_generations(gen_path, samples)
    name = config.model or config.backend
    result = compute(completions, samples, k=config.k, num_workers=config.workers, timeout=config.timeout_s,
                     allow_exec=config.allow_exec, allow_weak_sandbox=config.allow_weak_sandbox,
                     journal=config.out / "journal.jsonl", model_name=name, progress=config.progress)
    metrics = write_results(config.out, result, f"{name} on {len(samples)} ExecRepoBench samples")
    print(table(metrics))
    print(f"LaTeX: {metrics['latex']}")
    print(f"wrote {config.out}/ generations.jsonl results.jsonl metrics.json latex.txt chart.png")
    return metrics
