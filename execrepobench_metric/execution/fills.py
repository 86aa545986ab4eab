"""The neutral ("null") fill of a sample: what a completion that does nothing looks like.

Used by the builder's verification (a sample is kept only if its null fill fails), by `prepare`'s gold
check, and by `execrepobench evaluate --reference-fill null`.  By what was masked, the first
candidate that keeps the file compilable is used:
- block / statement masks and random single/multi-line masks: `pass`, then `...`, then `None`
- expression masks: `None`, then `...`, then `pass`
- random spans: the empty string, then `None`, then `pass`
- last resort everywhere: `_` (a bare name: valid where a name is expected, e.g. an assignment target)
"""
from __future__ import annotations

import warnings

from execrepobench_dataset.record import FILL_EXPRESSION, FILL_MULTI_LINE, FILL_SINGLE_LINE, FILL_SPAN, Sample

NULL_FILLS = {
    FILL_EXPRESSION: ("None", "...", "pass", "_"),
    FILL_SPAN: ("", "None", "pass", "_"),
    FILL_SINGLE_LINE: ("pass", "...", "None", "_"),
    FILL_MULTI_LINE: ("pass", "...", "None", "_"),
}
DEFAULT_NULL_FILLS = ("pass", "...", "None", "_")


def null_fill(sample: Sample) -> str | None:
    """The first null candidate for the sample's fill type that compiles, or None."""
    for fill in NULL_FILLS.get(sample.fill_type, DEFAULT_NULL_FILLS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. "'NoneType' object is not callable" SyntaxWarning
            try:
                compile(sample.prefix_code + fill + sample.suffix_code, sample.file_name, "exec", dont_inherit=True)
                return fill
            except (SyntaxError, ValueError):
                continue
    return None
