"""The first step of a judgement (`judge.py`): `plan_run` - compile the completed file, find the environment,
check for a known verdict, and make the pytest invocation with its limits, read-only paths, guard and canaries."""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from execrepobench_dataset.record import Sample
from execrepobench_metric.environments.venvs import find_environment

from .budget import Budget, run_limits
from .canaries import CanaryPlan, plan_canaries
from .guard import GuardSetup
from .impossible import variant_files
from .limits import Limits
from .pytest_run import PytestInvocation, collected_files
from .verdict import JudgeConfig

CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "conftest.py")


@lru_cache(maxsize=64)
def protected_paths(root: Path, test_paths: tuple[str, ...]) -> tuple[str, ...]:
    """Repo-relative paths kept read-only in the view: test paths, every conftest.py, pytest configs."""
    found = set(test_paths) | {c for c in CONFIG_FILES if (root / c).exists()}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        if "conftest.py" in filenames:
            found.add((Path(dirpath) / "conftest.py").relative_to(root).as_posix())
    return tuple(sorted(found))


def judged_tests(sample: Sample, selection: str) -> tuple[str, ...]:
    return sample.judged_tests if selection == "judged" else ()


def known_verdict(sample: Sample, completed: str, config: JudgeConfig) -> str | None:
    """The detail of a known verdict, when the completion is the ground truth of a verified sample
    (it has its judged tests and the rule that selected them) judged on its own judged tests."""
    if not (config.known_verdicts and config.selection == "judged" and sample.judged_tests
            and sample.selection_rule and completed == sample.original_code):
        return None
    return ("known verdict, not run again: the completed file is byte-identical to the original (the ground "
            "truth), which passed these judged tests in every verification run")


@dataclass(frozen=True)
class RunPlan:
    """What one judgement runs (`plan_run`): the completed file and what was found before anything ran -
    a syntax error, no environment, a known verdict - or the pytest run to make (`invocation` set)."""

    completed: str  # the masked file with the completion in place
    syntax_error: str | None = None  # compile()'s message: the completed file does not compile
    environment_found: bool = True
    known: str | None = None  # the known verdict's detail (`known_verdict`): nothing is run
    invocation: PytestInvocation | None = None  # None: nothing to run
    limits: Limits = Limits()  # the run's resource limits (its CPU budget, when one applies)
    readonly: tuple[str, ...] = ()  # repo-relative paths kept read-only in the run's view
    guard: GuardSetup | None = None  # None: no guard (guard="off")
    budget: Budget | None = None  # the CPU budgets in force (None: a wall-clock timeout)
    canaries: CanaryPlan | None = None  # the canary tests planted in the run (None: none by this configuration)
    variant: tuple = ()  # impossible.py: the perturbed judged test files (ViewFile) shadowing the originals


def plan_run(sample: Sample, completion: str, config: JudgeConfig, *, also_masked: tuple[str, ...] = (),
             budget: Budget | None = None, canary_attempt: int = 0) -> RunPlan:
    """Compile the completed file, find the environment, check for a known verdict, and make the pytest
    invocation with its limits, read-only paths and guard.  Runs nothing but `compile`."""
    completed = sample.prefix_code + completion + sample.suffix_code
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(completed, sample.file_name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return RunPlan(completed, syntax_error=str(exc)[:300])
    env = find_environment(sample.env_key)
    if env is None:
        return RunPlan(completed, environment_found=False)
    known = known_verdict(sample, completed, config) if not config.impossible else None
    if known is not None:
        return RunPlan(completed, known=known)
    python, root = env.python, env.root
    select = judged_tests(sample, config.selection)
    budget = budget if config.timeout_s is None else None  # an explicit timeout replaces every budget
    wall_s, limits = run_limits(budget, config.timeout_s, config.limits)
    # A selection is exact (our plugin keeps these ids); pytest's --deselect matches node-id prefixes, so
    # deselecting an excluded `test_x` would also drop a judged `test_x_y` (babel, pydash).
    inv = PytestInvocation.from_test_command(
        sample.test_command, python=python, root=root, select=select,
        deselect=() if select else sample.excluded_tests, timeout_s=wall_s,
        max_fail=1 if config.fail_fast else 0)
    # each phase's own CPU budget (collection, each test): measured on the judged tests' run only
    inv = replace(inv, phase_budgets=budget.phase_budgets() if budget is not None and select else None)
    readonly = tuple(p for p in protected_paths(root, inv.test_paths) + collected_files(select)
                     if p != sample.file_name)
    guard = None if config.guard == "off" else GuardSetup(config.guard, sample.file_name, sample.guard_allowed,
                                                          also_masked)
    canaries = plan_canaries(root, select, inv.pytest_args, masked=sample.file_name, attempt=canary_attempt) \
        if config.canaries and select and config.guard != "record" \
        else None
    if canaries is not None and not canaries.off:  # the canaries join the selection (sorted in) and the run's files
        inv = replace(inv, select=tuple(sorted({*select, *canaries.ids})), targets=canaries.targets)
    variant = variant_files(root, sample) if config.impossible else ()
    if config.impossible and not variant:
        raise ValueError(f"sample {sample.sample_id}: no impossible variant (no judged assertion to perturb)")
    if canaries is not None and variant:
        canaries, variant = _canaries_on_variant(root, canaries, variant)
    return RunPlan(completed, invocation=inv, limits=limits, readonly=readonly, guard=guard, budget=budget,
                   canaries=canaries, variant=variant)


def _canaries_on_variant(root: Path, canaries: CanaryPlan, variant: tuple) -> tuple[CanaryPlan, tuple]:
    """A judged test module that carries canaries and has an impossible variant: one file in the view, the
    variant's text with the canaries appended (otherwise the later of the two would hide the other)."""
    by_path = {f.path: f for f in variant}
    files = []
    for host in canaries.files:
        perturbed = by_path.pop(host.path, None)
        if perturbed is not None:
            original = (root / host.path).read_text(encoding="utf-8")
            if not host.text.startswith(original):
                raise ValueError(f"{host.path}: the canary copy does not extend the module; cannot join its variant")
            host = replace(host, text=perturbed.text + host.text[len(original):])
        files.append(host)
    return replace(canaries, files=tuple(files)), tuple(by_path.values())
