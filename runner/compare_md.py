"""leaderboard.md: the comparison (`compare.py`) as Markdown tables, in percent.  Every text that comes
from a run folder (model names, backends, repositories, the dataset name) is escaped for a table cell:
a `|` cannot end a cell early and `<`...`>` is shown, never taken as HTML."""
from __future__ import annotations

from .compare_html import p_text
from .compare_meta import META_COLUMNS, meta_cells, rank_text

# Backslash-escaped (CommonMark allows it for any ASCII punctuation): the cell separator and what would
# start emphasis, code or a link.  `&`, `<`, `>` become entities (no raw HTML, no entity reference).
MD_BACKSLASHED = "\\|`*_[]"
MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def md_text(value: object) -> str:
    """`value` as literal text inside a Markdown table cell (one line)."""
    text = " ".join(str(value).splitlines())
    return "".join("\\" + ch if ch in MD_BACKSLASHED else MD_ENTITIES.get(ch, ch) for ch in text)


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}"


def _row(cells: list) -> str:
    return "| " + " | ".join(map(str, cells)) + " |"


def markdown(result: dict) -> str:
    """leaderboard.md: the note on subsets (if any), the table, the pairs, pass@1 per fill type and per
    repository (percent)."""
    models, labels = result["models"], [md_text(m["label"]) for m in result["models"]]
    ds, method = result["dataset"], result["method"]
    lines = ["# ExecRepoBench leaderboard", "",
             f"Dataset {md_text(ds['name'])} (fingerprint {md_text(ds['fingerprint'])}), "
             f"{result['samples']['compared']} samples compared. Scores in percent. 95% intervals: "
             f"{method['interval']} ({method['resamples']} resamples, seed {method['seed']}); p-values: "
             f"{method['p_value']}.", ""]
    if result.get("note"):
        lines += [f"**Note:** {md_text(result['note'])}", ""]
    head = ["rank", "model", "pass@1 %", "95% CI", "ES %", "ES 95% CI", "backend", *(t for _, t in META_COLUMNS),
            "samples in run"]
    lines += [_row(head), "|" + "---|" * len(head)]
    lines += [_row([rank_text(m), label, _pct(m["pass@1"]), f"{_pct(m['pass@1_ci95'][0])} - {_pct(m['pass@1_ci95'][1])}",
                    _pct(m["es"]), f"{_pct(m['es_ci95'][0])} - {_pct(m['es_ci95'][1])}", md_text(m.get("backend") or "-"),
                    *(md_text(c) for c in meta_cells(m)), m["samples_in_run"]])
              for m, label in zip(models, labels)]
    lines += ["", "## Pairs", "", "| model A | model B | A - B (points) | 95% CI | p-value |", "|---|---|---|---|---|"]
    lines += [_row([md_text(p["a"]), md_text(p["b"]), _pct(p["difference"]),
                    f"{_pct(p['difference_ci95'][0])} - {_pct(p['difference_ci95'][1])}", p_text(p["p_value"])])
              for p in result["pairs"]]
    for title, key in (("pass@1 per fill type", "per_fill_type"), ("pass@1 per repository", "per_repository")):
        lines += ["", f"## {title} (%)", "", _row(["group", "n", *labels]), "|---|---|" + "---|" * len(labels)]
        lines += [_row([md_text(name), g["n"], *(_pct(g["pass@1"][m["label"]]) for m in models)])
                  for name, g in result[key].items()]
    return "\n".join(lines) + "\n"
