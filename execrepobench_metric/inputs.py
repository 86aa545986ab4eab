"""Predictions and references checked before anything is cast or run.

`check_inputs` looks at every item first and raises one `InputError` listing every problem, each
naming the item index, the sample id (when known) and the field; only when all items are valid does
it return the completions (a list of strings per sample) and the `Sample`s to judge.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from execrepobench_dataset.errors import RecordError
from execrepobench_dataset.record import FILL_TYPES, OPTIONAL_ON_READ, Sample

from .errors import InputError
from .execution.pytest_run import PytestInvocation

SELECTIONS = ("judged", "suite")

_FIELDS = {f.name: f for f in dataclasses.fields(Sample)}
_REQUIRED = [name for name, f in _FIELDS.items() if f.default is dataclasses.MISSING and name not in OPTIONAL_ON_READ]
_BY_TYPE: dict[str, list[str]] = {}
for _f in _FIELDS.values():  # field types from the record's dataclass (the one schema)
    _BY_TYPE.setdefault(str(_f.type), []).append(_f.name)
_STR, _INT, _FLOAT = _BY_TYPE.get("str", []), _BY_TYPE.get("int", []), _BY_TYPE.get("float", [])
_STR_LISTS = _BY_TYPE.get("tuple[str, ...]", [])
_FLOAT_LISTS = _BY_TYPE.get("tuple[float, ...]", [])
_NON_EMPTY = ("sample_id", "repo_name", "file_name", "env_key")


@dataclass(frozen=True)
class Problem:
    kind: str  # "prediction", "reference" or "input" (the call as a whole)
    index: int | None
    sample_id: str | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.kind if self.index is None else f"{self.kind} {self.index}"
        if self.sample_id:
            where += f" (sample {self.sample_id})"
        return f"{where}, field {self.field}: {self.message}"


def _type_name(value: Any) -> str:
    return type(value).__name__


def _is_str_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value)


def _as_list(value: Any) -> list | None:
    """A sequence of items as a list; None for a str/bytes/mapping/scalar (not a list of items)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        return None
    return list(value)


def check_record(data: Mapping[str, Any], selection: str) -> list[tuple[str, str]]:
    """(field, message) for each way the record `data` is not a judgeable sample."""
    out: list[tuple[str, str]] = []
    required = [*_REQUIRED, "test_command"] + (["judged_tests"] if selection == "judged" else [])
    out += [(name, "missing") for name in required if name not in data]
    out += [(name, "unknown field") for name in data if name not in _FIELDS]
    for name in _STR:
        if name in data and not isinstance(data[name], str):
            out.append((name, f"must be a string, got {_type_name(data[name])}"))
        elif name in _NON_EMPTY and name in data and not data[name].strip():
            out.append((name, "must not be empty"))
    for name in _INT:
        if name in data and (not isinstance(data[name], int) or isinstance(data[name], bool)):
            out.append((name, f"must be an integer, got {data[name]!r}"))
    for name in _FLOAT:
        value = data.get(name, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            out.append((name, f"must be a non-negative number, got {value!r}"))
    for name in _STR_LISTS:
        if name in data and not _is_str_list(data[name]):
            out.append((name, f"must be a list of strings, got {_type_name(data[name])}"))
    for name in _FLOAT_LISTS:
        value = data.get(name, [])
        if not isinstance(value, (list, tuple)) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            out.append((name, f"must be a list of numbers, got {_type_name(value)}"))
    context = data.get("context_code") or []  # left out (or None) in rows that name their context by path
    if not isinstance(context, (list, tuple)) or not all(
            isinstance(c, Mapping) and set(c) == {"path", "code"} and all(isinstance(v, str) for v in c.values())
            for c in context):
        out.append(("context_code", "must be a list of {path: str, code: str}"))
    if isinstance(data.get("fill_type"), str) and data["fill_type"] not in FILL_TYPES:
        out.append(("fill_type", f"{data['fill_type']!r} is not one of {FILL_TYPES}"))
    command = data.get("test_command")
    if _is_str_list(command):
        if not command:
            out.append(("test_command", "must not be empty"))
        else:
            try:
                PytestInvocation.from_test_command(command, python="python", root=Path("."))
            except ValueError as exc:
                out.append(("test_command", str(exc)))
    if selection == "judged" and _is_str_list(data.get("judged_tests")):
        if not data["judged_tests"]:
            out.append(("judged_tests", "empty: a sample must name the tests that judge it "
                                        "(or pass test_selection='suite' to run the whole suite)"))
        elif not all(t.strip() for t in data["judged_tests"]):
            out.append(("judged_tests", "contains an empty test id"))
    return out


def _reference(i: int, ref: Any, selection: str, lookup: Callable[[str], Sample | str | None]
               ) -> tuple[Sample | None, str | None, list[Problem]]:
    """(sample or None, its id if known, problems) for reference `i`; a sample id that `lookup`
    defers (None) is valid for now and has no sample yet."""
    if isinstance(ref, Sample):
        data: Any = ref.to_dict()
    elif isinstance(ref, Mapping):
        data = ref
    elif isinstance(ref, str) and ref.lstrip().startswith("{"):
        try:
            data = json.loads(ref)
        except ValueError as exc:
            return None, None, [Problem("reference", i, None, "references", f"not valid JSON: {exc}")]
    elif isinstance(ref, str) and ref.strip():
        found = lookup(ref)
        if found is None:
            return None, ref, []
        if isinstance(found, str):
            return None, ref, [Problem("reference", i, ref, "sample_id", found)]
        data = found.to_dict()
    else:
        return None, None, [Problem("reference", i, None, "references",
                                    "expected a sample record (dict or Sample), its JSON text or a sample id, "
                                    f"got {_type_name(ref) if not isinstance(ref, str) else 'an empty string'}")]
    if not isinstance(data, Mapping):
        return None, None, [Problem("reference", i, None, "references", f"JSON text is a {_type_name(data)}, "
                                                                         "not a record")]
    sid = data.get("sample_id") if isinstance(data.get("sample_id"), str) else None
    problems = [Problem("reference", i, sid, f, m) for f, m in check_record(data, selection)]
    if problems:
        return None, sid, problems
    if isinstance(ref, Sample):
        return ref, sid, []
    try:  # the record's own invariants (byte offsets, path form)
        return Sample.from_dict(data), sid, []
    except (RecordError, TypeError, ValueError) as exc:
        return None, sid, [Problem("reference", i, sid, "record", str(exc))]


def check_prediction(i: int, pred: Any, sid: str | None) -> tuple[list[str] | None, list[Problem]]:
    if isinstance(pred, str):
        return [pred], []
    bad = lambda msg: (None, [Problem("prediction", i, sid, "predictions", msg)])  # noqa: E731
    if not isinstance(pred, (list, tuple)):
        return bad(f"expected a string or a non-empty list of strings, got {_type_name(pred)}")
    if not pred:
        return bad("an empty list: give at least one completion")
    wrong = [f"completion {j} is {_type_name(c)}" for j, c in enumerate(pred) if not isinstance(c, str)]
    if wrong:
        return bad("expected a list of strings: " + ", ".join(wrong[:5]))
    return list(pred), []


def k_problem(k: Any) -> str | None:
    """What is wrong with `k` (the ks of pass@k), or None."""
    ks = _as_list(k)
    if ks is None or not ks or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in ks):
        return f"must be a non-empty list of positive integers, got {k!r}"
    return None


