"""leaderboard.html: one self-contained page (no script, no external file): the leaderboard with 95%
intervals, the pairs with p-values, a per-fill-type chart (inline SVG drawn by matplotlib, its text kept
as text) and the per-repository breakdown.  Scores in percent, as the page says."""
from __future__ import annotations

import io
from html import escape

from execrepobench_dataset.record import FILL_TYPES

SHORT = {f: (lambda s: s[:1].upper() + s[1:])(f.replace("Random ", "").replace(" Completion", "")
                                              .replace("grammar-based: ", "")) for f in FILL_TYPES}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.7em; text-align: right; }
th { background: #eef; } td.name, th.name { text-align: left; }
caption { text-align: left; font-weight: bold; margin-bottom: 0.3em; }
.note { color: #555; font-size: 0.9em; } figure { margin: 1em 0; }
"""


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}"


def p_text(p: float) -> str:
    """A p-value as the leaderboard's page and Markdown print it."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def fill_chart_svg(result: dict) -> str:
    """Grouped bars: pass@1 (%) per fill type and overall, one bar per model; the overall bars carry
    their 95% interval.  Inline SVG (no XML prolog), deterministic ids."""
    from matplotlib.figure import Figure
    import matplotlib

    models = result["models"]
    groups = [("all", None)] + [(SHORT[f], f) for f in FILL_TYPES if f in result["per_fill_type"]]
    width = 0.8 / max(1, len(models))
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "execrepobench-compare"}):
        fig = Figure(figsize=(10, 4.2))
        ax = fig.subplots()
        for i, m in enumerate(models):
            xs = [g + (i - (len(models) - 1) / 2) * width for g in range(len(groups))]
            values = [100.0 * (m["pass@1"] if fill is None else result["per_fill_type"][fill]["pass@1"][m["label"]])
                      for _, fill in groups]
            ax.bar(xs, values, width, label=m["label"])
            low, high = (100.0 * v for v in m["pass@1_ci95"])
            ax.errorbar([xs[0]], [values[0]], yerr=[[values[0] - low], [high - values[0]]], fmt="none", ecolor="black",
                        capsize=3)
        ax.set_xticks(range(len(groups)), [name for name, _ in groups])
        ax.set_ylim(0, 105)
        ax.set_ylabel("pass@1 (%)")
        ax.set_title("pass@1 per fill type (overall: with its 95% bootstrap interval)")
        ax.legend(fontsize="small")
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _table(caption: str, head: list[str], rows: list[list[str]], names: int = 1) -> str:
    """A table; the first `names` columns are text (left-aligned), the rest numbers."""
    ths = "".join(f'<th{" class=name" if i < names else ""}>{escape(h)}</th>' for i, h in enumerate(head))
    trs = "".join("<tr>" + "".join(f'<td{" class=name" if i < names else ""}>{escape(str(c))}</td>'
                                   for i, c in enumerate(row)) + "</tr>\n" for row in rows)
    return f"<table><caption>{escape(caption)}</caption>\n<thead><tr>{ths}</tr></thead>\n<tbody>\n{trs}</tbody></table>"


def render_page(result: dict) -> str:
    models, labels = result["models"], [m["label"] for m in result["models"]]
    ds, method, samples = result["dataset"], result["method"], result["samples"]
    board = _table("Leaderboard (pass@1 and ES in percent)",
                   ["rank", "model", "pass@1 %", "95% CI", "ES %", "backend", "samples in run"],
                   [[m["rank"], m["label"], _pct(m["pass@1"]), f"{_pct(m['pass@1_ci95'][0])} - "
                     f"{_pct(m['pass@1_ci95'][1])}", _pct(m["es"]), m.get("backend") or "-", m["samples_in_run"]]
                    for m in models], names=2)
    pairs = _table("Pairs of models (difference of pass@1 in percentage points)",
                   ["model A", "model B", "A - B", "95% CI", "p-value"],
                   [[p["a"], p["b"], _pct(p["difference"]), f"{_pct(p['difference_ci95'][0])} - "
                     f"{_pct(p['difference_ci95'][1])}", p_text(p["p_value"])] for p in result["pairs"]], names=2)
    fills = _table("pass@1 per fill type (%)", ["fill type", "n", *labels],
                   [[name, g["n"], *(_pct(g["pass@1"][lb]) for lb in labels)]
                    for name, g in result["per_fill_type"].items()])
    repos = _table("pass@1 per repository (%)", ["repository", "n", *labels],
                   [[name, g["n"], *(_pct(g["pass@1"][lb]) for lb in labels)]
                    for name, g in result["per_repository"].items()])
    subset = ("" if len(set(samples["per_run"].values())) == 1 and next(iter(samples["per_run"].values()))
              == samples["compared"] else " Runs judged different subsets; only the samples they share are compared ("
              + ", ".join(f"{escape(k)}: {v}" for k, v in samples["per_run"].items()) + ").")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ExecRepoBench leaderboard</title>
<style>{STYLE}</style></head>
<body>
<h1>ExecRepoBench leaderboard</h1>
<p class="note">Dataset <code>{escape(ds['name'])}</code>, fingerprint <code>{escape(ds['fingerprint'])}</code>;
{samples['compared']} samples compared.{subset} Scores in percent. Intervals: {escape(method['interval'])}
({method['resamples']} resamples, seed {method['seed']}). p-values: {escape(method['p_value'])}.</p>
<section id="leaderboard">{board}</section>
<section id="chart"><h2>Per fill type</h2><figure>{fill_chart_svg(result)}</figure>
{fills}</section>
<section id="pairs">{pairs}</section>
<section id="repositories"><h2>Per repository</h2>{repos}</section>
</body></html>
"""
