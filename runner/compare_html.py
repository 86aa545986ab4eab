"""leaderboard.html: one self-contained page (no script, no external file): the leaderboard with 95%
intervals and, under it, the pairs with p-values; a per-fill-type chart (inline SVG drawn by matplotlib,
its text kept as text: the legend above the axes, each bar's value printed over it, so a 0 shows as
"0.0", not as a missing bar) with its table; the per-repository breakdown.  Scores in percent, as the
page says."""
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


def fill_chart(result: dict):
    """The matplotlib Figure: grouped bars, pass@1 (%) per fill type and overall, one bar per model, its
    value written over it; the overall bars carry their 95% interval; the legend above the axes."""
    from matplotlib.figure import Figure

    models = result["models"]
    groups = [("all", None)] + [(SHORT[f], f) for f in FILL_TYPES if f in result["per_fill_type"]]
    width = 0.8 / max(1, len(models))
    upright = len(models) > 2  # narrow bars: their values written upwards
    fig = Figure(figsize=(10, 4.6), layout="constrained")
    ax = fig.subplots()
    handles = []
    for i, m in enumerate(models):
        xs = [g + (i - (len(models) - 1) / 2) * width for g in range(len(groups))]
        values = [100.0 * (m["pass@1"] if fill is None else result["per_fill_type"][fill]["pass@1"][m["label"]])
                  for _, fill in groups]
        bars = ax.bar(xs, values, width)
        handles.append(bars)
        low, high = (100.0 * v for v in m["pass@1_ci95"])
        ax.errorbar([xs[0]], [values[0]], yerr=[[values[0] - low], [high - values[0]]], fmt="none", ecolor="black",
                    capsize=3)
        colour = bars.patches[0].get_facecolor()
        tops = [max(values[0], high)] + values[1:]  # over the interval's cap for the overall bar
        for x, top, value in zip(xs, tops, values):
            ax.annotate(f"{value:.1f}", (x, top), xytext=(0, 2), textcoords="offset points", ha="center",
                        va="bottom", fontsize=8, rotation=90 if upright else 0, color="#333")
            if value == 0:  # a stub in the bar's colour: a 0, not a missing bar
                ax.hlines(0, x - width / 2, x + width / 2, colors=[colour], linewidth=4, clip_on=False)
    ax.set_xticks(range(len(groups)), [name for name, _ in groups])
    ax.set_ylim(0, 118 if upright else 110)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("pass@1 (%)")
    ax.set_title("pass@1 per fill type (overall: with its 95% bootstrap interval; value over each bar)")
    # Labels given as they are: no mathtext from a `$`, and a leading `_` does not hide a model.
    fig.legend(handles, [m["label"].replace("$", r"\$") for m in models], loc="outside upper center",
               ncols=min(len(models), 4), fontsize="small", frameon=False)
    return fig


def fill_chart_svg(result: dict) -> str:
    """`fill_chart` as inline SVG (no XML prolog, text kept as text, deterministic ids)."""
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "execrepobench-compare"}):
        fig = fill_chart(result)
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
    from .compare_meta import META_COLUMNS, meta_cells, rank_text

    board = _table("Leaderboard (pass@1 and ES in percent; =N: a shared rank)",
                   ["rank", "model", "pass@1 %", "95% CI", "ES %", "ES 95% CI", "backend",
                    *(t for _, t in META_COLUMNS), "samples in run"],
                   [[rank_text(m), m["label"], _pct(m["pass@1"]), f"{_pct(m['pass@1_ci95'][0])} - "
                     f"{_pct(m['pass@1_ci95'][1])}", _pct(m["es"]), f"{_pct(m['es_ci95'][0])} - "
                     f"{_pct(m['es_ci95'][1])}", m.get("backend") or "-", *meta_cells(m), m["samples_in_run"]]
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
    subset = f' <strong class="subset">{escape(result["note"])}</strong>' if result.get("note") else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ExecRepoBench leaderboard</title>
<style>{STYLE}</style></head>
<body>
<h1>ExecRepoBench leaderboard</h1>
<p class="note">Dataset <code>{escape(ds['name'])}</code>, fingerprint <code>{escape(ds['fingerprint'])}</code>;
{samples['compared']} samples compared.{subset} Scores in percent. Intervals: {escape(method['interval'])}
({method['resamples']} resamples, seed {method['seed']}). p-values: {escape(method['p_value'])}.</p>
<section id="leaderboard">{board}</section>
<section id="pairs">{pairs}</section>
<section id="chart"><h2>Per fill type</h2><figure>{fill_chart_svg(result)}</figure>
{fills}</section>
<section id="repositories"><h2>Per repository</h2>{repos}</section>
</body></html>
"""
