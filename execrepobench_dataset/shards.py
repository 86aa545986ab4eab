"""Parquet shards written incrementally: bounded memory for corpora of any size.

`ShardWriter(folder, features, shard_rows, name)` takes rows (dicts) one at a time and writes them as
row groups of at most `batch_rows` rows, opening a new shard every `shard_rows` rows; `close()` returns
the paths.  The schema is the explicit one of the `datasets` features, so empty lists never change it;
an empty corpus still gets one (empty) shard so that the config loads.  Used by the Repo-Instruct
builder for its own output; `publish` writes the published dataset through `datasets` (`hub_parquet.py`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from .errors import UsageError

DEFAULT_BATCH_ROWS = 100  # rows per row group: fixed, so the bytes do not depend on the writer's defaults


class ShardWriter:
    def __init__(self, folder: Path, features, shard_rows: int, name: Callable[[int], str],
                 batch_rows: int = DEFAULT_BATCH_ROWS) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if shard_rows < 1 or batch_rows < 1:
            raise UsageError(f"shard_rows and batch_rows must be >= 1, got {shard_rows}, {batch_rows}")
        self._pa, self._pq, self.schema = pa, pq, features.arrow_schema
        self.folder, self.shard_rows, self.batch_rows = Path(folder), shard_rows, min(shard_rows, batch_rows)
        self.name = name
        self.paths: list[Path] = []
        self.rows = 0
        self.arrow_bytes = 0  # in-memory size of the tables written (`datasets`' num_bytes)
        self._writer, self._in_shard, self._batch = None, 0, []

    def add(self, row: dict) -> None:
        self._batch.append(row)
        self.rows += 1
        if len(self._batch) >= self.batch_rows or self._in_shard + len(self._batch) >= self.shard_rows:
            self._flush()

    def _flush(self) -> None:
        if not self._batch and self.paths:
            return
        if self._writer is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.paths.append(self.folder / self.name(len(self.paths)))
            self._writer = self._pq.ParquetWriter(str(self.paths[-1]), self.schema, compression="snappy",
                                                  write_statistics=True)
        table = self._pa.Table.from_pylist(self._batch, schema=self.schema)
        self._writer.write_table(table, row_group_size=self.batch_rows)
        self.arrow_bytes += table.nbytes
        self._in_shard, self._batch = self._in_shard + len(self._batch), []
        if self._in_shard >= self.shard_rows:
            self._writer.close()
            self._writer, self._in_shard = None, 0

    def close(self) -> list[Path]:
        if self._batch or not self.paths:
            self._flush()
        if self._writer is not None:
            self._writer.close()
        self._writer = None
        return self.paths

    def file_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.paths)
