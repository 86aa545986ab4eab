"""Compile an environment's Python files once, so that no judged run compiles them again.

Judged runs never write bytecode (PYTHONDONTWRITEBYTECODE, and the tree is a throw-away view), and uv
installs without compiling: without this step every run compiled pytest, pluggy, the repository's
dependencies and the repository itself from source - more than half a second per run on this
machine, a run whose tests take a tenth of that.  Compiling here changes no behaviour:

- site-packages: ordinary (timestamp) pycs; the venv is read-only inside every run;
- the repository tree: `checked-hash` pycs (PEP 552), which Python uses only when the source's hash
  matches.  A completed file in a judged run is a different source, so its module is compiled from
  the completion, whatever its timestamp; every other file is the original the pyc was made from.

Nothing is executed: `compileall` only parses.  Files that do not compile (a Python 2 fixture) are
skipped; a failure here only costs speed, never a verdict.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from execrepobench_dataset.schemes import BYTECODE_CODE
from execrepobench_metric.defaults import TOOL_TIMEOUT_S

MARKER = "bytecode.json"
# Folders of a source tree that are never imported by its tests.
_SKIP = r"(^|/)(\.git|\.hg|\.tox|\.nox|\.venv|venv|node_modules|build|dist)(/|$)"


def site_packages(python: str) -> list[str]:
    venv = Path(python).parents[1]
    return sorted(str(p) for p in venv.glob("lib/python*/site-packages"))


def compile_environment(env_folder: Path, python: str, root: Path, timeout_s: float = TOOL_TIMEOUT_S) -> dict:
    """Byte-compile the venv's site-packages and the source tree with the venv's own interpreter;
    writes `env_folder/bytecode.json` (what was done, and whether it worked) and returns it."""
    steps = [[python, "-m", "compileall", "-q", "-j", "0", *site_packages(python)],
             [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "checked-hash",
              "-x", _SKIP, str(root)]]
    done = {"scheme": BYTECODE_CODE.value(), "steps": []}
    for argv in steps:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, cwd="/",
                                  env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
            done["steps"].append({"target": argv[-1], "returncode": proc.returncode})
        except (OSError, subprocess.SubprocessError) as exc:
            done["steps"].append({"target": argv[-1], "error": f"{type(exc).__name__}: {exc}"[:300]})
    (env_folder / MARKER).write_text(json.dumps(done, indent=1), encoding="utf-8")
    return done


def is_compiled(env_folder: Path) -> bool:
    try:
        return json.loads((env_folder / MARKER).read_text(encoding="utf-8")).get("scheme") == BYTECODE_CODE.value()
    except (OSError, ValueError, AttributeError):
        return False
