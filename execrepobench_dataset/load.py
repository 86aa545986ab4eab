"""Open an ExecRepoBench dataset: a builder output folder, a published folder, or a Hub dataset id.

`open_dataset` is the one way in: it returns the samples and the repository records, whatever the
form.  A Hub id is fetched with `huggingface_hub.snapshot_download(repo_type="dataset")` and then read
as a published folder (parquet, read with pyarrow).  `load` / `load_samples` / `load_instruct` read a
published folder or Hub id through `datasets.load_dataset`.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

from .context import ContextResolver
from .errors import DatasetNotFound, RecordError, UsageError
from .measurements import MEASUREMENTS_FILE, Measurements, read_measurements
from .record import ContextFile, Sample, read_jsonl
from .repo_record import RepoRecord, read_repo_records

SAMPLES_CONFIG, INSTRUCT_CONFIG, REPOS_CONFIG = "exec_repo_bench", "repo_instruct", "repositories"
CONFIGS = {SAMPLES_CONFIG: "test", INSTRUCT_CONFIG: "train", REPOS_CONFIG: "train"}  # config -> its split
SAMPLES_FILE, REPOS_FILE = "samples.jsonl", "repositories.jsonl"  # in a builder output folder
REPO_FOLDER_RECORD = "repository.jsonl"  # in each repository's folder of a build (OUT/repos/NAME), not a dataset
_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# A live snapshot's samples config is named after its window (`live-2026-11`), in place of exec_repo_bench.
LIVE_CONFIG_RE = re.compile(r"^live-[A-Za-z0-9][A-Za-z0-9_-]*$")


def samples_config(folder: Path) -> str | None:
    """The samples config of a published folder: exec_repo_bench, else its one live config; None if neither."""
    if (folder / "data" / SAMPLES_CONFIG).is_dir():
        return SAMPLES_CONFIG
    live = [p.name for p in (folder / "data").glob("live-*") if p.is_dir() and LIVE_CONFIG_RE.match(p.name)]
    return live[0] if len(live) == 1 else None


@dataclass(frozen=True)
class OpenedDataset:
    name: str  # what the caller passed (a path or a Hub id), for messages and commands
    folder: Path  # the local folder read (a Hub snapshot lives in the Hugging Face cache)
    kind: str  # "builder", "published" or "samples-file"
    samples: tuple[Sample, ...]
    repositories: tuple[RepoRecord, ...]
    config: str = SAMPLES_CONFIG  # the samples' config (published folders and Hub ids)
    revision: str | None = None  # the revision asked for (Hub ids)
    commit: str | None = None  # the Hub commit read (the snapshot's folder name); None for local folders
    # What the building machine measured (budgets derive from it at judging time); never in the fingerprint.
    measurements: tuple[Measurements, ...] = ()

    def repository(self, name: str) -> RepoRecord | None:
        return next((r for r in self.repositories if r.repo_name == name), None)

    @cached_property
    def resolver(self) -> ContextResolver:
        return ContextResolver(self.repositories)

    def context(self, sample: Sample) -> tuple[ContextFile, ...]:
        """The sample's ranked context files, whichever form it stores them in (`ranked_context`)."""
        return self.resolver.context(sample)

    def measurements_by_env(self) -> dict[str, Measurements]:
        return {m.env_key: m for m in self.measurements}

    @property
    def fingerprint(self) -> str:
        return dataset_fingerprint(self.samples, self.repositories)


