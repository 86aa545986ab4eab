"""Reading `evaluate --predictions`: one JSON line per sample, `{"sample_id": ..., "completion": str or [str]}`.
Two lines for one sample are refused, naming the sample and the line numbers, unless the caller chooses which
one counts (`duplicates="first"` or `"last"`)."""
from __future__ import annotations

import json
from pathlib import Path

from execrepobench_metric.inputs import InputError

from .errors import DuplicatePredictionError

DUPLICATE_CHOICES = ("refuse", "first", "last")


def read_predictions(path: Path, duplicates: str = "refuse") -> dict[str, object]:
    """sample_id -> completion.  `duplicates`: refuse (default), or keep the first or the last line of a sample."""
    if duplicates not in DUPLICATE_CHOICES:
        raise InputError(f"duplicates must be one of {DUPLICATE_CHOICES}, got {duplicates!r}")
    by_id: dict[str, object] = {}
    lines_of: dict[str, list[int]] = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--predictions {path}: cannot read it ({exc})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path}:{n}: not JSON ({exc.msg}): {line.strip()[:80]}") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("sample_id"), str) or "completion" not in rec:
            raise InputError(f'{path}:{n}: expected {{"sample_id": str, "completion": str or '
                             f'[str, ...]}}, got {line.strip()[:80]}')
        sid = rec["sample_id"]
        lines_of.setdefault(sid, []).append(n)
        if sid not in by_id or duplicates == "last":
            by_id[sid] = rec["completion"]
    repeated = {sid: lines for sid, lines in lines_of.items() if len(lines) > 1}
    if repeated and duplicates == "refuse":
        shown = "; ".join(f"{sid} on lines {', '.join(map(str, lines))}" for sid, lines in list(repeated.items())[:5])
        more = f" (and {len(repeated) - 5} more)" if len(repeated) > 5 else ""
        raise DuplicatePredictionError(
            f"{path}: {len(repeated)} sample_id(s) on more than one line: {shown}{more}; keep one line per sample, "
            "or choose with --duplicates first|last")
    return by_id
