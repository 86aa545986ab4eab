"""Import the paper's official release (`exec_repo_bench.jsonl` + the repositories of `repos.zip`).

Each line (`repo_name`, `file_name`, `prefix_code`, `middle_code`, `suffix_code`, `context_code` as
`[path, code]` pairs, `fill_type`) becomes one of our `Sample`s, and is then checked exactly as the
builder checks its own samples - each repository goes through the build's own stages (`pipeline.py`),
with the lines as its candidates (`OfficialLines`) instead of masks: a `path:` source over
`REPOS/<repo_name>` (snapshotted, pinned as `path:NAME#tree=HASH`: ids do not depend on where repos.zip
was unpacked), a lock and the environment made from it (records in OUT/repositories.jsonl), our
sandboxed baseline, one coverage run, test selection and verification.  A line whose prefix+middle+suffix
is not the file on disk is skipped (`mismatched_file`); a repository that cannot be fetched, installed or
tested is a report entry.

Test command - a deliberate decision: every official repository ships `evaluate_repo.py`, which reports
only an exit code.  Our verdicts need per-test outcomes (junit XML, our plugin, judged test selection,
read-only test files), so samples are judged with our pytest invocation over the repository; the
official entry point is recorded as `official_entry_point` and never run (repositories whose tests are
not pytest-discoverable fail at baseline and are reported).

`null_passed_share`: the share of verified official samples whose null completion passes its tests.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.record import (FILL_TYPES, ContextFile, Sample, make_sample_id,
                                          write_jsonl)
from execrepobench_dataset.repo_record import RepoRecord, write_repo_records
from execrepobench_dataset.version import __version__
from execrepobench_metric.execution.surface import decide_isolation

from .errors import OfficialFormatError
from .pipeline import Candidates, Scan, run_repository
from .preparation.baseline import Baseline
from .preparation.prepare import Prepared
from .sampling.repo_files import write_atomic
from .settings import BuildSettings, RepoTask
from .sources.manifest import RepoSpec
from .sources.sources import FetchedSource
from .verification.verify import DROP_REASONS

ENTRY_POINT = "evaluate_repo.py"
NODE_TYPE = "official"
FIELDS = ("repo_name", "file_name", "prefix_code", "middle_code", "suffix_code", "context_code", "fill_type")
COUNTS = ("lines", "converted", "mismatched", "duplicates", "gt_failed", "null_passed", "no_null_fill",
          "no_tests", "kept")


@dataclass(frozen=True)
class OfficialLine:
    lineno: int
    repo_name: str
    file_name: str
    prefix_code: str
    middle_code: str
    suffix_code: str
    context_code: tuple[ContextFile, ...]
    fill_type: str


def _safe_relpath(value: str) -> bool:
    parts = PurePosixPath(value).parts
    return bool(value) and "\\" not in value and not value.startswith("/") and not {".", ".."} & set(parts)


def _parse_line(data: object, where: str, lineno: int) -> OfficialLine:
    if not isinstance(data, dict):
        raise OfficialFormatError(f"{where}: expected a JSON object, got {type(data).__name__}")
    for name in FIELDS:
        if name not in data:
            raise OfficialFormatError(f"{where}: missing field {name!r}")
        if name != "context_code" and not isinstance(data[name], str):
            raise OfficialFormatError(f"{where}: field {name!r} must be a string, got {type(data[name]).__name__}")
    if data["fill_type"] not in FILL_TYPES:
        raise OfficialFormatError(f"{where}: field 'fill_type': unknown fill type {data['fill_type']!r} "
                                  f"(expected one of {', '.join(FILL_TYPES)})")
    for name in ("repo_name", "file_name"):
        if not _safe_relpath(data[name]) or (name == "repo_name" and "/" in data[name]):
            raise OfficialFormatError(f"{where}: field {name!r}: {data[name]!r} is not a safe relative name")
    context = []
    if not isinstance(data["context_code"], list):
        raise OfficialFormatError(f"{where}: field 'context_code' must be a list of [path, code] pairs")
    for i, item in enumerate(data["context_code"]):
        if isinstance(item, dict):
            item = [item.get("path"), item.get("code")]
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)):
            raise OfficialFormatError(f"{where}: field 'context_code' item {i}: expected a [path, code] pair "
                                      f"of strings, got {str(item)[:80]!r}")
        context.append(ContextFile(path=item[0], code=item[1]))
    return OfficialLine(lineno, data["repo_name"], data["file_name"], data["prefix_code"], data["middle_code"],
                        data["suffix_code"], tuple(context), data["fill_type"])


def read_official(jsonl: Path) -> list[OfficialLine]:
    """Every line of the official JSONL, validated (all or nothing: the first bad line raises)."""
    try:
        text = Path(jsonl).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OfficialFormatError(f"{jsonl}: cannot read: {exc}") from None
    lines = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{jsonl}:{lineno}"
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise OfficialFormatError(f"{where}: not valid JSON: {exc}") from None
        lines.append(_parse_line(data, where, lineno))
    if not lines:
        raise OfficialFormatError(f"{jsonl}: no samples")
    return lines


def _resolve_file(root: Path, line: OfficialLine) -> str | None:
    """The line's file, repo-relative; a `repo_name/` prefix on `file_name` is tolerated."""
    candidates = [line.file_name]
    if line.file_name.startswith(line.repo_name + "/"):
        candidates.append(line.file_name[len(line.repo_name) + 1:])
    return next((c for c in candidates if (root / c).is_file()), None)


