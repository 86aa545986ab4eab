"""Read a guarded run through its evidence stream (see `guard.py`): the judge decides from this.

`guarded_run` either ends the judgement (the stream was damaged, the guard refused something, the
process never finished pytest) or returns the run with its outcomes replaced by the streamed ones;
pytest's junit report is kept only as the cross-check (`plugin_outcomes`), so the judge's usual
checks (missing, failing, skipped, disagreeing tests, exit code) then run on evidence the code under
test could not rewrite afterwards.
"""
from __future__ import annotations

import dataclasses

from .guard import NEVER_STARTED
from .junit import ERROR
from .pytest_run import PytestRun


def guarded_run(run: PytestRun) -> tuple[PytestRun, tuple[str, str] | None]:
    """(run read from the stream, None) or (run, (reason, detail)) when the stream alone decides."""
    ev = run.guard
    if ev is None:
        return run, None
    if ev.problem == NEVER_STARTED:  # nothing of the repository runs before the guard: the harness failed
        return run, ("error", f"the guard did not start (exit code {run.exit_code}): "
                              f"{run.process.stderr_tail.strip()[-300:]}")
    if ev.problem:
        return run, ("tampering", f"the guard's evidence stream was damaged: {ev.problem}")
    if ev.tampering:
        shown = "; ".join(ev.tampering[:6]) + (f" (+{len(ev.tampering) - 6} more)" if len(ev.tampering) > 6 else "")
        return run, ("tampering", f"refused by the guard: {shown}")
    if ev.guard_errors:
        return run, ("error", f"the guard failed on: {', '.join(ev.guard_errors[:3])}")
    if run.process.timed_out:
        return run, None  # the judge reports the timeout
    if not ev.finished or ev.exit_code is None:
        return run, ("crashed", "the process ended before pytest finished its session (guard stream incomplete)")
    if ev.exit_code != run.exit_code:
        return run, ("crashed", f"process exit code {run.exit_code} differs from pytest's {ev.exit_code}")
    junit = {t: run.outcomes.get(t) for t in ev.collected}
    outcomes = {t: ev.outcomes.get(t) for t in ev.collected}
    unmatched = {**run.unmatched, **{nodeid or "<collection>": ERROR for nodeid in ev.collect_errors}}
    return dataclasses.replace(run, outcomes=outcomes, collected=ev.collected, finished=True, plugin_outcomes=junit,
                               unmatched=unmatched), None
