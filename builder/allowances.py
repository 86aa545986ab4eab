"""Whose is what the guard saw in a shared ground-truth run?  Each candidate's `guard_allowed` from one
recording run of several masked files, when the run itself says whose each event was.

With several masked files the guard names, for each event it records, every masked file with a frame
on the stack when it happened (`_execrepobench_guard_hook.sensitive`): exactly what a run of that file
alone would have attributed to it.  An event with no masked file on the stack is a change the guard
found in a protected namespace (an integrity event): a change in a test module's namespace
(`integrity:tests:<module>[.<Class>]:<name>`, e.g. a class attribute a lexer sets on first use) goes
to the candidates judged by tests of that module, who load and run it; any other such event cannot be
placed, and the candidates are recorded again per masked file (`ground_truth._per_file`).  The
allowances found here are then enforced in a run of their own, so one that is too small fails there and
its candidates are recorded again per file too.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from execrepobench_dataset.record import Sample

TEST_MODULE_EVENT = "integrity:tests:"


def _module_names(test_file: str) -> set[str]:
    """`tests/unit/test_x.py` -> {"tests.unit.test_x", "unit.test_x", "test_x"}: the names pytest may
    import it under (package-relative or rootdir-relative)."""
    parts = test_file[:-3].split("/") if test_file.endswith(".py") else test_file.split("/")
    return {".".join(parts[i:]) for i in range(len(parts))}


def _in_modules(event: str, modules: set[str]) -> bool:
    namespace = event[len(TEST_MODULE_EVENT):].rpartition(":")[0]
    return any(namespace == m or namespace.startswith(m + ".") for m in modules)


def attribute(samples: Sequence[Sample], sources: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]] | None:
    """sample id -> its allowances, from (event, masked file or "") pairs; None when an event cannot be
    placed (then each file must record on its own)."""
    files = {s.file_name for s in samples}
    by_file: dict[str, set[str]] = {f: set() for f in files}
    in_test_modules = []
    for event, who in sources:
        if who in by_file:
            by_file[who].add(event)
        elif not who and event.startswith(TEST_MODULE_EVENT):
            in_test_modules.append(event)
        else:
            return None
    out = {}
    for s in samples:
        modules = set().union(*(_module_names(t.split("::")[0]) for t in s.judged_tests))
        mine = {e for e in in_test_modules if _in_modules(e, modules)}
        out[s.sample_id] = tuple(sorted(by_file[s.file_name] | mine))
    return out
