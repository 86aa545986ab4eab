"""The two kinds of failure a person sees, as base classes every package can import (this module imports
nothing, and the dataset package is the lowest layer: builder, runner and metric all depend on it), and
the dataset's own errors.

    ExecRepoBenchError                 the user can act on it: `execrepobench` prints it, exits 2
     +-- UsageError (ValueError)       a bad argument or setting (a flag, a keyword argument)
     +-- RecordError (ValueError)      a record that does not match the schema: record and field
     +-- PublishError (ValueError)     bad input for publishing or pushing; nothing written
     +-- DatasetNotFound (FileNotFoundError)  no such builder folder, published folder, file, Hub id,
     |                                 config or revision
     +-- ContextUnavailable (LookupError)  context named by path, the repository's files not at hand
     +-- ... the metric's, the builder's, the runner's: `execrepobench_metric.errors`,
         `execrepobench.builder.errors`, `execrepobench.runner.errors` (each draws its tree)
    HarnessFailure                     the harness's failure, results written: exits 3
     +-- ... `HarnessError` (metric), `BuildFailed` (runner)

`ExecRepoBenchError`: the user can act on it - a bad input, argument, manifest or dataset, a missing
setup step (an environment not prepared, no sandbox, no opt-in, no Ray).  The message says what and
where; nothing was judged or lost.  The command line prints it and exits 2 (`runner/cli.py`, in one
place).  Each concrete class also keeps the built-in base it always had (`ValueError`, `OSError`,
`RuntimeError`, ...), so existing `except ValueError` callers still catch it.

`HarnessFailure`: some work failed for the harness's reasons, not the user's or the model's; what could
be written was written and what failed was said.  The command line exits 3.

Anything else that reaches the command line (a `ValueError`, `OSError`, `KeyError`, ... not derived from
either) is a bug: it prints the traceback, says so and where to report it, and exits 3.  Errors that
happen inside one unit of work (a failed download inside a build, an unreadable junit report) are
turned into statuses and verdicts where they happen.
"""
from __future__ import annotations


class ExecRepoBenchError(Exception):
    """Something the user can fix: the message names the item, field or setting and what to do."""


class HarnessFailure(Exception):
    """Some work failed for the harness's reasons; results were written and the failures reported."""


class UsageError(ExecRepoBenchError, ValueError):
    """A bad argument or setting (a command-line flag, a keyword argument); the message names it."""


class RecordError(ExecRepoBenchError, ValueError):
    """A record that does not match the schema; the message names the record and the field."""


class PublishError(ExecRepoBenchError, ValueError):
    """Bad input for publishing or pushing; nothing was written."""


class DatasetNotFound(ExecRepoBenchError, FileNotFoundError):
    """`dataset` names no builder folder, published folder, samples file or Hub dataset, or not the config
    or revision asked for; the message says what is wrong and what to do."""


class ContextUnavailable(ExecRepoBenchError, LookupError):
    """A sample names its context by path, but the repository's files are not at hand (or lack a path)."""