def dataset_fingerprint(samples: Iterable[Sample], repositories: Iterable[RepoRecord]) -> str:
    """sha256 over every sample then every repository record, each as canonical JSON (sorted keys,
    UTF-8) on one line, samples sorted by sample_id and records by repo_name.  Independent of the
    form (JSONL, parquet, Hub) and of the machine; `execrepobench fingerprint DIR_OR_HUB_ID` prints it.
    Content only: what a machine measured (`measurements.jsonl`) is not part of it."""
    digest = hashlib.sha256()
    for part, rows in (("samples", sorted(samples, key=lambda s: s.sample_id)),
                       ("repositories", sorted(repositories, key=lambda r: r.repo_name))):
        digest.update(f"# {part}\n".encode())
        for row in rows:
            line = json.dumps(row.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def _read_parquet_rows(folder: Path) -> list[dict]:
    import pyarrow.parquet as pq

    rows: list[dict] = []
    for path in sorted(folder.glob("*.parquet")):
        rows += pq.read_table(path).to_pylist()
    return rows


def _snapshot(repo_id: str, revision: str | None, config: str = SAMPLES_CONFIG) -> Path:
    """The dataset's snapshot in the Hugging Face cache (downloaded unless HF_HUB_OFFLINE); a missing dataset,
    revision or cache entry -> DatasetNotFound saying what to do."""
    import huggingface_hub
    from huggingface_hub import errors

    patterns = ["README.md", f"data/{config}/*", "data/live-*/*", f"data/{REPOS_CONFIG}/*", MEASUREMENTS_FILE]
    at = f" at revision {revision!r}" if revision else ""
    try:
        return Path(huggingface_hub.snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision,
                                                      allow_patterns=patterns))
    except errors.RevisionNotFoundError:
        raise DatasetNotFound(f"dataset {repo_id}: the Hub has no revision {revision!r} (a branch, tag or commit "
                              "of the dataset repository)") from None
    except errors.RepositoryNotFoundError:
        raise DatasetNotFound(f"dataset {repo_id}: no such dataset on the Hugging Face Hub (or it is private or "
                              "gated: log in with `hf auth login`); a local folder of that name does not exist "
                              "either") from None
    except errors.LocalEntryNotFoundError:
        raise DatasetNotFound(f"dataset {repo_id}{at}: not in the Hugging Face cache, and the Hub cannot be "
                              f"reached (offline: HF_HUB_OFFLINE=1, or no network). Fetch it where there is "
                              f"network with `hf download {repo_id} --repo-type dataset"
                              f"{f' --revision {revision}' if revision else ''}` (the same HF_HOME), or pass a "
                              "local published folder") from None


def local_folder(dataset: str | Path, revision: str | None = None,
                 config: str = SAMPLES_CONFIG) -> tuple[Path, str]:
    """(folder or samples file, kind) for a builder folder, a published folder, a samples file or a Hub id."""
    path = Path(dataset).expanduser()
    if revision is not None and path.exists():
        raise DatasetNotFound(f"dataset {dataset}: a local {'file' if path.is_file() else 'folder'}, which has no "
                              "revisions: --revision (revision=) chooses a version of a Hub dataset id only")
    if path.is_file():
        return path, "samples-file"
    if path.is_dir():
        if (path / SAMPLES_FILE).is_file():
            if (path / REPO_FOLDER_RECORD).is_file() and not (path / REPOS_FILE).is_file():
                raise DatasetNotFound(
                    f"dataset {dataset}: one repository's folder of a build ({REPO_FOLDER_RECORD} without "
                    f"{REPOS_FILE}), not a dataset: give the build's output folder (the one holding repos/)")
            return path, "builder"
        if samples_config(path):
            return path, "published"
        raise DatasetNotFound(f"dataset {dataset}: a folder, but neither builder output ({SAMPLES_FILE}) nor a "
                              f"published dataset (data/{SAMPLES_CONFIG}/ or one data/live-*/)")
    if isinstance(dataset, str) and _HUB_ID_RE.match(dataset) and not dataset.startswith((".", "/")):
        folder = _snapshot(dataset, revision, config)
        if not (folder / "data").is_dir():
            raise DatasetNotFound(f"dataset {dataset}: the Hub snapshot ({folder}) has no data/ folder: not an "
                                  "ExecRepoBench dataset, or an incomplete download (fetch it again: "
                                  f"`hf download {dataset} --repo-type dataset`)")
        return folder, "published"
    raise DatasetNotFound(f"dataset {dataset}: no such folder or file, and not a Hub dataset id (OWNER/NAME)")


def sample_configs(folder: Path) -> list[str]:
    """The configs of a published folder that hold samples (every data/<config>/ but the repository records
    and the instruct corpus)."""
    data = folder / "data"
    return sorted(p.name for p in data.iterdir() if p.is_dir() and p.name not in (REPOS_CONFIG, INSTRUCT_CONFIG)
                  and any(p.glob("*.parquet"))) if data.is_dir() else []


def _check_config(dataset, folder: Path, kind: str, config: str) -> None:
    if kind != "published":
        if config != SAMPLES_CONFIG:
            raise DatasetNotFound(f"dataset {dataset}: config {config!r} asked for, but a {kind} has only its samples "
                                  f"(the default config {SAMPLES_CONFIG!r})")
        return
    if config in (REPOS_CONFIG, INSTRUCT_CONFIG):
        raise DatasetNotFound(f"dataset {dataset}: config {config!r} holds "
                              f"{'repository records' if config == REPOS_CONFIG else 'the Repo-Instruct corpus'}, "
                              f"not samples to evaluate; the sample configs: {', '.join(sample_configs(folder))}")
    if config not in sample_configs(folder):
        raise DatasetNotFound(f"dataset {dataset}: no config {config!r}; its sample configs: "
                              f"{', '.join(sample_configs(folder)) or 'none'}")


