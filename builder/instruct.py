"""Repo-Instruct: the paper's instruction corpus, made with the benchmark's multi-level masking.

Each repository of a (separate) instruct manifest is fetched, masked with ``sample_masks`` (the
benchmark's method), given ranked cross-file context (``RepoContextIndex``) and written as chat
records: system = SYSTEM_PROMPT, user = ``render_user(...)``, assistant = the masked middle.  Nothing
is executed: no environments, no baseline, no verification.

Decontamination against a built benchmark (its samples.jsonl): a repository whose normalised name
(lower case, runs of ``-_.`` equal) or pinned source / source hash matches a benchmark sample is
refused; a record whose middle (stripped) equals a benchmark ``middle_code`` (stripped) is dropped.
Records stream from a generator into OUT/instruct.jsonl (temp file + rename) and
OUT/parquet/train-XXXXX.parquet (ParquetWriter, ``shard_rows`` rows per shard): memory stays bounded.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Iterator, Optional

from tqdm import tqdm

from execrepobench_dataset.instruct_record import SYSTEM_PROMPT, InstructRecord, Message, instruct_features
from execrepobench_dataset.record import ContextFile, make_sample_id, read_jsonl
from execrepobench_dataset.version import __version__

from .build import MaskedRepo, error_entry, mask_repository
from .manifest import Manifest, RepoSpec
from .masking import MaskConfig, split
from .sources import FetchedSource, SourceError, fetch

# The user message, as data.  Layout (``<...>`` are the placeholders):
CONTEXT_HEADER = "##Context Code##:\n"
CONTEXT_FILE = "##File: {path}##\n{code}\n"
PREFIX_SUFFIX = "##Prefix Code##:\n{prefix}\n##Suffix Code##:\n{suffix}\n##Middle Code##:\n"

JSONL_NAME = "instruct.jsonl"
REPORT_NAME = "instruct_report.json"
PARQUET_DIR = "parquet"
SHARD_NAME = "train-{index:05d}.parquet"
_WRITE_BATCH = 256  # rows per parquet row group (at most shard_rows)


def _fit_prefix_suffix(prefix: str, suffix: str, budget: int) -> tuple[str, str]:
    if len(prefix) + len(suffix) <= budget:
        return prefix, suffix
    keep_p = min(len(prefix), max(budget // 2, budget - len(suffix)))
    keep_s = budget - keep_p
    return (prefix[len(prefix) - keep_p:] if keep_p else ""), suffix[:keep_s]


def render_user(context: list[ContextFile], prefix: str, suffix: str, budget_chars: int) -> str:
    """The user message, in the paper's layout::

        ##Context Code##:\\n
        ##File: <path>##\\n<code>\\n        (one per context file, most relevant first)
        ##Prefix Code##:\\n<prefix>\\n##Suffix Code##:\\n<suffix>\\n##Middle Code##:\\n

    (``CONTEXT_HEADER``, ``CONTEXT_FILE``, ``PREFIX_SUFFIX``).  ``budget_chars`` bounds the variable
    text: len(prefix kept) + len(suffix kept) + len of every rendered ``CONTEXT_FILE`` entry (its
    ``##File: ...##`` line included); the fixed markers are not counted.

    * prefix and suffix come first.  When together they exceed the budget, the END of the prefix
      and the START of the suffix are kept, half the budget each (``budget // 2`` for the prefix;
      a side shorter than its half leaves the rest to the other), cut at characters.
    * the rest of the budget goes to context files, most relevant first, each whole while it fits;
      the first one that does not fit is cut at a line boundary (its leading lines that fit;
      left out when not even its first line fits), and no file after it is added.
    """
    if budget_chars < 0:
        raise ValueError(f"budget_chars must be >= 0, got {budget_chars}")
    prefix, suffix = _fit_prefix_suffix(prefix, suffix, budget_chars)
    left = budget_chars - len(prefix) - len(suffix)
    parts = [CONTEXT_HEADER]
    for cf in context:
        entry = CONTEXT_FILE.format(path=cf.path, code=cf.code)
        if len(entry) <= left:
            parts.append(entry)
            left -= len(entry)
            continue
        room = left - len(CONTEXT_FILE.format(path=cf.path, code=""))
        kept = []
        for line in cf.code.splitlines(keepends=True):
            if len(line) > room:
                break
            kept.append(line)
            room -= len(line)
        if kept:
            parts.append(CONTEXT_FILE.format(path=cf.path, code="".join(kept)))
        break
    parts.append(PREFIX_SUFFIX.format(prefix=prefix, suffix=suffix))
    return "".join(parts)


def instruct_records(spec: RepoSpec, fetched: FetchedSource, seed: int, mask: MaskConfig, budget_chars: int,
                     masked: Optional[MaskedRepo] = None) -> Iterator[InstructRecord]:
    """Mask the repository like the benchmark does (or take `masked`, already done) and yield one
    chat record per mask (mask order)."""
    masked = masked or mask_repository(spec.name, fetched.root, seed, mask)
    raw, result, index = masked.raw, masked.result, masked.index
    for m in result.masks:
        prefix, middle, suffix = split(raw[m.file_name], m)
        context = index.rank(m.file_name, prefix, suffix)
        yield InstructRecord(
            record_id=make_sample_id(fetched.pinned, m.file_name, prefix, middle, suffix, m.fill_type),
            repo_name=spec.name, repo_source=fetched.pinned, file_name=m.file_name,
            fill_type=m.fill_type, node_type=m.node_type,
            messages=(Message("system", SYSTEM_PROMPT),
                      Message("user", render_user(context, prefix, suffix, budget_chars)),
                      Message("assistant", middle)),
            seed=seed, builder_version=__version__)


def canon_name(name: str) -> str:
    """Normalised repository name: lower case, runs of - _ . equal."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _source_identity(source: str) -> tuple[Optional[str], Optional[str]]:
    """(project name, source hash) named by a pinned spec, where it names them."""
    kind, _, rest = source.partition(":")
    if kind == "pypi":
        name, _, tail = rest.partition("==")
        return name, (tail.partition("#sha256=")[2] or None)
    if kind == "git":
        url, _, commit = rest.rpartition("@")
        return url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or None, commit or None
    if kind == "path":
        return None, (rest.partition("#tree=")[2] or None)
    return None, None


class Benchmark:
    """What the instruct corpus must not overlap: names, pinned sources, hashes, middles."""

    def __init__(self, samples_path: Optional[Path]) -> None:
        self.path = samples_path
        self.names, self.sources, self.hashes, self.middles = set(), set(), set(), set()
        self.samples = 0  # benchmark samples read
        for s in read_jsonl(samples_path) if samples_path is not None else ():
            self.samples += 1
            name, digest = _source_identity(s.repo_source)
            self.names.update(canon_name(n) for n in (s.repo_name, name) if n)
            self.sources.add(s.repo_source)
            if digest:
                self.hashes.add(digest.lower())
            self.middles.add(s.middle_code.strip())

    def name_clash(self, spec: RepoSpec) -> Optional[str]:
        ref = spec.ref  # a pypi/git project name counts too (a path's folder name does not)
        for n in dict.fromkeys((spec.name,) + ((ref.name,) if ref.kind != "path" else ())):
            if canon_name(n) in self.names:
                return f"repo name {n!r} is in the benchmark ({self.path})"
        return None

    def source_clash(self, fetched: FetchedSource) -> Optional[str]:
        if fetched.pinned in self.sources:
            return f"pinned source {fetched.pinned} is in the benchmark ({self.path})"
        if fetched.source_hash.lower() in self.hashes:
            return f"source hash {fetched.source_hash} is in the benchmark ({self.path})"
        return None

    def contaminated(self, record: InstructRecord) -> bool:
        return record.middle.strip() in self.middles


class _ShardWriter:
    """Parquet shards of `shard_rows` rows, written incrementally (one row group per batch)."""

    def __init__(self, folder: Path, shard_rows: int) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa, self._pq, self.schema = pa, pq, instruct_features().arrow_schema
        self.folder, self.shard_rows, self.batch_rows = folder, shard_rows, max(1, min(shard_rows, _WRITE_BATCH))
        self.paths: list[Path] = []
        self._writer, self._in_shard, self._batch = None, 0, []

    def add(self, record: InstructRecord) -> None:
        self._batch.append(record.to_dict())
        if len(self._batch) >= self.batch_rows or self._in_shard + len(self._batch) >= self.shard_rows:
            self._flush()

    def _flush(self) -> None:
        if not self._batch and self.paths:
            return
        if self._writer is None:
            self.paths.append(self.folder / SHARD_NAME.format(index=len(self.paths)))
            self._writer = self._pq.ParquetWriter(str(self.paths[-1]), self.schema)
        self._writer.write_table(self._pa.Table.from_pylist(self._batch, schema=self.schema))
        self._in_shard, self._batch = self._in_shard + len(self._batch), []
        if self._in_shard >= self.shard_rows:
            self._writer.close()
            self._writer, self._in_shard = None, 0

    def close(self) -> list[Path]:
        if self._batch or not self.paths:  # an empty corpus still gets one (empty) shard
            self._flush()
        if self._writer is not None:
            self._writer.close()
        self._writer = None
        return self.paths


def build_instruct(manifest: Manifest, out: Path, *, benchmark_samples: Optional[Path], budget_chars: int = 16000,
                   shard_rows: int = 1000, progress: bool = True, mask: Optional[MaskConfig] = None) -> dict:
    """Build Repo-Instruct for every repo of `manifest`; write OUT/instruct.jsonl, OUT/parquet/ and
    OUT/instruct_report.json; return the report.  Deterministic for the manifest's seed."""
    if shard_rows < 1:
        raise ValueError(f"shard_rows must be >= 1, got {shard_rows}")
    if budget_chars < 0:
        raise ValueError(f"budget_chars must be >= 0, got {budget_chars}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)  # written into temp names, renamed when complete
    bench = Benchmark(Path(benchmark_samples) if benchmark_samples is not None else None)
    base_mask = mask or MaskConfig()
    jsonl_tmp, shard_tmp = out / (JSONL_NAME + ".tmp"), out / (PARQUET_DIR + ".tmp")
    shutil.rmtree(shard_tmp, ignore_errors=True)
    shard_tmp.mkdir()
    shards = _ShardWriter(shard_tmp, shard_rows)
    repos: list[dict] = []
    bar = tqdm(manifest.repos, desc="instruct", unit="repo", disable=not progress)
    rbar = tqdm(desc="records", unit="rec", disable=not progress)
    with open(jsonl_tmp, "w", encoding="utf-8") as jsonl:
        for spec in bar:
            bar.set_postfix_str(spec.name)
            rep: dict = {"repo": spec.name, "source": spec.source, "status": "error", "records": 0,
                         "per_fill_type": {}, "dropped_contaminated": 0}
            t0 = time.monotonic()
            fills: Counter = Counter()
            try:
                reason = bench.name_clash(spec)
                fetched = None if reason else fetch(spec)
                if fetched is not None:
                    rep["pinned"] = fetched.pinned
                    reason = bench.source_clash(fetched)
                if reason:
                    rep.update(status="refused", reason=reason)
                else:
                    repo_mask = replace(base_mask, samples_per_repo=manifest.samples_for(spec))
                    masked = mask_repository(spec.name, fetched.root, manifest.seed, repo_mask)
                    rep.update(masked.stats())
                    for rec in instruct_records(spec, fetched, manifest.seed, repo_mask, budget_chars, masked):
                        if bench.contaminated(rec):
                            rep["dropped_contaminated"] += 1
                            continue
                        jsonl.write(json.dumps(rec.to_dict(), sort_keys=True, ensure_ascii=False) + "\n")
                        shards.add(rec)
                        fills[rec.fill_type] += 1
                        rep["records"] += 1
                        rbar.update(1)
                    rep["status"] = "ok" if rep["records"] else "empty"
            except Exception as exc:  # noqa: BLE001 - a repo's failure never ends the build
                # (records it already streamed stay, and are counted in its entry)
                rep.update(status="error", **error_entry(exc, expected=(SourceError,)))
            rep.update(per_fill_type=dict(sorted(fills.items())), time_s=round(time.monotonic() - t0, 2))
            repos.append(rep)
            if rep["status"] in ("error", "refused"):
                tqdm.write(f"[{spec.name}] {rep['status']}: {rep.get('reason', '')}")
    rbar.close()
    paths = shards.close()
    os.replace(jsonl_tmp, out / JSONL_NAME)
    shutil.rmtree(out / PARQUET_DIR, ignore_errors=True)
    os.replace(shard_tmp, out / PARQUET_DIR)
    per_fill: Counter = Counter()
    for r in repos:
        per_fill.update(r["per_fill_type"])
    report = {
        "builder_version": __version__, "seed": manifest.seed, "budget_chars": budget_chars,
        "shard_rows": shard_rows, "manifest": str(manifest.path) if manifest.path else None,
        "benchmark": {"samples": str(bench.path) if bench.path else None, "sample_count": bench.samples,
                      "repo_names": sorted(bench.names), "middles": len(bench.middles)},
        "repos": repos,
        "refused_repos": [{"repo": r["repo"], "reason": r["reason"]} for r in repos if r["status"] == "refused"],
        "totals": {"repos": len(repos), "ok": sum(r["status"] == "ok" for r in repos),
                   "refused_repos": sum(r["status"] == "refused" for r in repos),
                   "errors": sum(r["status"] == "error" for r in repos),
                   "records": sum(r["records"] for r in repos),
                   "dropped_contaminated": sum(r["dropped_contaminated"] for r in repos),
                   "per_fill_type": dict(sorted(per_fill.items())), "shards": len(paths)},
        "outputs": {"jsonl": JSONL_NAME, "parquet": [f"{PARQUET_DIR}/{p.name}" for p in paths]},
    }
    tmp = out / (REPORT_NAME + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, out / REPORT_NAME)
    return report
