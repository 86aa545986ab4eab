"""Judge many completions: opt-in check, the isolation decision, work grouped by repository and
handed in batches to an executor (`executors`: local threads or a Ray cluster), a content-hash
result cache, a resume journal and the evidence folders - all three on this machine (the driver),
written as each verdict lands.

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
import tempfile
import threading
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Mapping, Sequence

from tqdm import tqdm

from execrepobench_dataset.record import Sample
from execrepobench_dataset.repo_record import RepoRecord
from execrepobench_dataset.schemes import JUDGEMENT_CODE
from execrepobench_metric.environments.layout import cache_root
from execrepobench_metric.errors import ExecutionNotAllowed

from .budget import Budget
from .evidence import EvidenceStore, pack_folder, unpack_folder
from .executors.base import Batch, Executor, ExecutorConfig, split
from .executors.registry import open_executor
from .impossible import SCHEME as IMPOSSIBLE_SCHEME
from .judge import judge_safely
from .sandbox import decide_isolation
from .verdict import JudgeConfig, Verdict

EXEC_ENV_VAR = "EXECREPOBENCH_ALLOW_EXEC"
HF_EXEC_ENV_VAR = "HF_ALLOW_CODE_EVAL"  # the opt-in of evaluate's code_eval and of lm-eval: accepted as well
OPT_IN_MESSAGE = (
    "ExecRepoBench executes model-generated code against repository tests. Opt in explicitly with the "
    f"environment variable {EXEC_ENV_VAR}=1 (or {HF_EXEC_ENV_VAR}=1, as for evaluate's code_eval) or the "
    "argument allow_exec=True (runs are sandboxed with bubblewrap: no network, read-only filesystem outside a "
    "private view).")


@dataclass(frozen=True)
class EngineConfig:
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    allow_exec: bool | None = None  # None: read EXECREPOBENCH_ALLOW_EXEC / HF_ALLOW_CODE_EVAL
    allow_weak_sandbox: bool = False
    use_cache: bool = True
    journal: Path | None = None
    progress: bool = True
    artifacts: Path | None = None  # evidence root (None: under the cache, one folder per evaluation)
    keep_artifacts: bool = False  # keep evidence of every run (always kept for `error` verdicts)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # where judgements run (local, ray)


def require_opt_in(allow_exec: bool | None) -> None:
    """allow_exec True, or (allow_exec None) EXECREPOBENCH_ALLOW_EXEC=1/true/yes or HF_ALLOW_CODE_EVAL=1."""
    allowed = allow_exec if allow_exec is not None else (
        os.environ.get(EXEC_ENV_VAR, "") in ("1", "true", "yes") or os.environ.get(HF_EXEC_ENV_VAR, "") == "1")
    if not allowed:
        given = [v for v in (EXEC_ENV_VAR, HF_EXEC_ENV_VAR) if os.environ.get(v)] if allow_exec is False else []
        raise ExecutionNotAllowed(OPT_IN_MESSAGE + (f" allow_exec=False was given: it overrides {' and '.join(given)} "
                                                    "in the environment." if given else ""))


def result_key(sample: Sample, completion: str, config: JudgeConfig, budget: Budget | None = None) -> str:
    completed = sample.prefix_code + completion + sample.suffix_code
    parts = [JUDGEMENT_CODE.value(), sample.sample_id, sample.env_key, hashlib.sha256(completed.encode()).hexdigest(),
             config.selection, list(sample.judged_tests), list(sample.excluded_tests), list(sample.test_command),
             str(config.isolation), config.timeout_s, config.guard, list(sample.guard_allowed),
             budget.key() if budget is not None and config.timeout_s is None else None, config.fail_fast,
             config.canaries, config.known_verdicts]
    parts.append("strict" if config.strict else "lenient")  # the rule decides a verdict (strict.py)
    if config.impossible:  # judged against the impossible variant, made as its scheme says
        parts.append(IMPOSSIBLE_SCHEME)
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


@dataclass(frozen=True)
class JudgeItem:
    """One completed file to judge: what an executor ships to where it runs."""

    key: str  # result key
    sample: Sample  # without its context (not needed to judge)
    completion: str
    index: int  # completion index (names the evidence folder)
    folder: str | None = None  # evidence folder, when the item runs on this machine
    budget: Budget | None = None  # the run's CPU budgets (None: the default timeout)


def judge_item(item: JudgeItem, config: JudgeConfig, ship_evidence: bool) -> tuple[Verdict, dict[str, bytes]]:
    """Runs where the executor puts it.  (verdict, evidence files to send home: when `item.folder` is
    None and the evidence is wanted - always for an `error` verdict)."""
    if item.folder is not None:
        return judge_safely(item.sample, item.completion, config, evidence=Path(item.folder), budget=item.budget), {}
    with tempfile.TemporaryDirectory(prefix="execrepobench-evidence-") as tmp:
        verdict = judge_safely(item.sample, item.completion, config, evidence=Path(tmp) / "run", budget=item.budget)
        files = pack_folder(Path(tmp) / "run") if ship_evidence or verdict.reason == "error" else {}
    return verdict, files


def judge_all(samples: Sequence[Sample], completions: Sequence[Sequence[str]], config: EngineConfig = EngineConfig(),
              *, executor: Executor | None = None,
              records: Mapping[str, RepoRecord] | None = None,
              budgets: Mapping[str, Budget] | None = None) -> tuple[list[list[Verdict]], str]:
    """Verdicts for every completion of every sample, plus a note on the isolation used.

    Runs on `executor` (default: the one `config.executor` names, opened and closed here); `records`
    (env key -> repository record) let an executor's nodes make the environments they lack; `budgets`
    (sample id -> budget, `budget.budgets_for`): a sample without one gets the default timeout."""
    budgets = budgets or {}
    validate_inputs(samples, completions)
    require_opt_in(config.allow_exec)
    isolation, note = decide_isolation(config.allow_weak_sandbox)
    jconf = replace(config.judge, isolation=isolation)
    if executor is None:
        with open_executor(config.executor, config.workers) as own:
            return judge_all(samples, completions, config, executor=own, records=records, budgets=budgets)
    cache = ResultCache() if config.use_cache else None
    journal = Journal(config.journal)
    store = EvidenceStore(config.artifacts, config.keep_artifacts)
    results: list[list[Verdict | None]] = [[None] * len(c) for c in completions]
    groups: dict[str, list[tuple[int, int]]] = {}  # result key -> positions sharing it
    for i, (sample, comps) in enumerate(zip(samples, completions)):
        for j, comp in enumerate(comps):
            key = result_key(sample, comp, jconf, budgets.get(sample.sample_id))
            if (sample.sample_id, j, key) in journal.done:  # same completion judged before the interruption
                results[i][j] = journal.done[(sample.sample_id, j, key)]
                continue
            groups.setdefault(key, []).append((i, j))
    # Grouped by repository so a worker (or a node) stays on one environment and its file cache stays warm.
    order = sorted(groups, key=lambda k: (samples[groups[k][0][0]].repo_name, groups[k][0]))
    bar = tqdm(total=sum(len(v) for v in groups.values()), desc=f"judge ({executor.name})", unit="run",
               disable=not config.progress)

    def land(key: str, verdict: Verdict, folder: Path | None) -> None:
        for (pi, pj), final in _settle(key, groups[key], samples, completions, verdict, folder, cache, store):
            results[pi][pj] = final
            journal.record(samples[pi].sample_id, pj, key, final)
            bar.update(1)

    todo = []
    for key in order:
        cached = cache.get(key) if cache and not store.keep_all else None
        if cached is not None:
            land(key, cached, None)
        else:
            i, j = groups[key][0]
            folder = str(store.folder(samples[i].sample_id, j)) if executor.shares_filesystem else None
            todo.append(JudgeItem(key, replace(samples[i], context_code=()), completions[i][j], j, folder,
                                  budgets.get(samples[i].sample_id)))
    fn = partial(judge_item, config=jconf, ship_evidence=store.keep_all)
    landed: set[str] = set()
    for done in executor.map(fn, _batches(todo, samples, records or {}, config.executor, executor), jconf):
        item: JudgeItem = done.item
        if item.key in landed:  # never counted twice, whatever an executor sends back
            continue
        landed.add(item.key)
        folder = Path(item.folder) if item.folder else store.folder(item.sample.sample_id, item.index)
        if done.error:
            verdict = Verdict(item.sample.sample_id, False, "error", sandbox=str(jconf.isolation),
                              detail=f"harness error: {done.error}")
        else:
            verdict, files = done.value
            unpack_folder(folder, files)
        land(item.key, verdict, folder)
        if executor.name != "local":
            bar.set_postfix_str(" ".join(f"{n}:{c}" for n, c in sorted(executor.tally.items.items())))
    bar.close()
    store.close()
    return results, note  # type: ignore[return-value]  # every slot is filled above


def _batches(todo: list[JudgeItem], samples: Sequence[Sample], records: Mapping[str, RepoRecord],
             econf: ExecutorConfig, executor: Executor) -> list[Batch]:
    """Per repository: the items cut into batches, with the record that makes the environment and
    the gold samples each node checks first (the repository's first by id, the same every run)."""
    by_repo: dict[str, list[JudgeItem]] = {}
    for item in todo:
        by_repo.setdefault(item.sample.repo_name, []).append(item)
    out = []
    for repo, items in by_repo.items():
        key = items[0].sample.env_key
        mine = sorted((s for s in samples if s.repo_name == repo and s.env_key == key), key=lambda s: s.sample_id)
        gold = tuple(replace(s, context_code=()) for s in mine[:econf.gold_samples])
        min_parts = -(-executor.parallelism // len(by_repo))
        for part in split(items, econf.batch_size, min_parts):
            out.append(Batch(repo, key, part, records.get(key), gold))
    return out


def _settle(key: str, positions: list[tuple[int, int]], samples: Sequence[Sample],
            completions: Sequence[Sequence[str]], verdict: Verdict, folder: Path | None, cache: ResultCache | None,
            store: EvidenceStore) -> list[tuple[tuple[int, int], Verdict]]:
    """A landed verdict of one completed file (shared by `positions`): cached, with evidence per position."""
    if folder is None:  # from the result cache
        return [(pos, verdict) for pos in positions]
    if cache:
        cache.put(key, verdict)
    i, j = positions[0]
    completion = completions[i][j]
    out = []
    for n, (pi, pj) in enumerate(positions):
        record = {**verdict.to_dict(), "completion_index": pj, "env_key": samples[pi].env_key, "result_key": key}
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
