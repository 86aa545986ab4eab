"""The statistics (`stats.Statistics`) as Markdown tables and PNG charts, for the card and the build report.

`write_charts(stats, folder)` writes one PNG per figure into `folder` (matplotlib, Agg backend, no
metadata: the same statistics give the same bytes) and returns the file names; `markdown(stats, charts,
chart_dir)` renders the tables with relative image links (`chart_dir/NAME.png`), which the Hub renders
in a dataset card.
"""
from __future__ import annotations

from pathlib import Path

from .record import FILL_TYPES
from .stats import (DEFAULT_PROMPT_TOKENS, LEVELS, MIX_TOLERANCE_PP, PAPER_FILL_COUNTS, SUMMARY_HEAD, Statistics,
                    distribution_rows, drop_rows, level_counts, mix_rows, share)

SHORT = {f: f.replace("Random ", "").replace(" Completion", "").replace("grammar-based: ", "") for f in FILL_TYPES}
CHARTS = {  # file stem -> title
    "mix": "Samples per level: this dataset vs the paper (%)",
    "fill_types": "Samples per fill type",
    "repositories": "Samples per repository",
    "middle_length": "Middle length (lines)",
    "prompt_tokens": "Prompt length before budgets (tokens)",
    "judged_tests": "Judged tests per sample",
    "gt_run_time": "Ground-truth run time per sample (s)",
    "drops": "Candidates dropped per reason (% of the stage's candidates)",
}


def table(head: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(
        str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |" for r in rows), ""]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=90, metadata={"Software": None})  # no version stamp: same data, same bytes
    fig.clf()


def _hist(plt, values, path: Path, xlabel: str, log: bool = False, line: float | None = None) -> bool:
    if not values:
        return False
    fig, ax = plt.subplots(figsize=(7, 3.2))
    data = [max(v, 1) for v in values] if log else list(values)
    if log:
        import numpy as np

        bins = np.logspace(0, np.log10(max(data)) + 0.01, 30)
        ax.set_xscale("log")
    else:
        bins = 30
    ax.hist(data, bins=bins, color="#4c72b0")
    if line is not None:
        ax.axvline(line, color="#c44e52", linestyle="--", linewidth=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("samples")
    _save(fig, path)
    plt.close(fig)
    return True


def write_charts(stats: Statistics, folder: Path) -> dict[str, str]:
    """One PNG per chart of CHARTS that has data; returns stem -> file name."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written = {}

    def bars(stem, labels, values, horizontal=False, xlabel=""):
        fig, ax = plt.subplots(figsize=(7, max(2.5, 0.22 * len(labels) + 1) if horizontal else 3.2))
        (ax.barh if horizontal else ax.bar)(labels, values, color="#4c72b0")
        if horizontal:
            ax.invert_yaxis()
            ax.set_xlabel(xlabel)
        else:
            ax.set_ylabel(xlabel)
        _save(fig, folder / f"{stem}.png")
        plt.close(fig)
        written[stem] = f"{stem}.png"

    ours, paper = level_counts(stats.per_fill), level_counts(PAPER_FILL_COUNTS)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    xs = range(len(LEVELS))
    ax.bar([x - 0.2 for x in xs], [share(ours[lv], stats.samples) for lv in LEVELS], 0.4, label="this dataset")
    ax.bar([x + 0.2 for x in xs], [share(paper[lv], sum(paper.values())) for lv in LEVELS], 0.4, label="paper")
    ax.set_xticks(list(xs), list(LEVELS))
    ax.set_ylabel("% of samples")
    ax.legend()
    _save(fig, folder / "mix.png")
    plt.close(fig)
    written["mix"] = "mix.png"
    bars("fill_types", [SHORT[f] for f in FILL_TYPES], [stats.per_fill[f] for f in FILL_TYPES], xlabel="samples")
    bars("repositories", list(stats.per_repo), list(stats.per_repo.values()), horizontal=True, xlabel="samples")
    for stem, values, label, log, line in (
            ("middle_length", stats.middle_lines, "lines of the middle", False, None),
            ("prompt_tokens", [a + b for a, b in zip(stats.in_file_tokens, stats.context_tokens)],
             "in-file + context tokens (log scale; dashed: the default prompt budget)", True, DEFAULT_PROMPT_TOKENS),
            ("judged_tests", stats.judged_tests, "judged tests (log scale)", True, None),
            ("gt_run_time", stats.gt_run_s, "seconds per ground-truth run", False, None)):
        if _hist(plt, values, folder / f"{stem}.png", label, log, line):
            written[stem] = f"{stem}.png"
    if stats.drops:
        bars("drops", [f"{stage}: {reason}" for stage, reason, _, _ in stats.drops],
             [share(n, whole) for _, _, n, whole in stats.drops], horizontal=True, xlabel="% of candidates")
    return written


def markdown(stats: Statistics, charts: dict[str, str], chart_dir: str = "charts", heading: str = "##") -> list[str]:
    """The statistics section: tables, each followed by its chart (relative links into `chart_dir`)."""
    def image(stem: str) -> list[str]:
        return [f"![{CHARTS[stem]}]({chart_dir}/{charts[stem]})", ""] if stem in charts else []

    paper_total = sum(PAPER_FILL_COUNTS.values())
    null = next(((n, whole) for stage, reason, n, whole in stats.drops if reason == "null_passed"), None)
    lines = [f"{heading} Statistics", "",
             f"{stats.samples} samples from {len(stats.per_repo)} repositories. Mix per level next to the paper's "
             f"({paper_total} samples; random = span + single-line + multi-line; target: within "
             f"{MIX_TOLERANCE_PP:g} percentage points):", "",
             *table(["level", "samples", "%", "paper", "paper %", "difference (pp)"], mix_rows(stats.per_fill)),
             *image("mix"),
             *table(["fill type", "samples", "%", "paper", "paper %"],
                    [[f, stats.per_fill[f], f"{share(stats.per_fill[f], stats.samples):.1f}", PAPER_FILL_COUNTS[f],
                      f"{share(PAPER_FILL_COUNTS[f], paper_total):.1f}"] for f in FILL_TYPES]),
             *image("fill_types"),
             *table(["repository", "samples"], [[r, n] for r, n in stats.per_repo.items()]),
             *image("repositories"),
             f"Distributions (tokens: {stats.tokenizer}; prompt length before any budget = in-file + context "
             f"tokens; the default prompts keep at most 4096 context and {DEFAULT_PROMPT_TOKENS} prompt tokens):", "",
             *table(SUMMARY_HEAD, distribution_rows(stats)),
             *image("middle_length"), *image("prompt_tokens"), *image("judged_tests"), *image("gt_run_time")]
    if stats.drops:
        lines += ["Candidates dropped per reason (masking filters, then verification"
                  + (f"; {share(*null):.1f}% of the verified candidates passed with a null fill: the official method "
                     "would have shipped them although their tests cannot tell a fill from the ground truth" if null
                     else "") + "):", "",
                  *table(["stage", "reason", "dropped", "candidates", "share"], drop_rows(stats)), *image("drops")]
    return lines
