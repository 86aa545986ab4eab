"""Publish builder output as a Hugging Face dataset folder and push it to the Hub. Layout: `README.md` (the card,
`card.py`), `LICENSES.md` (each repository's license: the samples' code is theirs), `charts/*.png` (the
statistics, linked from the card), `data/exec_repo_bench/test-*.parquet` (a live
snapshot's samples config is named after its window instead: `data/live-2026-11/test-*.parquet`),
`data/repositories/train-*.parquet`
(one repository record per row: pinned source, Python, lock, test command, license, manifest entry, and the
repository's files: the context pool the samples name by path), optionally `data/repo_instruct/train-*.parquet`.
The parquet files are written by `datasets` as `push_to_hub` writes them (`hub_parquet.py`).  Samples that name
their context by path (the default) are published without the `context_code` column, which would always be
empty: `load_samples(..., materialise_context=True)` or `ranked_context` fill it in from the `repositories`
config.  Nothing in the folder names a path of the machine that built it."""
from __future__ import annotations

import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Callable

from .card import licenses_file, render_card
from .context import ContextResolver
from .errors import PublishError
from .files import file_sha256
from .figures import markdown as charts_markdown, write_charts
from .hub_parquet import write_split
from .instruct_record import InstructRecord, instruct_features
from .measurements import MEASUREMENTS_FILE, read_measurements, write_measurements
from .load import INSTRUCT_CONFIG, REPOS_CONFIG, REPOS_FILE, SAMPLES_CONFIG, dataset_fingerprint
from .publish_inputs import check_repositories, iter_records, read_json, read_records
from .record import Sample, features
from .repo_record import RepoRecord, repo_features
from .stats import compute_statistics

CONFIG_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
TAGS = ["code", "code-completion", "fill-in-the-middle", "execution", "python"]
LANGUAGES = ["code", "en"]  # Python code; English prompts, comments and docstrings
PER_REPOSITORY_LICENSE = {"license": "other", "license_name": "per-repository", "license_link": "LICENSES.md"}
CONTEXT_FORMS = ("reference", "materialised")
CHARTS_DIR = "charts"  # PNG charts of the statistics, linked from the card
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def validate_config_name(name: str) -> str:
    if not isinstance(name, str) or not CONFIG_NAME_RE.match(name):
        raise PublishError(f"config name {name!r} is not accepted by the Hub: it must match {CONFIG_NAME_RE.pattern}")
    return name


def _instruct_rows(path: str):
    """The instruct corpus, validated line by line, in file order (a generator for `datasets`)."""
    yield from iter_records(Path(path), InstructRecord.from_dict, instruct_features(), "record_id")


def _instruct_counts(path: Path) -> dict:
    repos, fills, records = set(), Counter(), 0
    for row in iter_records(path, InstructRecord.from_dict, instruct_features(), "record_id"):
        repos.add(row["repo_name"])
        fills[row["fill_type"]] += 1
        records += 1
    return {"records": records, "repos": len(repos), "per_fill_type": dict(fills)}


def sample_features(samples: list[dict]):
    """The samples' features; without `context_code` when no sample carries its context's code (it would be an
    always-empty column: the context is named by path and stored once per repository)."""
    feats = features()
    if not any(s.get("context_code") for s in samples):
        del feats["context_code"]
    return feats


def context_code_bytes(samples: list[Sample], records: list[RepoRecord]) -> int:
    """UTF-8 bytes of the context code the samples would carry materialised (paths and code of every ranked file)."""
    sizes = {r.repo_name: {f.path: len(f.path.encode()) + len(f.code.encode()) for f in r.files} for r in records}
    return sum(sum(len(c.path.encode()) + len(c.code.encode()) for c in s.context_code) if s.context_code
               else sum(sizes[s.repo_name][p] for p in s.context_paths) for s in samples)


def _inputs(samples_dir: Path, context: str) -> tuple[Path, list[dict], list[RepoRecord], dict]:
    """(samples file, sample rows sorted by id, repository records, build report), all checked."""
    if context not in CONTEXT_FORMS:
        raise PublishError(f"context {context!r}: expected one of {', '.join(CONTEXT_FORMS)}")
    samples_path = samples_dir / ("" if samples_dir.suffix == ".jsonl" else "samples.jsonl")
    samples = read_records(samples_path, Sample.from_dict, features(), "sample_id")
    repos_path = samples_path.parent / REPOS_FILE
    if not repos_path.is_file():
        raise PublishError(f"{repos_path}: not found (builder output of a version that wrote no repository "
                           "records: build again)")
    records = check_repositories(samples, read_records(repos_path, RepoRecord.from_dict, repo_features(),
                                                       "repo_name"), repos_path)
    report_path = samples_path.parent / "build_report.json"
    report = read_json(report_path, ("builder_version", "seed", "manifest", "repos"))
    if report.get("samples_fingerprint") not in (None, file_sha256(samples_path)):
        raise PublishError(f"{report_path}: samples_fingerprint does not match {samples_path} "
                           "(the report belongs to another build)")
    return samples_path, samples, records, report


