"""Every scheme identifier of the project, in one place: what each covers, what a change of it invalidates.

Two kinds.  *Set by hand*: a number or name bumped when what it covers changes in a way no code digest
can see (a rule of the benchmark, an on-disk format).  Those marked PUBLISHED enter the benchmark's
identity - the release lock's `scheme_id` (`builder/release/release_lock.py`), every repository's build
inputs hash, or the samples themselves (environment keys): bump one only together with a rebuilt release lock
(`tests/builder/test_release_lock.py` fails until then).  *Derived* (`DerivedKey`): a digest of the source of the
modules a cache entry depends on, so an edit there invalidates the entry without anyone remembering a
bump; only keys that enter no published fingerprint are derived.

Each identifier's history is in CHANGELOG.md (a section per identifier); `tests/dataset/test_schemes.py` checks
that every identifier is defined here only and has its section.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.resources
import importlib.util
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

# ------------------------------------------------------------------------------------------ set by hand

ENV_KEY_SCHEMA = 1
"""How an environment is made from a repository record: the `schema` hashed into every environment key
(`repo_record.environment_key`).  PUBLISHED (every sample's and record's `env_key`, the release lock's
scheme): a change re-keys, and so re-makes, every environment, and changes the dataset fingerprint."""

LOCK_SCHEMA = 2
"""How a repository's dependency lock is resolved (`builder/preparation/lock.py`: in the lock cache's
inputs).  PUBLISHED (the release lock's scheme): a change resolves every lock again."""

VERIFY_SCHEME = 8
"""What verification keeps and how (null fill, ground-truth rounds, exclusions, budgets, re-runs).
PUBLISHED (every repository's build inputs hash, the release lock's scheme): a change rebuilds every
repository."""

GUARD_RECORDING = 5
"""What verification records for the in-process guard (`Sample.guard_allowed`).  PUBLISHED (build inputs
hash, the release lock's scheme): a change rebuilds every repository."""

MIX_NAME = "paper-levels-v4"
"""The kept mix: per-level quota rule and the order candidates are verified in
(`builder/verification/mix.py`; named in the build report).  PUBLISHED (build inputs hash, the release lock's scheme): a change rebuilds every
repository."""

CONTEXT_SCHEME = 2
"""How a sample's cross-file context is ranked (`builder/sampling/context.py`).  PUBLISHED (build inputs hash, the
release lock's scheme): a change rebuilds every repository."""

FILL_LEVEL_SCHEME = "node-table-1"
"""How a grammar-based mask's fill type (expression / statement / block) is decided: the one table of
`builder/sampling/levels.py`.  PUBLISHED (a sample's id hashes its fill type; build inputs hash, the release
lock's scheme): a change relabels samples, so it rebuilds every repository."""

LM_EVAL_TASK_VERSION = 1.0
"""The lm-evaluation-harness task's version (`runner/lm_eval_task/execrepobench.yaml`'s `metadata.version`,
and `versions` in the `results.json` a run writes, `runner/lm_eval_results.py`).  PUBLISHED (results): a change
of the task's prompt, filters or metrics makes a new version; not a build input."""

BUILD_SCHEMES = MappingProxyType({"guard": GUARD_RECORDING, "verify": VERIFY_SCHEME, "mix": MIX_NAME,
                                  "context": CONTEXT_SCHEME, "lock": LOCK_SCHEMA, "env_key": ENV_KEY_SCHEMA,
                                  "fill_levels": FILL_LEVEL_SCHEME})
"""The identifiers in every repository's build inputs hash (`builder/build.py`), under these keys: a change
of any rebuilds the repository instead of reusing its finished folder."""

RELEASE_SCHEMES = MappingProxyType(dict(BUILD_SCHEMES))
"""The identifiers in the release lock's `scheme_id` (with the package version), under these keys: every
identifier that changes what a build of the same manifest makes (the same set as `BUILD_SCHEMES`: what
changes a build's samples must also rebuild a finished repository); a change means every packaged
`*.lock.json` must be written again from a real build."""

RELEASE_LOCK_FORMAT = 1
"""The layout of a release lock file (`builder/manifests/NAME.lock.json`, its `format` field).  PUBLISHED
(inside every lock file): a change means every packaged lock is written again."""

MEASUREMENTS_SCHEME = "cpu-1"
"""What the numbers of `measurements.jsonl` mean: CPU seconds as our pytest plugin measures them.
Published beside the samples (not in the fingerprint); a reader refuses a scheme it does not know."""

KNOWN_MEASUREMENTS_SCHEMES = (MEASUREMENTS_SCHEME,)
"""The measurement schemes this version reads; keep an old one here while its data is still read."""

ENV_JSON_SCHEMA = 2
"""The layout of an environment folder's `env.json` (`execrepobench_metric/environments/venvs.py`).  Cache only:
a change makes every cached environment again (minutes each)."""

INDEX_CACHE_SCHEMA = 1
"""The layout of the live index client's cached answers (`builder/live/index.py`).  Cache only: a change
asks the index again."""

# ------------------------------------------------------------------------------------------ derived

_PROJECT_PACKAGES = ("execrepobench", "execrepobench_dataset", "execrepobench_metric")


@dataclass(frozen=True)
class DerivedKey:
    """A cache key's scheme derived from code: the digest of `modules` and every project module they
    import (however deep, imports inside functions and under TYPE_CHECKING too), of `own_modules` alone,
    and of the files `resources` name ((package, glob) pairs: code that runs elsewhere)."""

    modules: tuple[str, ...] = ()
    own_modules: tuple[str, ...] = ()
    resources: tuple[tuple[str, str], ...] = ()

    def files(self) -> dict[str, Path]:
        """What the key covers: a name (module, or package:path of a resource) -> its file."""
        return dict(source_files(self.modules, self.own_modules, self.resources))

    def value(self) -> str:
        """sha256 (24 hex) over the covered files, each with its name; computed once per process."""
        return _key_value(self.modules, self.own_modules, self.resources)


JUDGEMENT_CODE = DerivedKey(modules=("execrepobench_metric.execution.engine",
                                     # the executors engine.py opens by name (executors/registry.py)
                                     "execrepobench_metric.execution.executors.local",
                                     "execrepobench_metric.execution.executors.ray"),
                            resources=(("execrepobench_metric.execution", "pytest_plugin/*.py"),))
"""The code a judgement runs (the engine, judge, run_plan, decide, sandbox, guard, budgets, ... and the pytest
plugin inside the judged run); replaces the hand-bumped ENGINE_VERSION.  Cache only: part of every result-cache
key and resume-journal key (`execrepobench_metric.execution.engine.result_key`): a change judges every completion
again."""

BYTECODE_CODE = DerivedKey(own_modules=("execrepobench_metric.environments.bytecode",))
"""What `bytecode.compile_environment` compiles and how; replaces the hand-bumped BYTECODE_SCHEME.  Cache
only: in each environment's `bytecode.json`; a change compiles every environment again (seconds each)."""

PUBLISH_CODE = DerivedKey(modules=("execrepobench_dataset.publish",),
                          own_modules=("execrepobench.builder.release.release",))
"""The publish stage of `execrepobench release` (`execrepobench_dataset.publish` and the stage's summary);
replaces the hand-bumped STATE_VERSION.  Cache only: in `.release_state.json`; a change publishes again."""


@cache
def _spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """The module's spec, found without importing anything (a package's `__init__` may be heavy: Ray)."""
    parent = name.rpartition(".")[0]
    if not parent:
        return importlib.util.find_spec(name)
    above = _spec(parent)
    if above is None or above.submodule_search_locations is None:
        return None
    for finder in sys.meta_path:  # as the import system looks (an editable install maps packages elsewhere)
        spec = finder.find_spec(name, list(above.submodule_search_locations)) if hasattr(finder, "find_spec") else None
        if spec is not None:
            return spec
    return None


def _module_file(name: str) -> Path | None:
    spec = _spec(name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.MULTILINE)


def _imported(name: str, path: Path) -> set[str]:
    """Names of the project modules `name` (at `path`) imports anywhere in its body (a line scan: an
    `import` line in a docstring only adds a file)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    text = path.read_text(encoding="utf-8")
    out: set[str] = {part.split()[0] for m in _IMPORT.finditer(text) for part in m.group(1).split(",") if part.strip()}
    for dots, module, names in _FROM.findall(text):
        base = module
        if dots:
            parts = package.split(".")[:len(package.split(".")) - len(dots) + 1]
            base = ".".join(parts + ([module] if module else []))
        out.add(base)
        out.update(f"{base}.{n.split()[0]}" for n in names.strip("()").replace("\\", " ").split(",") if n.strip())
    found = set()
    for candidate in out:
        parts = candidate.split(".")
        if parts[0] not in _PROJECT_PACKAGES:
            continue
        for i in range(1, len(parts) + 1):  # the module and every package above it (their __init__ runs)
            if _module_file(".".join(parts[:i])) is not None:
                found.add(".".join(parts[:i]))
    return found


@cache
def source_files(modules: tuple[str, ...], own_modules: tuple[str, ...] = (),
                 resources: tuple[tuple[str, str], ...] = ()) -> dict[str, Path]:
    """The files of `modules` and of the project modules they import, transitively, of `own_modules` (not
    followed) and those matching `resources`.  A module or resource that cannot be found raises LookupError
    (a moved module must be renamed in its key)."""
    files: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in files:
            continue
        files[name] = _required_file(name)
        todo.extend(_imported(name, files[name]) - files.keys())
    files.update({name: _required_file(name) for name in own_modules})
    for package, pattern in resources:
        root = Path(str(importlib.resources.files(package)))
        matched = sorted(root.glob(pattern))
        if not matched:
            raise LookupError(f"scheme key: nothing matches {pattern!r} in package {package!r}")
        files.update({f"{package}:{p.relative_to(root).as_posix()}": p for p in matched})
    return files


def _required_file(name: str) -> Path:
    path = _module_file(name)
    if path is None:
        raise LookupError(f"scheme key: no Python source for module {name!r}")
    return path


@cache
def _key_value(modules: tuple[str, ...], own_modules: tuple[str, ...], resources: tuple[tuple[str, str], ...]) -> str:
    return digest_of(source_files(modules, own_modules, resources))


def digest_of(files: Mapping[str, Path]) -> str:
    """sha256 (24 hex) over the files in name order, each with its name and length."""
    digest = hashlib.sha256()
    for name, path in sorted(files.items()):
        data = path.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()[:24]
