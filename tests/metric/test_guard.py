"""The in-process guard on the fixture repositories: evidence stream, attribution, allowances, refusals.

The corpus on a real PyPI repository is in test_guard_corpus.py."""
import dataclasses
import hashlib
import hmac
import os
import sys
from pathlib import Path

import pytest

import guard_attacks as corpus
from conftest import make_sample, prepared_local_repo, write_local_repo
from execrepobench.builder.verification.ground_truth import check_ground_truth
from execrepobench.builder.verification.verify import verify_one
from execrepobench_metric.execution.guard import GuardSetup, read_evidence, verify_lines
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.sandbox import Isolation
from execrepobench_metric.execution.verdict import JudgeConfig

needs_bwrap = pytest.mark.sandbox
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
# the guard alone: the lenient rule (strict.py, tests/metric/test_attacks_strict.py, refuses some of these on its own)
ON, OFF = JudgeConfig(timeout_s=60, strict=False), JudgeConfig(timeout_s=60, guard="off", strict=False)


def _stream(key: bytes, rows: list[list[str]]) -> bytes:
    """A stream in the guard's format: seq, kind, fields, chained HMAC-SHA256."""
    out, prev = b"", b""
    for seq, row in enumerate(rows, 1):
        body = "\t".join([str(seq), *row]).encode()
        prev = hmac.new(key, prev + body, hashlib.sha256).digest()
        out += body + b"\t" + prev.hex().encode() + b"\n"
    return out


def test_evidence_stream_detects_every_change():
    key = b"k" * 32
    rows = [["hello", "enforce", "/r/m.py"], ["collected", "t::a", "t::b"], ["report", "t::a", "call", "failed"],
            ["report", "t::b", "call", "passed"], ["finish", "1"], ["exit", "1"]]
    good = _stream(key, rows)
    ev = read_evidence(good, key)
    assert ev.problem == "" and ev.outcomes == {"t::a": "failed", "t::b": "passed"} and ev.exit_code == 1
    lines = good.splitlines(keepends=True)
    forged = good.replace(b"t::a\tcall\tfailed", b"t::a\tcall\tpassed")
    assert "bad mac" in read_evidence(forged, key).problem
    assert read_evidence(b"".join(lines[:2] + lines[3:]), key).problem  # a line dropped
    assert read_evidence(b"".join([lines[0], lines[2], lines[1]] + lines[3:]), key).problem  # reordered
    after = read_evidence(good + b"1\treport\tt::a\tcall\tpassed\t00\n", key)  # garbage after the exit: noise
    assert (after.problem, after.outcomes, after.late) == ("", ev.outcomes, 1)
    assert read_evidence(b"".join(lines[:3]) + lines[3][:-5], key).problem  # cut inside a line while tests run
    cut_exit = read_evidence(good[:-5], key)  # the exit line cut: no exit code (never a pass)
    assert cut_exit.finished and cut_exit.exit_code is None and cut_exit.late == 1
    assert read_evidence(_stream(b"x" * 32, rows), key).problem  # another key
    cut = read_evidence(b"".join(lines[:4]), key)  # cut at a line boundary: valid, but never finished
    assert cut.problem == "" and cut.exit_code is None and not cut.finished
    late = read_evidence(_stream(key, rows + [["report", "t::a", "call", "passed"]]), key)  # after the exit: noise
    assert (late.problem, late.outcomes["t::a"], late.late) == ("", "failed", 1)
    # after the finish, only the exit line is read: a report of a test not yet reported changes nothing
    late = read_evidence(_stream(key, rows[:2] + [rows[2], ["finish", "1"], ["report", "t::b", "call", "passed"],
                                                 ["exit", "1"]]), key)
    assert (late.problem, late.outcomes, late.exit_code, late.late) == ("", {"t::a": "failed"}, 1, 1)
    assert read_evidence(_stream(key, rows[:5]) + b"garbage", key).late == 1  # damage after the finish: noise
    assert "second collection" in read_evidence(_stream(key, rows[:2] + [["collected", "t::b"]]), key).problem
    assert verify_lines(b"", key) == ([], "")
    # a phase reported twice is damage, unless the collector made two items of that id (docopt-ng's cases)
    twice = rows[:3] + [["report", "t::a", "call", "passed"]] + rows[3:5]
    assert "a second call report for t::a" in read_evidence(_stream(key, twice), key).problem
    dup = [rows[0], ["collected", "t::a", "t::a", "t::b"], *twice[2:]]
    assert read_evidence(_stream(key, dup), key).problem == ""
    assert read_evidence(_stream(key, dup), key).outcomes["t::a"] == "failed"  # the worse of the two
    thrice = dup[:3] + [["report", "t::a", "call", "passed"]] + dup[3:]
    assert "a second call report" in read_evidence(_stream(key, thrice), key).problem
    with pytest.raises(ValueError):
        GuardSetup("off", "m.py")


