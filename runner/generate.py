"""Resumable generation: one JSONL line per sample, appended as soon as it is generated; samples
already in the file are skipped, so an interrupted run continues where it stopped."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from tqdm import tqdm

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.record import Sample

from .backends.base import Backend, Request
from .errors import GenerationsMismatch
from .postprocess import clean


@dataclass(frozen=True)
class GenerateConfig:
    n: int = 1
    batch_size: int = 32
    template: str | None = None
    sampling: dict = field(default_factory=dict)
    progress: bool = True


# What a line was generated with: a run resumes a file only if every line agrees with it on these
SETTINGS = ("backend", "model", "template", "sampling", "n")


def done_ids(path: Path, settings: dict | None = None) -> set[str]:
    """The samples `path` already holds.  With `settings` (SETTINGS' values of this run): a line made with
    other ones is a `GenerationsMismatch` naming both - its completions are not this run's."""
    ids = set()
    if path.is_file():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                rec = json.loads(line)
                sample_id = rec["sample_id"]
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by an interruption: regenerated
            made = {k: rec.get(k) for k in SETTINGS}
            if settings is not None and made != settings:
                differ = ", ".join(f"{k} {made[k]!r} (this run: {settings[k]!r})" for k in SETTINGS
                                   if made[k] != settings[k])
                raise GenerationsMismatch(
                    f"{path} line {number} holds completions made with other settings: {differ}. A run "
                    "resumes only its own generations: give another --out, or delete the file to generate "
                    "again")
            ids.add(sample_id)
    return ids


def generate(samples: Sequence[Sample], backend: Backend, out: Path, config: GenerateConfig = GenerateConfig(),
             render: Callable[[Sample], tuple[object, dict]] | None = None,
             stops: Sequence[str] = (), with_context: Callable[[Sample], Sample] | None = None) -> int:
    """Append generations for the samples not yet in `out`; returns how many were generated.

    `render(sample)` -> (prompt, info) is required by backends that need a prompt; `info` (token
    counts, truncation flags) is stored with the line.  `with_context(sample)` gives the sample with its
    context materialised (samples that store it by reference: `ContextResolver.materialise`), one batch
    at a time, before rendering and generating."""
    if backend.needs_prompt and render is None:
        raise ValueError(f"backend {backend.name!r} needs prompts: give a template")
    if config.n < 1:
        raise UsageError(f"--n must be at least 1 (completions per sample), got {config.n}")
    settings = {"backend": backend.name, "model": backend.model, "template": config.template,
                "sampling": config.sampling, "n": config.n}
    skip = done_ids(out, json.loads(json.dumps(settings)))  # as a line holds them (tuples read back as lists)
    todo = [s for s in samples if s.sample_id not in skip]
    out.parent.mkdir(parents=True, exist_ok=True)
    bar = tqdm(total=len(todo), desc=f"generate ({backend.name})", unit="sample", disable=not config.progress)
    with out.open("a", encoding="utf-8") as fh:
        for start in range(0, len(todo), config.batch_size):
            batch = todo[start:start + config.batch_size]
            batch = [with_context(s) for s in batch] if with_context else batch
            rendered = [render(s) if render and backend.needs_prompt else (None, {}) for s in batch]
            gens = backend.generate([Request(s, prompt, config.n) for s, (prompt, _) in zip(batch, rendered)])
            for s, (prompt, info), g in zip(batch, rendered, gens):
                line = {"sample_id": s.sample_id, "completion": [clean(r, stops) for r in g.raw], "raw": list(g.raw),
                        "backend": backend.name, "model": backend.model, "template": config.template,
                        "sampling": config.sampling, "n": config.n, **info, **g.meta}
                if prompt is not None:  # the exact prompt sent (its text, or the chat messages)
                    line["prompt"] = prompt
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                fh.flush()
                bar.update(1)
    bar.close()
    return len(todo)


def read_generations(path: Path, samples: Sequence[Sample]) -> list[list[str]]:
    """Completions in sample order; a sample without a generation is an error naming it."""
    by_id = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
            by_id[rec["sample_id"]] = rec["completion"]
        except (ValueError, KeyError, TypeError):
            continue  # a line cut by an interruption; its sample was generated again after it
    missing = [s.sample_id for s in samples if s.sample_id not in by_id]
    if missing:
        raise ValueError(f"{path}: no generation for {len(missing)} sample(s), e.g. {missing[:3]}")
    return [by_id[s.sample_id] for s in samples]
