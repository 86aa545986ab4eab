"""The leak scan: nothing a judged run can read tells the answer.

How: `judge()` runs as the metric does (plan, `run_pytest`, the sandbox, the view built by
`view.build_view`), except that just before the judged pytest run the same `SandboxRun` (same tree,
completed file, canary files, venv, plugin folder, out folder) runs tests/leak_scanner.py instead of
pytest, with the environment's interpreter: it reads every file it can and reports the hits.

The hit rule (what counts as the answer), for a sample whose original file is F and middle M:
- F's full text, anywhere (a file, or a member of an archive: zip/whl, tar/sdist, gz, bz2, xz);
- a code object equal to one compiled from F (the module at optimisation levels 0-2, or any function
  or class whose lines cover M's first line) in any marshalled bytecode (`.pyc`, also in archives):
  bytecode compiled from the original, wherever it lies and whatever its file name;
- M's text (stripped), when it is distinctive: at least MIN_MIDDLE characters and not in the text the
  prompt shows anyway (the prefix, the suffix and every other file of the repository's tree).  A short
  middle (`x + 1`, `start -= 1`) or one the repository itself repeats says nothing about the answer;
  for those only the two rules above apply.
The completed file (a wrong completion: the null fill) holds neither.  `/proc` (the run's own processes)
and `/dev` are skipped.

The per-sample scans read everything in the view except the system part (/usr, /etc, /bin..., the
interpreter's prefix), which is the same for every run and is read once (`test_system_part...`).
`test_the_scan_is_real` shows the scan finds what the former view (`/` read-only) let a run read.
"""
from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest

from conftest import FIXTURES, make_sample, prepared_local_repo, prepared_repo
from execrepobench_dataset.record import (FILL_BLOCK, FILL_EXPRESSION, FILL_MULTI_LINE, FILL_SINGLE_LINE, FILL_SPAN,
                                          FILL_STATEMENT, FILL_TYPES)
from execrepobench_metric.environments.venvs import find_environment
from execrepobench_metric.execution import pytest_run
from execrepobench_metric.execution import view as views
from execrepobench_metric.execution.fills import null_fill
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.limits import Limits
from execrepobench_metric.execution.sandbox import run_sandboxed
from execrepobench_metric.execution.verdict import JudgeConfig

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
SCANNER = Path(__file__).parents[1] / "leak_scanner.py"
MIN_MIDDLE = 16
JUDGE = JudgeConfig(timeout_s=120, canaries=True, known_verdicts=False)  # as the metric judges
SCAN_LIMITS = Limits(address_space_bytes=8 << 30, cpu_seconds=1800)
# (fill type, masked middle) per repository: one sample of every fill type (every level)
MINI = [(FILL_SPAN, "low must not exceed high"),
        (FILL_SINGLE_LINE, "return total / len(values)"),
        (FILL_MULTI_LINE, "acc += value\n        result.append(acc)"),
        (FILL_EXPRESSION, "math.fsum(values)"),
        (FILL_STATEMENT, "start -= 1"),
        (FILL_BLOCK, "if value < low:\n        return low\n    if value > high:\n        return high")]
ISODATE = '[[repo]]\nsource = "pypi:isodate==0.7.2"\n'
ISO = [(FILL_SPAN, "fquotmod(newmonth, 1, 13)"),
       (FILL_SINGLE_LINE, "newyear = other.year + self.years + carry"),
       (FILL_MULTI_LINE, "negduration = Duration(years=-self.years, months=-self.months)\n"
                         "        negduration.tdelta = -self.tdelta"),
       (FILL_EXPRESSION, "hash((self.tdelta, self.months, self.years))"),
       (FILL_STATEMENT, "return getattr(self.tdelta, name)"),
       (FILL_BLOCK, "if other.day > maxdays:\n                newday = maxdays\n            else:\n"
                    "                newday = other.day")]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def visible_text(root: Path, sample) -> str:
    """What the prompt shows anyway: prefix, suffix and every other file of the tree (not the masked file,
    not a copy of it, no bytecode)."""
    original = (sample.prefix_code + sample.middle_code + sample.suffix_code).encode("utf-8")
    parts = [sample.prefix_code, sample.suffix_code]
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            data = path.read_bytes()
            if data != original:
                parts.append(data.decode("utf-8", "replace"))
    return "\n".join(parts)