def _mismatch(root: Path, line: OfficialLine) -> tuple[str | None, str]:
    """(file name in the tree, "") when the texts match the file on disk, else (None, the reason)."""
    rel = _resolve_file(root, line)
    if rel is None:
        return None, f"file {line.file_name} not found in the repository"
    try:
        on_disk = (root / rel).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None, f"file {rel} is not UTF-8"
    if line.prefix_code + line.middle_code + line.suffix_code != on_disk:
        at = next((i for i, (a, b) in enumerate(zip(line.prefix_code + line.middle_code + line.suffix_code,
                                                    on_disk)) if a != b), None)
        return None, f"prefix+middle+suffix differs from {rel} (first difference at character {at})"
    return rel, ""


def to_sample(line: OfficialLine, file_name: str, pinned: str, env_key: str, baseline: Baseline) -> Sample:
    prefix_bytes = len(line.prefix_code.encode("utf-8"))
    return Sample(
        sample_id=make_sample_id(pinned, file_name, line.prefix_code, line.middle_code, line.suffix_code,
                                 line.fill_type),
        repo_name=line.repo_name, repo_source=pinned, file_name=file_name, prefix_code=line.prefix_code,
        middle_code=line.middle_code, suffix_code=line.suffix_code, context_code=line.context_code,
        fill_type=line.fill_type, node_type=NODE_TYPE, middle_start_byte=prefix_bytes,
        middle_end_byte=prefix_bytes + len(line.middle_code.encode("utf-8")), env_key=env_key, seed=0,
        builder_version=__version__, test_command=baseline.test_command, excluded_tests=baseline.excluded)


@dataclass(frozen=True)
class OfficialLines:
    """The importer's candidate step (pipeline.py): a repository's lines of the official JSONL, those whose
    prefix+middle+suffix is the file in its tree, as samples (a line that repeats an earlier one is skipped)."""

    folder: Path  # the repository's folder in the repos directory
    lines: tuple[OfficialLine, ...]
    phase: str = "conversion"

    def scan(self, fetched: FetchedSource) -> Scan:
        matched, skipped = [], []
        for line in self.lines:
            rel, why = _mismatch(fetched.root, line)
            if rel is None:
                skipped.append({"line": line.lineno, "file_name": line.file_name, "reason": "mismatched_file",
                                "detail": why})
            else:
                matched.append((line, rel))
        refusal = "" if matched else f"{fetched.name}: no line matches the files of {self.folder}"
        return Scan({"skipped_lines": skipped, "mismatched": len(skipped)}, tuple(matched), refusal)

    def candidates(self, fetched: FetchedSource, prepared: Prepared, pool: dict[str, str], scan: Scan) -> Candidates:
        baseline = prepared.baseline
        skipped, lineno_of, converted = list(scan.report["skipped_lines"]), {}, []
        for line, rel in scan.found:
            sample = to_sample(line, rel, fetched.pinned, prepared.env.key, baseline)
            if sample.sample_id in lineno_of:
                skipped.append({"line": line.lineno, "file_name": line.file_name, "reason": "duplicate",
                                "detail": f"same sample as line {lineno_of[sample.sample_id]}"})
                continue
            lineno_of[sample.sample_id] = line.lineno
            converted.append(sample)
        report = {"test_command": list(baseline.test_command), "skipped_lines": skipped,
                  "duplicates": len(skipped) - len(scan.report["skipped_lines"]), "converted": len(converted)}
        return Candidates(converted, report, origin=lineno_of)


# The importer's settings, where they differ from the build's: the official harness (evaluate_repo.py) is never
# imported, baseline runs go one at a time, every converted line is verified (no level quotas, no mutants) with 3
# ground-truth runs, a null fill's run is bounded by the judge's timeout.
OFFICIAL_SETTINGS = BuildSettings(workers=2, gt_runs=3, baseline_serial=True, mutants=0, min_mutant_kill=0.0,
                                  null_budgets=False, skip_modules=(ENTRY_POINT[:-3],))


