"""Model output -> completion: cut at the first stop string, strip a chat code fence."""
from __future__ import annotations

import re
from typing import Sequence

_FENCE = re.compile(r"^\s*```[\w+-]*\n(.*?)(?:\n```.*)?$", re.DOTALL)


def clean(raw: str, stops: Sequence[str] = ()) -> str:
    text = raw
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    if cut >= 0:
        text = text[:cut]
    m = _FENCE.match(text)
    if m:
        text = m.group(1)
    return text
