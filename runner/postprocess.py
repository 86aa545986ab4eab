"""Model output -> completion: cut at the first stop string, strip a chat code fence."""
from __future__ import annotations

import re
from typing import Sequence

_FENCE = re.compile(r"^\s*```[\w+-]*\n(.*?)(?:\n```.*)?$", re.DOTALL)


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """`text` before the first stop string, and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def clean(raw: str, stops: Sequence[str] = ()) -> str:
    text, _ = cut_at_stop(raw, stops)
    m = _FENCE.match(text)
    if m:
        text = m.group(1)
    return text
