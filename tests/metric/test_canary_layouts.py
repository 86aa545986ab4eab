"""Drawn canaries always import (execrepobench_metric/execution/canaries.py): an honest run's canaries never
go off for a reason of their own.  Many canary plans are drawn against real repositories' layouts - a
package with module doctests (tabulate), a src layout with tests/ (isodate), a test module at the sdist
root (schema), a package's tests with `__init__.py` files (the docrepo fixture) - in both placements
(inside the judged test modules, the default, and in modules of their own), written into a copy of the
tree and collected by pytest in the repository's own environment with its own test command: every canary
test is collected and no file fails to import.
"""
import random
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import prepared_repo
from execrepobench_metric.execution import canaries
from execrepobench_metric.execution.canaries import plan_canaries
from execrepobench_metric.execution.pytest_run import PytestInvocation
from honest_corpus import DOCREPO_MANIFEST, collected_ids, write_docrepo
from test_guard_honest import PARSE_MANIFEST, TABULATE_MANIFEST
from test_guard_honest_wide import ISODATE_MANIFEST

pytestmark = [pytest.mark.slow]
SCHEMA_MANIFEST = '''[[repo]]
source = "pypi:schema==0.7.8"
sha256 = "e86cc08edd6fe6e2522648f4e47e3a31920a76e82cce8937535422e310862ab5"
extra_test_requires = ["mock"]
test_paths = ["test_schema.py"]
'''
DRAWS = 10  # per repository and placement (names with keywords or builtins: test_guard_canary.py, 60 draws)


def _collect(built: dict, tree, targets) -> tuple[set[str], str]:
    inv = PytestInvocation.from_test_command(built["test_command"], python=built["python"], root=tree)
    out = subprocess.run([built["python"], "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          f"--rootdir={tree}", *inv.pytest_args, *targets], cwd=tree, capture_output=True, text=True,
                         timeout=300, env={"PYTHONHASHSEED": "0"})  # judged ids: those every seed collects
    return {line for line in out.stdout.splitlines() if "::" in line}, out.stdout[-2000:]


def _draws(built: dict, tmp_path, monkeypatch) -> int:
    """Draw DRAWS plans per placement for judged tests of each test file, collect them (two collections at a
    time: each is a pytest process of its own); returns the plans collected."""
    root = built["root"]
    ids = collected_ids(built)
    by_file: dict[str, list[str]] = {}
    for nodeid in ids:
        by_file.setdefault(nodeid.split("::")[0], []).append(nodeid)
    drawn = []  # (judged tests, plan, tree)
    for separate in (False, True):
        monkeypatch.setattr(canaries, "SEPARATE_FILES", separate)  # read while planning: plans are made in turn
        for seed in range(DRAWS):
            rng = random.Random(seed)
            files = rng.sample(sorted(by_file), min(len(by_file), rng.randint(1, 2)))
            judged = sorted(t for f in files for t in rng.sample(by_file[f], min(len(by_file[f]), 3)))
            plan = plan_canaries(root, judged, PytestInvocation.from_test_command(
                built["test_command"], python=built["python"], root=root).pytest_args, rng)
            assert plan.off == "", (judged, plan.off)
            tree = tmp_path / f"tree-{int(separate)}-{seed}"
            shutil.copytree(root, tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
            for f in plan.files:
                (tree / f.path).write_text(f.text, encoding="utf-8")
            drawn.append((judged, plan, tree))
    with ThreadPoolExecutor(2) as pool:
        collected = list(pool.map(lambda d: _collect(built, d[2], d[1].targets), drawn))
    for (judged, plan, tree), (got, said) in zip(drawn, collected):
        assert set(plan.ids) <= got, (judged, [c for c in plan.ids if c not in got], said)
        assert set(judged) <= got and " error" not in said.splitlines()[-1], said
        shutil.rmtree(tree)
    return len(collected)


MANIFESTS = {"tabulate": TABULATE_MANIFEST, "isodate": ISODATE_MANIFEST, "schema": SCHEMA_MANIFEST,
             "parse": PARSE_MANIFEST, "docrepo": None}


@pytest.mark.pypi
@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_drawn_canaries_always_import_in_real_layouts(name, tmp_path, monkeypatch):
    base = tmp_path / "prepared"
    base.mkdir()
    monkeypatch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    manifest = MANIFESTS[name] or DOCREPO_MANIFEST.format(path=write_docrepo(base / "docrepo"))
    built = prepared_repo(manifest, base)
    assert _draws(built, tmp_path, monkeypatch) == 2 * DRAWS
