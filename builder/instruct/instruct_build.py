"""Build the Repo-Instruct corpus: per repository, resumable, streaming (bounded memory).

Stage 1, per repository of the instruct manifest (progress bar per repository): unless its name is in
the benchmark (refused without fetching), fetch it and stream its chat records (`instruct_records`) into
OUT/repos/NAME/records.jsonl, then write OUT/repos/NAME/report.json last.  Each is keyed by a hash of what
defines it (source entry, seed, mask, budget, builder version): a finished repository is reused, an
interrupted one is done again, a failed one is retried.  The records of a repository do not depend on
the benchmark, so changing the benchmark never redoes this stage.

Stage 2, assembly: repository after repository in manifest order, records of a repository whose pinned
source or source hash is in the benchmark are refused, records whose middle is a benchmark middle are
dropped (both counted), and the rest stream line by line into OUT/instruct.jsonl and the parquet shards
OUT/parquet/train-XXXXX.parquet (temporary names, renamed when complete); OUT/instruct_report.json last.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import Counter
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Optional

from tqdm import tqdm

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.instruct_record import instruct_features
from execrepobench_dataset.shards import ShardWriter
from execrepobench_dataset.version import __version__
from execrepobench_metric.errors import SourceError

from ..pipeline import error_entry
from ..sampling.masking import MaskConfig
from ..sources.manifest import Manifest, RepoSpec
from ..sources.sources import fetch
from . import instruct

JSONL_NAME = "instruct.jsonl"
REPORT_NAME = "instruct_report.json"
PARQUET_DIR = "parquet"
SHARD_NAME = "train-{index:05d}.parquet"
REPOS_DIR = "repos"


def _inputs_hash(spec: RepoSpec, seed: int, mask: MaskConfig, budget_chars: int) -> str:
    data = {"spec": asdict(spec), "seed": seed, "budget_chars": budget_chars, "builder": __version__,
            "mask": {f.name: (dict(v) if hasattr(v := getattr(mask, f.name), "items") else v) for f in fields(mask)}}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:20]


def repo_records(spec: RepoSpec, seed: int, mask: MaskConfig, budget_chars: int, folder: Path,
                 progress: Optional[tqdm] = None) -> dict:
    """Stage 1 for one repository: its records in folder/records.jsonl (all of them, not decontaminated) and
    its report entry (returned, and written to folder/report.json).  Never raises for the repository's sake."""
    key = _inputs_hash(spec, seed, mask, budget_chars)
    report_path = folder / "report.json"
    if report_path.is_file() and (folder / "records.jsonl").is_file():
        old = json.loads(report_path.read_text(encoding="utf-8"))
        if old.get("inputs_hash") == key and old.get("status") in ("ok", "empty"):
            return {**old, "reused": True}
    rep: dict = {"repo": spec.name, "source": spec.source, "inputs_hash": key, "status": "error", "records": 0}
    t0 = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "records.jsonl.tmp"
    try:
        fetched = fetch(spec)
        rep.update(pinned=fetched.pinned, source_hash=fetched.source_hash)
        masked = instruct.mask_repository(spec.name, fetched.root, seed, mask)
        rep.update(masked.stats())
        with open(tmp, "w", encoding="utf-8") as fh:
            for rec in instruct.instruct_records(spec, fetched, seed, mask, budget_chars, masked):
                fh.write(json.dumps(rec.to_dict(), sort_keys=True, ensure_ascii=False) + "\n")
                rep["records"] += 1
                if progress is not None:
                    progress.update(1)
        os.replace(tmp, folder / "records.jsonl")
        rep["status"] = "ok" if rep["records"] else "empty"
    except Exception as exc:  # noqa: BLE001 - the boundary of one repository: report it, go on
        rep.update(status="error", records=0, **error_entry(exc, expected=(SourceError,)))
        tmp.unlink(missing_ok=True)  # a repository that fails contributes no record
    rep["time_s"] = round(time.monotonic() - t0, 2)
    report_path.write_text(json.dumps(rep, indent=1, sort_keys=True), encoding="utf-8")
    return rep


