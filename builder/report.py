"""The build report: per repository and overall, as JSON and as a Markdown table."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from execrepobench_dataset import figures
from execrepobench_dataset.record import FILL_TYPES
from execrepobench_dataset.stats import Statistics, level_counts, mix_rows, mix_within_tolerance
from execrepobench_dataset.version import __version__

from .sources.manifest import Manifest

CHARTS_DIR = "charts"


def summarize(reports: list[dict], manifest: Manifest, fingerprint: str, isolation_note: str = "") -> dict:
    per_fill: Counter = Counter()
    dropped: Counter = Counter()
    verify: Counter = Counter()
    rules: Counter = Counter()
    short: Counter = Counter()
    for r in reports:
        per_fill.update(r.get("per_fill_type", {}))
        dropped.update(r.get("dropped", {}))
        verify.update(r.get("dropped_verify", {}))
        verify["verify_candidates"] += r.get("verify_candidates", 0)
        rules.update(r.get("selection_rules", {}))
        short.update(r.get("short_levels", {}))
    return {
        "builder_version": __version__,
        "manifest": manifest.path.name if manifest.path else "<inline manifest>",  # a name, never a path
        "seed": manifest.seed,
        "samples_fingerprint": fingerprint,
        "isolation": sorted({r["isolation"] for r in reports if r.get("isolation")}),
        "isolation_note": isolation_note,
        "totals": {
            "repos": len(reports),
            "repos_ok": sum(r["status"] == "ok" for r in reports),
            "repos_empty": sum(r["status"] == "empty" for r in reports),
            "repos_error": sum(r["status"] == "error" for r in reports),  # harness errors, by phase below
            "errors_by_phase": dict(sorted(Counter(r.get("phase", "?") for r in reports
                                                   if r["status"] == "error").items())),
            "samples": sum(r.get("samples", 0) for r in reports if r["status"] == "ok"),
            "candidates": sum(r.get("candidates", 0) for r in reports),
            "per_fill_type": {f: per_fill.get(f, 0) for f in FILL_TYPES},
            "dropped": dict(sorted(dropped.items())),
            "verify_candidates": verify.pop("verify_candidates", 0),
            "dropped_verify": dict(sorted(verify.items())),
            "selection_rules": dict(sorted(rules.items())),
            "per_level": level_counts({f: per_fill.get(f, 0) for f in FILL_TYPES}),
            "mix_within_tolerance": mix_within_tolerance({f: per_fill.get(f, 0) for f in FILL_TYPES}),
            "short_levels": dict(sorted(short.items())),
            # verification's judgements (wall seconds, summed over parallel runs): what mutation adequacy costs
            "verify_run_s": {kind: round(sum(r.get(f"{kind}_runs_s", 0.0) for r in reports), 1)
                             for kind in ("null", "gt", "mutant")},
            "mutant_runs": sum(r.get("mutant_runs", 0) for r in reports),
        },
        "repos": reports,
    }


def markdown(summary: dict) -> str:
    short = {f: f.replace("Random ", "").replace(" Completion", "").replace("grammar-based: ", "")
             for f in FILL_TYPES}
    head = ["repo", "status", "files", "candidates", *short.values(), "dropped", "tests pass/fail/flaky",
            "suite s", "env", "time s"]
    lines = [f"# Build report (builder {summary['builder_version']}, seed {summary['seed']})", "",
             f"samples fingerprint: `{summary['samples_fingerprint']}`", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in summary["repos"]:
        b = r.get("baseline", {})
        tests = f"{b.get('passing', '-')}/{b.get('failing', '-')}/{b.get('flaky', '-')}" if b else "-"
        status = r["status"] + (f" at {r['phase']}" if r.get("phase") else "")
        cells = [r["repo"], status + ("" if r["status"] == "ok" else f": {r.get('reason', '')[:80]}"),
                 r.get("files", "-"), r.get("candidates", "-"),
                 *(r.get("per_fill_type", {}).get(f, 0) for f in FILL_TYPES),
                 sum(r.get("dropped", {}).values()), tests, b.get("median_suite_s", "-"),
                 r.get("env_key", "-"), r.get("time_s", "-")]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    t = summary["totals"]
    lines += ["", f"**{t['samples']} samples** from {t['repos_ok']}/{t['repos']} repositories; "
              f"{t['candidates']} candidates, dropped by filter: {t['dropped']}"]
    if t["samples"]:
        lines += ["", "Mix per level, this build (paper): " + ", ".join(
            f"{row[0]} {row[2]}% ({row[4]}%)" for row in mix_rows(t["per_fill_type"]))
            + (" - within" if t.get("mix_within_tolerance") else " - NOT within") + " 5 percentage points"]
    runs = t.get("verify_run_s") or {}
    if runs.get("mutant"):
        lines += ["", f"Mutation adequacy: {t['mutant_runs']} mutant judgements, {runs['mutant']:.0f} run-seconds "
                      f"({runs['mutant'] / max(1e-9, sum(runs.values())):.0%} of verification's "
                      f"{sum(runs.values()):.0f}: null fills {runs['null']:.0f}, ground truths {runs['gt']:.0f})"]
    if t.get("short_levels"):
        lines += ["", f"Levels kept short of their quota (their slots went to other levels): {t['short_levels']}"]
    if t.get("repos_error"):
        lines += ["", f"**{t['repos_error']} repositories failed** (harness errors, by phase: {t['errors_by_phase']}); "
                  "they contribute no sample. Their entries in build_report.json hold the reason and traceback."]
    overridden = [(r["repo"], r["test_config"]) for r in summary["repos"] if r.get("test_config")]
    found = [(r["repo"], r["test_layout"]["test_paths"]) for r in summary["repos"]
             if r.get("test_layout", {}).get("found_by") == "search"]
    if overridden or found:
        lines += ["", "## Test configuration", ""]
        lines += [f"- {name}: overridden {json.dumps(cfg, sort_keys=True)}" for name, cfg in overridden]
        lines += [f"- {name}: tests found at {paths}" for name, paths in found]
    if summary.get("isolation_note"):
        lines += ["", summary["isolation_note"]]
    lines += throughput_lines(summary.get("executor") or {})
    verified = [r for r in summary["repos"] if "verify_candidates" in r]
    if verified:
        head = ["repo", "verified", "kept", "gt failed", "null passed", "null-pass share", "rules",
                "judged tests (median) / suite", "sample s (median) / suite s"]
        lines += ["", "## Verification and test selection", "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in verified:
            d = r["dropped_verify"]
            cells = [r["repo"], r["verify_candidates"], r["kept"], d.get("gt_failed", 0), d.get("null_passed", 0),
                     r.get("null_passed_share"), ", ".join(f"{k} {v}" for k, v in r.get("selection_rules", {}).items()),
                     f"{r.get('median_judged_tests')} / {r.get('suite_tests')}",
                     f"{r.get('median_sample_run_s')} / {r.get('suite_run_s')}"]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
        share = t["dropped_verify"].get("null_passed", 0) / max(1, t["verify_candidates"])
        lines += ["", f"Verified {t['verify_candidates']} candidates; dropped {t['dropped_verify']}; "
                  f"{share:.0%} passed with a null fill (the official method would have shipped them); "
                  f"selection rules of kept samples: {t['selection_rules']}"]
    return "\n".join(lines + phase_table(summary)) + "\n"


# Phases of one repository's build, in the order they run (seconds of wall time in its report); the
# baseline's runs include the coverage run.
PHASE_TIMINGS = (("fetch", "fetch_s"), ("env", "env_s"), ("baseline", "baseline_s"),
                 ("collect checks", "collect_checks_s"), ("masking", "masking_s"), ("verification", "verify_s"))


def phase_table(summary: dict) -> list[str]:
    """Markdown lines: per repository, the wall seconds of each phase (a reused repository shows its
    original build's), the total, then the build's own wall time (repositories overlap)."""
    rows = [r for r in summary["repos"] if r.get("timings")]
    if not rows:
        return []
    head = ["repo", *(name for name, _ in PHASE_TIMINGS), "total"]
    lines = ["", "## Time per phase (seconds)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sums = dict.fromkeys((key for _, key in PHASE_TIMINGS), 0.0)
    for r in rows:
        t = r["timings"]
        for _, key in PHASE_TIMINGS:
            sums[key] += t.get(key, 0.0)
        cells = [r["repo"] + (" (reused)" if r.get("reused") else ""),
                 *(t.get(key, "-") for _, key in PHASE_TIMINGS), r.get("time_s", "-")]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    total = sum(r.get("time_s", 0) for r in rows)
    lines.append("| **sum** | " + " | ".join(f"{sums[key]:.0f}" for _, key in PHASE_TIMINGS) + f" | {total:.0f} |")
    if summary.get("build_wall_s") is not None:
        lines += ["", f"Build wall time {summary['build_wall_s']:.0f} s with {summary.get('repo_workers', 1)} "
                      "repositories at a time (the sum above counts overlapping repositories once each)."]
    return lines


def throughput_lines(cluster: dict) -> list[str]:
    """Markdown lines: where the repositories were built, and per node repositories and samples per hour."""
    nodes = cluster.get("per_node") or {}
    if not nodes:
        return []
    lines = ["", f"Built on {cluster.get('executor', 'local')} ({len(nodes)} node{'s' * (len(nodes) != 1)}, "
                 f"{cluster.get('wall_s', 0):.0f} s of fresh work; reused repositories not counted):", ""]
    lines += [f"- {node}: {n['repos']} repositories, {n['samples']} samples - {n['repos_per_hour']:g} repositories "
              f"and {n['samples_per_hour']:g} samples per hour" for node, n in nodes.items()]
    return lines


def write_report(summary: dict, out: Path, stats: Statistics | None = None) -> None:
    """build_report.json and build_report.md; with `stats`, the Markdown ends with the statistics (the mix
    next to the paper's, distributions, drops) and their charts, written to OUT/charts/."""
    text = markdown(summary)
    if stats is not None:
        charts = figures.write_charts(stats, out / CHARTS_DIR)
        text += "\n" + "\n".join(figures.markdown(stats, charts, CHARTS_DIR))
    for name, text in (("build_report.json", json.dumps(summary, indent=1, sort_keys=True)),
                       ("build_report.md", text)):
        tmp = out / (name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out / name)
