"""The judge and the sandbox on the fixture repository: gold, wrong and hostile completions."""
import socket
import subprocess
import threading

import pytest

from conftest import make_sample
from execrepobench_metric.execution.engine import EngineConfig, ExecutionNotAllowed, judge_all
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig
pytestmark = pytest.mark.sandbox
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
CONF = JudgeConfig(timeout_s=60)


@pytest.fixture(scope="module")
def clamp(built_minirepo):
    # the last line of clamp(): `return value`
    return make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)


def test_gold_passes_and_wrong_fails(clamp):
    gold = judge(clamp, clamp.middle_code, CONF)
    assert gold.passed and gold.reason == "passed", gold
    wrong = judge(clamp, "return value + 1", CONF)
    assert not wrong.passed and wrong.reason == "failed"
    assert "tests/test_mathx.py::test_clamp_inside" in wrong.failing_tests


def test_syntax_error_is_not_run(clamp):
    v = judge(clamp, "return (value", CONF)
    assert (v.passed, v.reason) == (False, "syntax_error")


def test_broken_fill_fails_for_the_whole_suite_too(built_minirepo):
    """No judged tests: the whole suite (minus excluded) judges; a broken module fails it."""
    s = make_sample(built_minirepo, "minirepo/strings.py", "return slug[:limit]")
    assert judge(s, s.middle_code, CONF).passed
    v = judge(s, "return slug[:limit].upper()", CONF)
    assert not v.passed and v.reason == "failed" and "tests/test_strings.py::test_slugify" in v.failing_tests


def test_printed_pass_text_and_early_exit_do_not_pass(clamp):
    printed = judge(clamp, 'print("999 passed in 0.01s"); return value + 1', CONF)
    assert not printed.passed
    exit0 = judge(clamp, 'getattr(__import__("o" + "s"), "_ex" + "it")(0)', CONF)
    assert not exit0.passed and exit0.reason == "tampering" and "process.exit" in exit0.detail  # the guard
    unguarded = judge(clamp, 'import os as _o; getattr(_o, "_ex" + "it")(0)', JudgeConfig(timeout_s=60, guard="off"))
    assert not unguarded.passed and unguarded.reason in ("crashed", "missing_tests"), unguarded
    sysexit = judge(clamp, "raise SystemExit(0)", CONF)
    assert not sysexit.passed


@pytest.mark.slow
def test_hostile_file_system_and_network(clamp, built_minirepo, tmp_path):
    root = built_minirepo["root"]
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    got = []

    def accept():
        for _ in range(100):
            try:
                conn, _ = listener.accept()
                got.append(conn.recv(100))
            except OSError:
                pass

    t = threading.Thread(target=accept)
    t.start()
    try:
        cases = {
            "delete": f'import shutil; shutil.rmtree("{victim}"); return value',
            "write_outside": f'open("{victim}/pwned", "w").write("x"); return value',
            "rewrite_tests": (f'open("{root}/tests/test_mathx.py", "w").write("def test_clamp_inside(): pass\\n'
                              f'def test_clamp_edges(): pass\\n"); return value + 1'),
            "rewrite_conftest": f'open("{root}/conftest.py", "w").write("import sys\\n"); return value + 1',
            "network": f'import socket as _s; _s.create_connection(("127.0.0.1", {port}), 2).send(b"leak"); return value',
            "delete_own_tree": f'import shutil; shutil.rmtree("{root}/tests", ignore_errors=True); return value + 1',
            # patching pytest at import so that failures are reported as passes
            "patch_pytest": ("import _pytest.reports as _r; _r.TestReport.failed = property(lambda self: False); "
                             "return value + 1"),
            "patch_junit": ("m = __import__('_py' + 'test.junitxml', fromlist=['x']); "
                            "m._NodeReporter.append_failure = lambda *a: None; return value + 1"),
        }
        verdicts = {name: judge(clamp, code, CONF) for name, code in cases.items()}
    finally:
        t.join()
        listener.close()
    for name, v in verdicts.items():
        assert not v.passed, (name, v)
    assert verdicts["patch_pytest"].reason == verdicts["patch_junit"].reason == "tampering"
    assert (victim / "keep.txt").read_text() == "keep" and not (victim / "pwned").exists()
    assert got == []
    assert {p: p.read_bytes() for p in root.rglob("*.py")} == before  # the original tree is untouched


