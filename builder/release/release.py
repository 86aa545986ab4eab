"""`execrepobench release`: build -> instruct -> publish in one resumable command.

Layout under OUT: `build/` (the benchmark builder's output), `instruct/` (Repo-Instruct), `dataset/` (the
published folder, ready for `push_to_hub`), `release_summary.json` (what the run produced and how long
each stage took).  Every stage reuses finished work: the builder its finished repositories, the instruct
builder its finished repositories, and publish is skipped when its inputs (the samples, repository
records, build report, instruct corpus and options) are those of the folder already published.  A
progress bar runs per stage (the builder's and the instruct builder's own bars inside), and the summary
(sizes, counts, fingerprints, time per stage, the release targets met or not) is printed and written.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from tqdm import tqdm

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.files import file_sha256
from execrepobench_dataset.load import dataset_fingerprint, open_dataset
from execrepobench_dataset.publish import publish
from execrepobench_dataset.schemes import PUBLISH_CODE
from execrepobench_dataset.stats import mix_within_tolerance

from ..build import BuildConfig, build
from ..instruct.instruct_build import build_instruct
from ..sources.manifest import Manifest

# What issue 13 asks of the full-size release (checked and reported, never enforced).
TARGETS = {"samples": 1200, "repositories": 50, "instruct_records": 10_000}
STAGES = ("build", "instruct", "publish")
STATE_FILE = ".release_state.json"  # beside the stage folders: the inputs hash of the published folder


@dataclass(frozen=True)
class ReleaseConfig:
    out: Path
    manifest: Manifest
    instruct_manifest: Manifest
    only: tuple[str, ...] = ()  # benchmark repositories (empty: all)
    instruct_only: tuple[str, ...] = ()  # instruct repositories (empty: all)
    build_options: dict = field(default_factory=dict)  # more BuildConfig fields (workers, baseline_runs, ...)
    budget_chars: int = 16000
    context: str = "reference"
    count_tokens: Optional[Callable[[str], int]] = None
    tokenizer_name: Optional[str] = None
    license: Optional[str] = None  # None: `license: other`, each repository's license listed
    compare_materialised: bool = False  # also publish the materialised form once, to report its size
    progress: bool = True


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def _file_hash(path: Path) -> str:
    """The file's sha256; that of no bytes for a missing file."""
    return file_sha256(path) if path.is_file() else hashlib.sha256().hexdigest()


