"""The one sample record shared by the builder, the dataset and the metric.

The builder writes `Sample`s, the dataset publishes them (its `FEATURES` are derived from this
module), and the metric judges them.  This module imports nothing from the other rooms.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from .errors import RecordError


# The paper's six fill types, exactly as spelled in the official release.
FILL_SPAN = "Random Span Completion"
FILL_SINGLE_LINE = "Random Single-line Completion"
FILL_MULTI_LINE = "Random Multi-line Completion"
FILL_EXPRESSION = "grammar-based: expression"
FILL_STATEMENT = "grammar-based: statement"
FILL_BLOCK = "grammar-based: block"
FILL_TYPES = (FILL_SPAN, FILL_SINGLE_LINE, FILL_MULTI_LINE, FILL_EXPRESSION, FILL_STATEMENT, FILL_BLOCK)

# Grammar-based level -> fill type; random kinds are their own level.
LEVEL_TO_FILL = {"expression": FILL_EXPRESSION, "statement": FILL_STATEMENT, "block": FILL_BLOCK}


@dataclass(frozen=True)
class ContextFile:
    path: str  # repo-relative POSIX path
    code: str


# Fields a record may leave out when read: the published rows of samples that name their context by path have
# no `context_code` column (it would always be empty); read back, it is ().
OPTIONAL_ON_READ = frozenset({"context_code"})


@dataclass(frozen=True)
class Sample:
    sample_id: str
    repo_name: str
    repo_source: str  # exact, pinned spec: "pypi:NAME==VER#sha256=...", "git:URL@COMMIT", "path:DIR#tree=..."
    file_name: str  # repo-relative POSIX path of the masked file
    prefix_code: str
    middle_code: str
    suffix_code: str
    # Ranked cross-file context, most relevant first, in one of two forms: materialised (`context_code`:
    # path + code per file) or by reference (`context_paths` + `context_scores`, the code read from the
    # repository record's `files`); `execrepobench_dataset.context.ranked_context` reads either.
    context_code: tuple[ContextFile, ...]
    fill_type: str  # one of FILL_TYPES
    node_type: str  # tree-sitter node type, or "line" / "lines" / "span" for random masks
    middle_start_byte: int  # UTF-8 byte offsets of the middle in the original file
    middle_end_byte: int
    env_key: str
    seed: int
    builder_version: str
    # Test selection (filled by verification; empty until then).
    test_command: tuple[str, ...] = ()
    judged_tests: tuple[str, ...] = ()
    excluded_tests: tuple[str, ...] = ()
    selection_rule: str = ""
    # Audit events the ground truth itself triggers from the masked file during its judged run
    # (recorded at verification); the runtime guard allows these and fails any other as tampering.
    guard_allowed: tuple[str, ...] = ()
    # The ranked context by reference: repo-relative paths into the repository record's `files`, most
    # relevant first, and each file's score (import score + normalised BM25); empty for materialised samples.
    context_paths: tuple[str, ...] = ()
    context_scores: tuple[float, ...] = ()
    # Mutation adequacy (verification): how many AST-level mutants of the ground truth (operator swaps,
    # off-by-one constants, negated conditions, dropped return values) its judged tests killed, of how many.
    mutants_killed: int = 0
    mutants_total: int = 0
    # Live snapshots (`execrepobench live`): the target sdist's upload time (ISO 8601 UTC) and the baseline
    # release the masked code is new against, with its upload time ("" for samples of other builds, and for
    # the baseline of a project with no release before the window).
    release_date: str = ""
    baseline_version: str = ""
    baseline_date: str = ""

    def __post_init__(self) -> None:
        validate(self)

    @property
    def original_code(self) -> str:
        return self.prefix_code + self.middle_code + self.suffix_code

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["context_code"] = [dict(c) for c in d["context_code"]]
        d["context_scores"] = list(d["context_scores"])
        for key in _LIST_FIELDS:
            d[key] = list(d[key])
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Sample":
        where = data.get("sample_id", "<no sample_id>") if isinstance(data, Mapping) else "<not a mapping>"
        if not isinstance(data, Mapping):
            raise RecordError(f"record {where}: expected a mapping, got {type(data).__name__}")
        # Budgets were once stored in the sample; they are measurements, not content, and live in the
        # repository's measurements now (execrepobench_dataset.measurements): old records' values are dropped.
        check_fields(cls, data, f"record {where}", optional=OPTIONAL_ON_READ, ignored=LEGACY_MEASURED_FIELDS)
        data = {k: v for k, v in data.items() if k not in LEGACY_MEASURED_FIELDS}
        kwargs = dict(data)
        try:
            kwargs["context_code"] = tuple(
                ContextFile(path=c["path"], code=c["code"]) if isinstance(c, Mapping) else ContextFile(*c)
                for c in data.get("context_code") or ()
            )
        except (TypeError, KeyError, ValueError) as exc:
            raise RecordError(f"record {where}: context_code must be a list of {{path, code}}: {exc}") from None
        for key in _LIST_FIELDS:
            if key in kwargs:
                kwargs[key] = tuple(kwargs[key] or ())
        if "context_scores" in kwargs:
            kwargs["context_scores"] = tuple(float(x) if type(x) is int else x for x in kwargs["context_scores"] or ())
        return cls(**kwargs)


LEGACY_MEASURED_FIELDS = ("time_budget_s", "phase_budget_s")
_LIST_FIELDS = ("test_command", "judged_tests", "excluded_tests", "guard_allowed", "context_paths")
_STR_FIELDS = ("sample_id", "repo_name", "repo_source", "file_name", "prefix_code", "middle_code",
               "suffix_code", "fill_type", "node_type", "env_key", "builder_version", "selection_rule",
               "release_date", "baseline_version", "baseline_date")


def check_fields(cls, data: Mapping[str, Any], where: str, *, optional: Iterable[str] = (),
                 ignored: Iterable[str] = ()) -> None:
    """`data` has every field of the dataclass `cls` without a default (but those `optional`) and no other
    (but those `ignored`); else RecordError naming `where` and the fields."""
    fields = dataclasses.fields(cls)
    required = {f.name for f in fields if f.default is dataclasses.MISSING}
    missing = sorted(required - set(optional) - set(data))
    if missing:
        raise RecordError(f"{where}: missing field(s) {', '.join(missing)}")
    unknown = sorted(set(data) - {f.name for f in fields} - set(ignored))
    if unknown:
        raise RecordError(f"{where}: unknown field(s) {', '.join(unknown)}")


def validate(sample: Sample) -> None:
    where = f"record {sample.sample_id!r}"
    for name in _STR_FIELDS:
        if not isinstance(getattr(sample, name), str):
            raise RecordError(f"{where}: field {name} must be a string, got {type(getattr(sample, name)).__name__}")
    for name in ("middle_start_byte", "middle_end_byte", "seed", "mutants_killed", "mutants_total"):
        value = getattr(sample, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise RecordError(f"{where}: field {name} must be an integer, got {value!r}")
    if sample.fill_type not in FILL_TYPES:
        raise RecordError(f"{where}: fill_type {sample.fill_type!r} is not one of {FILL_TYPES}")
    start = len(sample.prefix_code.encode("utf-8"))
    end = start + len(sample.middle_code.encode("utf-8"))
    if (sample.middle_start_byte, sample.middle_end_byte) != (start, end):
        raise RecordError(f"{where}: middle byte offsets {sample.middle_start_byte}..{sample.middle_end_byte} "
                          f"do not match prefix/middle ({start}..{end})")
    if "\\" in sample.file_name or sample.file_name.startswith("/"):
        raise RecordError(f"{where}: file_name {sample.file_name!r} must be a repo-relative POSIX path")
    for name in _LIST_FIELDS:
        if not all(isinstance(x, str) for x in getattr(sample, name)):
            raise RecordError(f"{where}: field {name} must be a list of strings")
    _validate_context(sample, where)


def _validate_context(sample: Sample, where: str) -> None:
    paths, scores = sample.context_paths, sample.context_scores
    if not all(type(x) is float and x == x for x in scores):
        raise RecordError(f"{where}: field context_scores must be a list of numbers")
    if len(scores) != len(paths):
        raise RecordError(f"{where}: context_scores has {len(scores)} entries for {len(paths)} context_paths")
    if len(set(paths)) != len(paths) or sample.file_name in paths:
        raise RecordError(f"{where}: context_paths must name distinct files other than {sample.file_name!r}")
    if sample.context_code and paths and tuple(c.path for c in sample.context_code) != paths:
        raise RecordError(f"{where}: context_code and context_paths name different files (both forms given)")


def make_sample_id(repo_source: str, file_name: str, prefix: str, middle: str, suffix: str, fill_type: str) -> str:
    """Stable content hash: the same mask of the same pinned file always gets the same id."""
    h = hashlib.sha256()
    for part in (repo_source, file_name, fill_type, prefix, middle, suffix):
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:24]


def write_jsonl(records: Iterable, path) -> int:
    """Write records (anything with `to_dict()`) as JSON lines; sorted keys, so equal records give
    equal bytes."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record.to_dict(), sort_keys=True, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_records(path, from_dict) -> Iterator:
    """Records from JSON lines via `from_dict`; errors name path:line."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield from_dict(json.loads(line))
            except json.JSONDecodeError as exc:
                raise RecordError(f"{path}:{lineno}: not valid JSON: {exc}") from None
            except (RecordError, TypeError, ValueError) as exc:
                raise RecordError(f"{path}:{lineno}: {exc}") from None


def read_jsonl(path) -> Iterator[Sample]:
    return read_records(path, Sample.from_dict)


def _feature_of(tp: str):
    from datasets import List, Value

    if tp in ("str",):
        return Value("string")
    if tp == "int":
        return Value("int64")
    if tp == "float":
        return Value("float64")
    if tp == "tuple[str, ...]":
        return List(Value("string"))
    if tp == "tuple[float, ...]":
        return List(Value("float64"))
    if tp == "tuple[ContextFile, ...]":
        return List({"path": Value("string"), "code": Value("string")})
    raise TypeError(f"no datasets feature for field type {tp}")


def features():
    """`datasets.Features` of a sample record, derived from the dataclass (the one schema)."""
    from datasets import Features

    return Features({f.name: _feature_of(str(f.type)) for f in dataclasses.fields(Sample)})


def __getattr__(name: str):
    if name == "FEATURES":  # lazy: importing `datasets` is slow and only publishing/loading needs it
        return features()
    raise AttributeError(name)
