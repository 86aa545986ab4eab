"""Judge many completions: opt-in check, the isolation decision, parallel workers grouped by
repository, a content-hash result cache, a resume journal and the evidence folders.

Identical completed files of one sample (same environment, same judged tests) are run once: the
result cache is keyed by a hash of all that decides the verdict.  The journal (JSONL) records each
verdict as it lands, so an interrupted evaluation resumes without losing or duplicating results.
A judgement that raises becomes an `error` verdict (`judge_safely`); error verdicts are neither
cached nor journalled, so the next run retries them, and their evidence folder is always kept.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

from execrepobench_dataset.record import Sample

from .evidence import EvidenceStore
from .isolation import decide_isolation
from .judge import JudgeConfig, Verdict, judge_safely
from .layout import cache_root

ENGINE_VERSION = "4"  # 3: the in-process guard (and the execution layer's isolation); 4: budgets, fail fast
EXEC_ENV_VAR = "EXECREPOBENCH_ALLOW_EXEC"
OPT_IN_MESSAGE = (
    "ExecRepoBench executes model-generated code against repository tests. Opt in explicitly with the "
    f"environment variable {EXEC_ENV_VAR}=1 or the argument allow_exec=True (runs are sandboxed with "
    "bubblewrap: no network, read-only filesystem outside a private view).")


class ExecutionNotAllowed(RuntimeError):
    pass


@dataclass(frozen=True)
class EngineConfig:
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    allow_exec: bool | None = None  # None: read EXECREPOBENCH_ALLOW_EXEC
    allow_weak_sandbox: bool = False
    use_cache: bool = True
    journal: Path | None = None
    progress: bool = True
    artifacts: Path | None = None  # evidence root (None: under the cache, one folder per evaluation)
    keep_artifacts: bool = False  # keep evidence of every run (always kept for `error` verdicts)


def require_opt_in(allow_exec: bool | None) -> None:
    allowed = allow_exec if allow_exec is not None else os.environ.get(EXEC_ENV_VAR, "") in ("1", "true", "yes")
    if not allowed:
        raise ExecutionNotAllowed(OPT_IN_MESSAGE)


def result_key(sample: Sample, completion: str, config: JudgeConfig) -> str:
    completed = sample.prefix_code + completion + sample.suffix_code
    parts = [ENGINE_VERSION, sample.sample_id, sample.env_key, hashlib.sha256(completed.encode()).hexdigest(),
             config.selection, list(sample.judged_tests), list(sample.excluded_tests), list(sample.test_command),
             str(config.isolation), config.timeout_s, config.guard, list(sample.guard_allowed),
             sample.time_budget_s, config.fail_fast]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


class ResultCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_root() / "results"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Verdict | None:
        try:
            return Verdict.from_dict(json.loads(self._path(key).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError):
            return None

    def put(self, key: str, verdict: Verdict) -> None:
        if verdict.reason == "error":
            return  # the harness's fault: retry next time
        verdict = replace(verdict, artifacts="")  # evidence belongs to one evaluation, not to the cache
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(verdict.to_dict()), encoding="utf-8")
        os.replace(tmp, path)


class Journal:
    """Append-only JSONL of (sample_id, completion index, verdict); read back on resume."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.done: dict[tuple[str, int, str], Verdict] = {}  # (sample id, index, result key) -> verdict
        if path is not None and path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                    self.done[(rec["sample_id"], int(rec["index"]), rec["key"])] = Verdict.from_dict(rec["verdict"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by an interruption: that result is simply redone

    def record(self, sample_id: str, index: int, key: str, verdict: Verdict) -> None:
        if self.path is None or verdict.reason == "error":
            return  # a harness error is retried when the evaluation is run again
        line = json.dumps({"sample_id": sample_id, "index": index, "key": key, "verdict": verdict.to_dict()})
        with self.lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
                fh.flush()
                os.fsync(fh.fileno())


def validate_inputs(samples: Sequence[Sample], completions: Sequence[Sequence[str]]) -> None:
    if len(samples) != len(completions):
        raise ValueError(f"{len(completions)} prediction(s) for {len(samples)} reference(s): lengths must match")
    for i, (sample, comps) in enumerate(zip(samples, completions)):
        if not comps:
            raise ValueError(f"prediction {i} (sample {sample.sample_id}): no completion given")
        for j, c in enumerate(comps):
            if not isinstance(c, str):
                raise TypeError(f"prediction {i} (sample {sample.sample_id}), completion {j}: expected a string, "
                                f"got {type(c).__name__}")


def judge_all(samples: Sequence[Sample], completions: Sequence[Sequence[str]],
              config: EngineConfig = EngineConfig()) -> tuple[list[list[Verdict]], str]:
    """Verdicts for every completion of every sample, plus a note on the isolation used."""
    validate_inputs(samples, completions)
    require_opt_in(config.allow_exec)
    isolation, note = decide_isolation(config.allow_weak_sandbox)
    jconf = replace(config.judge, isolation=isolation)
    cache = ResultCache() if config.use_cache else None
    journal = Journal(config.journal)
    store = EvidenceStore(config.artifacts, config.keep_artifacts)
    results: list[list[Verdict | None]] = [[None] * len(c) for c in completions]
    groups: dict[str, list[tuple[int, int]]] = {}  # result key -> positions sharing it
    for i, (sample, comps) in enumerate(zip(samples, completions)):
        for j, comp in enumerate(comps):
            key = result_key(sample, comp, jconf)
            if (sample.sample_id, j, key) in journal.done:  # same completion judged before the interruption
                results[i][j] = journal.done[(sample.sample_id, j, key)]
                continue
            groups.setdefault(key, []).append((i, j))
    # Grouped by repository so a worker stays on one environment and its file cache stays warm.
    order = sorted(groups, key=lambda k: (samples[groups[k][0][0]].repo_name, groups[k][0]))
    bar = tqdm(total=sum(len(v) for v in groups.values()), desc="judge", unit="run", disable=not config.progress)

    def work(key: str) -> None:
        for (pi, pj), verdict in _judge_key(key, groups[key], samples, completions, jconf, cache, store):
            results[pi][pj] = verdict
            journal.record(samples[pi].sample_id, pj, key, verdict)
            bar.update(1)

    with ThreadPoolExecutor(max_workers=max(1, config.workers)) as pool:
        list(pool.map(work, order))
    bar.close()
    store.close()
    return results, note  # type: ignore[return-value]  # every slot is filled above


def _judge_key(key: str, positions: list[tuple[int, int]], samples: Sequence[Sample],
               completions: Sequence[Sequence[str]], jconf: JudgeConfig, cache: ResultCache | None,
               store: EvidenceStore) -> list[tuple[tuple[int, int], Verdict]]:
    """One completed file (shared by `positions`): its verdict for each position, with evidence."""
    i, j = positions[0]
    sample, completion = samples[i], completions[i][j]
    verdict = cache.get(key) if cache and not store.keep_all else None
    if verdict is not None:
        return [(pos, verdict) for pos in positions]
    folder = store.folder(sample.sample_id, j)
    verdict = judge_safely(sample, completion, jconf, evidence=folder)
    if cache:
        cache.put(key, verdict)
    out = []
    for n, (pi, pj) in enumerate(positions):
        record = {**verdict.to_dict(), "completion_index": pj, "env_key": sample.env_key, "result_key": key}
        try:
            if n == 0:
                traceback = verdict.detail if verdict.reason == "error" else ""
                pointer = store.finish(folder, record, completion=completion, traceback=traceback)
            else:
                pointer = store.copy(folder, samples[pi].sample_id, pj, record) if out[0][1].artifacts else ""
        except OSError:
            pointer = ""  # evidence is best effort: a full disk never changes a verdict
        out.append(((pi, pj), replace(verdict, artifacts=pointer)))
    return out
