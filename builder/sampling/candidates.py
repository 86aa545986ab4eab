"""A repository's candidate samples: its sources masked (`masking.py`), each mask with its ranked context
(`context.py`).  Candidates are not yet verified (verification/ decides which are kept)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from execrepobench_dataset.record import Sample, make_sample_id
from execrepobench_dataset.version import __version__

from .context import RepoContextIndex
from .grammar import check_fill_type
from .masking import MaskConfig, MaskResult, candidate_files, sample_masks, split
from .parsed_files import Region
from .repo_files import read_pool


@dataclass(frozen=True)
class MaskedRepo:
    """One repository masked: its maskable sources, the masks and the context index (built once)."""

    files: list[str]
    raw: dict[str, bytes]
    result: MaskResult
    index: RepoContextIndex

    def stats(self) -> dict:
        return {"files": len(self.files), "skipped_files": self.result.skipped_files,
                "mask_dropped": dict(sorted(self.result.dropped.items())), "shortfall": self.result.shortfall}


def mask_repository(name: str, root: Path, seed: int, mask: MaskConfig, exclude: tuple[str, ...] = (),
                    pool: dict[str, str] | None = None, region: Region | None = None) -> MaskedRepo:
    """Mask the repository's sources (not `exclude`: its test paths), inside `region` when given; context over
    `pool` (all .py files)."""
    files = candidate_files(root, exclude=exclude)
    raw = {f: (root / f).read_bytes() for f in files}
    return MaskedRepo(files, raw, sample_masks(raw, mask, seed, name, region), RepoContextIndex(pool or read_pool(root)))


@dataclass(frozen=True)
class Stamp:
    """What every candidate of a repository records besides its mask: where it comes from and how it is judged."""

    name: str
    pinned: str  # the pinned source (repo_source)
    env_key: str
    seed: int
    test_command: tuple[str, ...]
    excluded_tests: tuple[str, ...]
    fields: Mapping[str, str] | None = None  # more fields every sample records (a live snapshot's)


def make_samples(root: Path, stamp: Stamp, mask: MaskConfig, *, exclude: tuple[str, ...],
                 pool: dict[str, str] | None = None, region: Region | None = None) -> tuple[list[Sample], dict]:
    """Mask the repository's sources (not `exclude`: its test paths' modules that define tests; inside `region`
    when given), attach ranked context: the candidate samples (not yet verified, each stamped with `stamp`) and
    the masking part of the report."""
    name, pinned, env_key, seed = stamp.name, stamp.pinned, stamp.env_key, stamp.seed
    pool = pool if pool is not None else read_pool(root)
    masked = mask_repository(name, root, seed, mask, exclude, pool, region)
    raw, result, index, sources = masked.raw, masked.result, masked.index, masked.files
    samples = []
    for m in result.masks:
        prefix, middle, suffix = split(raw[m.file_name], m)
        fill = m.fill_type
        paths, scores = index.ranked_paths(m.file_name, prefix, suffix)  # by reference: code is in the record
        samples.append(Sample(
            sample_id=make_sample_id(pinned, m.file_name, prefix, middle, suffix, fill),
            repo_name=name, repo_source=pinned, file_name=m.file_name,
            prefix_code=prefix, middle_code=middle, suffix_code=suffix,
            context_code=(), context_paths=paths, context_scores=scores,
            fill_type=fill, node_type=m.node_type,
            middle_start_byte=m.start_byte, middle_end_byte=m.end_byte,
            env_key=env_key, seed=seed, builder_version=__version__,
            test_command=stamp.test_command, excluded_tests=stamp.excluded_tests,
            **dict(stamp.fields or {}),
        ))
        wrong = check_fill_type(samples[-1])  # the label re-derived from the record: the one table, any path
        if wrong:
            raise AssertionError(f"{name}: {m.file_name} bytes {m.start_byte}..{m.end_byte}: {wrong}")
    return samples, {
        "files": len(sources), "context_files": len(pool), "skipped_files": result.skipped_files,
        "candidates": len(result.masks) + sum(result.dropped.values()),
        "dropped": dict(sorted(result.dropped.items())), "shortfall": result.shortfall,
        "masked": len(samples), "masked_per_fill_type": dict(sorted(Counter(s.fill_type for s in samples).items())),
    }
