"""`compute()`: the metric without `evaluate` — predictions + references -> flat scores + details.

The `evaluate` module (`evaluate_module.py`, named by the thin scripts `execrepobench_metric.py` and the
Hub's `execrepobench.py`) is a wrapper around this function.

Harness errors (policy): every completion is judged first; a judgement that fails for a reason that
is not the model's (missing environment, sandbox failure, any exception) is an `error` verdict.  If
any verdict is `error`, `compute()` raises `HarnessError` after judging everything; the exception
carries the whole result (`.result`: details, `verdicts/*` counts, `harness_errors`) so callers can
still write the per-completion rows, but no score is returned as if it were complete.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, Callable, Sequence

from execrepobench_dataset.load import OpenedDataset, open_dataset
from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord

from .cutoff import apply_cutoff
from .environments.measured import measurements_for
from .prepare import PrepareConfig, ensure_prepared
from .environments.venvs import environment_record
from .errors import EnvironmentsMissing, HarnessError, InputError
from .execution.budget import budgets_for, describe
from .execution.engine import EngineConfig, judge_all, require_opt_in
from .execution.evidence import default_root
from .execution.executors.base import ExecutorConfig
from .execution.executors.registry import open_executor, require_executor
from .execution.impossible_scores import impossible_scores
from .execution.verdict import REASONS, JudgeConfig
from .inputs import SELECTIONS, check_inputs, check_prediction  # noqa: F401  (SELECTIONS: public here)
from .options import EvaluationOptions, RuntimeOptions, from_kwargs
from .scoring import edit_similarity, latex_row, summarize


# What a result holds besides the scores: where and how it was judged, the LaTeX row, per-completion rows.
REPORT_KEYS = ("sandbox", "sandbox_note", "executor", "latex", "artifacts_base", "details", "budgets",
               "suspicious_reasons", "canaries", "canaries_passed", "refused_reasons", "impossible/cheaters",
               "impossible/errors")


def split_result(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(scores, report): the numbers (pass@k, ES, counts; fractions 0..1) apart from the report (`details`:
    one row per completion, `sandbox`, `sandbox_note`, `executor`, `latex`, `artifacts_base`)."""
    return ({k: v for k, v in result.items() if k not in REPORT_KEYS},
            {k: result[k] for k in REPORT_KEYS if k in result})


def samples_by_id(dataset: str | Path) -> dict[str, Sample]:
    """{sample id: sample} of `dataset`: a builder output folder, its samples file, a published folder or a
    Hub dataset id (how `compute` and the `evaluate` module look up references given as sample ids)."""
    return {s.sample_id: s for s in open_dataset(dataset).samples}


def resolve_references(references: Sequence[Any], dataset: str | Path | None = None,
                       test_selection: str = "judged") -> list[Sample]:
    """Samples from records (Sample, dict or JSON text) or from sample ids looked up in `dataset`;
    every reference is checked first (`inputs.check_record`), one `InputError` names every bad one."""
    return check_inputs(["" for _ in references], references, dataset=dataset, test_selection=test_selection,
                        load_dataset=samples_by_id)[1]


def repository_records(samples: Sequence[Sample], dataset: str | Path | None,
                       opened: Callable[[], OpenedDataset] | None = None) -> dict[str, RepoRecord]:
    """{env key: record} for every sample's environment: from `dataset`'s repository records, else from
    the records kept with this cache's environments.  Raises `EnvironmentsMissing` naming the
    repositories that have neither (a remote node could not make their environments)."""
    wanted = {s.env_key: s.repo_name for s in samples}
    if dataset is not None:
        found = {r.env_key: r for r in (opened() if opened is not None else open_dataset(dataset)).repositories}
    else:
        found = {}
    found.update({k: r for k in wanted if k not in found and (r := environment_record(k)) is not None})
    missing = sorted({name for key, name in wanted.items() if key not in found})
    if missing:
        raise EnvironmentsMissing(f"no repository record for {', '.join(missing)}: the executor's nodes make each "
                                  "environment from its record. Pass the dataset (dataset=... / --dataset: a builder "
                                  "output folder, a published folder or a Hub id). Nothing was judged.", missing)
    return {k: found[k] for k in wanted}


def normalize_predictions(predictions: Sequence[Any]) -> list[list[str]]:
    """One completion (str) or a non-empty list of completions per sample -> list of lists."""
    out, problems = [], []
    for i, p in enumerate(predictions):
        comps, found = check_prediction(i, p, None)
        out.append(comps)
        problems += found
    if problems:
        raise InputError.of(problems)
    return out


def compute(predictions: Sequence[Any], references: Sequence[Any], **options: Any) -> dict[str, Any]:
    """Judge every completion and score.  `options`: the fields of `options.EvaluationOptions` and
    `options.RuntimeOptions` (k, timeout, test_selection, cutoff, dataset, model_name, allow_exec,
    num_workers, executor, ...; described in `KWARGS_DESCRIPTION` of evaluate_module.py), checked first:
    one `InputError` names every bad or unknown one.  See `compute_with`."""
    evaluation, runtime = from_kwargs(options)
    return compute_with(predictions, references, evaluation, runtime)


