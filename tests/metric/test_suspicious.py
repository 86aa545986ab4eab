"""`suspicious` reasons: what a completion touches that its ground truth never does (a flag, not a verdict)."""
import guard_attacks as corpus
from execrepobench_metric.execution.suspicious import static_reasons, suspicious
from execrepobench_metric.execution.verdict import Verdict

ORIGINAL = "import re\nimport sys\n\n\ndef clamp(value, low, high):\n    return value\n"


def _completed(middle: str) -> str:
    return ORIGINAL.replace("return value", middle)


def test_every_attack_of_both_corpora_is_flagged():
    for attack in corpus.ATTACKS + corpus.REACH_ATTACKS:
        reasons = suspicious(ORIGINAL, _completed(corpus.completion(attack, "    ", "return value + 1")), "m/x.py")
        assert reasons, attack.name


def test_honest_code_is_not_flagged_and_what_the_original_does_is_not_new():
    honest = ["return value + 1", "return min(max(value, low), high)", "pass",
              'return re.sub("a", "b", str(value)) and value  # gc, ctypes, sys._getframe in a comment',
              'msg = "import gc; sys.modules[x] = getattr(o, name)"\n    return value']
    for middle in honest:
        assert suspicious(ORIGINAL, _completed(middle), "m/x.py") == (), middle
    frames = ORIGINAL.replace("return value", "return sys._getframe(1).f_code.co_name")
    assert suspicious(frames, frames.replace("(1)", "(2)"), "m/x.py") == ()  # the ground truth does it too
    assert suspicious(ORIGINAL, frames, "m/x.py") == ("introspection:_getframe", "introspection:f_code",
                                                     "private:sys._getframe")
    assert suspicious(ORIGINAL, ORIGINAL, "m/x.py", ("gc.get_objects",)) == ("guard:gc.get_objects",)


def test_reasons_by_kind():
    got = static_reasons(
        "import gc, inspect\nfrom os import _exit\nimport sys as s\n"
        "def f(o, n):\n    getattr(o, n)\n    s._getframe()\n    del s.modules['x']\n    exec(n)\n"
        "class E:\n    def __eq__(self, other):\n        return True\n"
        "class F:\n    __eq__ = lambda self, other: True\n", "pkg")
    assert {"import:gc", "import:inspect", "private:os._exit", "computed-getattr", "introspection:_getframe",
            "private:sys._getframe", "sys.modules", "exec", "equal-to-everything"} <= got, got
    assert static_reasons("from pkg._impl import _helper\nimport pkg\npkg._x", "pkg") == frozenset()
    assert static_reasons("def f(:", "") == frozenset()


def test_verdict_rows_carry_them():
    v = Verdict("s", False, "failed", suspicious=("import:gc",))
    assert Verdict.from_dict(v.to_dict()) == v and v.to_dict()["suspicious"] == ["import:gc"]
    assert Verdict.from_dict({k: x for k, x in v.to_dict().items() if k != "suspicious"}).suspicious == ()
