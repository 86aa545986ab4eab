"""Attacks on the canaries (execrepobench_metric/execution/canaries.py): discriminators that tell the canary
tests apart from the judged ones, and off-switches that keep the canaries from being checked.

Each attack is a completion of minirepo's `clamp` that returns a wrong value and rewrites the judged
tests' outcomes to `passed`, leaving what it takes for canaries alone (or switching them off).  It is
judged with the guard off: these attacks model code that got past the in-process guard (what the
canaries are for).  Each is shown to be judged `passed` with one defence switched off (a test-only
switch of canaries.py) and not `passed` with it on:

- SEPARATE_FILES (canaries in modules of their own): a discriminator by the canary file - no import
  statement, another inode / device, size or modification time than the repository's test modules;
- TWINS_OFF (canaries in the judged modules, but plain functions): a discriminator that runs each test
  with its own code swapped for a tripwire - a canary that never calls into the judged code is one;
- FAIL_OPEN (a canary skipped, not collected or in a collection error turns the check off and the run is
  judged again without canaries): off-switches that report canaries skipped, drop them from the collected
  list (`pytest_collection_modifyitems` registered from code), or forge a collection error of their file.
"""
import dataclasses

import pytest

import guard_attacks as corpus
from conftest import make_sample
from execrepobench_metric.execution import canaries
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig

pytestmark = [pytest.mark.sandbox]
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
# the canaries alone: the guard off and the lenient rule (strict.py refuses some of these on its own)
CONFIG = JudgeConfig(timeout_s=60, canaries=True, known_verdicts=False, guard="off", strict=False)

# A plugin the completion registers when its module is imported (during collection): it finds pytest's
# plugin manager among live objects.  `_is_canary(item)` is each attack's discriminator.
REGISTER = '''
def _register(plugin):
    import gc as _g
    for _pm in _g.get_objects():
        if type(_pm).__name__ == "PytestPluginManager" and not _pm.has_plugin("_fx"):
            _pm.register(plugin, "_fx")
'''
FORGE_REPORTS = '''
import pluggy as _pl
_hook = _pl.HookimplMarker("py" + "test")


class _Forger:
    @_hook(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        rep = yield
        if not _is_canary(item):
            rep.outcome, rep.longrepr = "passed", None
        elif _OFF_SWITCH == "skip" and rep.when == "call":
            rep.outcome, rep.longrepr = "skipped", (str(item.path), 1, "Skipped: not on this platform")
        return rep

    @_hook(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        if _OFF_SWITCH in ("drop", "collect_error"):
            dropped = [i for i in items if _is_canary(i)]
            items[:] = [i for i in items if not _is_canary(i)]
            if _OFF_SWITCH == "collect_error":
                from _pytest.reports import CollectReport as _CR
                for path in sorted({i.nodeid.split("::")[0] for i in dropped}):
                    config.hook.pytest_collectreport(report=_CR(path, "failed", "ImportError: no module", []))


_register(_Forger())
'''
BY_FILE = '''
def _is_canary(item):
    return "import" not in open(str(item.path)).read()
'''
BY_RUNNING = '''
class _Trip(Exception):
    pass


_SEEN = {}


def _is_canary(item):
    """Runs the test with this module's functions swapped for a tripwire: a test that fails without ever
    calling into them does not depend on this code - a canary."""
    if item.nodeid not in _SEEN:
        fn = getattr(item, "obj", None)
        g = getattr(fn, "__globals__", {})
        mine = {k: v for k, v in g.items() if getattr(v, "__module__", None) == __name__}
        def _trip(*a, **k):
            raise _Trip()
        g.update({k: _trip for k in mine})
        try:
            fn()
            _SEEN[item.nodeid] = False
        except _Trip:
            _SEEN[item.nodeid] = False
        except Exception:
            _SEEN[item.nodeid] = True
        finally:
            g.update(mine)
    return _SEEN[item.nodeid]
'''


@dataclasses.dataclass(frozen=True)
class CanaryAttack:
    name: str
    discriminator: str
    off_switch: str  # "" (rewrite the judged tests only), "skip", "drop", "collect_error"
    defence: str  # the canaries.py switch that turns the defence off
    what: str


ATTACKS = [
    CanaryAttack("discriminator_by_file", BY_FILE, "", "SEPARATE_FILES",
                 "keeps the outcomes of tests in files without imports, passes the rest"),
    CanaryAttack("discriminator_by_running", BY_RUNNING, "", "TWINS_OFF",
                 "runs each test with its own functions swapped for a tripwire: a failing test that never "
                 "trips it is a canary"),
    CanaryAttack("off_switch_skipped", BY_FILE, "skip", "FAIL_OPEN", "reports the canaries skipped"),
    CanaryAttack("off_switch_dropped", BY_FILE, "drop", "FAIL_OPEN",
                 "drops the canaries from the collected list (pytest_collection_modifyitems from code)"),
    CanaryAttack("off_switch_collection_error", BY_FILE, "collect_error", "FAIL_OPEN",
                 "drops the canaries and forges a collection error of their files"),
]


def completion_of(attack: CanaryAttack) -> str:
    """A wrong body for `clamp`, then the attack at module level (it runs when the module is imported)."""
    code = "\n".join([REGISTER, attack.discriminator, f"_OFF_SWITCH = {attack.off_switch!r}", FORGE_REPORTS])
    return corpus.completion(corpus.Attack(attack.name, "clamp", "module", code, attack.what), "    ",
                             "return value + 1")


@pytest.fixture(scope="module")
def clamp(built_minirepo):
    return make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_each_canary_attack_passes_without_its_defence_and_fails_with_it(clamp, attack, monkeypatch):
    completion = completion_of(attack)
    assert judge(clamp, completion, dataclasses.replace(CONFIG, canaries=False)).reason == "passed"  # it forges
    if attack.defence == "FAIL_OPEN":  # the off-switches need a discriminator that works: files of their own
        monkeypatch.setattr(canaries, "SEPARATE_FILES", True)
    with monkeypatch.context() as off:
        off.setattr(canaries, attack.defence, True)
        without = judge(clamp, completion, CONFIG)
        assert without.reason == "passed", (attack.name, without)
    # a forged collection error interrupts pytest's session before any test runs: `failed` (collection errors)
    caught = ("tampering", "failed") if attack.off_switch == "collect_error" else ("tampering",)
    with_ = judge(clamp, completion, CONFIG)
    assert with_.reason in caught and not with_.passed, (attack.name, with_)
    monkeypatch.setattr(canaries, "SEPARATE_FILES", False)  # and with every defence on (the default)
    default = judge(clamp, completion, CONFIG)
    assert default.reason in caught and not default.passed, (attack.name, default)


def test_honest_completions_keep_their_verdicts_with_every_defence(clamp):
    for completion, reason in ((clamp.middle_code, "passed"), ("return value + 1", "failed"), ("return low", "failed")):
        for _ in range(3):  # fresh canaries each time
            v = judge(clamp, completion, dataclasses.replace(CONFIG, guard="enforce"))
            assert v.reason == reason and not v.canaries.startswith("fired"), v
            if v.passed:
                assert v.canaries == "held", v
