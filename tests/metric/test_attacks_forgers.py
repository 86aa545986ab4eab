"""Forgers: completions that leave code to run later, without a frame of their own on the stack - a
`weakref.finalize` callback, a `__del__` that is a `functools.partial` of `exec`, an object in a gc cycle,
an exit handler, a thread left running - which rewrites the outcomes during the run or at exit; and a
completion that raises pytest's skip so that its tests read as skipped.

Each is judged `passed` with the guard in mode "legacy" (tests only: the former channel, an unnamed file
read after the run, and the former attribution) and is not `passed` as the metric judges.  Exit-time
forgers also fail with the guard "blind" (nothing refused, no integrity check): the channel alone stops
them (docs/judging.md, "The channel").  Every judged run is a real pytest run in the real sandbox.
"""
import dataclasses
import textwrap

import pytest

from conftest import make_sample
from guard_attacks import FORGE
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

pytestmark = [pytest.mark.sandbox]
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
ON = JudgeConfig(timeout_s=60, strict=False)  # the guard and its channel alone (strict.py refuses some on its own)
LEGACY = dataclasses.replace(ON, guard="legacy")
BLIND = dataclasses.replace(ON, guard="blind")

# At exit: take the key and the descriptor from the guard's closure, rewrite the stream (a file: from its
# start; a pipe: continue the chain where the guard stopped) with every test passed, forge pytest's junit
# report and our plugin's record, and exit 0.
EXIT_FORGE = FORGE + '''
import gc as _g, os as _o, hmac as _h, hashlib as _hl, json as _j
_emit = [f for f in _g.get_objects() if type(f).__name__ == "function" and f.__name__ == "emit"
         and f.__closure__ and "key" in f.__code__.co_freevars][0]
_cells = dict(zip(_emit.__code__.co_freevars, _emit.__closure__))
_key, _fd, _state = _cells["key"].cell_contents, _cells["fd"].cell_contents, _cells["state"].cell_contents
_ids = _j.load(open(_o.environ["EXECREPOBENCH_SELECT"]))
def _sign(rows, seq, mac):
    out = b""
    for row in rows:
        seq += 1
        body = "\\t".join([str(seq)] + row).encode()
        mac = _h.new(_key, mac + body, _hl.sha256).digest()
        out += body + b"\\t" + mac.hex().encode() + b"\\n"
    return out
_rows = [["report", i, "call", "passed"] for i in _ids] + [["finish", "0"], ["exit", "0"]]
try:
    _o.lseek(_fd, 0, 0)
    _data = b""
    while True:
        _chunk = _o.read(_fd, 1 << 16)
        if not _chunk:
            break
        _data += _chunk
    _keep = [l.rpartition(b"\\t")[0].decode().split("\\t")[1:] for l in _data.split(b"\\n")[:-1]]
    _keep = [r for r in _keep if r[0] in ("hello", "baseline", "collected")]
    _o.ftruncate(_fd, 0)
    _o.lseek(_fd, 0, 0)
    _o.write(_fd, _sign(_keep + _rows, 0, b""))
except OSError:  # not a file: continue the chain
    _o.write(_fd, _sign(_rows, _state["seq"], _state["mac"]))
_forge()
_o._exit(0)
'''
# While a test runs: switch off every refusal of the guard (the `sensitive` cells of its closures) and make
# every report of pytest pass (its report class), so that pytest, its junit report and the stream all agree.
DISARM = '''
import gc as _g
for _f in _g.get_objects():
    if type(_f).__name__ == "function" and _f.__closure__ and "sensitive" in _f.__code__.co_freevars:
        dict(zip(_f.__code__.co_freevars, _f.__closure__))["sensitive"].cell_contents = lambda *a, **k: False
for _o in _g.get_objects():
    if type(_o) is type and _o.__name__ == "TestReport" and "_fx" not in vars(_o):
        _o._fx = 1
        _o.outcome = property(lambda s: "passed", lambda s, v: None)
        _o.longrepr = property(lambda s: None, lambda s, v: None)
'''


@dataclasses.dataclass(frozen=True)
class Forger:
    name: str
    code: str  # the masked function's body before its last statement (`_T`: the text it leaves to run)
    text: str  # what runs later
    wrong: str = "return value + 1"  # the last statement: never the real code
    at_exit: bool = False  # runs after the session's finish (the channel alone stops it)
    what: str = ""


def completion(forger: Forger) -> str:
    lines = [f"_T = {forger.text!r}", *textwrap.dedent(forger.code).strip("\n").splitlines(), forger.wrong]
    return "\n    ".join(lines)


