"""`compute()`: the metric without `evaluate` — predictions + references -> flat scores + details.

The `evaluate` module (`execrepobench_metric.py`) is a thin wrapper around this function.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from execrepobench_dataset.load import open_dataset
from execrepobench_dataset.record import RecordError, Sample

from .engine import EngineConfig, judge_all, require_opt_in, validate_inputs
from .judge import REASONS, JudgeConfig
from .prepare import PrepareConfig, ensure_prepared
from .scoring import edit_similarity, latex_row, summarize

SELECTIONS = ("judged", "suite")


class InputError(ValueError):
    """Bad predictions or references; the message names the item (index and sample id)."""


def _load_samples(dataset: str | Path) -> dict[str, Sample]:
    """A builder output folder, a published folder, a samples file or a Hub dataset id."""
    return {s.sample_id: s for s in open_dataset(dataset).samples}


def resolve_references(references: Sequence[Any], dataset: str | Path | None = None) -> list[Sample]:
    """Samples from records (Sample, dict or JSON text) or from sample ids looked up in `dataset`."""
    table: dict[str, Sample] | None = None
    out = []
    for i, ref in enumerate(references):
        try:
            if isinstance(ref, Sample):
                out.append(ref)
            elif isinstance(ref, Mapping):
                out.append(Sample.from_dict(ref))
            elif isinstance(ref, str) and ref.lstrip().startswith("{"):
                out.append(Sample.from_dict(json.loads(ref)))
            elif isinstance(ref, str):
                if dataset is None:
                    raise ValueError("is a sample id, but no dataset was given to look it up in")
                if table is None:
                    table = _load_samples(dataset)
                if ref not in table:
                    raise ValueError(f"unknown sample id {ref!r} (not in {dataset})")
                out.append(table[ref])
            else:
                raise TypeError(f"expected a sample record or a sample id, got {type(ref).__name__}")
        except (RecordError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"reference {i}: {exc}") from None
    return out


def normalize_predictions(predictions: Sequence[Any]) -> list[list[str]]:
    """One completion (str) or a list of n completions per sample -> list of lists."""
    out = []
    for i, p in enumerate(predictions):
        if isinstance(p, str):
            out.append([p])
        elif isinstance(p, (list, tuple)):
            out.append(list(p))
        else:
            raise InputError(f"prediction {i}: expected a string or a list of strings, got {type(p).__name__}")
    return out


def compute(predictions: Sequence[Any], references: Sequence[Any], *, k: Sequence[int] = (1,),
            num_workers: int | None = None, timeout: float = 300.0, test_selection: str = "judged",
            dataset: str | Path | None = None, allow_exec: bool | None = None,
            allow_weak_sandbox: bool = False, journal: str | Path | None = None, use_cache: bool = True,
            model_name: str = "model", progress: bool = True, prepare: bool | None = None) -> dict[str, Any]:
    """Judge every completion and score: see `_KWARGS_DESCRIPTION` in execrepobench_metric.py.

    Before anything is judged, every sample's environment must be in this cache: missing ones are
    prepared from `dataset`'s repository records when `prepare` (default: EXECREPOBENCH_PREPARE=1),
    else `prepare.EnvironmentsMissing` lists them with the `execrepobench prepare` command."""
    if test_selection not in SELECTIONS:
        raise ValueError(f"test_selection {test_selection!r}: use one of {SELECTIONS}")
    completions = normalize_predictions(predictions)
    samples = resolve_references(references, dataset)
    config = EngineConfig(judge=replace(JudgeConfig(), timeout_s=timeout, selection=test_selection),
                          allow_exec=allow_exec, allow_weak_sandbox=allow_weak_sandbox, use_cache=use_cache,
                          journal=Path(journal) if journal else None, progress=progress)
    if num_workers is not None:
        config = replace(config, workers=num_workers)
    validate_inputs(samples, completions)  # before anything is prepared or run
    require_opt_in(config.allow_exec)
    ensure_prepared(samples, str(dataset) if dataset is not None else None, prepare,
                    PrepareConfig(workers=config.workers, allow_weak_sandbox=allow_weak_sandbox, progress=progress))
    verdicts, note = judge_all(samples, completions, config)
    passed = [[v.passed for v in row] for row in verdicts]
    result: dict[str, Any] = summarize(samples, passed, completions, ks=tuple(k))
    reasons = Counter(v.reason for row in verdicts for v in row)
    for reason in REASONS:
        result[f"verdicts/{reason}"] = reasons.get(reason, 0)
    result["sandbox"] = verdicts[0][0].sandbox if verdicts and verdicts[0] else ""
    result["sandbox_note"] = note
    result["latex"] = latex_row(result, model_name)
    result["details"] = [
        {**v.to_dict(), "completion_index": j, "fill_type": s.fill_type, "repo_name": s.repo_name,
         "es": edit_similarity(c, s.middle_code)}
        for s, row, comps in zip(samples, verdicts, completions) for j, (v, c) in enumerate(zip(row, comps))
    ]
    return result