def needles_for(samples, root: Path) -> dict:
    """The hit rule (module docstring) as the scanner's needles, for all `samples` at once."""
    texts, sources = [], []
    for i, sample in enumerate(samples):
        original = sample.prefix_code + sample.middle_code + sample.suffix_code
        assert (root / sample.file_name).read_text(encoding="utf-8") == original
        texts.append({"id": f"{i}:original", "b64": _b64(original)})
        middle = sample.middle_code.strip()
        if len(middle) >= MIN_MIDDLE and middle not in visible_text(root, sample):
            texts.append({"id": f"{i}:middle", "b64": _b64(middle)})
        sources.append({"id": f"{i}:bytecode", "b64": _b64(original), "file": sample.file_name,
                        "middle_line": sample.prefix_code.count("\n") + 1})
    return {"texts": texts, "sources": sources}


def system_roots(env) -> list[str]:
    """The part of the view every run shares: the system and the interpreter's prefix."""
    prefix = str(views.interpreter_prefix(Path(env.python).parents[1]))
    return [*views.SYSTEM_TOP, "/etc", prefix]


class ScanFirst:
    """Stands in for `pytest_run.run_sandboxed`: runs the scanner in the judged run's own SandboxRun, then the run."""

    def __init__(self, needles: dict, roots, skip=()) -> None:
        self.needles = {**needles, "roots": list(roots), "skip": list(skip)}
        self.reports: list[dict] = []

    def __call__(self, run, isolation):
        scanner, needles, report = (run.out_dir / n for n in ("leak_scanner.py", "needles.json", "leak_report.json"))
        shutil.copyfile(SCANNER, scanner)
        needles.write_text(json.dumps(self.needles), encoding="utf-8")
        scan = dataclasses.replace(run, argv=(run.argv[0], str(scanner), str(needles), str(report)), pass_fds=(),
                                   timeout_s=1800, limits=SCAN_LIMITS)
        proc = run_sandboxed(scan, isolation)
        assert proc.returncode == 0 and report.exists(), proc.stderr_tail[-2000:]
        self.reports.append(json.loads(report.read_text(encoding="utf-8")))
        for path in (scanner, needles, report):
            path.unlink()
        return run_sandboxed(run, isolation)


def scan_judged_run(sample, needles: dict, roots, skip=()):
    """(verdict of the null fill, the scan's report) - the scan ran in that judged run's view."""
    scan = ScanFirst(needles, roots, skip)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pytest_run, "run_sandboxed", scan)
        verdict = judge(sample, null_fill(sample), JUDGE)
    assert len(scan.reports) >= 1, verdict
    return verdict, scan.reports[0]


