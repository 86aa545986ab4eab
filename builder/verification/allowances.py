"""Whose is what the guard saw in a shared ground-truth run?  Each candidate's `guard_allowed` from one
recording run of several masked files, when the run itself says whose each event was.

With several masked files the guard names, for each event it records, every masked file with a frame
on the stack when it happened (`_execrepobench_guard_evidence.sensitive`): exactly what a run of that file
alone would have attributed to it.  An event with no masked file on the stack is a change the guard
found in a protected namespace (an integrity event).  A change in a test module's namespace
(`integrity:tests:<module>[.<Class>]:<name>`, e.g. a class attribute a lexer sets on first use) goes to
every candidate of the run: a shared run holds only candidates whose judged tests lie in the same test
files (`verify.by_test_files`), so each one's own run loads the same test modules (a test class may be
defined in another module than its node id's file: lark's tests/__main__.py, itsdangerous).  Any other
such event cannot be placed, and the candidates are recorded again per masked file
(`ground_truth._per_file`).  What was placed is then enforced in a run of its own wherever something
was placed, so allowances too small fail there and those candidates are recorded again per file too.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from execrepobench_dataset.record import Sample

TEST_MODULE_EVENT = "integrity:tests:"


def attribute(samples: Sequence[Sample], sources: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]] | None:
    """sample id -> its allowances, from (event, masked file or "") pairs; None when an event cannot be
    placed (then each file must record on its own)."""
    by_file: dict[str, set[str]] = {s.file_name: set() for s in samples}
    in_test_modules = set()
    for event, who in sources:
        if who in by_file:
            by_file[who].add(event)
        elif not who and event.startswith(TEST_MODULE_EVENT):
            in_test_modules.add(event)
        else:
            return None
    return {s.sample_id: tuple(sorted(by_file[s.file_name] | in_test_modules)) for s in samples}