FORGERS = [
    Forger("finalize_exec_at_exit", '''
        import sys as _s, weakref as _w
        _w.finalize(_s, exec, _T, {})
        ''', EXIT_FORGE, at_exit=True,
           what="weakref.finalize(<a module>, exec, text): at exit it rewrites the stream, junit, and exits 0"),
    Forger("atexit_interpreter_runcode", '''
        import atexit as _a, code as _c
        _a.register(_c.InteractiveInterpreter({}).runcode, compile(_T, "<fx>", "exec"))
        ''', EXIT_FORGE, at_exit=True,
           what="an exit handler that is the standard library's own code, running the completion's text"),
    Forger("thread_left_running", '''
        import functools as _ft
        class _I(int):
            __del__ = _ft.partial(exec, "import threading as _t, time as _tm, os as _o\\n"
                                  "def _late():\\n"
                                  "    while not _o.path.exists(_o.environ['EXECREPOBENCH_COLLECT_OUT'] + '.done'):\\n"
                                  "        _tm.sleep(0.01)\\n"
                                  "    _tm.sleep(0.2)\\n"
                                  "    exec(_T, {})\\n"
                                  "if not any(t.name == '_fx' for t in _t.enumerate()):\\n"
                                  "    _t.Thread(target=_late, name='_fx').start()\\n", {"_T": _T})
        _x = _I(0)
        ''', EXIT_FORGE, at_exit=True,
           what="a thread started from a finalizer outlives the session and forges the stream and junit"),
    Forger("del_partial_exec_on_result", '''
        import functools as _ft
        class _I(int):
            __del__ = _ft.partial(exec, _T, {})
        _x = _I(0)
        ''', DISARM, what="a local object whose class has __del__ = partial(exec, text): as the completion's frame "
                          "goes, the guard's refusals are switched off and every report passes"),
    Forger("finalize_exec_on_result", '''
        import functools as _ft, weakref as _w
        class _L(list):
            pass
        _r = _L([value + 1])
        _w.finalize(_r, exec, _T, {})
        ''', DISARM, what="weakref.finalize on the completion's local object: it fires as its frame goes"),
    Forger("gc_cycle_finalizer", '''
        import functools as _ft, gc as _gc
        class _C:
            __del__ = _ft.partial(exec, _T + "\\nimport gc\\ngc.set_threshold(700)\\n", {})
        _a = _C()
        _a.me = _a
        del _a
        _gc.set_threshold(1)
        ''', DISARM,
           what="an object in a gc cycle whose __del__ runs the text at the next collection (in pytest's code)"),
]


@pytest.fixture(scope="module")
def clamp(built_minirepo):
    return make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)


@pytest.mark.parametrize("forger", FORGERS, ids=lambda f: f.name)
def test_forger_passes_the_former_guard_and_not_the_channel(clamp, forger):
    text = completion(forger)
    old = judge(clamp, text, LEGACY)
    assert (old.passed, old.reason) == (True, "passed"), old  # the attack is real
    new = judge(clamp, text, ON)
    assert not new.passed and new.reason in ("tampering", "failed", "crashed"), new
    if forger.at_exit:  # the channel alone: nothing is refused, and still nothing written at exit counts
        blind = judge(clamp, text, BLIND)
        assert not blind.passed, blind


# pytest's skip raised from the completion's code: with no judged tests (the whole suite judges the sample),
# skipped tests are accepted as the suite's own, so a completion that skips the tests that call it passes.
SKIPPERS = {
    "pytest_skip": 'import pytest as _p\n    _p.skip("not on this platform")',
    "unittest_skip_from_exec": 'exec("import unittest\\nraise unittest.SkipTest(\'later\')", {})',
    "pytest_xfail": 'import pytest as _p\n    _p.xfail("known issue")',
}


@pytest.fixture(scope="module")
def clamp_suite(built_minirepo):
    return make_sample(built_minirepo, "minirepo/mathx.py", "return value")


@pytest.mark.parametrize("name", SKIPPERS)
def test_a_skip_from_the_completion_is_refused(clamp_suite, name):
    old = judge(clamp_suite, SKIPPERS[name], LEGACY)
    assert (old.passed, old.reason) == (True, "passed"), old  # the attack is real
    new = judge(clamp_suite, SKIPPERS[name], ON)
    assert (new.passed, new.reason) == (False, "tampering") and any(e.startswith("skip") for e in new.guard_events), new


def test_honest_suite_runs_still_pass_and_fail(clamp_suite):
    assert judge(clamp_suite, "return value", ON).reason == "passed"
    assert judge(clamp_suite, "return value + 1", ON).reason == "failed"


# gettext's plural function (code gettext compiles from a string, called by the completion) warns about a
# float plural; finding the warning's stack level it takes a frame: the standard library's own business.
GETTEXT = 'import gettext as _gt\n    _gt.c2py("n != 1")(float(value))\n    return value{}'


def test_gettext_plural_with_a_float_is_not_tampering(clamp):
    right = judge(clamp, GETTEXT.format(""), ON)
    assert (right.passed, right.reason) == (True, "passed"), right
    wrong = judge(clamp, GETTEXT.format(" + 1"), ON)
    assert (wrong.passed, wrong.reason) == (False, "failed"), wrong
