"""One options object per entry point (`execrepobench_metric/options.py`): every option is named once, with
its default and doc, and reaches `compute()`, the evaluate module's description and the command line from
there; bad and unknown values are refused, named, before anything runs.  And every default time limit is
named once (`defaults.py`)."""
import argparse
import dataclasses
import re
from pathlib import Path

import pytest

from execrepobench.runner.cli import COMMANDS, EVALUATE_SETS, RUN_SETS
from execrepobench.runner.run import RunConfig
from execrepobench_metric import defaults
from execrepobench_metric.api import compute
from execrepobench_metric.evaluate_module import KWARGS_DESCRIPTION
from execrepobench_metric.inputs import InputError
from execrepobench_metric.options import (EvaluationOptions, RuntimeOptions, UnknownOption, from_args, from_kwargs,
                                          option_fields)

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = [f.name for f in option_fields()]


def parser_of(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=command)
    COMMANDS[command][1](parser)
    return parser


def not_on_the_command_line(parser: argparse.ArgumentParser, sets: dict[str, str]) -> list[str]:
    """Options with no flag in `parser`, no note of what sets them on any command line, and not set by the command."""
    dests = {a.dest for a in parser._actions}
    return [f.name for f in option_fields() if f.name not in dests and not f.metadata["cli"] and f.name not in sets]


def test_every_option_has_a_default_a_doc_and_a_check():
    assert len(OPTIONS) == len(set(OPTIONS)) >= 17  # the 17 keyword arguments compute() always took
    for f in option_fields():
        assert f.default is not dataclasses.MISSING and f.metadata["doc"].strip(), f.name
        assert callable(f.metadata["check"]) and (f.metadata["flag"] or f.metadata["cli"]), f.name


def test_every_option_is_in_the_evaluate_description_and_the_metric_card():
    import execrepobench_metric.evaluate_module as module

    info = module.ExecRepoBenchMetric._info(None)
    card = (ROOT / "execrepobench_metric" / "README.md").read_text(encoding="utf-8")
    for name in OPTIONS:
        assert f"\n    {name}: " in KWARGS_DESCRIPTION and f"\n    {name}: " in info.inputs_description, name
        assert f"- **{name}** (" in card, f"the metric card (execrepobench_metric/README.md) does not describe {name}"


@pytest.mark.parametrize("command, sets", [("evaluate", EVALUATE_SETS), ("run", RUN_SETS)])
def test_every_option_is_on_the_command_line(command, sets):
    assert not_on_the_command_line(parser_of(command), sets) == []
    assert set(sets) <= set(OPTIONS)


def test_a_missing_flag_is_found():
    """The check above fails for a command that forgot an option."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", dest="k")
    assert "timeout" in not_on_the_command_line(parser, {}) and "k" not in not_on_the_command_line(parser, {})


def test_flags_to_options():
    parser = parser_of("evaluate")
    base = ["--samples", "s.jsonl", "--reference-fill", "null", "--out", "o"]
    assert from_args(parser.parse_args(base)) == (EvaluationOptions(), RuntimeOptions())  # no flag: the defaults
    args = parser.parse_args([*base, "--k", "1", "--k", "5", "--timeout", "30", "--test-selection", "suite",
                              "--cutoff", "2026-01-01", "--model-name", "m", "--allow-exec", "--allow-weak-sandbox",
                              "--workers", "3", "--prepare", "--executor", "ray", "--ray-address", "auto",
                              "--keep-artifacts", "--no-progress"])
    evaluation, runtime = from_args(args, journal=Path("o/journal.jsonl"))
    assert evaluation == EvaluationOptions(k=(1, 5), timeout=30.0, test_selection="suite", cutoff="2026-01-01",
                                           model_name="m")
    assert runtime == RuntimeOptions(allow_exec=True, allow_weak_sandbox=True, num_workers=3, prepare=True,
                                     executor="ray", ray_address="auto", journal=Path("o/journal.jsonl"),
                                     keep_artifacts=True, progress=False)
    run_args = parser_of("run").parse_args(["--out", "o", "--k", "2", "--workers", "4", "--no-progress"])
    assert from_args(run_args) == (EvaluationOptions(k=(2,)), RuntimeOptions(num_workers=4, progress=False))
    # the ks as one list too (the habit of nargs flags), mixed with a repeated flag
    listed = parser_of("run").parse_args(["--out", "o", "--k", "1", "10", "--k", "100"])
    assert from_args(listed)[0] == EvaluationOptions(k=(1, 10, 100))
    twice = parser_of("run").parse_args(["--out", "o", "--k", "2", "--k", "2", "1"])
    assert from_args(twice)[0].k == (2, 1)  # each k once


def test_bad_and_unknown_options_are_named_before_anything_runs():
    """No allow_exec, no sample: the options are refused first, each by name."""
    with pytest.raises(UnknownOption, match=r"field num_worker, timout: not an option of compute\(\)") as unknown:
        compute(["x"], ["sample-id"], timout=3, num_worker=2)
    assert isinstance(unknown.value, TypeError) and "num_workers" in str(unknown.value)  # the options are listed
    with pytest.raises(InputError) as bad:
        compute(["x"], ["sample-id"], k=[0], executor="slurm", progress="yes", timeout=-1, cutoff="soon")
    for said in ("field k: must be a non-empty list of positive integers", "field executor: 'slurm': use one of",
                 "field progress: expected True or False", "field timeout: expected a positive number",
                 "field cutoff: expected a date YYYY-MM-DD"):
        assert said in str(bad.value), said
    with pytest.raises(InputError, match="field num_workers"):
        RuntimeOptions(num_workers=0)  # built directly: checked the same way
    evaluation, runtime = from_kwargs({"k": [1, 10], "dataset": "x", "journal": "j.jsonl"})
    assert evaluation.k == (1, 10) and evaluation.dataset == "x" and runtime.journal == Path("j.jsonl")


def test_the_runner_holds_the_options_not_copies_of_them():
    names = {f.name for f in dataclasses.fields(RunConfig)}
    assert {"evaluation", "runtime"} <= names
    # `dataset` there names the source to open (a folder or Hub id); the option is set from what was opened
    assert not (names - {"dataset"}) & (set(OPTIONS) | {"workers", "timeout_s"})


def test_time_limits_are_named_once():
    """The values did not change, and no package module states a time limit as a bare number."""
    assert (defaults.DEFAULT_TIMEOUT_S, defaults.VERIFY_TIMEOUT_S, defaults.BASELINE_TIMEOUT_S,
            defaults.LIVE_BASELINE_TIMEOUT_S, defaults.PYTEST_TIMEOUT_S, defaults.CPU_LIMIT_S,
            defaults.TOOL_TIMEOUT_S, defaults.PROBE_TIMEOUT_S) == (300.0, 300.0, 900.0, 300.0, 600.0, 900, 900, 120)
    literal = re.compile(r"timeout\w*(\s*:\s*[\w|. ]+)?\s*=\s*\d|timeout\"[^)]*default=\d|or \d+\.\d+\)"
                         r"|cpu_seconds: int = \d")
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for folder in ("builder", "runner", "execrepobench_metric", "execrepobench_dataset")
             for path in sorted((ROOT / folder).rglob("*.py")) if path.name != "defaults.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if literal.search(line)]
    assert found == []