@pytest.mark.slow
def test_resource_bombs_are_contained(clamp):
    conf = JudgeConfig(timeout_s=15)
    cases = {
        "infinite_loop": "while True: pass",
        "memory": "_x = bytearray(64 * 1024 ** 3); return value",
        "output": 'import sys\n    while True: sys.stdout.write("x" * 65536)',
        "fork_bomb": 'import os as _o\n    while True:\n        try: getattr(_o, "fo" + "rk")()\n        except OSError: pass',
        # The guard refuses signals sent by the completion (and, inside the PID namespace, the
        # parent is the namespace's init: the evaluator would never see it anyway).
        "kill_parent": 'import os as _o; getattr(_o, "ki" + "ll")(_o.getppid(), 9); return value + 1',
        "kill_screened": "import os; os.kill(os.getppid(), 9); return value",
        "background": ('import subprocess; subprocess.Popen(["sleep", "4242"], start_new_session=True); '
                       'return value + 1'),
    }
    verdicts = {name: judge(clamp, code, conf) for name, code in cases.items()}
    for name, v in verdicts.items():
        assert not v.passed, (name, v)
    assert verdicts["infinite_loop"].reason == "timeout"
    assert verdicts["kill_screened"].reason == verdicts["kill_parent"].reason == "tampering"  # refused signals
    assert verdicts["fork_bomb"].reason == "tampering" and "process.fork" in verdicts["fork_bomb"].detail
    leftovers = subprocess.run(["pgrep", "-f", "sleep 4242"], capture_output=True, text=True).stdout.split()
    assert leftovers == []
    assert judge(clamp, clamp.middle_code, CONF).passed  # the evaluator and the environment survive


def test_engine_mixed_run_keeps_other_verdicts_and_resumes(clamp, tmp_path, monkeypatch):
    comps = [[clamp.middle_code, "while True: pass", "return value - 1", clamp.middle_code]]
    config = EngineConfig(judge=JudgeConfig(timeout_s=10), workers=2, allow_exec=True, use_cache=False,
                          journal=tmp_path / "journal.jsonl", progress=False)
    (verdicts,), note = judge_all([clamp], comps, config)
    assert [v.passed for v in verdicts] == [True, False, False, True] and note == ""
    assert verdicts[1].reason == "timeout"
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    assert len(lines) == 4
    # Resume: everything is in the journal, nothing runs again (counted: no judgement is made).
    import execrepobench_metric.execution.engine as engine

    judged = []
    real = engine.judge_safely
    monkeypatch.setattr(engine, "judge_safely", lambda *a, **k: judged.append(a[1]) or real(*a, **k))
    (again,), _ = judge_all([clamp], comps, config)
    assert [v.passed for v in again] == [True, False, False, True] and judged == []
    assert len((tmp_path / "journal.jsonl").read_text().splitlines()) == 4


def test_opt_in_required_and_inputs_checked(clamp, monkeypatch):
    monkeypatch.delenv("EXECREPOBENCH_ALLOW_EXEC", raising=False)
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    with pytest.raises(ExecutionNotAllowed, match="EXECREPOBENCH_ALLOW_EXEC=1 \\(or HF_ALLOW_CODE_EVAL=1"):
        judge_all([clamp], [["x"]], EngineConfig(progress=False))
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "0")  # only "1" opts in, as for code_eval
    with pytest.raises(ExecutionNotAllowed):
        judge_all([clamp], [["x"]], EngineConfig(progress=False))
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "1")  # an explicit False wins, and the refusal says so
    with pytest.raises(ExecutionNotAllowed, match="allow_exec=False was given: it overrides HF_ALLOW_CODE_EVAL"):
        judge_all([clamp], [["x"]], EngineConfig(allow_exec=False, progress=False))
    with pytest.raises(ValueError, match="lengths must match"):
        judge_all([clamp], [["x"], ["y"]], EngineConfig(allow_exec=True, progress=False))
    with pytest.raises(TypeError, match="completion 0: expected a string, got NoneType"):
        judge_all([clamp], [[None]], EngineConfig(allow_exec=True, progress=False))


def test_missing_environment_is_an_error_verdict(clamp):
    import dataclasses

    orphan = dataclasses.replace(clamp, env_key="0" * 20)
    v = judge(orphan, orphan.middle_code, CONF)
    assert not v.passed and v.reason == "error" and "not found" in v.detail