def _import_repo(task: RepoTask, group: list[OfficialLine], repos: Path,
                 out: Path) -> tuple[list[Sample], list[Sample], dict]:
    """(all converted samples with their selection, kept samples, report entry) of one repository."""
    name, settings = task.spec.name, task.settings
    folder = repos / name
    entry = (folder / ENTRY_POINT).relative_to(repos).as_posix() if (folder / ENTRY_POINT).is_file() else None
    t0 = time.monotonic()
    run = run_repository(task, OfficialLines(folder, tuple(group)), out / "repos" / name)
    report: dict = {"repo": name, "folder": str(folder), "official_entry_point": entry, **{k: 0 for k in COUNTS},
                    "lines": len(group), "skipped_lines": [], "outcomes": [], **run.report}
    if not settings.verify:
        report.update({k: None for k in ("gt_failed", "null_passed", "no_null_fill", "no_tests")})
    if run.selected:
        report["selection_rules"] = dict(sorted(Counter(s.selection_rule for s in run.selected).items()))
    if run.verified is not None:
        outcomes, lineno_of = run.verified.outcomes, run.candidates.origin
        reasons = Counter(o.reason for o in outcomes)
        report.update({r: reasons.get(r, 0) for r in DROP_REASONS})
        report["outcomes"] = [{"line": lineno_of[o.sample.sample_id], "sample_id": o.sample.sample_id,
                               "reason": o.reason, "detail": o.detail[:300]} for o in outcomes]
    report.update(kept=len(run.kept), status=run.status)
    if run.status != "error":
        report["repository"] = run.record.to_dict()
    report["null_passed_share"] = _share(report)
    report["time_s"] = round(time.monotonic() - t0, 2)
    converted = run.selected or (run.candidates.samples if run.candidates else [])
    return converted, run.kept, report


def _share(counts: dict) -> float | None:
    if counts.get("null_passed") is None:
        return None
    return round(counts["null_passed"] / max(1, counts["converted"]), 3)


def import_official(jsonl: Path, repos: Path, out: Path, settings: BuildSettings = OFFICIAL_SETTINGS,
                    python: str | None = None) -> dict:
    """Import the official release with `settings` (`OFFICIAL_SETTINGS` unless given; `verify=False`: convert
    only) and the environments' Python X.Y (`python`; None: this interpreter's); writes OUT/samples.jsonl
    (verified samples, or every converted sample when not verifying), OUT/all_samples.jsonl (every converted
    sample with its test selection), OUT/repositories.jsonl (the repository record of every repository with kept
    samples) and OUT/import_report.json, and returns the report.  Raises `OfficialFormatError` (naming
    file:line and field) on a bad JSONL line and UsageError when `repos` is not a folder."""
    verify, progress = settings.verify, settings.progress
    jsonl, repos, out = Path(jsonl), Path(repos).expanduser().resolve(), Path(out)
    lines = read_official(jsonl)
    if not repos.is_dir():
        raise UsageError(f"--repos {repos}: not a directory (unpack repos.zip and point at the folder "
                         f"holding one folder per repo_name)")
    groups: dict[str, list[OfficialLine]] = {}
    for line in lines:
        groups.setdefault(line.repo_name, []).append(line)
    out.mkdir(parents=True, exist_ok=True)
    isolation, note = decide_isolation(settings.allow_weak_sandbox)
    all_samples: list[Sample] = []
    kept: list[Sample] = []
    reports: dict[str, dict] = {}
    bar = tqdm(sorted(groups), desc="import-official", unit="repo", disable=not progress)
    for name in bar:
        bar.set_postfix_str(name)
        task = RepoTask(RepoSpec(name=name, source=f"path:{repos / name}"), settings, isolation, python)
        converted, repo_kept, report = _import_repo(task, groups[name], repos, out)
        all_samples += converted
        kept += repo_kept
        reports[name] = report
        if report["status"] != "ok" and progress:
            tqdm.write(f"[{name}] {report['status']}: {report.get('reason', '')}")
    overall: dict = {k: sum(r[k] for r in reports.values()) if verify or k not in DROP_REASONS else None
                     for k in COUNTS}
    overall.update({"repos": len(reports), "repos_ok": sum(r["status"] == "ok" for r in reports.values()),
                    "repos_error": sum(r["status"] == "error" for r in reports.values())})
    overall["null_passed_share"] = _share(overall)
    report = {"jsonl": str(jsonl.resolve()), "repos_dir": str(repos), "builder_version": __version__,
              "verify": verify, "isolation": str(isolation), "isolation_note": note,
              "overall": overall, "repos": reports}
    write_atomic(out / "samples.jsonl", lambda p: write_jsonl(kept, p))
    write_atomic(out / "all_samples.jsonl", lambda p: write_jsonl(all_samples, p))
    records = [RepoRecord.from_dict(rec) for r in reports.values()
               if (rec := r.pop("repository", None)) and r["status"] == "ok"]
    write_atomic(out / "repositories.jsonl", lambda p: write_repo_records(records, p))
    write_atomic(out / "import_report.json",
                  lambda p: p.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8"))
    return report
