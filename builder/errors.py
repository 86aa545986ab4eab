"""Every exception of the builder, in one place.

    ExecRepoBenchError                 the user can act on it: `execrepobench` prints it, exits 2
     +-- ManifestError (ValueError)    a manifest that cannot be used: file, entry, key
     +-- OfficialFormatError (RecordError, ValueError)  a line of the official JSONL: file:line, field
     +-- WindowError (ValueError)      a live window that cannot be used (a future date, an empty window)
     +-- CandidateError (ValueError)   a live candidate list that cannot be used
     +-- LiveInputError (ValueError)   bad input for a live snapshot (an unknown project, no index)
     +-- NoTestsFound (RuntimeError)   no tests where a repository's tests were looked for
     +-- BaselineError (RuntimeError)  a suite that cannot run at all
     |    +-- CoverageError            the baseline's coverage run failed or wrote no data
     +-- IndexQueryError (RuntimeError)  the package index could not tell a project's releases
          +-- UnknownProject           no project of that name (HTTP 404)
          +-- IndexUnavailable         the index did not answer, or not in the JSON simple API
    EnvError (RuntimeError)            `execrepobench_metric.errors`' (an environment cannot be made)
     +-- RequirementsUnresolvable      not even the entry's package and test extras can be locked
    HarnessFailure                     the harness's failure: exits 3
     +-- UnknownNodeType (ValueError)  a tree-sitter node type the fill-level table does not place

The roots are `execrepobench_dataset.errors`' (`RecordError` too); each class keeps the built-in base in
brackets.  Inside a build, a repository's `NoTestsFound`, `BaselineError`, `SourceError` or `EnvError`
becomes that repository's status (one repository never ends the build); they reach a person from a
direct call, or through `execrepobench live` naming the candidate.  Not an error: `live.plan.Skip`, the
signal that a live candidate is left out (its reason recorded).
"""
from __future__ import annotations

from execrepobench_dataset.errors import ExecRepoBenchError, HarnessFailure, RecordError
from execrepobench_metric.errors import EnvError


class ManifestError(ExecRepoBenchError, ValueError):
    """A manifest that cannot be used; the message names file, entry and key."""


class OfficialFormatError(RecordError):
    """A line of the official JSONL that cannot be used; the message names file:line and the field."""


class NoTestsFound(ExecRepoBenchError, RuntimeError):
    """No tests anywhere we looked; the message lists the candidates tried."""


class BaselineError(ExecRepoBenchError, RuntimeError):
    """The suite cannot run at all; the message names the repository and the reason and ends with the tail of
    pytest's output.  `output`: that output's tail, for the repairs (`preparation/heal.py`) to read."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class CoverageError(BaselineError):
    """The baseline's coverage run failed or wrote no coverage data."""


class WindowError(ExecRepoBenchError, ValueError):
    """A window that cannot be used (a malformed or future date, an empty window)."""


class CandidateError(ExecRepoBenchError, ValueError):
    """A candidate list that cannot be used; the message names the file, the entry and the field."""


class LiveInputError(ExecRepoBenchError, ValueError):
    """Bad input for a snapshot (an unknown project named on the command line, an index that does not answer);
    nothing was built."""


class IndexQueryError(ExecRepoBenchError, RuntimeError):
    """The index could not tell a project's releases; the message names the project and the index."""


class UnknownProject(IndexQueryError):
    """The index has no project of that name (HTTP 404)."""


class IndexUnavailable(IndexQueryError):
    """The index did not answer, or not in the JSON simple API with upload times."""


class RequirementsUnresolvable(EnvError):
    """Not even the entry's own package and test extras can be locked; every try is named."""


class UnknownNodeType(HarnessFailure, ValueError):
    """A node type the fill-level table does not place (a grammar newer than the table)."""