def _assemble(manifest: Manifest, reps: list[dict], out: Path, bench: instruct.Benchmark, shard_rows: int,
              progress: bool) -> tuple[list[dict], list[Path]]:
    """Stage 2: decontaminate and stream every repository's records into instruct.jsonl and the shards."""
    jsonl_tmp, shard_tmp = out / (JSONL_NAME + ".tmp"), out / (PARQUET_DIR + ".tmp")
    shutil.rmtree(shard_tmp, ignore_errors=True)
    shards = ShardWriter(shard_tmp, instruct_features(), shard_rows, lambda i: SHARD_NAME.format(index=i))
    entries = []
    bar = tqdm(total=sum(r.get("records", 0) for r in reps), desc="instruct: assemble", unit="rec",
               disable=not progress)
    with open(jsonl_tmp, "w", encoding="utf-8") as jsonl:
        for spec, rep in zip(manifest.repos, reps):
            entry = {**rep, "dropped_contaminated": 0, "per_fill_type": {}}
            reason = rep.get("reason") if rep["status"] == "refused" else None
            if rep["status"] in ("ok", "empty") and not reason:
                reason = bench.source_clash_of(rep.get("pinned", ""), rep.get("source_hash", ""))
            if reason:
                entry.update(status="refused", reason=reason, records=0)
            elif rep["status"] in ("ok", "empty"):
                fills: Counter = Counter()
                kept = 0
                with open(out / REPOS_DIR / spec.name / "records.jsonl", encoding="utf-8") as fh:
                    for line in fh:
                        row = json.loads(line)
                        bar.update(1)
                        if bench.contaminated_middle(row["messages"][2]["content"]):
                            entry["dropped_contaminated"] += 1
                            continue
                        jsonl.write(line)
                        shards.add(row)
                        fills[row["fill_type"]] += 1
                        kept += 1
                entry.update(records=kept, per_fill_type=dict(sorted(fills.items())),
                             status="ok" if kept else "empty")
            entries.append(entry)
    bar.close()
    paths = shards.close()
    os.replace(jsonl_tmp, out / JSONL_NAME)
    shutil.rmtree(out / PARQUET_DIR, ignore_errors=True)
    os.replace(shard_tmp, out / PARQUET_DIR)
    return entries, [out / PARQUET_DIR / p.name for p in paths]


def build_instruct(manifest: Manifest, out: Path, *, benchmark_samples: Optional[Path], budget_chars: int = 16000,
                   shard_rows: int = 1000, progress: bool = True, mask: Optional[MaskConfig] = None) -> dict:
    """Build Repo-Instruct for every repository of `manifest` (see the module doc); returns the report.
    Deterministic for the manifest's seed; re-running reuses every finished repository."""
    if shard_rows < 1:
        raise UsageError(f"shard_rows must be >= 1, got {shard_rows}")
    if budget_chars < 0:
        raise UsageError(f"budget_chars must be >= 0, got {budget_chars}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bench = instruct.Benchmark(Path(benchmark_samples) if benchmark_samples is not None else None)
    base_mask = mask or MaskConfig()
    reps = []
    bar = tqdm(manifest.repos, desc="instruct", unit="repo", disable=not progress)
    rbar = tqdm(desc="instruct: records", unit="rec", disable=not progress)
    for spec in bar:
        bar.set_postfix_str(spec.name)
        clash = bench.name_clash(spec)
        if clash:
            rep = {"repo": spec.name, "source": spec.source, "status": "refused", "reason": clash, "records": 0}
        else:
            repo_mask = replace(base_mask, samples_per_repo=manifest.samples_for(spec))
            rep = repo_records(spec, manifest.seed, repo_mask, budget_chars, out / REPOS_DIR / spec.name, rbar)
        if rep["status"] in ("error", "refused"):
            tqdm.write(f"[{spec.name}] {rep['status']}: {rep.get('reason', '')}")
        reps.append(rep)
    rbar.close()
    entries, paths = _assemble(manifest, reps, out, bench, shard_rows, progress)
    per_fill: Counter = Counter()
    for r in entries:
        per_fill.update(r["per_fill_type"])
    report = {
        "builder_version": __version__, "seed": manifest.seed, "budget_chars": budget_chars,
        "shard_rows": shard_rows, "manifest": manifest.path.name if manifest.path else None,
        "benchmark": {"samples": bench.path.name if bench.path else None, "sample_count": bench.samples,
                      "repo_names": sorted(bench.names), "middles": len(bench.middles)},
        "repos": entries,
        "refused_repos": [{"repo": r["repo"], "reason": r["reason"]} for r in entries if r["status"] == "refused"],
        "totals": {"repos": len(entries), "ok": sum(r["status"] == "ok" for r in entries),
                   "refused_repos": sum(r["status"] == "refused" for r in entries),
                   "errors": sum(r["status"] == "error" for r in entries),
                   "reused": sum(bool(r.get("reused")) for r in entries),
                   "records": sum(r["records"] for r in entries),
                   "dropped_contaminated": sum(r["dropped_contaminated"] for r in entries),
                   "per_fill_type": dict(sorted(per_fill.items())), "shards": len(paths)},
        "outputs": {"jsonl": JSONL_NAME, "parquet": [f"{PARQUET_DIR}/{p.name}" for p in paths]},
    }
    tmp = out / (REPORT_NAME + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, out / REPORT_NAME)
    return report
