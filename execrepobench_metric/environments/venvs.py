"""Environments made from repository records, found by their key.

`ensure_environment(record)` fetches the record's pinned source into the local cache, makes
envs_dir()/KEY/venv with `uv venv --python X.Y`, installs the locked requirements exactly
(`uv pip install --no-deps [--require-hashes] -r lock`), then the project itself (`--no-deps
--editable`), checks `uv pip freeze` against the lock, keeps the record it was made from
(record.json: `environment_record`, what a Ray node needs to make the same one) and writes env.json
last (its presence marks a complete environment); every Python file of the venv and the source tree
is byte-compiled once (`bytecode.py`), also for an environment made before that step existed.
`find_environment(key)` is the one reader of env.json.  Nothing is
resolved here: a new release of a dependency cannot change a published environment.  env.json is
local (it holds this machine's paths) and never published.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from execrepobench_dataset.files import file_lock
from execrepobench_dataset.repo_record import RepoRecord, environment_key
from execrepobench_dataset.schemes import ENV_JSON_SCHEMA
from execrepobench_metric.errors import EnvError

from .bytecode import compile_environment, is_compiled
from execrepobench_metric.defaults import TOOL_TIMEOUT_S
from .layout import env_dir, envs_dir
from .sources import fetch_pinned

_HASH_OPT = re.compile(r"\s--hash=")


@dataclass(frozen=True)
class Environment:
    key: str
    path: Path  # envs_dir()/KEY (venv/ and env.json inside)
    python: str  # the venv's interpreter
    root: Path  # the project root the venv has installed in editable mode
    freeze: tuple[str, ...]
    repo_name: str = ""

    def has(self, distribution: str) -> bool:
        return canonical_name(distribution) in {canonical_name(_pin_name(line)) for line in self.freeze}


def canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pin_name(line: str) -> str:
    return re.split(r"[\s=<>!~;\[@]", line.strip(), maxsplit=1)[0]


def lock_pins(lines) -> dict[str, str]:
    """{canonical name: version} of `name==version ...` lines (freeze or lock); other lines are skipped."""
    pins = {}
    for line in lines:
        head = _HASH_OPT.split(line.strip(), maxsplit=1)[0].split(";")[0].strip()
        name, sep, version = head.partition("==")
        if sep and not head.startswith("-"):
            pins[canonical_name(name.split("[")[0].strip())] = version.strip()
    return pins


def interpreter_for(python: str) -> str:
    """What `uv --python` gets for X.Y: the running interpreter when it is that version (uv would
    otherwise search for one), else the version request (uv finds an installed one; downloads are off)."""
    return sys.executable if python == f"{sys.version_info.major}.{sys.version_info.minor}" else python


def run_uv(*args: str, repo: str, timeout: float = TOOL_TIMEOUT_S) -> str:
    """`uv ARGS` (the uv of the `uv` package) -> stdout; EnvError naming the repository on failure."""
    from uv import find_uv_bin

    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    try:
        proc = subprocess.run([find_uv_bin(), *args], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise EnvError(f"{repo}: `uv {' '.join(args[:2])}` timed out after {timeout:.0f} s") from None
    except OSError as exc:
        raise EnvError(f"{repo}: uv could not run: {exc}") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
        raise EnvError(f"{repo}: `uv {' '.join(args[:2])}` failed: " + " | ".join(lines[-6:]))
    return proc.stdout


def find_environment(env_key: str) -> Environment | None:
    """The complete environment with this key in the local cache, or None."""
    if not re.fullmatch(r"[0-9A-Za-z_-]{1,64}", env_key or ""):
        return None
    folder = env_dir(env_key)
    try:
        data = json.loads((folder / "env.json").read_text(encoding="utf-8"))
        env = Environment(env_key, folder, data["python"], Path(data["root"]), tuple(data["freeze"]),
                          data.get("repo_name", ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if data.get("schema") != ENV_JSON_SCHEMA or not Path(env.python).exists() or not env.root.is_dir():
        return None
    return env


def environment_record(env_key: str) -> RepoRecord | None:
    """The repository record a complete local environment was made from (None: no such environment,
    or one made before records were kept with it): what a Ray node needs to make the same one."""
    if find_environment(env_key) is None:
        return None
    try:
        record = RepoRecord.from_dict(json.loads((env_dir(env_key) / "record.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    return record if record.key_matches and record.env_key == env_key else None


def _locked(key: str):
    """One maker per key across threads and processes (a second one waits, then finds it made)."""
    return file_lock(envs_dir() / f".{key}.lock")


def check_freeze(record: RepoRecord, freeze: tuple[str, ...]) -> None:
    """The venv holds exactly the locked versions (plus the project itself)."""
    want, have = lock_pins(record.lock), lock_pins(freeze)
    problems = [f"{n}: locked {v}, installed {have.get(n, 'nothing')}" for n, v in sorted(want.items())
                if have.get(n) != v]
    extra = sorted(set(have) - set(want))  # the project itself is an editable line: not a pin
    if extra:
        problems.append("not in the lock: " + ", ".join(extra[:5]))
    if problems:
        raise EnvError(f"{record.repo_name}: environment does not match its lock: " + "; ".join(problems[:5]))


def ensure_environment(record: RepoRecord) -> Environment:
    """The environment of `record` (made from its lock if this cache has none yet).  Raises EnvError or
    SourceError naming the repository."""
    if not record.key_matches:
        raise EnvError(f"{record.repo_name}: env_key {record.env_key} is not the hash of the record's python, "
                       f"source and lock ({environment_key(record.python, record.repo_source, record.lock, record.exclude_newer)}): "
                       "the record was changed after it was made")
    with _locked(record.env_key):
        found = find_environment(record.env_key)
        if found is not None:
            if not is_compiled(found.path):
                compile_environment(found.path, found.python, found.root)
            return found
        source = fetch_pinned(record.repo_source, record.repo_name)
        final = env_dir(record.env_key)
        shutil.rmtree(final, ignore_errors=True)  # a partial one from an interrupted run
        try:
            return _make(record, source.root, final)
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise


def _make(record: RepoRecord, root: Path, final: Path) -> Environment:
    name = record.repo_name
    venv = final / "venv"  # made in its final place: venvs hard-code their own path
    run_uv("venv", "--quiet", "--python", interpreter_for(record.python), str(venv), repo=name)
    python = str(venv / "bin" / "python")
    lock_file = final / "requirements.lock.txt"
    lock_file.write_text("".join(line + "\n" for line in record.lock), encoding="utf-8")
    if record.lock:
        hashes = all(_HASH_OPT.search(" " + line) for line in record.lock)
        # Byte-compiled at install: judged runs never write bytecode, so without this every run would
        # compile pytest and the dependencies again (the tree is compiled by `compile_environment`).
        run_uv("pip", "install", "--quiet", "--python", python, "--no-deps", "--compile-bytecode",
               *(["--require-hashes"] if hashes else []), "-r", str(lock_file), repo=name)
    run_uv("pip", "install", "--quiet", "--python", python, "--no-deps", "--editable", str(root), repo=name)
    freeze = tuple(run_uv("pip", "freeze", "--python", python, repo=name).splitlines())
    check_freeze(record, freeze)
    compile_environment(final, python, root)
    kept = dataclasses.replace(record, files=())  # what makes the environment (not the context files)
    (final / "record.json").write_text(json.dumps(kept.to_dict(), sort_keys=True), encoding="utf-8")
    meta = {"schema": ENV_JSON_SCHEMA, "key": record.env_key, "repo_name": name, "repo_source": record.repo_source,
            "python_version": record.python, "python": python, "root": str(root), "freeze": list(freeze)}
    tmp = final / "env.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, final / "env.json")  # written last: its presence marks a complete environment
    return Environment(record.env_key, final, python, root, freeze, name)
