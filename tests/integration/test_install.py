"""A normal install works: the wheel carries every module and data file of the checkout, and installed
into a fresh venv outside the checkout it builds a repository, judges its samples (ground truth
passes, null fill fails) and serves the published metric module, with an empty cache at another path."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest


ROOT = Path(__file__).parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures"
# checkout folder -> where its files land in the wheel
PACKAGE_DIRS = {"builder": "execrepobench/builder", "runner": "execrepobench/runner",
                "execrepobench_metric": "execrepobench_metric", "execrepobench_dataset": "execrepobench_dataset"}


def checkout_files() -> list[str]:
    """The checkout's files (git: tracked and not-ignored untracked ones; else a walk without caches)."""
    try:
        proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                              capture_output=True, check=True, timeout=60)
        files = [f for f in proc.stdout.decode().split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        skip = {"__pycache__", ".venv", ".venv-models", ".git", "build", "dist", ".pytest_cache"}
        files = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
                 and not any(part.endswith(".egg-info") for part in p.relative_to(ROOT).parts)]
    return sorted(f for f in files if (ROOT / f).is_file())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the checkout's files (the checkout itself is never written)."""
    base = tmp_path_factory.mktemp("wheel")
    for rel in checkout_files():
        (base / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, base / "src" / rel)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(base / "dist"), str(base / "src")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (built,) = (base / "dist").glob("execrepobench-*.whl")
    return built


def test_wheel_carries_every_module_and_data_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if ".dist-info/" not in n}
    expected = set()
    for rel in checkout_files():
        top, _, rest = rel.partition("/")
        if top in PACKAGE_DIRS and rest:
            expected.add(f"{PACKAGE_DIRS[top]}/{rest}")
    assert "execrepobench/runner/backends/base.py" in expected
    assert "execrepobench_metric/execution/pytest_plugin/_execrepobench_collect.py" in expected
    assert sorted(expected - shipped) == [], "tracked files missing from the wheel (setup.cfg packages/package_data)"
    assert sorted(shipped - expected) == [], "files in the wheel that the checkout does not track"
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(info).decode()
    assert "Requires-Python: >=3.11" in metadata  # the code imports tomllib
    entry = zipfile.ZipFile(wheel).read(info.replace("METADATA", "entry_points.txt")).decode()
    assert "execrepobench = execrepobench.runner.cli:main" in entry


def _run(argv, *, env, cwd, timeout=900):
    proc = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{argv}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.sandbox
@pytest.mark.pypi
def test_wheel_in_a_fresh_venv_builds_and_judges(wheel, tmp_path):
    """Installs the wheel's dependencies from PyPI (uv, cached after the first run)."""
    from uv import find_uv_bin

    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    assert ROOT not in tmp_path.parents and tmp_path not in ROOT.parents
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(EXECREPOBENCH_CACHE=str(tmp_path / "cache-b"), HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1",
               HF_EVALUATE_OFFLINE="1", PATH=os.pathsep.join([str(venv / "bin"), env.get("PATH", "")]))
    _run([sys.executable, "-m", "venv", venv], env=env, cwd=work)
    _run([find_uv_bin(), "pip", "install", "--quiet", "--python", venv / "bin" / "python", wheel], env=env, cwd=work)
    python, cli = venv / "bin" / "python", venv / "bin" / "execrepobench"
    where = json.loads(_run([python, "-c", (
        "import json, execrepobench_metric.execution.pytest_run as r, execrepobench.runner.backends as b, "
        "execrepobench.builder.sources.manifest as m, execrepobench_dataset as d\n"
        "print(json.dumps([r.__file__, b.__file__, d.__file__, str(m.default_manifest_path()), "
        "str(r.PLUGIN_DIR / (r.PLUGIN_NAME + '.py'))]))")], env=env, cwd=work))
    for path in where:  # everything from the installed wheel, nothing from the checkout
        assert Path(path).is_file() and venv in Path(path).parents, where

    repo = shutil.copytree(FIXTURES / "minirepo", tmp_path / "minirepo",
                           ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(f'[[repo]]\nsource = "path:{repo}"\nname = "minirepo"\nsamples_per_repo = 2\n')
    _run([cli, "build", "--manifest", manifest, "--out", tmp_path / "out", "--baseline-runs", "1", "--no-progress"],
         env=env, cwd=work)
    samples = tmp_path / "out" / "samples.jsonl"
    assert samples.read_text().strip()
    for fill, expected in (("ground_truth", 1.0), ("null", 0.0)):
        _run([cli, "evaluate", "--samples", samples, "--reference-fill", fill, "--out", tmp_path / fill,
              "--allow-exec", "--no-progress"], env=env, cwd=work)
        metrics = json.loads((tmp_path / fill / "metrics.json").read_text())
        assert metrics["pass@1"] == expected and metrics["verdicts/error"] == 0, (fill, metrics)

    _run([cli, "run", "--samples", samples, "--backend", "oracle", "--out", tmp_path / "run", "--allow-exec",
          "--no-progress"], env=env, cwd=work)  # `run` imports the backends package the old wheel lacked
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["pass@1"] == 1.0

    # the Hub module, written by the installed CLI and loaded by evaluate in the fresh venv
    _run([cli, "publish-metric", "--out", tmp_path / "hub"], env=env, cwd=work)
    out = json.loads(_run([python, "-c", (
        "import json, sys, evaluate\n"
        "from execrepobench_dataset.record import read_jsonl\n"
        "s = list(read_jsonl(sys.argv[1]))\n"
        "m = evaluate.load(sys.argv[2])\n"
        "o = m.compute(predictions=[x.middle_code for x in s], references=[x.to_dict() for x in s], allow_exec=True,"
        " use_cache=False)\n"
        "print(json.dumps({'pass@1': o['pass@1'], 'n': len(s), 'module': type(m).__module__}))"),
        samples, tmp_path / "hub" / "execrepobench"], env=env, cwd=work))
    assert out["pass@1"] == 1.0 and out["n"] >= 1 and out["module"].endswith("execrepobench")
