"""A live snapshot's report: per candidate what happened and how long it took, the totals and the yield."""
from __future__ import annotations

from collections import Counter

from .plan import NO_RELEASE, OK, STATUSES

HOW_NEW = ("A sample's masked code is new when every non-blank line it touches was added or changed since the "
           "candidate's baseline release (the newest release uploaded on or before the --after day) in "
           "the same file - difflib over the two sdists' files, lines compared without trailing whitespace; a file "
           "the baseline lacks is new as a whole - and its middle (stripped) occurs in no Python file of the "
           "baseline release (so code moved between files or re-indented is not new). The target is the newest release (highest version) whose sdist was uploaded in the "
           "window; each sample records its release_date (the target sdist's upload time, from the package index's "
           "JSON simple API, PEP 691/700), baseline_version and baseline_date (empty when the project had no "
           "release before the window). Code that was public before the window in other ways (a repository's "
           "commits, another release line) is not looked for.")


def live_totals(entries: list[dict]) -> dict:
    statuses = Counter(e.get("status", "?") for e in entries)
    in_window = [e for e in entries if e.get("status") != NO_RELEASE and e.get("phase") != "index"]
    ok = [e for e in entries if e.get("status") == OK]
    return {"candidates_asked": len(entries), "with_release_in_window": len(in_window),
            "per_status": {s: statuses.get(s, 0) for s in STATUSES},
            "projects_with_samples": len(ok), "samples": sum(e.get("samples", 0) for e in ok),
            "yield": round(len(ok) / len(in_window), 3) if in_window else None}


def _release(r: dict | None) -> str:
    return f"{r['version']} ({r['uploaded'][:10]})" if r else "-"


def live_markdown(live: dict) -> str:
    t = live["totals"]
    head = ["candidate", "status", "target", "baseline", "new rows", "samples", "time s", "reason"]
    lines = [f"# Live snapshot `{live['window']['config_name']}`", "",
             f"Window: {live['window_text']}. Candidates from `{live['candidates_list']}`"
             + (f", the first {live['limit']} with a release in the window" if live.get("limit") else "")
             + f"; {live['index_requests']} index request(s) to {live['index']}.", "",
             f"**{t['samples']} samples** from {t['projects_with_samples']} of {t['with_release_in_window']} candidates "
             f"with a release in the window (yield {t['yield']}); {t['candidates_asked']} asked; per status: "
             + ", ".join(f"{k} {v}" for k, v in t["per_status"].items() if v) + f". Wall time {live['wall_s']:.0f} s.",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in live["candidates"]:
        cells = [e["candidate"], e.get("status", "?"), _release(e.get("target")), _release(e.get("baseline")),
                 (e.get("new_code") or {}).get("new_rows", "-"), e.get("samples", 0), e.get("time_s", "-"),
                 str(e.get("reason", ""))[:120]]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines + ["", "How new was decided: " + live["how_new"], ""])