def _publish_inputs(config: ReleaseConfig) -> str:
    """A hash of the data publish reads (the reports only add statistics of the same data) and its options."""
    parts = [_file_hash(config.out / "build" / name) for name in ("samples.jsonl", "repositories.jsonl")]
    parts.append(_file_hash(config.out / "instruct" / "instruct.jsonl"))
    parts += [config.context, config.license or "per-repository", config.tokenizer_name or "", repr(config.count_tokens is None),
              f"state {PUBLISH_CODE.value()}", f"materialised {config.compare_materialised}"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _stage_build(config: ReleaseConfig) -> dict:
    summary = build(BuildConfig(manifest=config.manifest, out=config.out / "build", only=config.only,
                                progress=config.progress, **config.build_options))
    t = summary["totals"]
    return {"repos": t["repos"], "repos_ok": t["repos_ok"], "samples": t["samples"],
            "reused_repos": sum(bool(r.get("reused")) for r in summary["repos"]),
            "per_fill_type": t["per_fill_type"], "per_level": t.get("per_level", {}),
            "mix_within_tolerance": mix_within_tolerance(t["per_fill_type"]) if t["samples"] else False,
            "short_levels": t.get("short_levels", {}), "samples_fingerprint": summary["samples_fingerprint"],
            "verify_candidates": t.get("verify_candidates", 0), "dropped_verify": t.get("dropped_verify", {}),
            "bytes": _folder_bytes(config.out / "build")}


def _stage_instruct(config: ReleaseConfig) -> dict:
    manifest = config.instruct_manifest
    if config.instruct_only:
        unknown = sorted(set(config.instruct_only) - {r.name for r in manifest.repos})
        if unknown:
            raise UsageError(f"--instruct-repo {', '.join(unknown)}: not in the instruct manifest")
        manifest = replace(manifest, repos=tuple(r for r in manifest.repos if r.name in config.instruct_only))
    report = build_instruct(manifest, config.out / "instruct", progress=config.progress,
                            benchmark_samples=config.out / "build" / "samples.jsonl", budget_chars=config.budget_chars)
    t = report["totals"]
    return {"repos": t["repos"], "repos_ok": t["ok"], "records": t["records"], "reused_repos": t.get("reused", 0),
            "refused_repos": t["refused_repos"], "errors": t["errors"],
            "dropped_contaminated": t["dropped_contaminated"], "per_fill_type": t["per_fill_type"],
            "bytes": _folder_bytes(config.out / "instruct")}


def _publish_once(config: ReleaseConfig, out: Path, context: str) -> dict:
    return publish(config.out / "build", out, instruct_dir=config.out / "instruct", overwrite=True,
                   license=config.license, context=context, count_tokens=config.count_tokens,
                   tokenizer_name=config.tokenizer_name)


def _stage_publish(config: ReleaseConfig) -> dict:
    state_path, dataset = config.out / STATE_FILE, config.out / "dataset"
    key = _publish_inputs(config)
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.is_file() else {}
    if state.get("inputs") == key and (dataset / "README.md").is_file():
        return {**state["summary"], "reused": True}
    summary = _publish_once(config, dataset, config.context)
    result = {"bytes": summary["bytes"], "context": summary["context"], "fingerprint": summary["fingerprint"],
              "configs": {n: {k: v for k, v in c.items() if k != "files"} for n, c in summary["configs"].items()},
              "charts": summary["charts"]}
    if config.compare_materialised and config.context != "materialised":
        other = config.out / "dataset-materialised"
        materialised = _publish_once(config, other, "materialised")
        result["materialised_bytes"] = materialised["bytes"]
        result["materialised_configs"] = {n: {"bytes": c["bytes"], "arrow_bytes": c["arrow_bytes"]}
                                          for n, c in materialised["configs"].items()}
        shutil.rmtree(other, ignore_errors=True)
    tmp = state_path.with_name(state_path.name + ".tmp")
    tmp.write_text(json.dumps({"inputs": key, "summary": result}, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, state_path)
    return {**result, "reused": False}


def release(config: ReleaseConfig) -> dict:
    """Run the three stages (each resumes) and return the summary also written to OUT/release_summary.json."""
    config.out.mkdir(parents=True, exist_ok=True)
    stages, times = {}, {}
    bar = tqdm(STAGES, desc="release", unit="stage", disable=not config.progress)
    for stage in bar:
        bar.set_postfix_str(stage)
        t0 = time.monotonic()
        stages[stage] = {"build": _stage_build, "instruct": _stage_instruct, "publish": _stage_publish}[stage](config)
        times[stage] = round(time.monotonic() - t0, 1)
    opened = open_dataset(config.out / "dataset")
    counts = {"samples": len(opened.samples), "repositories": len(opened.repositories),
              "instruct_records": stages["instruct"]["records"]}
    summary = {
        "builder_manifest": config.manifest.path.name if config.manifest.path else None,
        "instruct_manifest": config.instruct_manifest.path.name if config.instruct_manifest.path else None,
        "counts": counts, "per_level": stages["build"]["per_level"],
        "fingerprints": {"dataset": dataset_fingerprint(opened.samples, opened.repositories),
                         "samples_jsonl": stages["build"]["samples_fingerprint"]},
        "sizes": {"dataset_bytes": stages["publish"]["bytes"],
                  "configs_bytes": {n: c["bytes"] for n, c in stages["publish"]["configs"].items()},
                  "configs_arrow_bytes": {n: c["arrow_bytes"] for n, c in stages["publish"]["configs"].items()},
                  "materialised_dataset_bytes": stages["publish"].get("materialised_bytes"),
                  "materialised_configs": stages["publish"].get("materialised_configs"),
                  "build_bytes": stages["build"]["bytes"], "instruct_bytes": stages["instruct"]["bytes"]},
        "time_s": {**times, "total": round(sum(times.values()), 1)},
        "targets": {f"{name} >= {n}": counts[name] >= n for name, n in TARGETS.items()}
        | {"mix within 5 pp of the paper": stages["build"]["mix_within_tolerance"]},
        "stages": stages,
    }
    tmp = config.out / "release_summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, config.out / "release_summary.json")
    return summary