def publish(samples_dir: Path, out_dir: Path, *, instruct_dir: Path | None = None,
            max_shard_size: int | str | None = None, license: str | None = None, overwrite: bool = False,
            context: str = "reference", count_tokens: Callable[[str], int] | None = None,
            tokenizer_name: str | None = None, repo_id: str | None = None, metric_space: str | None = None,
            code_url: str | None = None) -> dict:
    """Write the dataset folder `out_dir` from builder output (`samples.jsonl`, `repositories.jsonl`,
    `build_report.json`) and optionally a Repo-Instruct folder (`instruct.jsonl`, streamed): the input is
    validated first (the instruct corpus while it streams), written next to `out_dir` and renamed into place.
    `context`: "reference" (default: samples name their context by path, the code is in the `repositories`
    config) or "materialised" (each sample's `context_code` filled too: self-contained rows, many times the
    size).  `count_tokens`: the tokenizer of the statistics (default: `stats.pretokens`).  `license`: None (default)
    declares `license: other` with each repository's license in LICENSES.md and the card; a Hub license id
    declares that one for everything.  `max_shard_size`: as `datasets`' push_to_hub (default 500MB).  `repo_id`,
    `metric_space`, `code_url`: the dataset's Hub id, the metric's Space and the code, linked from the card.
    Returns a summary."""
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    samples_dir, out_dir = Path(samples_dir), Path(out_dir)
    if license is not None and (not isinstance(license, str) or not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", license)):
        raise PublishError(f"license {license!r} is not a Hub license identifier (e.g. apache-2.0, mit, other)")
    for name, value in (("repo_id", repo_id), ("metric_space", metric_space)):
        if value is not None and not re.fullmatch(r"[\w.-]+/[\w.-]+", str(value)):
            raise PublishError(f"{name} {value!r} is not of the form owner/name")
    for src in filter(None, (samples_dir, instruct_dir)):
        if out_dir.resolve() in (Path(src).resolve(), *Path(src).resolve().parents):
            raise PublishError(f"out folder {out_dir} must not contain the input {src}")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        if not overwrite:
            raise PublishError(f"{out_dir} exists and is not an empty folder (pass overwrite=True to replace it)")
        if not (out_dir / "README.md").is_file() or not (out_dir / "data").is_dir():
            raise PublishError(f"{out_dir} is not a published dataset folder (README.md, data/): not replacing it")
    samples_path, samples, records, report = _inputs(samples_dir, context)
    sample_records = [Sample.from_dict(r) for r in samples]
    fingerprint = dataset_fingerprint(sample_records, records)
    if context == "materialised":
        resolver = ContextResolver(records)
        samples = [dict(row, context_code=[{"path": c.path, "code": c.code} for c in resolver.context(s)])
                   for row, s in zip(samples, sample_records)]
    instruct_path = instruct_report = None
    if instruct_dir is not None:
        instruct_path = Path(instruct_dir) / ("" if Path(instruct_dir).suffix == ".jsonl" else "instruct.jsonl")
        if not instruct_path.is_file():
            raise PublishError(f"{instruct_path}: not found")
        if (instruct_path.parent / "instruct_report.json").is_file():
            instruct_report = read_json(instruct_path.parent / "instruct_report.json")
    live = report.get("live") if isinstance(report.get("live"), dict) else None
    samples_name = str(live["window"]["config_name"]) if live else SAMPLES_CONFIG  # a snapshot: named after its window
    names = [validate_config_name(n) for n in (samples_name, INSTRUCT_CONFIG, REPOS_CONFIG)]
    stats = compute_statistics(sample_records, records, report, count_tokens, tokenizer_name)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.partial-"))
    old = tmp.with_name(tmp.name.replace(".partial-", ".old-"))
    try:
        infos, configs, instruct = {}, [], None
        summary = {"out": str(out_dir), "fingerprint": fingerprint, "context": context, "configs": {}}
        staging = tmp / ".staging"  # datasets' Arrow files of the streamed corpus: removed before the rename
        for name, split, feats in ((names[0], "test", sample_features(samples)),
                                   (names[1], "train", instruct_features()), (names[2], "train", repo_features())):
            folder = tmp / "data" / name
            if name == names[1]:
                if instruct_path is None:
                    continue
                instruct = _instruct_counts(instruct_path)  # validates every record before anything is written
                written = write_split(folder, split, feats, generator=_instruct_rows,
                                      gen_kwargs={"path": str(instruct_path)}, cache_dir=staging,
                                      max_shard_size=max_shard_size)
            else:
                rows = samples if name == names[0] else [r.to_dict() for r in records]
                if name == names[0] and "context_code" not in feats:
                    rows = [{k: v for k, v in row.items() if k != "context_code"} for row in rows]
                written = write_split(folder, split, feats, rows=rows, max_shard_size=max_shard_size)
            splits = SplitDict()
            splits.add(SplitInfo(name=split, num_bytes=written.arrow_bytes, num_examples=written.num_rows))
            infos[name] = DatasetInfo(features=feats, splits=splits, download_size=written.file_bytes,
                                      dataset_size=written.arrow_bytes)
            configs.append({"config_name": name, "data_files": [{"split": split, "path": f"data/{name}/*.parquet"}],
                            **({"default": True} if name == names[0] else {})})
            summary["configs"][name] = {"split": split, "num_examples": written.num_rows, "bytes": written.file_bytes,
                                        "arrow_bytes": written.arrow_bytes, "files": list(written.files)}
        shutil.rmtree(staging, ignore_errors=True)
        measured = samples_path.parent / MEASUREMENTS_FILE  # what the building machine measured: beside the data
        if measured.is_file():
            summary["measurements"] = write_measurements(list(read_measurements(measured)), tmp / MEASUREMENTS_FILE)
        charts = write_charts(stats, tmp / CHARTS_DIR)
        meta = {"pretty_name": "ExecRepoBench", **({"license": license} if license else PER_REPOSITORY_LICENSE),
                "language": LANGUAGES, "task_categories": ["text-generation"], "tags": TAGS,
                "size_categories": [next((c for limit, c in SIZE_CATEGORIES if len(samples) < limit), "1M<n<10M")],
                "configs": configs}
        DatasetInfosDict(infos).to_dataset_card_data(meta)  # `dataset_info:` exactly as `datasets` writes it
        inline = context_code_bytes(sample_records, records)
        links = {"dataset": repo_id, "metric": metric_space, "code": code_url}
        card = render_card(meta, report, samples, records, fingerprint, instruct, instruct_report,
                           charts_markdown(stats, charts, CHARTS_DIR), sizes=summary["configs"], context=context,
                           inline_context_bytes=inline, links=links,
                           samples_config=names[0])
        (tmp / "LICENSES.md").write_text(licenses_file(records, license), encoding="utf-8")
        summary["materialised_context_bytes"] = inline
        (tmp / "README.md").write_text(card, encoding="utf-8")
        summary["charts"] = [f"{CHARTS_DIR}/{c}" for c in charts.values()]
        summary["bytes"] = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        if out_dir.exists():  # empty, or a published folder with overwrite=True: moved aside, then swapped
            out_dir.rename(old)
        tmp.rename(out_dir)
    except BaseException:
        if old.exists() and not out_dir.exists():
            old.rename(out_dir)  # put the previous folder back
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return summary


def push_to_hub(folder: Path, repo_id: str, *, private: bool = False, revision: str | None = None,
                token: str | None = None, api=None, commit_message: str | None = None):
    """Upload a published folder to the Hub dataset repo `repo_id` (an existing repo keeps its visibility)."""
    folder = Path(folder)
    if not (folder / "README.md").is_file() or not (folder / "data").is_dir():
        raise PublishError(f"{folder}: not a published dataset folder (README.md and data/ expected)")
    if not isinstance(repo_id, str) or not re.fullmatch(r"([\w.-]+/)?[\w.-]+", repo_id):
        raise PublishError(f"repo id {repo_id!r} is not of the form owner/name")
    import huggingface_hub
    token = token or huggingface_hub.get_token()
    if not token:
        raise PublishError("no Hugging Face token: log in with `hf auth login` or set HF_TOKEN")
    api = api if api is not None else huggingface_hub.HfApi(token=token)
    try:  # the Hub's refusals (HTTP errors) and an unreachable Hub are OSErrors: the user's to fix, not a bug
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True, token=token)
        if revision and revision != "main":
            api.create_branch(repo_id, branch=revision, repo_type="dataset", exist_ok=True, token=token)
        return api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset", revision=revision,
                                 commit_message=commit_message or "Publish ExecRepoBench", token=token)
    except OSError as exc:
        raise PublishError(f"pushing {folder} to the Hub dataset {repo_id!r} failed: {exc}") from exc
