"""Publish builder output as a Hugging Face dataset folder and push it to the Hub. Layout: `README.md` (the card,
`card.py`), `data/exec_repo_bench/test-*.parquet`, `data/repositories/train-*.parquet` (one repository record per
row: pinned source, Python, lock, test command, license, manifest entry), optionally
`data/repo_instruct/train-*.parquet`.  Nothing in the folder names a path of the machine that built it."""
from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import tempfile
from pathlib import Path

from .card import render_card
from .instruct_record import InstructRecord, instruct_features
from .load import INSTRUCT_CONFIG, REPOS_CONFIG, REPOS_FILE, SAMPLES_CONFIG, dataset_fingerprint
from .record import RecordError, Sample, features
from .repo_record import RepoRecord, repo_features

ROW_GROUP_ROWS = 100  # fixed, so the bytes do not depend on the writer's defaults
CONFIG_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
TAGS = ["code", "code-completion", "fill-in-the-middle", "execution", "python"]
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


class PublishError(ValueError):
    """Bad input for publishing or pushing; nothing was written."""


def validate_config_name(name: str) -> str:
    if not isinstance(name, str) or not CONFIG_NAME_RE.match(name):
        raise PublishError(f"config name {name!r} is not accepted by the Hub: it must match {CONFIG_NAME_RE.pattern}")
    return name


def _check(value, feat, where: str, name: str = "") -> None:
    """`value` matches the `datasets` feature `feat`, else a PublishError naming file:line and the field."""
    from datasets import List, Value
    ok, want, items = False, f"of a supported feature (not {feat!r})", []
    if isinstance(feat, dict):  # Features or a struct
        ok, want = isinstance(value, dict) and set(value) == set(feat), f"an object with {sorted(feat)}"
        items = [(f"{name}.{k}" if name else k, value[k], f) for k, f in feat.items()] if ok else []
    elif isinstance(feat, List):
        ok, want = isinstance(value, list), "a list"
        items = [(f"{name}[{i}]", v, feat.feature) for i, v in enumerate(value)] if ok else []
    elif isinstance(feat, Value) and feat.dtype == "string":  # lone surrogates are no UTF-8
        ok, want = isinstance(value, str) and not re.search("[\ud800-\udfff]", value), "UTF-8 text"
    elif isinstance(feat, Value) and feat.dtype == "float64":
        ok, want = type(value) is float and value == value, "a number"
    elif isinstance(feat, Value) and feat.dtype == "int64":
        ok, want = type(value) is int and -2**63 <= value < 2**63, "a 64-bit integer"
    if not ok:
        raise PublishError(f"{where}: field {name or '<record>'} must be {want}, got {type(value).__name__} "
                           f"{json.dumps(value, ensure_ascii=False, default=str)[:60]}")
    for sub_name, sub_value, sub_feat in items:
        _check(sub_value, sub_feat, where, sub_name)


def _read_records(path: Path, from_dict, feats, key: str) -> list[dict]:
    """Validated records of a JSONL file as dicts, sorted by `key` (unique)."""
    if not path.is_file():
        raise PublishError(f"{path}: not found")
    try:
        lines = path.read_text(encoding="utf-8").split("\n")  # not splitlines(): U+2028 may be inside strings
    except (OSError, UnicodeDecodeError) as exc:
        raise PublishError(f"{path}: cannot read it as UTF-8 text: {exc}") from None
    rows, seen = [], {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            row = from_dict(json.loads(line)).to_dict()
        except (RecordError, TypeError, ValueError, KeyError) as exc:  # JSONDecodeError is a ValueError
            raise PublishError(f"{where}: {'not valid JSON: ' * isinstance(exc, json.JSONDecodeError)}{exc}") from None
        _check(row, feats, where)
        if row[key] in seen:
            raise PublishError(f"{where}: duplicate {key} {row[key]!r} (also on line {seen[row[key]]})")
        seen[row[key]] = lineno
        rows.append(row)
    if not rows:
        raise PublishError(f"{path}: no records (the file is empty)")
    return sorted(rows, key=lambda r: r[key])


def _read_json(path: Path, required: tuple[str, ...] = ()) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublishError(f"{path}: cannot read it as JSON: {exc}") from None
    if not isinstance(data, dict) or not all(k in data for k in required):
        raise PublishError(f"{path}: not a JSON object with the keys {', '.join(required)}")
    return data


def _write_shards(rows: list[dict], feats, folder: Path, split: str, shard_rows: int) -> tuple[int, int]:
    """Parquet shards with the explicit schema (empty lists cannot change it); returns (arrow bytes, file bytes)."""
    from pyarrow import Table, parquet as pq
    folder.mkdir(parents=True)
    n, num_bytes, size = math.ceil(len(rows) / shard_rows), 0, 0
    for i in range(n):
        table = Table.from_pylist(rows[i * shard_rows:(i + 1) * shard_rows], schema=feats.arrow_schema)
        path = folder / f"{split}-{i:05d}-of-{n:05d}.parquet"
        pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS, compression="snappy", write_statistics=True)
        num_bytes, size = num_bytes + table.nbytes, size + path.stat().st_size
    return num_bytes, size


