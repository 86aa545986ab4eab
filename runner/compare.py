"""`execrepobench compare RUN_DIR... --out DIR`: a leaderboard over result folders of one dataset.

Each RUN_DIR is what `execrepobench run` / `evaluate` wrote: `metrics.json` (with the `run` record that
names the dataset's fingerprint) and `results.jsonl` (one row per judged completion).  Folders of
different datasets (fingerprints) are refused; runs that judged different subsets of one dataset
(`--limit`) are compared on the samples they have in common, and the output says how many.

Per model the score of a sample is its pass@1 (c/n over its completions); the model's pass@1 is the
mean over samples.  Uncertainty (fixed seed, so the output is reproducible):
- a 95% confidence interval per model: paired bootstrap over samples (every resample draws the same
  samples for every model, so the intervals are comparable), percentile method;
- per pair of models: the bootstrap interval of the difference, and a two-sided p-value from a paired
  permutation test (the two models' scores of each sample swapped at random; sign flips of the
  per-sample differences), with the +1 correction, so it is never 0.

Writes `comparison.json` (fractions, 0..1; `note` says when the runs judged different subsets),
`leaderboard.md` and `leaderboard.html` (percent, said so; written by `compare_md.py` and `compare_html.py`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.record import FILL_TYPES

from .errors import CompareError

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
MIN_RESAMPLES = 100
CHUNK = 500  # bootstrap resamples drawn at once (bounded memory for large datasets)


@dataclass(frozen=True)
class RunScores:
    folder: Path
    label: str
    fingerprint: str
    dataset: str
    per_sample: dict  # sample_id -> (pass@1 fraction, mean ES fraction)
    groups: dict  # sample_id -> (fill_type, repo_name)
    metrics: dict


def _read_json_lines(path: Path) -> list[tuple[int, object]]:
    """(line number, row) of each non-blank line of a JSONL file; a line that is not JSON is named by file
    and line number."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CompareError(f"{path}: unreadable results (not UTF-8 text: {exc})") from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((n, json.loads(line)))
            except ValueError as exc:
                raise CompareError(f"{path}:{n}: unreadable results line, not JSON ({exc})") from None
    return rows


