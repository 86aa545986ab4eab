"""The two kinds of failure a person sees, as base classes every package can import (this module imports
nothing, and the dataset package is the lowest layer: builder, runner and metric all depend on it).

`ExecRepoBenchError`: the user can act on it - a bad input, argument, manifest or dataset, a missing
setup step (an environment not prepared, no sandbox, no opt-in, no Ray).  The message says what and
where; nothing was judged or lost.  The command line prints it and exits 2 (`runner/cli.py`, in one
place).  Each concrete class also keeps the built-in base it always had (`ValueError`, `OSError`,
`RuntimeError`, ...), so existing `except ValueError` callers still catch it.

`HarnessFailure`: some work failed for the harness's reasons, not the user's or the model's; what could
be written was written and what failed was said.  The command line exits 3.

Errors that never reach a user (a failed download inside a build, an unreadable junit report) are
turned into statuses and verdicts where they happen; they do not derive from either.
"""
from __future__ import annotations


class ExecRepoBenchError(Exception):
    """Something the user can fix: the message names the item, field or setting and what to do."""


class HarnessFailure(Exception):
    """Some work failed for the harness's reasons; results were written and the failures reported."""


class UsageError(ExecRepoBenchError, ValueError):
    """A bad argument or setting (a command-line flag, a keyword argument); the message names it."""
