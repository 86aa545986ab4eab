"""One split's parquet files, written by `datasets` itself, as `Dataset.push_to_hub` writes them: the rows
become a `datasets.Dataset` with the config's explicit features (an empty list never changes the schema), cut
into `num_shards = int(arrow bytes / max_shard_size) + 1` contiguous shards (default `max_shard_size`:
`datasets.config.MAX_SHARD_SIZE`, 500MB; never more shards than rows) named `{split}-{i:05d}-of-{n:05d}.parquet`,
each written with `Dataset.to_parquet` (row groups sized by `datasets`, the page index, content-defined
chunking): what the Hub's dataset viewer expects.

A corpus too large for memory (the Repo-Instruct records) comes from a generator: `Dataset.from_generator`
writes it to Arrow files under `cache_dir` (memory-mapped), which the caller removes afterwards."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator


@dataclass(frozen=True)
class SplitFiles:
    files: tuple[str, ...]  # file names, in order
    num_rows: int
    arrow_bytes: int  # in-memory size of the rows (`datasets`' num_bytes)
    file_bytes: int  # bytes on disk


@contextlib.contextmanager
def _quiet():
    """datasets' progress bars off while we write (restored after)."""
    import datasets

    was_enabled = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def shard_count(arrow_bytes: int, num_rows: int, max_shard_size: int | str | None = None) -> int:
    """`Dataset.push_to_hub`'s rule, at most one shard per row (an empty split still gets one file)."""
    from datasets import config
    from datasets.utils.py_utils import convert_file_size_to_int

    limit = convert_file_size_to_int(max_shard_size or config.MAX_SHARD_SIZE)
    return max(1, min(int(arrow_bytes / limit) + 1, num_rows))


def write_split(folder: Path, split: str, features, *, rows: list[dict] | None = None,
                generator: Callable[..., Iterator[dict]] | None = None, gen_kwargs: dict | None = None,
                cache_dir: Path | None = None, max_shard_size: int | str | None = None) -> SplitFiles:
    """Write `rows` (or what `generator(**gen_kwargs)` yields, staged under `cache_dir`) into `folder`."""
    import datasets

    with _quiet():
        if generator is not None:
            ds = datasets.Dataset.from_generator(generator, features=features, gen_kwargs=gen_kwargs or {},
                                                 cache_dir=str(cache_dir) if cache_dir else None)
        else:
            ds = datasets.Dataset.from_list(list(rows or []), features=features)
        arrow_bytes = ds._estimate_nbytes() if len(ds) else 0
        n = shard_count(arrow_bytes, len(ds), max_shard_size)
        folder.mkdir(parents=True, exist_ok=True)
        names = []
        for i in range(n):
            name = f"{split}-{i:05d}-of-{n:05d}.parquet"
            ds.shard(num_shards=n, index=i, contiguous=True).to_parquet(str(folder / name))
            names.append(name)
    return SplitFiles(tuple(names), len(ds), arrow_bytes, sum((folder / f).stat().st_size for f in names))
