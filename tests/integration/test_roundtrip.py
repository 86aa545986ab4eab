"""The whole round trip, as two machines would do it (real PyPI, real uv, real sandbox):

machine A: build in cache A -> publish;  the project as a wheel -> a fresh venv outside the checkout;
machine B: empty cache B at another path -> `execrepobench prepare --dataset <published>` with the venv's
console script -> `datasets.load_dataset(<published>)` -> the venv's metric judges the ground truth (pass@1
100) and the null fill (0) -> the environment keys are the published ones.  No machine path is published.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from execrepobench_metric.environments.layout import CACHE_ENV_VAR

CHECKOUT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.pypi, pytest.mark.sandbox]
MANIFEST = """[defaults]
samples_per_repo = 3

[[repo]]
source = "pypi:schema==0.7.8"
sha256 = "e86cc08edd6fe6e2522648f4e47e3a31920a76e82cce8937535422e310862ab5"
extra_test_requires = ["mock"]
test_paths = ["test_schema.py"]
"""
JUDGE = """import json, sys
import execrepobench_metric
from datasets import load_dataset
from execrepobench_dataset.record import Sample
from execrepobench_metric.api import compute
from execrepobench_metric.environments.venvs import find_environment
from execrepobench_metric.execution.fills import null_fill

rows = list(load_dataset(sys.argv[1], "exec_repo_bench", split="test", cache_dir=sys.argv[2]))
gold = compute([r["middle_code"] for r in rows], rows, allow_exec=True, progress=False, use_cache=False)
null = compute([null_fill(Sample.from_dict(r)) for r in rows], rows, allow_exec=True, progress=False, use_cache=False)
keys = sorted({r["env_key"] for r in rows})
print(json.dumps({"gold": gold["pass@1"], "null": null["pass@1"], "n": len(rows), "keys": keys,
                  "errors": gold["verdicts/error"] + null["verdicts/error"], "module": execrepobench_metric.__file__,
                  "envs": [str(find_environment(k).path) if find_environment(k) else None for k in keys]}))
"""
_NOT_SOURCE = shutil.ignore_patterns(".venv*", ".git", "build", "dist", "*.egg-info", "__pycache__", "out",
                                     "results", ".pytest_cache")


def run(argv, *, env, cwd, timeout=900):
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{argv[:3]} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_build_publish_wheel_prepare_judge_on_another_cache(tmp_path, monkeypatch):
    from uv import find_uv_bin

    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import parse_manifest
    from execrepobench_dataset.publish import publish

    times = {}
    # machine A: build and publish
    cache_a, cache_b = tmp_path / "machineA" / "cache", tmp_path / "machineB" / "cache"
    monkeypatch.setenv(CACHE_ENV_VAR, str(cache_a))
    t0 = time.monotonic()
    summary = build(BuildConfig(manifest=parse_manifest(MANIFEST, tmp_path), out=tmp_path / "out", baseline_runs=1,
                                progress=False, workers=2))
    assert summary["repos"][0]["status"] == "ok", summary["repos"][0]
    published = tmp_path / "published"
    fingerprint = publish(tmp_path / "out", published)["fingerprint"]
    times["build + publish (A)"] = time.monotonic() - t0
    samples = [json.loads(line) for line in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    published_keys = sorted({s["env_key"] for s in samples})
    assert published_keys == [summary["repos"][0]["env_key"]] and len(samples) >= 2
    # nothing in the published folder names a path of machine A
    for path in published.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for needle in (str(cache_a), str(CHECKOUT), str(tmp_path), "/tmp/pytest-of", str(Path.home() / ".cache")):
                assert needle.encode() not in data, (path, needle)

    # the project as a wheel (from a copy of the checkout: nothing is written into it), into a fresh venv
    t0 = time.monotonic()
    source = tmp_path / "clone"
    shutil.copytree(CHECKOUT, source, ignore=_NOT_SOURCE)
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", CACHE_ENV_VAR, "VIRTUAL_ENV")}
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "wheel"), str(source)],
        env=base_env, cwd=tmp_path)
    (wheel,) = (tmp_path / "wheel").glob("execrepobench-*.whl")
    venv = tmp_path / "machineB" / "venv"
    run([sys.executable, "-m", "venv", str(venv)], env=base_env, cwd=tmp_path)  # with pip: it downloads sdists
    run([find_uv_bin(), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel)],
        env=base_env, cwd=tmp_path)
    times["wheel + fresh venv"] = time.monotonic() - t0

    # machine B: empty cache at another path; prepare with the venv's console script, then judge
    env_b = {**base_env, CACHE_ENV_VAR: str(cache_b), "HF_HOME": str(tmp_path / "machineB" / "hf"),
             "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    work_b = tmp_path / "machineB"
    t0 = time.monotonic()
    said = run([str(venv / "bin" / "execrepobench"), "prepare", "--dataset", str(published), "--no-progress"],
               env=env_b, cwd=work_b)
    times["prepare (B)"] = time.monotonic() - t0
    assert "schema" in said and "1/1 repositories ready" in said, said
    assert run([str(venv / "bin" / "execrepobench"), "fingerprint", str(published)], env=env_b,
               cwd=work_b).strip() == fingerprint
    (work_b / "judge.py").write_text(JUDGE)
    t0 = time.monotonic()
    out = json.loads(run([str(venv / "bin" / "python"), "judge.py", str(published), str(work_b / "hf-cache")],
                         env=env_b, cwd=work_b).strip().splitlines()[-1])
    times["load_dataset + judge gold and null (B)"] = time.monotonic() - t0
    assert Path(out["module"]).is_relative_to(venv)  # the installed metric, not the checkout's
    assert out["n"] == len(samples) and out["errors"] == 0
    assert out["gold"] == 1.0 and out["null"] == 0.0
    assert out["keys"] == published_keys  # the same environment identity on the other machine
    assert all(e and Path(e).is_relative_to(cache_b) for e in out["envs"])
    print("\nround trip timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()))
