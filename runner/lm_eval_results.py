"""results.json: a run's scores in lm-evaluation-harness's results layout, beside metrics.json.

lm-eval's readers (`lm_eval.utils.make_table`, leaderboards and sample viewers built on its output) read
`results` ({task: {"<metric>,<filter>": value, "<metric>_stderr,<filter>": stderr, "alias": ...}}), `configs`,
`versions`, `n-shot`, `higher_is_better`, `n-samples` and `config`.  The task is `execrepobench` (the task
shipped in runner/lm_eval_task/ reports the same metric names), filter `none`.

Per fill type scores are extra metrics of the one task, not subtasks: `pass@1_<fill>` and `es_<fill>` with
<fill> one of FILL_SLUGS' values (random_span, random_single_line, random_multi_line, expression, statement,
block), each the mean over that fill type's samples.

Standard errors: analytic, of the mean over samples - the sample standard deviation (ddof=1) of the
per-sample scores over sqrt(number of samples), as lm-eval's `mean_stderr` computes it for its `mean`
aggregation; "N/A" for fewer than two samples.  A sample's score is its unbiased pass@k over its n
completions and the mean ES of its completions (scoring.summarize), so the means equal metrics.json's.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping

from execrepobench_dataset.record import FILL_TYPES
from execrepobench_dataset.schemes import LM_EVAL_TASK_VERSION
from execrepobench_metric.scoring import pass_at_k

TASK = "execrepobench"
FILTER = "none"
STDERR_METHOD = ("analytic: sample standard deviation (ddof=1) of the per-sample scores / sqrt(n samples), "
                 "lm-eval's mean_stderr")
FILL_SLUGS = {fill: fill.replace("grammar-based: ", "").replace(" Completion", "").lower()
              .replace("-", "_").replace(" ", "_") for fill in FILL_TYPES}


def mean_stderr(values: list[float]) -> float | str:
    """lm-eval's mean_stderr: sample stddev (ddof=1) / sqrt(n); "N/A" below two values."""
    n = len(values)
    if n < 2:
        return "N/A"
    mu = sum(values) / n
    return math.sqrt(sum((v - mu) ** 2 for v in values) / (n - 1)) / math.sqrt(n)


def per_sample_scores(details: Iterable[Mapping[str, Any]], ks: Iterable[int]) -> list[tuple[str, dict[str, float]]]:
    """[(fill type, {"pass@k": ..., "es": ...})] per sample, from results.jsonl's per-completion rows."""
    rows: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in details:
        rows[row["sample_id"]].append(row)
    out = []
    for sample_rows in rows.values():
        n, c = len(sample_rows), sum(1 for r in sample_rows if r.get("passed"))
        scores = {f"pass@{k}": pass_at_k(n, c, k) for k in ks if k <= n}
        scores["es"] = sum(float(r["es"]) for r in sample_rows) / n
        out.append((sample_rows[0]["fill_type"], scores))
    return out


def task_results(metrics: Mapping[str, Any], details: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The `results` entry of the task: every score of metrics.json that lm-eval's task reports, each with
    its stderr."""
    ks = sorted(int(key[len("pass@"):]) for key in metrics if key.startswith("pass@") and "/" not in key)
    scored = per_sample_scores(details, ks)
    entry: dict[str, Any] = {"alias": TASK}
    groups = [("", None)] + [("_" + FILL_SLUGS[f], f) for f in FILL_TYPES]
    for suffix, fill in groups:
        values = [s for f, s in scored if fill is None or f == fill]
        if not values:
            continue
        for name in [f"pass@{k}" for k in ks] + ["es"]:
            ours = metrics.get(name + ("" if fill is None else f"/{fill}"))
            if ours is None:
                continue
            entry[f"{name}{suffix},{FILTER}"] = ours
            entry[f"{name}{suffix}_stderr,{FILTER}"] = mean_stderr([s[name] for s in values if name in s])
    return entry


def results_document(metrics: Mapping[str, Any], details: list[Mapping[str, Any]]) -> dict[str, Any]:
    """results.json's content (see the module's docstring)."""
    run = metrics.get("run") or {}
    record = metrics.get("run_record") or {}
    entry = task_results(metrics, details)
    names = sorted(key.split(",")[0] for key in entry if key != "alias" and "_stderr," not in key)
    dataset = run.get("dataset") or {}
    sampling = run.get("sampling") or {}
    n = metrics.get("n_samples", 0)
    model = run.get("model") or run.get("backend")
    return {
        "results": {TASK: entry},
        "group_subtasks": {TASK: []},
        "configs": {TASK: {
            "task": TASK, "dataset_path": dataset.get("name") if isinstance(dataset, dict) else dataset,
            "output_type": "generate_until", "repeats": run.get("n", 1), "num_fewshot": 0,
            "generation_kwargs": sampling, "template": run.get("template"),
            "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in names],
            "metadata": {"version": LM_EVAL_TASK_VERSION, "execrepobench_version": run.get("package_version")},
        }},
        "versions": {TASK: LM_EVAL_TASK_VERSION},
        "n-shot": {TASK: 0},
        "higher_is_better": {TASK: {m: True for m in names}},
        "n-samples": {TASK: {"original": n, "effective": n}},
        "config": {"model": run.get("backend"), "model_args": f"pretrained={model}" if model else "",
                   "batch_size": None, "limit": (dataset.get("limit") if isinstance(dataset, dict) else None),
                   "gen_kwargs": sampling, "random_seed": sampling.get("seed"), "bootstrap_iters": 0},
        "stderr_method": STDERR_METHOD,
        "git_hash": ((record.get("source") or {}).get("commit") or "")[:7] or None,
        "date": record.get("date"),
        "model_name": model,
    }


def write_lm_eval_results(out: Path, metrics: Mapping[str, Any], details: list[Mapping[str, Any]]) -> Path:
    path = out / "results.json"
    path.write_text(json.dumps(results_document(metrics, details), indent=1), encoding="utf-8")
    return path
