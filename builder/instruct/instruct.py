"""Repo-Instruct: the paper's instruction corpus, made with the benchmark's multi-level masking.

Each repository of a (separate) instruct manifest is fetched, masked with ``sample_masks`` (the
benchmark's method), given ranked cross-file context (``RepoContextIndex``) and written as chat
records: system = SYSTEM_PROMPT, user = ``render_user(...)``, assistant = the masked middle.  Nothing
is executed: no environments, no baseline, no verification.

Decontamination against a built benchmark (its samples.jsonl): a repository whose normalised name
(lower case, runs of ``-_.`` equal) or pinned source / source hash matches a benchmark sample is
refused; a record whose middle (stripped) equals a benchmark ``middle_code`` (stripped) is dropped.
Building the corpus (per repository, resumable; streaming, bounded memory) is `instruct_build.py`.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, Optional

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.instruct_record import SYSTEM_PROMPT, InstructRecord, Message
from execrepobench_dataset.record import ContextFile, make_sample_id, read_jsonl
from execrepobench_dataset.version import __version__

from ..sampling.candidates import MaskedRepo, mask_repository
from ..sampling.masking import MaskConfig, split
from ..sources.manifest import RepoSpec
from ..sources.sources import FetchedSource

# The user message, as data.  Layout (``<...>`` are the placeholders):
CONTEXT_HEADER = "##Context Code##:\n"
CONTEXT_FILE = "##File: {path}##\n{code}\n"
PREFIX_SUFFIX = "##Prefix Code##:\n{prefix}\n##Suffix Code##:\n{suffix}\n##Middle Code##:\n"


def _fit_prefix_suffix(prefix: str, suffix: str, budget: int) -> tuple[str, str]:
    if len(prefix) + len(suffix) <= budget:
        return prefix, suffix
    keep_p = min(len(prefix), max(budget // 2, budget - len(suffix)))
    keep_s = budget - keep_p
    return (prefix[len(prefix) - keep_p:] if keep_p else ""), suffix[:keep_s]


def render_user(context: list[ContextFile], prefix: str, suffix: str, budget_chars: int) -> str:
    """The user message, in the paper's layout::

        ##Context Code##:\\n
        ##File: <path>##\\n<code>\\n        (one per context file, most relevant first)
        ##Prefix Code##:\\n<prefix>\\n##Suffix Code##:\\n<suffix>\\n##Middle Code##:\\n

    (``CONTEXT_HEADER``, ``CONTEXT_FILE``, ``PREFIX_SUFFIX``).  ``budget_chars`` bounds the variable
    text: len(prefix kept) + len(suffix kept) + len of every rendered ``CONTEXT_FILE`` entry (its
    ``##File: ...##`` line included); the fixed markers are not counted.

    * prefix and suffix come first.  When together they exceed the budget, the END of the prefix
      and the START of the suffix are kept, half the budget each (``budget // 2`` for the prefix;
      a side shorter than its half leaves the rest to the other), cut at characters.
    * the rest of the budget goes to context files, most relevant first, each whole while it fits;
      the first one that does not fit is cut at a line boundary (its leading lines that fit;
      left out when not even its first line fits), and no file after it is added.
    """
    if budget_chars < 0:
        raise UsageError(f"budget_chars must be >= 0, got {budget_chars}")
    prefix, suffix = _fit_prefix_suffix(prefix, suffix, budget_chars)
    left = budget_chars - len(prefix) - len(suffix)
    parts = [CONTEXT_HEADER]
    for cf in context:
        entry = CONTEXT_FILE.format(path=cf.path, code=cf.code)
        if len(entry) <= left:
            parts.append(entry)
            left -= len(entry)
            continue
        room = left - len(CONTEXT_FILE.format(path=cf.path, code=""))
        kept = []
        for line in cf.code.splitlines(keepends=True):
            if len(line) > room:
                break
            kept.append(line)
            room -= len(line)
        if kept:
            parts.append(CONTEXT_FILE.format(path=cf.path, code="".join(kept)))
        break
    parts.append(PREFIX_SUFFIX.format(prefix=prefix, suffix=suffix))
    return "".join(parts)


def instruct_records(spec: RepoSpec, fetched: FetchedSource, seed: int, mask: MaskConfig, budget_chars: int,
                     masked: Optional[MaskedRepo] = None) -> Iterator[InstructRecord]:
    """Mask the repository like the benchmark does (or take `masked`, already done) and yield one chat record
    per mask, grouped by masked file (mask order within a file): each file's BM25 index (the corpus without
    it) is built once and only a few are kept, so memory stays that of one repository's files (a BM25 index
    of a 2,800-file repository is ~15 MiB)."""
    masked = masked or mask_repository(spec.name, fetched.root, seed, mask)
    raw, result, index = masked.raw, masked.result, masked.index
    index.limit_cache(2)
    for m in sorted(result.masks, key=lambda m: m.file_name):  # stable: mask order within a file
        prefix, middle, suffix = split(raw[m.file_name], m)
        context = index.rank(m.file_name, prefix, suffix)
        yield InstructRecord(
            record_id=make_sample_id(fetched.pinned, m.file_name, prefix, middle, suffix, m.fill_type),
            repo_name=spec.name, repo_source=fetched.pinned, file_name=m.file_name,
            fill_type=m.fill_type, node_type=m.node_type,
            messages=(Message("system", SYSTEM_PROMPT),
                      Message("user", render_user(context, prefix, suffix, budget_chars)),
                      Message("assistant", middle)),
            seed=seed, builder_version=__version__)


def canon_name(name: str) -> str:
    """Normalised repository name: lower case, runs of - _ . equal."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _source_identity(source: str) -> tuple[Optional[str], Optional[str]]:
    """(project name, source hash) named by a pinned spec, where it names them."""
    kind, _, rest = source.partition(":")
    if kind == "pypi":
        name, _, tail = rest.partition("==")
        return name, (tail.partition("#sha256=")[2] or None)
    if kind == "git":
        url, _, commit = rest.rpartition("@")
        return url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or None, commit or None
    if kind == "path":
        return None, (rest.partition("#tree=")[2] or None)
    return None, None