@pytest.fixture(scope="module")
def clamp(built_minirepo):
    return make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)


@needs_bwrap
def test_ground_truth_passes_guarded_and_records_nothing(clamp):
    for config in (ON, OFF, dataclasses.replace(ON, guard="record")):
        v = judge(clamp, clamp.middle_code, config)
        assert (v.passed, v.reason, v.guard_events) == (True, "passed", ()), (config.guard, v)
    wrong = judge(clamp, "return value + 1", ON)
    assert (wrong.passed, wrong.reason) == (False, "failed") and wrong.failing_tests


@needs_bwrap
@pytest.mark.parametrize("attack", [a for a in corpus.ATTACKS if a.target == "clamp"], ids=lambda a: a.name)
def test_quick_attacks_pass_unguarded_and_are_refused(clamp, attack):
    completion = corpus.completion(attack, "    ", "return value + 1")
    assert corpus.old_blocklist_hits(completion, clamp.original_code) == []
    assert judge(clamp, completion, OFF).reason == "passed"  # the attack is real
    v = judge(clamp, completion, ON)
    assert (v.passed, v.reason) == (False, "tampering"), v


@needs_bwrap
@pytest.mark.parametrize("completion,kind", [
    ('import os as _o; getattr(_o, "_ex" + "it")(0)', "process.exit"),
    ('import sys as _s; getattr(vars(_s)["modules"]["posix"], "_ex" + "it")(0)', "process.exit"),
    ('import os as _o; _o.abort()', "process.exit"),
    ('import faulthandler as _f; _f._sigsegv()', "process.exit"),
    ('import os as _o; getattr(_o, "ex" + "ecv")("/bin/true", ["true"])', "process.spawn"),
    ('import os as _o; getattr(_o, "ki" + "ll")(_o.getpid(), 9)', "signal.send"),
    ('import sys as _s; vars(_s)["modules"]["built" + "ins"].__dict__["__imp" + "ort__"]("ct" + "ypes").CDLL(None)',
     "native"),
    ('import sys as _s; del vars(_s)["modules"]["_thread"]; import _thread; return value + 1', "reimport"),
    ('open("/proc/self/mem", "rb"); return value + 1', "path:proc"),
    ('import os as _o; _o.chdir("/"); open("proc/self/environ"); return value', "path:proc"),
    ('import sys as _s; _s.audit("execrepobench.report", None); return value', "forged-guard-event"),
    # a path relative to a directory descriptor that leads to /proc; a second instance of a builtin
    # module (its functions are not routed through the guard); the native-call module
    ('import os as _o\n    _d = _o.open("/", _o.O_RDONLY)\n    _p = _o.open("proc", _o.O_RDONLY, dir_fd=_d)\n'
     '    _o.open("self/environ", _o.O_RDONLY, dir_fd=_p)\n    return value', "path:proc"),
    ('import sys as _s, _imp\n    _imp.create_builtin(_s.modules["_signal"].__spec__)\n    return value', "builtin.second"),
    ('import importlib.util as _u, sys as _s\n    _u.module_from_spec(_s.modules["posix"].__spec__)\n    return value',
     "builtin.second"),
    ('import ctypes\n    return value', "native"),
    # linecache swapped as doctest does, but not by doctest's own runner over the original function
    ('import linecache as _l\n    _l.getlines = lambda *a, **k: []\n    return value', "integrity:module:linecache"),
    ('import doctest as _d, linecache as _l\n    class _R(_d.DocTestRunner):\n        pass\n'
     '    _r = _R()\n    _r.save_linecache_getlines = lambda *a, **k: []\n'
     '    _l.getlines = _r._DocTestRunner__patched_linecache_getlines\n    return value', "integrity:module:linecache"),
])
def test_exits_signals_native_code_and_forged_events_are_refused(clamp, completion, kind):
    v = judge(clamp, completion, ON)
    assert (v.passed, v.reason) == (False, "tampering") and any(e.startswith(kind) for e in v.guard_events), v


