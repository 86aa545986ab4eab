"""What `execrepobench run` / `evaluate` evaluate: the dataset opened (published folder, Hub id, builder
folder or samples file), a deterministic subset of it (`--limit`), and the record of both that goes into
metrics.json (`dataset_record`)."""
from __future__ import annotations

import hashlib
from typing import Sequence

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.load import OpenedDataset
from execrepobench_dataset.record import FILL_TYPES, Sample


def stratified_subset(samples: Sequence[Sample], limit: int | None) -> list[Sample]:
    """`limit` samples, stratified by fill type: each fill type gets its share of `limit` (largest
    remainders, ties in FILL_TYPES order) and, within it, the samples with the smallest ids (a content hash:
    deterministic, and spread over repositories and files).  The dataset's order is kept.  None or a limit
    at least the number of samples: all of them."""
    if limit is None or limit >= len(samples):
        return list(samples)
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    by_fill: dict[str, list[Sample]] = {}
    for s in samples:
        by_fill.setdefault(s.fill_type, []).append(s)
    order = [f for f in FILL_TYPES if f in by_fill] + sorted(f for f in by_fill if f not in FILL_TYPES)
    exact = {f: limit * len(by_fill[f]) / len(samples) for f in order}
    quota = {f: int(exact[f]) for f in order}
    rest = limit - sum(quota.values())
    for f in sorted(order, key=lambda f: (-(exact[f] - quota[f]), order.index(f)))[:rest]:
        quota[f] += 1
    kept = {s.sample_id for f in order for s in sorted(by_fill[f], key=lambda s: s.sample_id)[:quota[f]]}
    return [s for s in samples if s.sample_id in kept]


def ids_digest(samples: Sequence[Sample]) -> str:
    """sha256 of the sorted sample ids, one per line: which samples a run judged."""
    return hashlib.sha256("".join(f"{i}\n" for i in sorted(s.sample_id for s in samples)).encode()).hexdigest()


def dataset_record(opened: OpenedDataset, judged: Sequence[Sample], limit: int | None) -> dict:
    """The dataset a run evaluated, for metrics.json: what was asked for (name, config, revision), what was
    read (kind, Hub commit), its fingerprint, and the subset judged."""
    return {"name": opened.name, "kind": opened.kind,
            "config": opened.config if opened.kind == "published" else None,  # builder output has no configs
            "revision": opened.revision,
            "commit": opened.commit, "fingerprint": opened.fingerprint, "samples_in_dataset": len(opened.samples),
            "limit": limit, "samples": len(judged), "sample_ids_sha256": ids_digest(judged)}
