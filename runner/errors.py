"""Every exception of the runner (the `execrepobench` command, backends, compare), in one place.

    ExecRepoBenchError                 the user can act on it: `execrepobench` prints it, exits 2
     +-- UsageError (ValueError)       a bad flag or setting (`execrepobench_dataset.errors`)
     |    +-- GenerationsMismatch      --out holds completions made with other settings
     |    +-- PushResultsError         a run folder or repository id that cannot be pushed
     +-- InputError (ValueError)       `execrepobench_metric.errors`' (bad predictions)
     |    +-- DuplicatePredictionError  two lines of a predictions file name one sample_id
     +-- CompareError (ValueError)     run folders that cannot be compared
     +-- BackendUnavailable (ImportError)  a model backend's package is not installed here
     +-- ModelNotFound (FileNotFoundError)  --model names no model folder, cached or Hub model, or one
     |                                 without the files prompts need (config.json, tokenizer.json)
     +-- ServerError (OSError)         the OpenAI-compatible server unreachable or answering an error
    HarnessFailure                     the harness's failure, results written: exits 3
     +-- BuildFailed (RuntimeError)    some repositories of `run`'s build failed; `.summary`

Anything else that reaches `execrepobench` (a ValueError, an OSError, ... raised by a bug) is a crash:
the command prints the traceback and where to report it, and exits 3 (`cli.main`).
"""
from __future__ import annotations

from execrepobench_dataset.errors import ExecRepoBenchError, HarnessFailure, UsageError
from execrepobench_metric.errors import InputError


class CompareError(ExecRepoBenchError, ValueError):
    """The run folders cannot be compared; the message names the folders and what to do."""


class BuildFailed(HarnessFailure, RuntimeError):
    """Some repositories failed to build (harness errors); `.summary` says which and why."""

    def __init__(self, summary: str) -> None:
        super().__init__(summary)
        self.summary = summary


class ServerError(ExecRepoBenchError, OSError):
    """The server could not be reached, or answered with an error (check --base-url and the server)."""


class BackendUnavailable(ExecRepoBenchError, ImportError):
    """A model backend's Python package is not installed here; the message names it and the setup script."""


class GenerationsMismatch(UsageError):
    """The output folder holds completions made with other settings than this run's."""


class ModelNotFound(ExecRepoBenchError, FileNotFoundError):
    """`--model` names no local model folder, cached or Hub model, or one that lacks what is needed."""


class DuplicatePredictionError(InputError):
    """Two or more lines of a predictions file name one `sample_id`; the message names them with their lines."""


class PushResultsError(UsageError):
    """The run folder or the repository id cannot be pushed; the message says which and why."""