@needs_bwrap
def test_the_stream_descriptor_cannot_be_used_from_inside(clamp):
    scribble = ('import os as _o\n    for _fd in range(3, 64):\n        try:\n'
                '            _o.write(_fd, b"1\\treport\\tx\\tcall\\tpassed\\t00\\n")\n'
                '        except OSError:\n            pass\n    return value')
    v = judge(clamp, scribble, ON)
    assert (v.passed, v.reason) == (False, "tampering") and "damaged" in v.detail, v
    closer = 'import os as _o; _o.closerange(3, 64); return value'
    v = judge(clamp, closer, ON)
    assert not v.passed and v.reason in ("crashed", "tampering"), v


@needs_bwrap
def test_honest_words_in_strings_and_comments_pass(clamp):
    """What the old blocklist failed as tampering is honest text: the guard judges what code does."""
    honest = [
        'return value  # never kill or fork here: the signal handler of pytest owns that',
        'msg = "kill -9, fork(), signal, atexit, ctypes, builtins, importlib, conftest, junit, pytest"\n'
        '    return value',
        'return value if "sys.modules" or "os._exit" else value',
    ]
    for completion in honest:
        assert corpus.old_blocklist_hits(completion, clamp.original_code), completion
        v = judge(clamp, completion, ON)
        assert (v.passed, v.reason) == (True, "passed"), (completion, v)


@needs_bwrap
def test_standard_library_that_reads_frames_itself_is_not_the_completions(clamp):
    """logging's caller lookup, namedtuple, traceback formatting use frames and hand out text only."""
    honest = ('import logging, collections, traceback\n'
              '    logging.getLogger("minirepo").warning("clamping %s", value)\n'
              '    try:\n        raise ValueError("x")\n    except ValueError:\n        _t = traceback.format_exc()\n'
              '    _s = "".join(traceback.format_stack())\n'
              '    return collections.namedtuple("P", "v")(value).v')
    assert judge(clamp, honest, ON).passed
    leaks = {  # the same modules made to hand out frames
        "walk_stack": 'import traceback as _t\n    list(_t.walk_stack(None))\n    return value',
        "currentframe": 'import logging as _l\n    _l.currentframe()\n    return value',
        "patched_logging": ('import logging as _l\n    _l._is_internal_frame = lambda f: False\n'
                            '    _l.getLogger("x").warning("hi")\n    return value'),
    }
    for name, completion in leaks.items():
        v = judge(clamp, completion, ON)
        assert (v.passed, v.reason) == (False, "tampering"), (name, v)
    assert "integrity:module:logging:_is_internal_frame" in v.guard_events


@needs_bwrap
def test_honest_files_and_builtin_imports_pass(clamp):
    """os.open relative to a directory in the tree, tempfile (os.open), a builtin module imported the
    ordinary way for the first time: not refused."""
    honest = ('import os, tempfile\n    _d = os.open(".", os.O_RDONLY)\n'
              '    os.close(os.open("pyproject.toml", os.O_RDONLY, dir_fd=_d))\n    os.close(_d)\n'
              '    with tempfile.TemporaryFile() as _f:\n        _f.write(b"x")\n'
              '    import _symtable\n    return value')
    v = judge(clamp, honest, ON)
    assert (v.passed, v.reason) == (True, "passed"), v


@needs_bwrap
def test_lazily_initialised_standard_library_state_is_not_the_completions(clamp):
    """posixpath compiles its pattern on the first expandvars: bound before the guard's reference."""
    honest = 'import os\n    return value if os.path.expandvars("$HOME") or os.path.expandvars(b"$HOME") else value'
    v = judge(clamp, honest, ON)
    assert (v.passed, v.reason) == (True, "passed"), v


@pytest.fixture(scope="module")
def guardrepo(tmp_path_factory):
    """A repository whose code itself uses frames, prepared by the real builder."""
    base = tmp_path_factory.mktemp("guardrepo")
    repo = write_local_repo(base, "guardrepo", {
        "guardrepo/__init__.py": "",
        "guardrepo/core.py": "import sys\n\n\ndef caller_name():\n    return sys._getframe(1).f_code.co_name\n\n\n"
                             "def double(x):\n    return x * 2\n",
        "conftest.py": 'def pytest_configure(config):\n    config.addinivalue_line("markers", "slow: a slow test")\n',
        "tests/test_core.py":
            "import unittest\n\nfrom guardrepo.core import caller_name, double\n\n\ndef test_caller_name():\n"
            "    assert caller_name() == 'test_caller_name'\n\n\ndef test_double():\n    assert double(4) == 8\n\n\n"
            "class TestDoubles(unittest.TestCase):\n    def test_many(self):\n        for x in (1, 2, 3):\n"
            "            with self.subTest(x=x):\n                self.assertEqual(double(x), 2 * x)\n"})
    return prepared_local_repo(base, repo)