def open_dataset(dataset: str | Path, revision: str | None = None, config: str | None = None) -> OpenedDataset:
    """Samples (of `config`, default `exec_repo_bench`) and repository records of `dataset` (see
    `local_folder`).  Raises `DatasetNotFound` (also for a config or revision it does not have) or
    `RecordError` naming the file and the record."""
    asked, config = config, config or SAMPLES_CONFIG
    folder, kind = local_folder(dataset, revision, config)
    if asked is None and kind == "published":  # a live snapshot's only samples config is named after its window
        config = samples_config(folder) or config
    _check_config(dataset, folder, kind, config)
    commit = None
    if kind == "published":
        if not any((folder / "data" / REPOS_CONFIG).glob("*.parquet")):
            raise DatasetNotFound(f"dataset {dataset}: no `{REPOS_CONFIG}` config (data/{REPOS_CONFIG}/*.parquet): "
                                  "the repository records that make the environments and hold the context files; "
                                  "an incomplete copy or download?")
        try:
            samples = [Sample.from_dict(r) for r in _read_parquet_rows(folder / "data" / config)]
            repos = [RepoRecord.from_dict(r) for r in _read_parquet_rows(folder / "data" / REPOS_CONFIG)]
        except RecordError as exc:
            raise RecordError(f"dataset {dataset}: {exc}") from None
        if folder.parent.name == "snapshots" and not Path(dataset).expanduser().exists():
            commit = folder.name  # the Hugging Face cache names each snapshot folder after its commit
    else:
        samples_file = folder if kind == "samples-file" else folder / SAMPLES_FILE
        repos_file = samples_file.parent / REPOS_FILE
        samples = list(read_jsonl(samples_file))
        repos = list(read_repo_records(repos_file)) if repos_file.is_file() else []
        folder = samples_file.parent
    measured = folder / MEASUREMENTS_FILE
    try:
        measurements = tuple(read_measurements(measured)) if measured.is_file() else ()
    except RecordError as exc:
        raise RecordError(f"dataset {dataset}: {exc}") from None
    return OpenedDataset(str(dataset), folder, kind, tuple(samples), tuple(repos), config, revision, commit,
                         measurements)


def _config(config: str) -> str:
    if config not in CONFIGS and not LIVE_CONFIG_RE.match(str(config)):
        raise UsageError(f"unknown config {config!r}: ExecRepoBench has the configs "
                         f"{', '.join(repr(c) for c in CONFIGS)} (and a live snapshot's `live-...`)")
    return config


def load(path_or_repo_id: str, config: str = SAMPLES_CONFIG, split: str | None = None, **kwargs: Any):
    """The `datasets.Dataset` of one config of a published folder or Hub id (default split: test for
    exec_repo_bench, train for repo_instruct and repositories).  `kwargs` go to `datasets.load_dataset`."""
    import datasets

    config = _config(config)
    return datasets.load_dataset(str(path_or_repo_id), config, split=split or CONFIGS.get(config, "test"), **kwargs)


def load_samples(path_or_repo_id: str, split: str | None = None, *, materialise_context: bool = False,
                 **kwargs: Any) -> list[Sample]:
    """The `exec_repo_bench` rows (a live snapshot's `live-...` rows, in a local folder) as `Sample` records
    (validated again on the way back).  With `materialise_context`, each sample's `context_code` is filled
    from the `repositories` config (the self-contained form; the published rows name their context by path)."""
    folder = Path(str(path_or_repo_id)).expanduser()
    config = (samples_config(folder) if folder.is_dir() else None) or SAMPLES_CONFIG
    samples = [Sample.from_dict(row) for row in load(path_or_repo_id, config, split, **kwargs)]
    if not materialise_context:
        return samples
    resolver = ContextResolver(load_repositories(path_or_repo_id, **kwargs))
    return [resolver.materialise(s) for s in samples]


def load_repositories(path_or_repo_id: str, **kwargs: Any) -> list[RepoRecord]:
    """The `repositories` rows as `RepoRecord`s."""
    return [RepoRecord.from_dict(row) for row in load(path_or_repo_id, REPOS_CONFIG, **kwargs)]


def load_instruct(path_or_repo_id: str, split: str | None = None, **kwargs: Any) -> list:
    """The `repo_instruct` rows as `InstructRecord`s."""
    from .instruct_record import InstructRecord

    return [InstructRecord.from_dict(row) for row in load(path_or_repo_id, INSTRUCT_CONFIG, split, **kwargs)]
