"""A sample's ranked cross-file context, whichever form the sample stores it in.

* materialised: `Sample.context_code` holds (path, code) per file, most relevant first (the official
  release's form, and what `materialise` makes);
* by reference: `Sample.context_paths` (+ `context_scores`) name files of the repository record's
  `files` (config `repositories`), where each file's code is stored once per repository.

`ranked_context(sample, files)` yields the same `ContextFile`s for both forms; the prompt builder, the
Repo-Instruct renderer, the official templates and the dataset loader all go through it (through a
`ContextResolver` when they hold many repositories).  A sample by reference whose repository files are
not given is an error (`ContextUnavailable`), never a prompt without context.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Union

from .errors import ContextUnavailable
from .record import ContextFile, Sample
from .repo_record import RepoRecord

Files = Union[Mapping[str, str], RepoRecord, None]


def _file_map(files: Files) -> Mapping[str, str] | None:
    return files.file_map() if isinstance(files, RepoRecord) else files


def ranked_context(sample: Sample, files: Files = None) -> tuple[ContextFile, ...]:
    """The sample's context files, most relevant first: its materialised `context_code` when it has one,
    else its `context_paths` looked up in `files` (the repository's path -> code, or its `RepoRecord`)."""
    if sample.context_code or not sample.context_paths:
        return tuple(sample.context_code)
    code = _file_map(files)
    if code is None:
        raise ContextUnavailable(f"sample {sample.sample_id}: its context is stored by reference; give the files of "
                                 f"repository {sample.repo_name!r} (config `repositories`, field `files`)")
    missing = [p for p in sample.context_paths if p not in code]
    if missing:
        raise ContextUnavailable(f"sample {sample.sample_id}: repository {sample.repo_name!r} has no file "
                                 f"{missing[0]!r} ({len(missing)} context path(s) missing)")
    return tuple(ContextFile(p, code[p]) for p in sample.context_paths)


def materialise(sample: Sample, files: Files = None) -> Sample:
    """The sample with `context_code` filled (self-contained; its paths and scores are kept)."""
    return dataclasses.replace(sample, context_code=ranked_context(sample, files))


def by_reference(sample: Sample, scores: Iterable[float] | None = None) -> Sample:
    """The sample with its context as paths only (`context_code` emptied).  A materialised sample without
    scores gets none recorded: its files' ranks are their order, scores are all 0.0 unless given."""
    paths = sample.context_paths or tuple(c.path for c in sample.context_code)
    kept = sample.context_scores or tuple(float(x) for x in (scores if scores is not None else [0.0] * len(paths)))
    return dataclasses.replace(sample, context_code=(), context_paths=paths, context_scores=kept)


class ContextResolver:
    """Ranked context for samples of many repositories: repository name -> its files (from records)."""

    def __init__(self, repositories: Iterable[RepoRecord] = ()) -> None:
        self._files = {r.repo_name: r.file_map() for r in repositories}

    def __contains__(self, repo_name: str) -> bool:
        return repo_name in self._files

    def context(self, sample: Sample) -> tuple[ContextFile, ...]:
        return ranked_context(sample, self._files.get(sample.repo_name))

    def materialise(self, sample: Sample) -> Sample:
        return materialise(sample, self._files.get(sample.repo_name))