class Benchmark:
    """What the instruct corpus must not overlap: names, pinned sources, hashes, middles."""

    def __init__(self, samples_path: Optional[Path]) -> None:
        self.path = samples_path
        self.names, self.sources, self.hashes, self.middles = set(), set(), set(), set()
        self.samples = 0  # benchmark samples read
        if samples_path is not None and not Path(samples_path).is_file():
            raise UsageError(f"--benchmark-samples {samples_path}: no such file (the benchmark's samples.jsonl)")
        for s in read_jsonl(samples_path) if samples_path is not None else ():
            self.samples += 1
            name, digest = _source_identity(s.repo_source)
            self.names.update(canon_name(n) for n in (s.repo_name, name) if n)
            self.sources.add(s.repo_source)
            if digest:
                self.hashes.add(digest.lower())
            self.middles.add(s.middle_code.strip())

    def name_clash(self, spec: RepoSpec) -> Optional[str]:
        ref = spec.ref  # a pypi/git project name counts too (a path's folder name does not)
        for n in dict.fromkeys((spec.name,) + ((ref.name,) if ref.kind != "path" else ())):
            if canon_name(n) in self.names:
                return f"repo name {n!r} is in the benchmark ({self.path})"
        return None

    def source_clash(self, fetched: FetchedSource) -> Optional[str]:
        return self.source_clash_of(fetched.pinned, fetched.source_hash)

    def source_clash_of(self, pinned: str, source_hash: str) -> Optional[str]:
        if pinned in self.sources:
            return f"pinned source {pinned} is in the benchmark ({self.path})"
        if source_hash and source_hash.lower() in self.hashes:
            return f"source hash {source_hash} is in the benchmark ({self.path})"
        return None

    def contaminated(self, record: InstructRecord) -> bool:
        return self.contaminated_middle(record.middle)

    def contaminated_middle(self, middle: str) -> bool:
        return middle.strip() in self.middles
