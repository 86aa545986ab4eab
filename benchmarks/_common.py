"""Helpers shared by the benchmark scripts."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from execrepobench_dataset.record import Sample, read_jsonl


def verified_samples(path: Path, limit: int) -> list[Sample]:
    """Up to `limit` samples that carry judged tests, taken round-robin over repositories."""
    by_repo: dict[str, list[Sample]] = defaultdict(list)
    for s in read_jsonl(path):
        if s.judged_tests:
            by_repo[s.repo_name].append(s)
    picked: list[Sample] = []
    while len(picked) < limit and any(by_repo.values()):
        for repo in sorted(by_repo):
            if by_repo[repo] and len(picked) < limit:
                picked.append(by_repo[repo].pop(0))
    return picked
