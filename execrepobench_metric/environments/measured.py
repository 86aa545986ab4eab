"""Where the judge finds a repository's measurements (the data its budgets derive from).

From the dataset being judged (`measurements.jsonl` of a builder folder, a published folder or a Hub
snapshot), else from this cache: the builder and `prepare` keep each repository's measurements beside
its environment (`MEASURED_DIR/<env key>.json`), so judging samples by record finds them too.  A sample
whose repository has none is judged with the default timeout, and the result says so
(`execution.budget.describe`).
"""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from execrepobench_dataset.errors import RecordError
from execrepobench_dataset.measurements import Measurements
from execrepobench_dataset.record import Sample

from .layout import cache_root


def _path(env_key: str) -> Path:
    return cache_root() / "measurements" / f"{env_key}.json"


def keep(measured: Measurements) -> None:
    """Keep `measured` in this cache, merged with what is kept for the same environment (other builds'
    samples stay; the newer time of a sample or test wins)."""
    old = cached(measured.env_key)
    if old is not None:
        measured = replace(measured, samples={**old.samples, **measured.samples}, tests={**old.tests, **measured.tests})
    path = _path(measured.env_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(measured.to_dict(), sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def cached(env_key: str) -> Measurements | None:
    try:
        return Measurements.from_dict(json.loads(_path(env_key).read_text(encoding="utf-8")))
    except (OSError, ValueError, RecordError):
        return None


def measurements_for(samples: Sequence[Sample], shipped: Mapping[str, Measurements] | None = None
                     ) -> dict[str, Measurements]:
    """{env key: measurements} for the samples' environments: what the dataset shipped, else this cache's."""
    shipped = dict(shipped or {})
    for key in dict.fromkeys(s.env_key for s in samples):
        if key not in shipped and (found := cached(key)) is not None:
            shipped[key] = found
    return shipped
