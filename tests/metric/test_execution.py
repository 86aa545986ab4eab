"""The execution layer: the launcher sets limits and cgroup membership without Python between fork
and exec, one isolation type decided in one place, and evaluations that survive `kill -9` and run
side by side on one cache."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import make_sample
from execrepobench_dataset.record import write_jsonl
from execrepobench_metric.execution.limits import Limits, PidsCgroup
from execrepobench_metric.execution.process import run_command
from execrepobench_metric.execution.sandbox import Isolation, decide_isolation

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "execrepobench.runner.cli"]


def test_no_preexec_fn_anywhere():
    found = [str(p.relative_to(REPO)) for folder in ("builder", "runner", "execrepobench_metric",
                                                      "execrepobench_dataset", "benchmarks")
             for p in (REPO / folder).rglob("*.py") if "preexec" in p.read_text(encoding="utf-8")]
    assert found == []


def test_launcher_sets_rlimits_from_many_threads(tmp_path):
    limits = Limits(address_space_bytes=1 << 30, file_size_bytes=1 << 20, cpu_seconds=77, open_files=99)
    argv = ["sh", "-c", "ulimit -v; ulimit -f; ulimit -t; ulimit -n; ulimit -c"]

    def one(_):
        return run_command(argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout_s=30, limits=limits)

    with ThreadPoolExecutor(max_workers=8) as pool:  # launching from worker threads is safe
        results = list(pool.map(one, range(24)))
    for r in results:
        assert r.returncode == 0, r.stderr_tail
        assert r.stdout_tail.split() == [str((1 << 30) // 1024), str((1 << 20) // 512), "77", "99", "0"]
    big = run_command(["sh", "-c", "head -c 3000000 /dev/zero > big"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                      timeout_s=30, limits=limits)
    assert big.returncode != 0 and (tmp_path / "big").stat().st_size <= 1 << 20


@pytest.mark.cgroup
def test_cgroup_membership_is_set_by_the_command_line(tmp_path):
    group = PidsCgroup.create(16)
    try:
        r = run_command(["cat", "/proc/self/cgroup"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout_s=30,
                        cgroup=group, limits=Limits())
        assert r.returncode == 0 and group.path.name in r.stdout_tail, r
    finally:
        group.kill_and_remove()
    assert not group.path.exists()


@pytest.mark.sandbox
def test_one_isolation_decision():
    isolation, note = decide_isolation(allow_weak=False)
    assert isolation is Isolation.BWRAP and note == "" and str(isolation) == "bwrap"
    assert Isolation("weak") is Isolation.WEAK


# ------------------------------------------------------------------ kill -9 and concurrent evaluations

@pytest.fixture(scope="module")
def evaluation_inputs(built_minirepo, tmp_path_factory):
    base = tmp_path_factory.mktemp("evalinputs")
    mathx = tuple(f"tests/test_mathx.py::test_{t}" for t in
                  ("clamp_inside", "clamp_edges", "clamp_bad_bounds", "mean", "running_total", "countdown"))
    samples = [
        make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=mathx[:2]),
        make_sample(built_minirepo, "minirepo/strings.py", "return slug[:limit]", fill_type="Random Single-line Completion",
                    judged=("tests/test_strings.py::test_slugify", "tests/test_strings.py::test_slugger_unique")),
    ]
    for line in ("return high", "return total / len(values)", "return result", "return steps"):
        samples.append(make_sample(built_minirepo, "minirepo/mathx.py", line, judged=mathx))
    write_jsonl(samples, base / "samples.jsonl")
    wrong = {0: "return low", 1: "return slug"}
    for name, pick in (("a", lambda i, s: [s.middle_code, wrong.get(i, "return None")]),
                       ("b", lambda i, s: ["return None", s.middle_code])):
        (base / f"{name}.jsonl").write_text("".join(json.dumps({"sample_id": s.sample_id, "completion": pick(i, s)})
                                                    + "\n" for i, s in enumerate(samples)))
    return base, samples


def _evaluate(base: Path, preds: str, out: Path) -> subprocess.Popen:
    env = {**os.environ, "EXECREPOBENCH_ALLOW_EXEC": "1", "PYTHONPATH": str(REPO / "tests")}
    return subprocess.Popen([*CLI, "evaluate", "--samples", str(base / "samples.jsonl"), "--predictions",
                             str(base / preds), "--out", str(out), "--workers", "2", "--no-progress"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _verdicts(out: Path) -> dict:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    keys = [(r["sample_id"], r["completion_index"]) for r in rows]
    assert len(keys) == len(set(keys)), "a verdict appears twice"
    return {k: (r["passed"], r["reason"], tuple(r["failing_tests"])) for k, r in zip(keys, rows)}


def _fresh_results(cache: Path) -> None:
    shutil.rmtree(cache / "results", ignore_errors=True)  # so each evaluation really runs its tests


def _sandbox_processes(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd:
                found.append(cmd[:200])
    return found


def _finish(proc: subprocess.Popen, timeout: float = 300) -> None:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-2000:]


@pytest.mark.sandbox
@pytest.mark.slow
def test_kill_9_then_rerun_gives_every_verdict_once(evaluation_inputs, private_cache, built_minirepo, tmp_path):
    base, samples = evaluation_inputs
    _fresh_results(private_cache)
    whole = _evaluate(base, "a.jsonl", tmp_path / "whole")
    _finish(whole)
    expected = _verdicts(tmp_path / "whole")
    assert len(expected) == 2 * len(samples)
    seed = random.randrange(1 << 30)
    delay = random.Random(seed).uniform(1.0, 6.0)
    _fresh_results(private_cache)
    out = tmp_path / "killed"
    victim = _evaluate(base, "a.jsonl", out)
    time.sleep(delay)
    victim.send_signal(signal.SIGKILL)
    victim.communicate()
    marker = built_minirepo["env_key"]  # in the command line of every sandbox process of this environment
    deadline = time.monotonic() + 15
    while _sandbox_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _sandbox_processes(marker) == [], f"left behind after kill -9 at {delay:.2f}s (seed {seed})"
    journal = out / "journal.jsonl"
    done_before = len(journal.read_text().splitlines()) if journal.exists() else 0
    print(f"killed at {delay:.2f}s (seed {seed}) with {done_before} of {len(expected)} verdicts journalled")
    rerun = _evaluate(base, "a.jsonl", out)
    _finish(rerun)
    assert _verdicts(out) == expected, f"kill at {delay:.2f}s (seed {seed}), {done_before} journalled before"
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip().endswith("}")]
    assert len({(r["sample_id"], r["index"]) for r in lines}) == len(expected)


@pytest.mark.sandbox
@pytest.mark.slow
def test_two_evaluations_share_one_cache(evaluation_inputs, private_cache, tmp_path):
    base, _ = evaluation_inputs
    _fresh_results(private_cache)
    together = [_evaluate(base, f"{m}.jsonl", tmp_path / f"together-{m}") for m in ("a", "b")]
    for proc in together:
        _finish(proc)
    alone = {}
    for m in ("a", "b"):
        _fresh_results(private_cache)
        _finish(_evaluate(base, f"{m}.jsonl", tmp_path / f"alone-{m}"))
        alone[m] = _verdicts(tmp_path / f"alone-{m}")
    for m in ("a", "b"):
        assert _verdicts(tmp_path / f"together-{m}") == alone[m]
    assert alone["a"] != alone["b"]  # different completions, different verdicts: the comparison can fail
