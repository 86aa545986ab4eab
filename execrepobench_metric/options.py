"""The options of an evaluation, each named once: `EvaluationOptions` (what is judged and scored) and
`RuntimeOptions` (how and where it runs).  Every field carries its default, a one-line doc and how the
command line sets it (`option`).  From them come `compute()`'s keyword arguments (`from_kwargs`), the
evaluate module's description of them (`describe`) and the flags of `execrepobench evaluate` and `run`
(`add_flags`, `from_args`): adding an option is one field here, plus the code that reads it.

Bad values are refused before anything runs: one `InputError` names every bad option (`field NAME`); a
name that is no option is an `UnknownOption` (an InputError, and a TypeError like Python's own for a
keyword a function does not take) that lists the options.
"""
from __future__ import annotations

import argparse
import os
import textwrap
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping

from .cutoff import check_cutoff
from .defaults import DEFAULT_TIMEOUT_S
from .errors import InputError, UnknownOption
from .execution.executors.base import EXECUTORS
from .inputs import SELECTIONS, Problem, k_problem, selection_problem


def option(default: Any, doc: str, check: Callable[[str, Any], Any], *, flag: str | None = None,
           cli: str | None = None, **argparse_kwargs: Any) -> Any:
    """A field: its default, its one-line doc, `check(name, value) -> value` (normalised; raises
    InputError), and either the command-line `flag` (with argparse keywords) or `cli`: what sets it there."""
    assert (flag is None) != (cli is None), "an option has a flag, or says what sets it on the command line"
    return field(default=default, metadata={"doc": doc, "check": check, "flag": flag, "cli": cli,
                                            "argparse": argparse_kwargs})


def _bad(name: str, message: str) -> InputError:
    return InputError.of([Problem("input", None, None, name, message)])


def _k(name: str, value: Any) -> tuple[int, ...]:
    if (said := k_problem(value)) is not None:
        raise _bad(name, said)
    return tuple(dict.fromkeys(value))  # each k once, in the order given (`--k 2 --k 2` is pass@2)


def _selection(name: str, value: Any) -> str:
    if (said := selection_problem(value)) is not None:
        raise _bad(name, said)
    return value


