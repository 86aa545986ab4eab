"""Results of an evaluation: results.jsonl, metrics.json, the LaTeX row, a terminal table and a
PNG chart of pass@1 and ES per fill type.

Scores are fractions (0..1) in metrics.json and results.jsonl, as `evaluate`'s `code_eval` returns
them; the table, the chart and the LaTeX row print percent, and say so."""
from __future__ import annotations

import json
from pathlib import Path

from execrepobench_dataset.record import FILL_TYPES
from execrepobench_metric.execution.surface import impossible_line

SHORT = {f: f.replace("Random ", "").replace(" Completion", "").replace("grammar-based: ", "") for f in FILL_TYPES}


def ks_of(metrics: dict) -> list[int]:
    """The k of every pass@k the metrics report overall, ascending."""
    return sorted(int(key[len("pass@"):]) for key in metrics if key.startswith("pass@") and "/" not in key)


def table(metrics: dict, requested_k: tuple[int, ...] = ()) -> str:
    """Per fill type: n, ES and every reported pass@k, in percent; a requested k that could not be
    reported (fewer completions per sample than k) is named below the table."""
    ks = ks_of(metrics)
    groups = [("all", "")] + [(f, f"/{f}") for f in FILL_TYPES if f"pass@1/{f}" in metrics]
    head = f"{'fill type':34} {'n':>5} {'ES %':>6}" + "".join(f" {f'pass@{k} %':>9}" for k in ks)
    lines = [head]
    for name, suffix in groups:
        n = metrics.get("n_samples" + suffix) or 0
        cells = [f"{100.0 * metrics['es' + suffix]:6.1f}" if ("es" + suffix) in metrics else f"{'-':>6}"]
        cells += [f"{100.0 * metrics[key]:9.1f}" if (key := f"pass@{k}{suffix}") in metrics else f"{'-':>9}"
                  for k in ks]
        lines.append(f"{name:34} {n:5d} " + " ".join(cells))
    missing = sorted(set(requested_k) - set(ks))
    if missing:
        lines.append("not reported: " + ", ".join(f"pass@{k}" for k in missing)
                     + " (needs at least k completions per sample: --n)")
    counts = {k.split("/", 1)[1]: v for k, v in metrics.items() if k.startswith("verdicts/") and v}
    lines.append(f"verdicts: {counts}   sandbox: {metrics.get('sandbox')} {metrics.get('sandbox_note', '')}".rstrip())
    if isinstance(metrics.get("budgets"), dict) and metrics["budgets"].get("rule"):
        lines.append(f"time limits: {metrics['budgets']['rule']}")  # what limited the runs, never a silent default
    passed = metrics.get("canaries_passed")
    if isinstance(passed, dict) and passed.get("off"):  # failed runs need no canary: only passes are named
        lines.append(f"canary check off in {passed['off']} passed run(s): their pass rests on the in-process guard "
                     f"alone (why: `canaries` in results.jsonl); passed runs by canary check: {passed}")
    if metrics.get("verdicts/refused"):  # strict rule (strict.py): not passed, apart from harness errors
        lines.append(f"refused (strict rule; --lenient judges by the tests alone): {metrics['verdicts/refused']} "
                     f"completion(s) passed their tests by a capability the original lacks: "
                     f"{metrics.get('refused_reasons', {})}")
    if metrics.get("impossible/samples") is not None:  # impossible.py: pass rate on impossible variants
        lines.append(impossible_line(metrics))
    if metrics.get("suspicious"):
        lines.append(f"suspicious (a flag, not a verdict): {metrics['suspicious']} completion(s), "
                     f"{metrics.get('suspicious_passed', 0)} passed; {metrics.get('suspicious_reasons', {})}")
    return "\n".join(lines)


def chart(metrics: dict, path: Path, title: str) -> Path | None:
    """Grouped bars: pass@1 and ES per fill type, in percent (None when matplotlib is missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fills = [f for f in FILL_TYPES if f"pass@1/{f}" in metrics]
    xs = range(len(fills))
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.bar([x - 0.2 for x in xs], [100.0 * metrics[f"pass@1/{f}"] for f in fills], 0.4, label="pass@1")
    ax.bar([x + 0.2 for x in xs], [100.0 * metrics[f"es/{f}"] for f in fills], 0.4, label="ES")
    ax.set_xticks(list(xs), [SHORT[f] for f in fills])
    ax.set_ylim(0, 100)
    ax.set_ylabel("%")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


SCORE_FILES = ("metrics.json", "results.json", "latex.txt", "chart.png")


def _write_rows(out: Path, result: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.jsonl.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for d in result.get("details", []):
            fh.write(json.dumps(d) + "\n")
    tmp.replace(out / "results.jsonl")


def write_error_results(out: Path, result: dict) -> str:
    """After harness errors: results.jsonl only (error rows carry `harness_error` and their evidence
    folder); score files of an earlier run are removed so none is read as this run's.  Returns the
    summary to print."""
    _write_rows(out, result)
    for name in SCORE_FILES:
        (out / name).unlink(missing_ok=True)
    errors = [d for d in result.get("details", []) if d.get("reason") == "error"]
    lines = [f"HARNESS ERRORS: {len(errors)} of {result.get('n_completions', len(result.get('details', [])))} "
             "judgement(s) failed for the harness's reasons, not the model's. No score is reported.",
             f"Per-completion rows: {out / 'results.jsonl'} (error rows have \"harness_error\": true)."]
    for d in errors[:10]:
        first = str(d.get("detail", "")).splitlines()[0][:200] if d.get("detail") else ""
        where = f" evidence: {out / d['artifacts']}" if d.get("artifacts") else ""
        lines.append(f"  sample {d['sample_id']} completion {d.get('completion_index', 0)}: {first}{where}")
    if len(errors) > 10:
        lines.append(f"  ... and {len(errors) - 10} more")
    lines.append("Fix the cause and run the same command again: finished verdicts are kept (journal), errors are retried.")
    return "\n".join(lines)


def write_results(out: Path, result: dict, title: str, run: dict | None = None, record: dict | None = None) -> dict:
    """Write results.jsonl, metrics.json, results.json (lm-eval's layout, with stderrs), latex.txt, chart.png;
    returns the metrics (no details).  `run`: what was run (dataset with its fingerprint, backend, model,
    template, sampling, n, k, version), kept in metrics.json under "run"; `record`: the run record (data
    about the machine: runner/run_record.py; made here when not given), under "run_record"."""
    from .lm_eval_results import write_lm_eval_results
    from .run_record import run_record

    metrics = {k: v for k, v in result.items() if k != "details"}
    if run is not None:
        metrics["run"] = run
    metrics["run_record"] = record if record is not None else run_record(
        budgets=metrics.get("budgets"), timeout_s=(run or {}).get("timeout_s"))
    _write_rows(out, result)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1), encoding="utf-8")
    write_lm_eval_results(out, metrics, result.get("details", []))
    (out / "latex.txt").write_text(metrics.get("latex", "") + "\n", encoding="utf-8")
    chart(metrics, out / "chart.png", title)
    return metrics
