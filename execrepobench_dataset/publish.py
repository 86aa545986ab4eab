"""Publish builder output as a Hugging Face dataset folder and push it to the Hub. Layout: `README.md` (the card),
`environments.json`, `data/exec_repo_bench/test-*.parquet`, optionally `data/repo_instruct/train-*.parquet`."""
from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import statistics
import tempfile
from collections import Counter
from pathlib import Path

from .instruct_record import InstructRecord, instruct_features
from .record import FILL_TYPES, RecordError, Sample, features

SAMPLES_CONFIG, INSTRUCT_CONFIG = "exec_repo_bench", "repo_instruct"
ROW_GROUP_ROWS = 100  # fixed, so the bytes do not depend on the writer's defaults
CONFIG_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
TAGS = ["code", "code-completion", "fill-in-the-middle", "execution", "python"]
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))
CITATION = """@article{yang2024execrepobench,
  title={ExecRepoBench: Multi-level Executable Code Completion Evaluation},
  author={Yang, Jian and Zhang, Jiajun and Yang, Jiaxi and Jin, Ke and Zhang, Lei and Peng, Qiyao and
          Deng, Ken and Miao, Yibo and Liu, Tianyu and Cui, Zeyu and Hui, Binyuan and Lin, Junyang},
  journal={arXiv preprint arXiv:2412.11990},
  year={2024}
}"""
FIELD_DOCS = {
    "sample_id": "stable content hash of the pinned source, file, fill type and the three code parts",
    "repo_name": "repository name from the build manifest", "file_name": "repo-relative POSIX path of the masked file",
    "repo_source": "exact pinned source: `pypi:NAME==VER#sha256=...`, `git:URL@COMMIT` or `path:DIR#tree=...`",
    "prefix_code": "text of the file before the masked span", "suffix_code": "text of the file after the masked span",
    "middle_code": "the masked span (the ground truth)", "selection_rule": "rule that selected the judged tests",
    "context_code": "other files of the repository, most relevant first, each `{path, code}`",
    "fill_type": "one of the paper's six fill types (`Random Span Completion`, ..., `grammar-based: block`)",
    "node_type": "tree-sitter node type of the masked span, or `span` / `line` / `lines` for random masks",
    "middle_start_byte": "UTF-8 byte offset of the start of the middle in the original file",
    "middle_end_byte": "UTF-8 byte offset of the end of the middle in the original file",
    "env_key": "key of the pinned test environment (its frozen versions: `environments.json`)",
    "seed": "seed of the builder's random choices", "builder_version": "version of the builder that made the sample",
    "test_command": "argv that runs the repository's tests in its environment",
    "judged_tests": "pytest node ids judging the sample (ground truth passes, a null fill fails); empty: whole suite",
    "time_budget_s": "seconds a judged run may take, from the ground truth's own runs at verification (0: not recorded)",
    "guard_allowed": "audit events the ground truth triggers from the masked file; the runtime guard allows only these",
    "excluded_tests": "tests never judged (failing or flaky in the baseline runs, or excluded by the manifest)",
}
INTRO = """# ExecRepoBench

Repository-level, multi-level code completion judged by **running the repository's own tests** (ExecRepoBench,
[arXiv 2412.11990](https://arxiv.org/abs/2412.11990)). Each sample masks a span (random span / line / lines, or a
grammar-based expression / statement / block) of a Python file of a real, pinned repository; a completion passes
when the sample's judged tests pass with it in the repository's pinned environment. Configs: {configs}.

## How it was built

Built by the ExecRepoBench builder version `{builder_version}` from the manifest `{manifest}` with seed `{seed}`{more}
Pinned sources and environment keys of every repository (the frozen package versions of each environment are in
`environments.json`):
"""
EVALUATION = """## Evaluation

Judging runs model code: it needs the explicit opt-in (`allow_exec=True` or `EXECREPOBENCH_ALLOW_EXEC=1`) and
the environments, made from the same manifest with `execrepobench build` (same pinned sources -> same env keys).
```python
import evaluate
from execrepobench_dataset import load_samples, write_jsonl
samples = load_samples("<this dataset>")  # list[Sample]; write_jsonl(samples, "samples.jsonl") for the CLI
out = evaluate.load("path/to/execrepobench_metric").compute(
    predictions=completions, references=[s.to_dict() for s in samples], allow_exec=True)  # out["pass@1"], out["es"]
```
```bash
EXECREPOBENCH_ALLOW_EXEC=1 execrepobench evaluate --samples samples.jsonl \\
    --predictions predictions.jsonl --out results/  # {"sample_id": ..., "completion": ...} per line
```
"""


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