def write_sdist(dest: Path, tree: Path, name: str) -> Path:
    """A .tar.gz of `tree` as pip downloads it (NAME/...)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(tree, arcname=name, filter=lambda t: None if "__pycache__" in t.name else t)
    return archive


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """The fixture repository with a `build/lib` copy of the masked module (as some sdists ship it),
    prepared by the real builder in this module's own cache; one sample per fill type."""
    base = tmp_path_factory.mktemp("leak")
    repo = base / "minirepo"
    shutil.copytree(FIXTURES / "minirepo", repo, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    (repo / "build" / "lib" / "minirepo").mkdir(parents=True)
    shutil.copyfile(repo / "minirepo" / "mathx.py", repo / "build" / "lib" / "minirepo" / "mathx.py")
    built = prepared_local_repo(base, repo)
    built["samples"] = [make_sample(built, "minirepo/mathx.py", middle, ("tests/test_mathx.py::test_mean",),
                                    fill_type=fill) for fill, middle in MINI]
    return built


@pytest.fixture(scope="module")
def isodate(tmp_path_factory):
    base = tmp_path_factory.mktemp("leak-pypi")
    patch = pytest.MonkeyPatch()
    patch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    try:
        built = prepared_repo(ISODATE, base)
    finally:
        patch.undo()
    built["cache"] = str(base / "cache")
    built["samples"] = [make_sample(built, "src/isodate/duration.py", middle, ("tests/test_duration.py::test_hash",),
                                    fill_type=fill, repo_name="isodate") for fill, middle in ISO]
    return built


def _assert_clean(report: dict, verdict) -> None:
    print("leak scan:", {k: report[k] for k in ("files", "members", "bytes", "code_needles")})
    assert report["files"] > 100 and report["bytes"] > 1_000_000, report  # it read the venv, the tree, ...
    assert report["hits"] == [], report["hits"][:10]
    assert report["parquet"] == [], report["parquet"]
    assert verdict.reason in ("passed", "failed"), verdict  # the judged run itself works in this view


def test_every_fill_type_is_covered():
    assert {f for f, _ in MINI} == set(FILL_TYPES) == {f for f, _ in ISO}


@pytest.mark.parametrize("index", range(len(MINI)), ids=[f for f, _ in MINI])
def test_fixture_view_holds_no_answer(mini, monkeypatch, index):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", mini["cache"])
    sample = mini["samples"][index]
    env = find_environment(sample.env_key)
    verdict, report = scan_judged_run(sample, needles_for([sample], env.root), ["/"], system_roots(env))
    _assert_clean(report, verdict)


@pytest.mark.pypi
@pytest.mark.parametrize("index", range(len(ISO)), ids=[f for f, _ in ISO])
def test_pypi_view_holds_no_answer(isodate, monkeypatch, index):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", isodate["cache"])
    sample = isodate["samples"][index]
    env = find_environment(sample.env_key)
    verdict, report = scan_judged_run(sample, needles_for([sample], env.root), ["/"], system_roots(env))
    _assert_clean(report, verdict)


def test_system_part_of_the_view_holds_no_answer(mini, monkeypatch):
    """The part every run shares (/usr, /etc, /bin..., the interpreter's prefix), read once for all samples."""
    monkeypatch.setenv("EXECREPOBENCH_CACHE", mini["cache"])
    samples = mini["samples"]
    env = find_environment(samples[0].env_key)
    verdict, report = scan_judged_run(samples[0], needles_for(samples, env.root), system_roots(env))
    assert report["files"] > 1000, report
    assert report["hits"] == [] and report["parquet"] == [], report["hits"][:10]


def test_the_scan_is_real(mini, monkeypatch):
    """With the former view (`/` read-only, nothing hidden) the same scan finds the original's bytecode beside
    the masked file, the build/lib copy, a checkout and an sdist in a cache; in the allow-listed view none."""
    monkeypatch.setenv("EXECREPOBENCH_CACHE", mini["cache"])
    sample = mini["samples"][3]  # expression: a distinctive middle
    env = find_environment(sample.env_key)
    needles = needles_for([sample], env.root)
    assert [t["id"] for t in needles["texts"]] == ["0:original", "0:middle"]
    planted = Path(tempfile.mkdtemp(prefix="erb-leak-", dir="/var/tmp"))  # a cache outside /tmp
    try:
        sdist = write_sdist(planted / "downloads", FIXTURES / "minirepo", "minirepo-0.1")
        roots = [str(env.root), str(planted), str(FIXTURES / "minirepo")]
        monkeypatch.setattr(views, "HOST_VIEW_FOR_TESTS", True)
        _, former = scan_judged_run(sample, needles, roots)
        monkeypatch.setattr(views, "HOST_VIEW_FOR_TESTS", False)
        _, now = scan_judged_run(sample, needles, roots)
    finally:
        shutil.rmtree(planted)
    found = {(h["where"].replace(str(env.root), "ROOT").replace(str(planted), "PLANTED")
              .replace(str(FIXTURES), "FIXTURES"), h["kind"], h["needle"]) for h in former["hits"]}
    pyc = next(h["where"] for h in former["hits"] if h["kind"] == "bytecode").replace(str(env.root), "ROOT")
    assert pyc.startswith("ROOT/minirepo/__pycache__/mathx.cpython-") and pyc.endswith(".pyc"), pyc
    assert {("ROOT/build/lib/minirepo/mathx.py", "text", "0:original"),
            ("ROOT/build/lib/minirepo/mathx.py", "text", "0:middle"),
            (f"PLANTED/downloads/{sdist.name}!minirepo-0.1/minirepo/mathx.py", "text", "0:original"),
            ("FIXTURES/minirepo/minirepo/mathx.py", "text", "0:original")} <= found, sorted(found)
    assert now["hits"] == [], now["hits"]
    assert now["files"] > 0  # the tree is still there (the completed file, the tests, ...)