def selection_problem(test_selection: Any) -> str | None:
    """What is wrong with `test_selection`, or None."""
    return None if test_selection in SELECTIONS else f"{test_selection!r}: use one of {SELECTIONS}"


def check_inputs(predictions: Any, references: Any, *, dataset: str | Path | None = None,
                 test_selection: str = "judged", k: Any = (1,),
                 load_dataset: Callable[[str | Path], Mapping[str, Sample]] | None = None,
                 defer_ids: bool = False) -> tuple[list[list[str]], list[Sample]]:
    """(completions per sample, samples), or one `InputError` naming every bad item.

    `defer_ids`: sample ids are accepted unchecked (their slot in the samples is None): for
    `evaluate`'s `add`/`add_batch`, where `dataset=` arrives only with `compute`."""
    problems = [Problem("input", None, None, name, said)
                for name, said in (("test_selection", selection_problem(test_selection)), ("k", k_problem(k))) if said]
    preds, refs = _as_list(predictions), _as_list(references)
    if preds is None:
        problems.append(Problem("input", None, None, "predictions",
                                f"must be a list (one entry per sample), got {_type_name(predictions)}"))
    if refs is None:
        problems.append(Problem("input", None, None, "references",
                                f"must be a list (one entry per sample), got {_type_name(references)}"))
    if preds is None or refs is None:
        raise InputError.of(problems)
    if len(preds) != len(refs):
        problems.append(Problem("input", None, None, "predictions",
                                f"{len(preds)} prediction(s) for {len(refs)} reference(s): lengths must match"))
    elif not refs and not defer_ids:
        problems.append(Problem("input", None, None, "references", "no samples given: nothing to judge"))
    table: dict[str, Any] = {}

    def lookup(sample_id: str) -> Sample | str | None:
        if defer_ids:
            return None
        if dataset is None or load_dataset is None:
            return "is a sample id, but no dataset= was given to look it up in"
        if "samples" not in table:
            try:
                table["samples"] = load_dataset(dataset)
            except (OSError, RecordError, ValueError) as exc:
                table["samples"], table["error"] = {}, f"dataset {dataset} could not be read: {exc}"
        if "error" in table:
            return table["error"]
        return table["samples"].get(sample_id) or f"unknown sample id {sample_id!r} (not in {dataset})"

    samples: list[Sample | None] = []
    ids: list[str | None] = []
    for i, ref in enumerate(refs):
        sample, sid, found = _reference(i, ref, test_selection, lookup)
        samples.append(sample)
        ids.append(sid)
        problems += found
    completions: list[list[str]] = []
    for i, pred in enumerate(preds):
        comps, found = check_prediction(i, pred, ids[i] if i < len(ids) else None)
        completions.append(comps or [])
        problems += found
    if problems:
        raise InputError.of(problems)
    return completions, samples  # type: ignore[return-value]  # no problem: every slot is a Sample (or deferred)


def canonical_reference(ref: Any) -> str:
    """A valid reference as text: the record's JSON (sorted keys) or the sample id.  `evaluate` stores
    every reference as this one string type, so nothing is cast behind our back."""
    if isinstance(ref, Sample):
        ref = ref.to_dict()
    if isinstance(ref, Mapping):
        return json.dumps(dict(ref), sort_keys=True, ensure_ascii=False)
    return ref