def _read_run(folder: Path) -> RunScores:
    if not folder.exists():
        raise CompareError(f"{folder}: no such folder")
    if not folder.is_dir():
        raise CompareError(f"{folder}: not a folder (give the result folder of `execrepobench run` / `evaluate`)")
    metrics_path, rows_path = folder / "metrics.json", folder / "results.jsonl"
    missing = [p.name for p in (metrics_path, rows_path) if not p.is_file()]
    if missing:
        what = " and ".join(missing) + (" (the folder has neither)" if len(missing) == 2 else "")
        raise CompareError(f"{folder}: no {what}: not a finished `execrepobench run` / `evaluate` folder (a run "
                           "with harness errors writes no score: fix it and run again)")
    try:
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CompareError(f"{metrics_path}: unreadable, not JSON ({exc})") from None
    if not isinstance(metrics, dict):
        raise CompareError(f"{metrics_path}: not a JSON object (not written by `execrepobench run` / `evaluate`)")
    rows = _read_json_lines(rows_path)
    run = metrics.get("run") if isinstance(metrics.get("run"), dict) else {}
    dataset = run.get("dataset") if isinstance(run.get("dataset"), dict) else {}
    if not dataset.get("fingerprint"):
        raise CompareError(f"{folder}: metrics.json names no dataset fingerprint (run.dataset.fingerprint): written "
                           "by an older version; run it again to compare it")
    passed: dict[str, list[bool]] = {}
    es: dict[str, list[float]] = {}
    groups: dict[str, tuple[str, str]] = {}
    for n, row in rows:
        try:
            sid = row["sample_id"]
            passed.setdefault(sid, []).append(bool(row["passed"]))
            es.setdefault(sid, []).append(float(row.get("es", 0.0)))
            groups[sid] = (row["fill_type"], row["repo_name"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CompareError(f"{rows_path}:{n}: not a result row ({exc!r} missing or wrong)") from None
        if row.get("reason") == "error":
            raise CompareError(f"{rows_path}:{n}: a harness error row: this run has no score; run it again")
    per_sample = {sid: (sum(p) / len(p), sum(es[sid]) / len(es[sid])) for sid, p in passed.items()}
    label = str(run.get("model") or run.get("backend") or metrics.get("model_name") or folder.name)
    return RunScores(folder, label, dataset["fingerprint"], str(dataset.get("name", "")), per_sample, groups,
                     metrics)


def read_runs(folders: list[Path], names: list[str] | None = None) -> list[RunScores]:
    """The runs, checked: at least two, each folder once (paths resolved: `a`, `a/` and a link to it are
    one folder), one dataset fingerprint, distinct labels (the folder name is added to labels that repeat).
    `names`: display names, one per folder in order (--name), used as the labels everywhere."""
    if len(folders) < 2:
        raise CompareError("compare needs at least two result folders")
    if names and len(names) != len(folders):
        raise CompareError(f"--name given {len(names)} time(s) for {len(folders)} result folders: give one display "
                           "name per folder, in the folders' order")
    seen: dict[Path, Path] = {}
    for folder in map(Path, folders):
        first = seen.get(folder.resolve())
        if first is not None:
            same = f"{folder}" if str(first) == str(folder) else f"{folder} (the same folder as {first})"
            raise CompareError(f"{same} is given twice: a run compared with itself; give each result folder once")
        seen[folder.resolve()] = folder
    runs = [_read_run(Path(f)) for f in folders]
    if names:
        runs = [RunScores(r.folder, str(name), r.fingerprint, r.dataset, r.per_sample, r.groups, r.metrics)
                for r, name in zip(runs, names)]
    by_print: dict[str, list[str]] = {}
    for r in runs:
        by_print.setdefault(r.fingerprint, []).append(str(r.folder))
    if len(by_print) > 1:
        detail = "; ".join(f"dataset {fp[:16]}...: {', '.join(names)}" for fp, names in by_print.items())
        raise CompareError(f"the result folders judged different datasets (fingerprints differ): {detail}. "
                           "Compare only runs of one dataset (`execrepobench fingerprint DATASET` prints its "
                           "fingerprint).")
    labels = [r.label for r in runs]
    return [r if labels.count(r.label) == 1 else RunScores(r.folder, f"{r.label} ({r.folder.name})", r.fingerprint,
                                                             r.dataset, r.per_sample, r.groups, r.metrics)
            for r in runs]


def bootstrap_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(models, resamples) means of `values` (models, samples) over paired resamples of the samples."""
    n = values.shape[1]
    out = np.empty((values.shape[0], resamples))
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        idx = rng.integers(0, n, size=(size, n))
        out[:, start:start + size] = values[:, idx].mean(axis=2)
    return out


def permutation_p(a: np.ndarray, b: np.ndarray, resamples: int, rng: np.random.Generator) -> float:
    """Two-sided p-value of mean(a - b) != 0, paired sign-flip permutation, (1 + hits) / (1 + resamples)."""
    diff = a - b
    observed = abs(diff.mean())
    if not diff.any():
        return 1.0
    hits = 0
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, diff.size))
        hits += int((np.abs((signs * diff).mean(axis=1)) >= observed - 1e-12).sum())
    return (1 + hits) / (1 + resamples)


def _interval(draws: np.ndarray) -> list[float]:
    low, high = np.percentile(draws, [2.5, 97.5])
    return [float(low), float(high)]


def _group_table(runs: list[RunScores], ids: list[str], key: int, names: list[str]) -> dict:
    """{group name: {"n": samples, "pass@1": {label: fraction}, "es": {label: fraction}}}."""
    out = {}
    for name in names:
        members = [s for s in ids if runs[0].groups[s][key] == name]
        if members:
            out[name] = {"n": len(members),
                         "pass@1": {r.label: float(np.mean([r.per_sample[s][0] for s in members])) for r in runs},
                         "es": {r.label: float(np.mean([r.per_sample[s][1] for s in members])) for r in runs}}
    return out


def check_settings(resamples: object, seed: object, names: tuple[str, str] = ("resamples", "seed")) -> None:
    """UsageError naming the setting (`names`: the keyword or flag names) unless `resamples` is an integer
    >= MIN_RESAMPLES and `seed` a non-negative integer."""
    def whole(x: object) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    if not whole(resamples) or resamples < MIN_RESAMPLES:
        raise UsageError(f"{names[0]} must be an integer of at least {MIN_RESAMPLES}, got {resamples!r}")
    if not whole(seed) or seed < 0:
        raise UsageError(f"{names[1]} must be a non-negative integer, got {seed!r}")


def subset_note(per_run: dict, compared: int) -> str | None:
    """What the output says when the runs judged different subsets of the dataset, else None."""
    if all(count == compared for count in per_run.values()):
        return None
    return ("Runs judged different subsets; only the samples they share are compared ("
            + ", ".join(f"{label}: {count}" for label, count in per_run.items()) + f"; {compared} shared).")


def compare(folders: list[Path], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
            names: list[str] | None = None) -> dict:
    """The comparison of the runs in `folders` (see the module docstring), as written to comparison.json."""
    from .compare_meta import dataset_display_name, ranks, run_metadata

    check_settings(resamples, seed)
    runs = read_runs(folders, names)
    common = set(runs[0].per_sample)
    for r in runs[1:]:
        common &= set(r.per_sample)
    if not common:
        raise CompareError("the result folders have no judged sample in common: nothing to compare ("
                           + ", ".join(f"{r.folder}: {len(r.per_sample)} samples" for r in runs) + ")")
    ids = sorted(common)
    passes = np.array([[r.per_sample[s][0] for s in ids] for r in runs])
    es = np.array([[r.per_sample[s][1] for s in ids] for r in runs])
    rng = np.random.default_rng(seed)
    draws = bootstrap_means(passes, resamples, rng)
    es_draws = bootstrap_means(es, resamples, np.random.default_rng([seed, 1]))  # its own stream: pass@1's unchanged
    models = []
    for i, r in enumerate(runs):
        run = r.metrics.get("run") or {}
        models.append({"label": r.label, "folder": str(r.folder), "pass@1": float(passes[i].mean()),
                       "pass@1_ci95": _interval(draws[i]), "es": float(es[i].mean()),
                       "es_ci95": _interval(es_draws[i]), **run_metadata(r.metrics),
                       "backend": run.get("backend"), "model": run.get("model"), "template": run.get("template"),
                       "n": run.get("n"), "reported": {k: v for k, v in r.metrics.items()
                                                       if k.startswith("pass@") and "/" not in k},
                       "samples_in_run": len(r.per_sample)})
    order = sorted(range(len(runs)), key=lambda i: (-models[i]["pass@1"], models[i]["label"]))
    for i, (rank, tied) in enumerate(ranks([m["pass@1"] for m in models])):  # equal pass@1: one shared rank
        models[i].update(rank=rank, tied=tied)
    pairs = []
    for x in range(len(order)):
        for y in range(x + 1, len(order)):
            i, j = order[x], order[y]
            pairs.append({"a": runs[i].label, "b": runs[j].label,
                          "difference": float(passes[i].mean() - passes[j].mean()),
                          "difference_ci95": _interval(draws[i] - draws[j]),
                          "p_value": permutation_p(passes[i], passes[j], resamples, rng)})
    repos = sorted({runs[0].groups[s][1] for s in ids})
    per_run = {r.label: len(r.per_sample) for r in runs}
    return {"dataset": {"name": dataset_display_name(runs[0].metrics), "fingerprint": runs[0].fingerprint},
            "samples": {"compared": len(ids), "per_run": per_run}, "note": subset_note(per_run, len(ids)),
            "method": {"score": "pass@1 per sample (passed completions / completions), mean over samples",
                       "interval": "paired bootstrap over samples, percentile 95% (pass@1 and ES)",
                       "resamples": resamples, "ties": "equal pass@1 share a rank (shown as =N)",
                       "p_value": "paired permutation (sign flip), two-sided, (1 + hits) / (1 + resamples)",
                       "seed": seed, "scale": "fractions 0..1"},
            "models": [models[i] for i in order], "pairs": pairs,
            "per_fill_type": _group_table(runs, ids, 0, list(FILL_TYPES)), "per_repository": _group_table(runs, ids, 1, repos)}


def write_comparison(folders: list[Path], out: Path, resamples: int = DEFAULT_RESAMPLES,
                     seed: int = DEFAULT_SEED, names: list[str] | None = None) -> dict:
    """Compare, then write comparison.json, leaderboard.md and leaderboard.html into `out`."""
    from .compare_html import render_page
    from .compare_md import markdown

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: a file, not a folder; --out must be a folder (it is made if missing)")
    result = compare(folders, resamples, seed, names)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise UsageError(f"--out {out}: cannot make the folder ({exc.strerror}: {exc.filename}); --out must be a "
                         "folder") from None
    (out / "comparison.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / "leaderboard.md").write_text(markdown(result), encoding="utf-8")
    (out / "leaderboard.html").write_text(render_page(result), encoding="utf-8")
    return result