def _check_repositories(samples: list[dict], records: list[dict], where: Path) -> list[RepoRecord]:
    """Every sample has its repository's record, with the same pinned source and environment key, and every
    record's key is the hash of its own content."""
    by_name = {r["repo_name"]: RepoRecord.from_dict(r) for r in records}
    for name, rec in by_name.items():
        if not rec.key_matches:
            raise PublishError(f"{where}: repository record {name!r}: env_key {rec.env_key} is not the hash of its "
                               "python, source and lock")
    for s in samples:
        rec = by_name.get(s["repo_name"])
        if rec is None:
            raise PublishError(f"{where}: no repository record for {s['repo_name']!r} (sample {s['sample_id']})")
        if (s["repo_source"], s["env_key"]) != (rec.repo_source, rec.env_key):
            raise PublishError(f"{where}: sample {s['sample_id']}: repo_source/env_key differ from the repository "
                               f"record of {s['repo_name']!r}")
    return [by_name[n] for n in sorted(by_name)]


def publish(samples_dir: Path, out_dir: Path, *, instruct_dir: Path | None = None, shard_rows: int = 2000,
            license: str = "apache-2.0", overwrite: bool = False) -> dict:
    """Write the dataset folder `out_dir` from builder output (`samples.jsonl` + `build_report.json`): all input is
    validated first, then written next to `out_dir` and renamed into place. Returns a summary dict."""
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    samples_dir, out_dir = Path(samples_dir), Path(out_dir)
    if not isinstance(shard_rows, int) or shard_rows < 1:
        raise PublishError(f"shard_rows must be a positive integer, got {shard_rows!r}")
    if not isinstance(license, str) or not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", license):
        raise PublishError(f"license {license!r} is not a Hub license identifier (e.g. apache-2.0, mit, other)")
    for src in filter(None, (samples_dir, instruct_dir)):
        if out_dir.resolve() in (Path(src).resolve(), *Path(src).resolve().parents):
            raise PublishError(f"out folder {out_dir} must not contain the input {src}")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        if not overwrite:
            raise PublishError(f"{out_dir} exists and is not an empty folder (pass overwrite=True to replace it)")
        if not (out_dir / "README.md").is_file() or not (out_dir / "data").is_dir():
            raise PublishError(f"{out_dir} is not a published dataset folder (README.md, data/): not replacing it")
    samples_path = samples_dir / ("" if samples_dir.suffix == ".jsonl" else "samples.jsonl")
    samples = _read_records(samples_path, Sample.from_dict, features(), "sample_id")
    repos_path = samples_path.parent / REPOS_FILE
    if not repos_path.is_file():
        raise PublishError(f"{repos_path}: not found (builder output of a version that wrote no repository "
                           "records: build again)")
    records = _check_repositories(samples, _read_records(repos_path, RepoRecord.from_dict, repo_features(),
                                                         "repo_name"), repos_path)
    fingerprint = dataset_fingerprint([Sample.from_dict(r) for r in samples], records)
    report_path = samples_path.parent / "build_report.json"
    report = _read_json(report_path, ("builder_version", "seed", "manifest", "repos"))
    if report.get("samples_fingerprint") not in (None, hashlib.sha256(samples_path.read_bytes()).hexdigest()):
        raise PublishError(f"{report_path}: samples_fingerprint does not match {samples_path} "
                           "(the report belongs to another build)")
    data = [(validate_config_name(SAMPLES_CONFIG), "test", samples, features())]
    instruct = instruct_report = None
    if instruct_dir is not None:
        instruct_path = Path(instruct_dir) / ("" if Path(instruct_dir).suffix == ".jsonl" else "instruct.jsonl")
        instruct = _read_records(instruct_path, InstructRecord.from_dict, instruct_features(), "record_id")
        if (instruct_path.parent / "instruct_report.json").is_file():
            instruct_report = _read_json(instruct_path.parent / "instruct_report.json")
        data.append((validate_config_name(INSTRUCT_CONFIG), "train", instruct, instruct_features()))
    data.append((validate_config_name(REPOS_CONFIG), "train", [r.to_dict() for r in records], repo_features()))

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.partial-"))
    old = tmp.with_name(tmp.name.replace(".partial-", ".old-"))
    try:
        infos, configs, summary = {}, [], {"out": str(out_dir), "fingerprint": fingerprint, "configs": {}}
        for name, split, rows, feats in data:
            num_bytes, size = _write_shards(rows, feats, tmp / "data" / name, split, shard_rows)
            splits = SplitDict()
            splits.add(SplitInfo(name=split, num_bytes=num_bytes, num_examples=len(rows)))
            infos[name] = DatasetInfo(features=feats, splits=splits, download_size=size, dataset_size=num_bytes)
            configs.append({"config_name": name, "data_files": [{"split": split, "path": f"data/{name}/*.parquet"}],
                            **({"default": True} if name == SAMPLES_CONFIG else {})})
            summary["configs"][name] = {"split": split, "num_examples": len(rows),
                                        "files": sorted(p.name for p in (tmp / "data" / name).iterdir())}
        meta = {"pretty_name": "ExecRepoBench", "license": license, "task_categories": ["text-generation"],
                "tags": TAGS, "size_categories": [next((c for limit, c in SIZE_CATEGORIES if len(samples) < limit),
                                                       "1M<n<10M")], "configs": configs}
        DatasetInfosDict(infos).to_dataset_card_data(meta)  # `dataset_info:` exactly as `datasets` writes it
        card = render_card(meta, report, samples, records, fingerprint, instruct, instruct_report)
        (tmp / "README.md").write_text(card, encoding="utf-8")
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
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True, token=token)
    if revision and revision != "main":
        api.create_branch(repo_id, branch=revision, repo_type="dataset", exist_ok=True, token=token)
    return api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset", revision=revision,
                             commit_message=commit_message or "Publish ExecRepoBench", token=token)