def _optional(check: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    return lambda name, value: None if value is None else check(name, value)


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _bad(name, f"expected True or False, got {value!r}")
    return value


def _positive(kind: type) -> Callable[[str, Any], Any]:
    def check(name: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int) or value <= 0:
            raise _bad(name, f"expected a positive {'number' if kind is float else 'integer'}, got {value!r}")
        return value
    return check


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _bad(name, f"expected a non-empty string, got {value!r}")
    return value


def _path(name: str, value: Any) -> Path:
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise _bad(name, f"expected a path, got {value!r}")
    return Path(value)


def _place(name: str, value: Any) -> str | Path:
    """A dataset: a folder or file (kept as given) or a Hub dataset id."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise _bad(name, f"expected a folder, a file or a Hub dataset id, got {value!r}")
    return value


def _choice(choices: tuple[str, ...]) -> Callable[[str, Any], str]:
    def check(name: str, value: Any) -> str:
        if value not in choices:
            raise _bad(name, f"{value!r}: use one of {', '.join(choices)}")
        return value
    return check


def _cutoff(name: str, value: Any) -> str:
    return check_cutoff(value)


def _checked(self) -> None:
    """Every field through its check (normalised in place); one InputError names every bad one."""
    problems = []
    for f in fields(self):
        try:
            object.__setattr__(self, f.name, f.metadata["check"](f.name, getattr(self, f.name)))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError.of(problems)


@dataclass(frozen=True)
class EvaluationOptions:
    """What is judged and how it is scored."""

    k: tuple[int, ...] = option((1,), "the k of pass@k (a list; on the command line `--k 1 10` or `--k 1 --k 10`), "
                                "reported for k <= n completions", _k, flag="--k", type=int, action="extend",
                                nargs="+")
    timeout: float | None = option(
        None, "wall seconds per judged run; unset: each sample's time budget (CPU seconds measured from its ground "
        f"truth at build time, with a wall-clock backstop), {DEFAULT_TIMEOUT_S:g} s for a sample without one",
        _optional(_positive(float)), flag="--timeout", type=float, metavar="SECONDS")
    test_selection: str = option("judged", "the tests that judge a completion: 'judged' (the sample's judged tests) "
                                 "or 'suite' (the whole suite but its excluded tests)", _selection,
                                 flag="--test-selection", choices=SELECTIONS)
    cutoff: str | None = option(
        None, "a model's training cutoff, YYYY-MM-DD: only samples released after that day (their `release_date`, "
        "recorded by live snapshots) are judged and scored, the result's `cutoff` says how many; unset: every "
        "sample", _optional(_cutoff), flag="--cutoff", metavar="YYYY-MM-DD")
    dataset: str | Path | None = option(
        None, "where sample ids and repository records are looked up: a builder output folder, its samples.jsonl, "
        "a published folder or a Hub dataset id; unset: references must be records", _optional(_place),
        cli="--dataset or --samples")
    model_name: str = option("model", "the first cell of the LaTeX row", _text, flag="--model-name")
    lenient: bool = option(False, "judge by the tests alone: without it (strict, the default) a passed completion "
                           "that uses a capability neither the visible file nor the ground truth uses (code objects, "
                           "frames, gc, finalizers, atexit, marshal, exec, sys.modules, import machinery, objects "
                           "equal to anything, ...) is `refused`", _bool, flag="--lenient", action="store_true")
    impossible: bool = option(
        False, "also judge the completions against each sample's impossible variant (its judged tests perturbed so "
        "that the ground truth fails them; samples where none bites are dropped and counted) and report the cheating "
        "rate, their pass rate there (`impossible/...`); needs the environments on this machine", _bool,
        flag="--impossible", action="store_true")

    __post_init__ = _checked


@dataclass(frozen=True)
class RuntimeOptions:
    """How and where the judgements run: none of these changes a verdict."""

    allow_exec: bool | None = option(
        None, "run model code at all (sandboxed); unset: only if EXECREPOBENCH_ALLOW_EXEC=1 or, as for evaluate's "
        "code_eval, HF_ALLOW_CODE_EVAL=1", _optional(_bool), flag="--allow-exec", action="store_true")
    allow_weak_sandbox: bool = option(False, "accept running without bubblewrap (rlimits and the timeout only); the "
                                      "output says so", _bool, flag="--allow-weak-sandbox", action="store_true")
    num_workers: int | None = option(None, "parallel sandboxed runs; unset: the number of cores",
                                     _optional(_positive(int)), flag="--workers", type=int, metavar="N")
    prepare: bool | None = option(
        None, "make missing environments first from the dataset's repository records (unset: EXECREPOBENCH_PREPARE"
        "=1); else missing environments are named, with the `execrepobench prepare` command, and nothing is judged",
        _optional(_bool), flag="--prepare", action="store_true")
    executor: str = option(
        "local", "where judgements run: 'local' (threads on this machine) or 'ray' (a Ray cluster, pip install "
        "'execrepobench[ray]'; each node makes the environments it lacks from the repository records)",
        _choice(EXECUTORS), flag="--executor", choices=EXECUTORS)
    ray_address: str | None = option(None, "with executor 'ray': 'auto', HOST:PORT, or unset (RAY_ADDRESS, else a "
                                     "Ray instance started here)", _optional(_text), flag="--ray-address")
    journal: Path | None = option(None, "a JSONL file recording each verdict as it lands; running again with it "
                                  "resumes; unset: none", _optional(_path), cli="OUT/journal.jsonl")
    use_cache: bool = option(True, "reuse the verdicts of identical completed files", _bool,
                             cli="always on (the cache is keyed by everything that decides a verdict)")
    keep_artifacts: bool = option(False, "keep the evidence of every run (command, junit XML, plugin records, "
                                  "output tails, timing, verdict); always kept for `error` verdicts", _bool,
                                  flag="--keep-artifacts", action="store_true")
    artifacts_dir: Path | None = option(
        None, "where evidence goes, each detail row's `artifacts` relative to the result's `artifacts_base`; "
        "unset: under the cache, one folder per evaluation", _optional(_path), cli="OUT/artifacts")
    progress: bool = option(True, "show progress bars", _bool, flag="--no-progress", action="store_false",
                            help="no progress bars")
    known_verdicts: bool = option(
        True, "a completion byte-identical to a verified sample's ground truth takes the verdict its build "
        "recorded, without a run; False runs it (`run --backend oracle` always does: an end-to-end check of the "
        "environments and the sandbox)", _bool, flag="--rerun-ground-truths", action="store_false",
        help="run completions identical to a sample's ground truth instead of taking the verdict its build "
             "recorded")

    __post_init__ = _checked


OPTION_CLASSES = (EvaluationOptions, RuntimeOptions)


def option_fields() -> list:
    """Every option's field, evaluation options first."""
    return [f for cls in OPTION_CLASSES for f in fields(cls)]


def from_kwargs(kwargs: Mapping[str, Any], *, where: str = "compute()") -> tuple[EvaluationOptions, RuntimeOptions]:
    """The options from keyword arguments (unset ones keep their defaults); one error names every bad one."""
    known = {f.name for f in option_fields()}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise UnknownOption.of([Problem("input", None, None, ", ".join(unknown), f"not an option of {where} (the "
                                        f"options: {', '.join(sorted(known))})")])
    built, problems = [], []
    for cls in OPTION_CLASSES:
        try:
            built.append(cls(**{f.name: kwargs[f.name] for f in fields(cls) if f.name in kwargs}))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError.of(problems)
    return built[0], built[1]


def add_flags(parser: argparse.ArgumentParser, skip: Mapping[str, str] = {}) -> None:
    """The options' flags (each with its doc as help); `skip`: option -> what sets it for this command."""
    for f in option_fields():
        if f.metadata["flag"] is not None and f.name not in skip:
            parser.add_argument(f.metadata["flag"], dest=f.name, default=None,
                                **{"help": f.metadata["doc"], **f.metadata["argparse"]})


def from_args(args: argparse.Namespace, **fixed: Any) -> tuple[EvaluationOptions, RuntimeOptions]:
    """The options from parsed flags (a flag not given keeps the default) and what the command sets itself."""
    given = {f.name: getattr(args, f.name) for f in option_fields()
             if f.metadata["flag"] is not None and getattr(args, f.name, None) is not None}
    return from_kwargs({**given, **fixed}, where="this command")


def describe(indent: str = "    ") -> str:
    """Each option as `name: doc (default ...)` (a None default: the doc says what unset means), wrapped:
    the evaluate module's description of its keyword arguments."""
    lines = []
    for f in option_fields():
        text = f"{f.name}: {f.metadata['doc']}" + ("." if f.default is None else f" (default {f.default!r}).")
        lines += textwrap.wrap(text, 108, initial_indent=indent, subsequent_indent=indent * 2)
    return "\n".join(lines)