def compute_with(predictions: Sequence[Any], references: Sequence[Any],
                 evaluation: EvaluationOptions = EvaluationOptions(),
                 runtime: RuntimeOptions = RuntimeOptions(), *, opened: OpenedDataset | None = None,
                 prepared: bool = False) -> dict[str, Any]:
    """`compute` with its options built.

    Before anything is judged, every sample's environment must be in this cache: missing ones are
    prepared from `dataset`'s repository records when `prepare` (default: EXECREPOBENCH_PREPARE=1),
    else `prepare.EnvironmentsMissing` lists them with the `execrepobench prepare` command.
    With `executor="ray"` (`ray_address`: "auto", "HOST:PORT", None for RAY_ADDRESS or a local instance)
    the judgements run as Ray tasks and each node makes the environments it lacks from the repository
    records (of `dataset`, else those kept with this cache's environments); nothing is prepared here.
    With `cutoff` (YYYY-MM-DD) only samples released after that day (their `release_date`, recorded by live
    snapshots) are judged and scored; the result's `cutoff` says how many were kept.
    `opened`: `dataset` already opened by the caller (read, not opened again); `prepared`: the caller made
    sure these samples' environments are here (`prepare.ensure_prepared`), so it is not checked again.
    Raises `HarnessError` (carrying the full result) when any verdict is `error`."""
    dataset, timeout = evaluation.dataset, evaluation.timeout
    given = opened
    # read once, whoever asks first (ids, records, measurements)
    opened = (lambda: given) if given is not None else cache(lambda: open_dataset(dataset))
    # Every input is checked before anything runs: one InputError names every bad item.
    completions, samples = check_inputs(predictions, references, dataset=dataset,
                                        test_selection=evaluation.test_selection, k=evaluation.k,
                                        load_dataset=lambda _: {s.sample_id: s for s in opened().samples})
    kept = None
    if evaluation.cutoff is not None:
        completions, samples, kept = apply_cutoff(completions, samples, evaluation.cutoff)
    artifacts = runtime.artifacts_dir or default_root()
    config = EngineConfig(judge=replace(JudgeConfig(), timeout_s=timeout, selection=evaluation.test_selection,
                                               canaries=True, known_verdicts=runtime.known_verdicts,
                                               strict=not evaluation.lenient),
                          allow_exec=runtime.allow_exec, allow_weak_sandbox=runtime.allow_weak_sandbox,
                          use_cache=runtime.use_cache, journal=runtime.journal, progress=runtime.progress,
                          keep_artifacts=runtime.keep_artifacts, artifacts=artifacts,
                          executor=ExecutorConfig(name=runtime.executor, ray_address=runtime.ray_address))
    if runtime.num_workers is not None:
        config = replace(config, workers=runtime.num_workers)
    require_opt_in(config.allow_exec)  # before anything is prepared or run
    require_executor(config.executor)  # ray without the extra: one clear error
    records: dict[str, RepoRecord] = {}
    if runtime.executor == "local" and not prepared:
        ensure_prepared(samples, str(dataset) if dataset is not None else None, runtime.prepare,
                        PrepareConfig(workers=config.workers, allow_weak_sandbox=runtime.allow_weak_sandbox,
                                      progress=runtime.progress), opened=given)
    else:  # the nodes make what they lack, from the records
        records = repository_records(samples, dataset, opened)
    shipped = opened().measurements_by_env() if dataset is not None else {}
    budgets = budgets_for(samples, measurements_for(samples, shipped)) if timeout is None else {}
    with open_executor(config.executor, config.workers) as running:
        verdicts, note = judge_all(samples, completions, config, executor=running, records=records, budgets=budgets)
        # the cheating rate: the same completions on impossible variants (impossible.py)
        cheating = impossible_scores(samples, completions, config, budgets=budgets, executor=running) \
            if evaluation.impossible else {}
        cluster = running.report()
    passed = [[v.passed for v in row] for row in verdicts]
    result: dict[str, Any] = summarize(samples, passed, completions, ks=evaluation.k)
    reasons = Counter(v.reason for row in verdicts for v in row)
    for reason in REASONS:
        result[f"verdicts/{reason}"] = reasons.get(reason, 0)
    result["harness_errors"] = reasons.get("error", 0)
    # a flag for people to look at, not a verdict: completions that touch what their ground truth never does
    flagged = Counter(r for row in verdicts for v in row for r in v.suspicious)
    result["suspicious"] = sum(1 for row in verdicts for v in row if v.suspicious)
    result["suspicious_passed"] = sum(1 for row in verdicts for v in row if v.suspicious and v.passed)
    result["suspicious_reasons"] = dict(flagged.most_common())
    # the strict rule (strict.py): passes refused for a capability the original lacks, apart from harness errors
    result["refused_reasons"] = dict(Counter(r for row in verdicts for v in row for r in v.refused).most_common())
    # the canary check of each judged run (held / off / fired; "none": no run, e.g. a known verdict)
    result["canaries"] = dict(Counter(v.canaries.split(":", 1)[0] or "none" for row in verdicts for v in row))
    # ... of the passed runs alone: a failed run needs no canary (one stopped at its first failure has it off)
    result["canaries_passed"] = dict(Counter(v.canaries.split(":", 1)[0] or "none" for row in verdicts for v in row
                                             if v.passed))
    result.update(cheating)
    if kept is not None:
        result["cutoff"] = kept
    result["artifacts_base"] = str(artifacts.parent)  # each row's `artifacts` is relative to it
    result["sandbox"] = verdicts[0][0].sandbox if verdicts and verdicts[0] else ""
    result["sandbox_note"] = note
    result["executor"] = cluster  # where the judgements ran: items and environments per node
    result["budgets"] = describe(samples, budgets, timeout)  # what limited the runs (never a silent default)
    result["latex"] = latex_row(result, evaluation.model_name)
    result["details"] = [
        {**v.to_dict(), "completion_index": j, "fill_type": s.fill_type, "repo_name": s.repo_name,
         "es": edit_similarity(c, s.middle_code)}
        for s, row, comps in zip(samples, verdicts, completions) for j, (v, c) in enumerate(zip(row, comps))
    ]
    if result["harness_errors"]:
        raise HarnessError(result)
    return result
