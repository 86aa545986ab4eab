"""`baseline`: an offline, non-neural completer - a floor, not a model.

It looks at the line being completed (the text after the last newline of the prefix) and the line
before it, finds the repository line that best continues that situation - a line in the context
files or in the file's own prefix/suffix whose previous line matches the previous line and which
starts with what is already typed (rapidfuzz scoring) - and returns the rest of that line.
"""
from __future__ import annotations

from typing import Sequence

from rapidfuzz import fuzz

from .base import Backend, Generation, Request

MAX_CANDIDATE_LINES = 20000


def _candidates(sample) -> list[tuple[str, str]]:
    """(previous line, line) pairs from the context files and the file's own prefix and suffix."""
    pairs: list[tuple[str, str]] = []
    texts = [c.code for c in sample.context_code] + [sample.prefix_code, sample.suffix_code]
    for text in texts:
        lines = text.splitlines()
        pairs += [(lines[i - 1].strip() if i else "", lines[i]) for i in range(len(lines))]
        if len(pairs) > MAX_CANDIDATE_LINES:
            break
    return pairs[:MAX_CANDIDATE_LINES]


def complete(sample) -> str:
    prefix_lines = sample.prefix_code.split("\n")
    typed = prefix_lines[-1]  # the partial line at the cursor (often just indentation)
    previous = prefix_lines[-2].strip() if len(prefix_lines) > 1 else ""
    stripped = typed.strip()
    best, best_score = "", -1.0
    for prev, line in _candidates(sample):
        body = line.strip()
        if not body or body.startswith("#") or not body.startswith(stripped) or body == stripped:
            continue
        score = fuzz.ratio(prev, previous) + (20 if stripped else 0)
        if score > best_score:
            best, best_score = body[len(stripped):], score
    return best


class BaselineBackend(Backend):
    name = "baseline"
    needs_prompt = False

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation((complete(r.sample),) * r.n) for r in requests]