def _table(head: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(
        str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |" for r in rows), ""]


def statistics_rows(samples: list[dict]) -> dict[str, list[list]]:
    """The card's statistics tables: samples per fill type and per repository, context sizes."""
    fills, repos = Counter(s["fill_type"] for s in samples), Counter(s["repo_name"] for s in samples)
    sizes = {"context files per sample": [len(s["context_code"]) for s in samples],
             "context characters per sample": [sum(len(c["code"]) for c in s["context_code"]) for s in samples],
             "in-file characters (prefix + suffix)": [len(s["prefix_code"]) + len(s["suffix_code"]) for s in samples],
             "middle characters": [len(s["middle_code"]) for s in samples]}
    med = lambda v: (lambda m: str(int(m)) if float(m).is_integer() else f"{m:.1f}")(statistics.median(v))  # noqa
    return {"fill_type": [[f, fills.get(f, 0)] for f in FILL_TYPES] + [["**total**", len(samples)]],
            "repository": [[r, n] for r, n in sorted(repos.items())],
            "context": [[k, min(v), med(v), max(v)] for k, v in sizes.items()]}


def _card(meta: dict, report: dict, samples: list[dict], instruct: list[dict] | None,
          instruct_report: dict | None) -> str:
    import yaml
    stats, repos, fingerprint = statistics_rows(samples), report["repos"], report.get("samples_fingerprint")
    configs = f"`{SAMPLES_CONFIG}` (split `test`, {len(samples)} samples)" + (
        f", `{INSTRUCT_CONFIG}` (split `train`, {len(instruct)} chat-formatted fill-in-the-middle records, not "
        "executed)" if instruct is not None else "")
    more = (f"; samples fingerprint (sha256 of samples.jsonl) `{fingerprint}`" if fingerprint else "") + "." + (
        " Samples were verified: the ground truth passes the judged tests and a null fill fails them."
        if any("verify_candidates" in r for r in repos) else "")
    lines = ["---", yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000).rstrip(), "---", "",
             INTRO.format(configs=configs, builder_version=report["builder_version"], manifest=report["manifest"],
                          seed=report["seed"], more=more),
             *_table(["repository", "status", "pinned source", "env key", "samples"],
                     [[r.get("repo", "?"), r.get("status", "?"), f"`{r['pinned']}`" if r.get("pinned") else "-",
                       f"`{r['env_key']}`" if r.get("env_key") else "-",
                       r.get("samples", 0) if r.get("status") == "ok" else 0] for r in repos]),
             "## Fields", "", *_table(["field", "meaning"], [[f"`{n}`", FIELD_DOCS.get(n, "see record.py")]
                                                             for n in features()]),
             "## Statistics", "", *_table(["fill type", "samples"], stats["fill_type"]),
             *_table(["repository", "samples"], stats["repository"]),
             *_table(["size", "min", "median", "max"], stats["context"])]
    if instruct is not None:
        per_fill = Counter(r["fill_type"] for r in instruct)
        lines += ["## Repo-Instruct", "", f"`{INSTRUCT_CONFIG}`: {len(instruct)} records from "
                  f"{len({r['repo_name'] for r in instruct})} repositories. Fields: "
                  + ", ".join(f"`{n}`" for n in instruct_features()) + " (`messages`: system, user with context, "
                  "prefix and suffix, assistant with the middle).", "",
                  *_table(["fill type", "records"], [[f, per_fill.get(f, 0)] for f in FILL_TYPES])]
        if instruct_report:
            lines += ["Instruct build report:", "", *(f"- {k}: `{json.dumps(v, sort_keys=True)[:300]}`"
                                                      for k, v in sorted(instruct_report.items())), ""]
    return "\n".join([*lines, EVALUATION, "## Citation", "", "```bibtex", CITATION, "```", ""])


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

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.partial-"))
    old = tmp.with_name(tmp.name.replace(".partial-", ".old-"))
    try:
        infos, configs, summary = {}, [], {"out": str(out_dir), "configs": {}}
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
        envs = {r["env_key"]: {"freeze": r.get("environment", {}).get("freeze", []), "repos": sorted(
            str(x.get("repo")) for x in report["repos"] if x.get("env_key") == r["env_key"])}
            for r in report["repos"] if r.get("env_key")}
        (tmp / "environments.json").write_text(json.dumps(envs, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(_card(meta, report, samples, instruct, instruct_report), encoding="utf-8")
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