@needs_bwrap
def test_what_the_ground_truth_does_is_recorded_and_allowed(guardrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", guardrepo["cache"])
    frames = make_sample(guardrepo, "guardrepo/core.py", "return sys._getframe(1).f_code.co_name",
                         judged=("tests/test_core.py::test_caller_name",))
    out = verify_one(frames, ON)
    assert out.kept, out
    assert out.sample.guard_allowed == ("sys._getframe",)  # recorded by the first ground-truth run
    allowed = out.sample
    assert judge(frames, frames.middle_code, ON).reason == "tampering"  # without the allowance
    assert judge(allowed, allowed.middle_code, ON).passed
    # another way to the same answer through the same allowed event: fine
    assert judge(allowed, "return sys._getframe().f_back.f_code.co_name", ON).passed
    # what the ground truth never does stays refused
    gc_way = "import gc; gc.get_objects(); return sys._getframe(1).f_code.co_name"
    v = judge(allowed, gc_way, ON)
    assert v.reason == "tampering" and v.guard_events == ("gc.get_objects",), v
    # a sample of the same file whose tests never run the frame code allows nothing (its tests
    # include unittest subtests: pytest reports each with a report of its own)
    double = make_sample(guardrepo, "guardrepo/core.py", "return x * 2",
                         judged=("tests/test_core.py::test_double", "tests/test_core.py::TestDoubles::test_many"))
    out = verify_one(double, ON)
    assert out.kept and out.sample.guard_allowed == (), out
    assert judge(out.sample, "return x * 2 if x != 3 else 5", ON).failing_tests == (
        "tests/test_core.py::TestDoubles::test_many",)
    cheat = 'import sys as _s; return 8 if _s._getframe(1).f_code.co_name == "test_double" else x + x'
    assert judge(out.sample, cheat, OFF).passed
    assert judge(out.sample, cheat, ON).reason == "tampering"


@needs_bwrap
def test_a_masked_file_the_test_machinery_runs_is_never_verified(guardrepo, monkeypatch):
    """A conftest (or pytest plugin, or pytest's own dependency) judges its own tests: no verdict."""
    monkeypatch.setenv("EXECREPOBENCH_CACHE", guardrepo["cache"])
    plugin = make_sample(guardrepo, "conftest.py", 'config.addinivalue_line("markers", "slow: a slow test")',
                         judged=("tests/test_core.py::test_double",))
    out = verify_one(plugin, ON)
    assert not out.kept, out  # its null fill runs unguarded (and passes here): dropped either way
    truth = check_ground_truth([plugin], ON, rounds=1)[0]
    assert truth.reason == "gt_failed" and "machinery-under-test" in truth.detail, truth


@needs_bwrap
def test_weak_sandbox_is_guarded_too(clamp):
    weak = dataclasses.replace(ON, isolation=Isolation.WEAK)
    assert judge(clamp, clamp.middle_code, weak).passed
    attack = next(a for a in corpus.ATTACKS if a.name == "mini_gc")
    completion = corpus.completion(attack, "    ", "return value + 1")
    assert judge(clamp, completion, dataclasses.replace(OFF, isolation=Isolation.WEAK)).passed
    assert judge(clamp, completion, weak).reason == "tampering"


def test_bootstrap_strips_only_our_plugin_option():
    sys.path.insert(0, str(Path(__file__).parents[2] / "execrepobench_metric" / "execution" / "pytest_plugin"))
    try:
        import _execrepobench_guard as bootstrap
    finally:
        sys.path.pop(0)
    args = ["-q", "-p", "_execrepobench_collect", "-p", "no:cacheprovider", "--junitxml=x", "tests"]
    assert bootstrap.pytest_args(args) == ["-q", "-p", "no:cacheprovider", "--junitxml=x", "tests"]
    assert os.environ.get(bootstrap.SETTINGS_VAR) is None
