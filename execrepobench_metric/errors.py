"""Every exception of the metric (the `evaluate` module, the engine, the environments), in one place.

    ExecRepoBenchError                 the user can act on it: `execrepobench` prints it, exits 2
     +-- InputError (ValueError)       bad predictions or references; `.problems` names each item
     |    +-- UnknownOption (TypeError)   a keyword argument that is no option
     +-- EnvironmentsMissing (RuntimeError)  environments not in this cache; `.repos`, the prepare command
     +-- ExecutionNotAllowed (RuntimeError)  no opt-in to run model code (allow_exec)
     +-- SandboxUnavailable (RuntimeError)   no bubblewrap, and the weak mode not accepted
     +-- ExecutorUnavailable (RuntimeError)  the executor asked for cannot run here (ray without the extra)
     +-- MetricPublishError (ValueError)     the metric folder cannot be written or pushed
     +-- SourceError (RuntimeError)    a pinned source cannot be fetched
     +-- EnvError (RuntimeError)       an environment cannot be made
     +-- JunitError (ValueError)       a junit report missing, empty or not pytest's (a verdict's reason
                                       inside the engine; it reaches a person only from a direct call)
     +-- ViewError (RuntimeError)      a judged run would need a path outside its allow-listed view (an
                                       `error` verdict inside the engine)
    HarnessFailure                     the harness's failure, results written: exits 3
     +-- HarnessError (RuntimeError)   some judgements failed for the harness's reasons; `.result`

The roots (`ExecRepoBenchError`, `HarnessFailure`) are `execrepobench_dataset.errors`'; each class keeps
the built-in base in brackets, so an `except ValueError` that caught it before still does.  Not here:
`PhaseBudgetExceeded` (a `BaseException` inside the judged pytest process, `execution/pytest_plugin/`,
which is no package).  This module imports nothing of the metric: every room of it can raise these.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from execrepobench_dataset.errors import ExecRepoBenchError, HarnessFailure

MAX_LISTED = 20  # an InputError's problems spelled out in the message; the rest are counted


class InputError(ExecRepoBenchError, ValueError):
    """Bad predictions or references; `problems` names each item (index, sample id, field)."""

    def __init__(self, message: str, problems: Sequence[object] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)

    @classmethod
    def of(cls, problems: Sequence[object]) -> "InputError":
        lines = [str(p) for p in problems[:MAX_LISTED]]
        if len(problems) > MAX_LISTED:
            lines.append(f"... and {len(problems) - MAX_LISTED} more")
        head = f"{len(problems)} invalid input(s), nothing was judged:"
        return cls("\n  ".join([head, *lines]), problems)


class UnknownOption(InputError, TypeError):
    """A keyword argument that is no option; the message names it and lists the options."""


class HarnessError(HarnessFailure, RuntimeError):
    """Some judgements failed for the harness's reasons, not the model's.  `.result` is the full
    result of the evaluation (as `compute()` would return it), `.errors` its `error` rows."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        self.errors = [d for d in result.get("details", []) if d.get("reason") == "error"]
        first = self.errors[0] if self.errors else {}
        super().__init__(f"{len(self.errors)} of {result.get('n_completions', '?')} judgement(s) failed for "
                         f"the harness's reasons (not the model's); no score is reported. First: sample "
                         f"{first.get('sample_id')}: {str(first.get('detail', '')).splitlines()[0][:300] if first else ''}"
                         + (f" (evidence: {Path(result.get('artifacts_base', '.')) / first['artifacts']})"
                            if first.get("artifacts") else ""))


class EnvironmentsMissing(ExecRepoBenchError, RuntimeError):
    """Samples whose environments are not in this cache; the message lists the repositories and the
    `execrepobench prepare` command that makes them.  Nothing was judged."""

    def __init__(self, message: str, repos: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.repos = tuple(repos)


class MetricPublishError(ExecRepoBenchError, ValueError):
    """The metric folder could not be written or pushed; the message says why."""


class ExecutorUnavailable(ExecRepoBenchError, RuntimeError):
    """The executor asked for cannot run here (e.g. `ray` without the optional extra)."""


class ExecutionNotAllowed(ExecRepoBenchError, RuntimeError):
    """Running model code was not allowed (allow_exec / --allow-exec); the message says how to allow it."""


class SandboxUnavailable(ExecRepoBenchError, RuntimeError):
    """Strong isolation is not possible here and the caller did not accept the weak mode."""


class SourceError(ExecRepoBenchError, RuntimeError):
    """A source that cannot be fetched; the message names the repo and the reason."""


class EnvError(ExecRepoBenchError, RuntimeError):
    """An environment could not be made; the message names the repository and the reason."""


class JunitError(ExecRepoBenchError, ValueError):
    """The report is missing, empty or not pytest junit XML."""


class ViewError(ExecRepoBenchError, RuntimeError):
    """A judged run would need a path outside its allow-listed view: a harness error (the message names it)."""
