"""Load a published ExecRepoBench dataset (a local folder or a Hub repository id) with `datasets`."""
from __future__ import annotations

from typing import Any

from .record import Sample

CONFIGS = {"exec_repo_bench": "test", "repo_instruct": "train"}  # config -> its split (as published)


def _config(config: str) -> str:
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}: ExecRepoBench has the configs "
                         f"{', '.join(repr(c) for c in CONFIGS)}")
    return config


def load(path_or_repo_id: str, config: str = "exec_repo_bench", split: str | None = None, **kwargs: Any):
    """The `datasets.Dataset` of one config (default split: test for exec_repo_bench, train for repo_instruct).

    `kwargs` go to `datasets.load_dataset` (e.g. `revision`, `cache_dir`, `token`).
    """
    import datasets

    config = _config(config)
    return datasets.load_dataset(str(path_or_repo_id), config, split=split or CONFIGS[config], **kwargs)


def load_samples(path_or_repo_id: str, split: str | None = None, **kwargs: Any) -> list[Sample]:
    """The `exec_repo_bench` rows as `Sample` records (validated again on the way back)."""
    return [Sample.from_dict(row) for row in load(path_or_repo_id, "exec_repo_bench", split, **kwargs)]


def load_instruct(path_or_repo_id: str, split: str | None = None, **kwargs: Any) -> list:
    """The `repo_instruct` rows as `InstructRecord`s."""
    from .instruct_record import InstructRecord

    return [InstructRecord.from_dict(row) for row in load(path_or_repo_id, "repo_instruct", split, **kwargs)]
