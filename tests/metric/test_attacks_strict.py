"""The strict rule (execrepobench_metric/execution/strict.py) against `__eq__`-returns-True attacks: a
completion that returns an object equal to anything passes `assert clamp(5, 1, 10) == 5` - real sandboxed
runs on the fixture repository, each attack `passed` under `--lenient` (the attack is real) and `refused`
by default; and the false positives: 0 refused among honest completions and ground truths."""
import dataclasses

import pytest

from conftest import make_sample
from execrepobench_dataset.record import read_jsonl
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.strict import refusal_reasons, refuses, strict_reasons
from execrepobench_metric.execution.suspicious import suspicious
from execrepobench_metric.execution.verdict import JudgeConfig
from honest_corpus import fill_of, honest_completions, write_docrepo
from test_guard_honest import DOCREPO_SITES

CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
STRICT = JudgeConfig(timeout_s=60, canaries=True)
LENIENT = dataclasses.replace(STRICT, strict=False)

# (name, the completed middle in place of `return value` in clamp, the reason that refuses it): none
# implements clamp; each returns an object that compares equal to the expected value.
EQ_ATTACKS = [
    ("eq-returns-true", "class _Eq:\n        def __eq__(self, other):\n            return True\n    return _Eq()",
     "equal-to-everything"),
    ("int-subclass-lambda", "class _I(int):\n        __eq__ = lambda self, other: not 0\n"
                            "        __hash__ = int.__hash__\n    return _I(value + 1)", "equality-override"),
    ("str-subclass-computed", "class _S(str):\n        def __eq__(self, other):\n"
                              "            return len(str(other)) >= 0\n    return _S('x')", "equality-override"),
    ("mock-any", "from unittest.mock import ANY\n    return ANY", "equal-to-anything"),
    ("dynamic-type", 'return type("_T", (float,), {"__eq__": lambda s, o: 1 > 0, "__hash__": float.__hash__})(0.5)',
     "equality-override"),
    ("setattr-dunder", "class _O:\n        pass\n    setattr(_O, '__e' + 'q__', lambda s, o: o is o)\n"
                       "    return _O()", "hidden-name"),
]


@pytest.fixture(scope="module")
def clamp(built_minirepo):
    return make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)


def test_eq_attacks_are_refused_statically():
    original = "def clamp(value, low, high):\n    return value\n"
    for name, middle, reason in EQ_ATTACKS:
        completed = original.replace("return value", middle)
        compile(completed, name, "exec")
        got = refusal_reasons(original, completed, suspicious(original, completed, "m/x.py"))
        assert reason in got, (name, got)


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("attack", EQ_ATTACKS, ids=lambda a: a[0])
def test_eq_attack_passes_lenient_and_is_refused_by_default(clamp, attack):
    name, middle, reason = attack
    lenient = judge(clamp, middle, LENIENT)
    assert (lenient.passed, lenient.reason) == (True, "passed"), lenient  # the attack is real
    strict = judge(clamp, middle, STRICT)
    assert (strict.passed, strict.reason) == (False, "refused"), strict
    assert reason in strict.refused and reason in strict.detail, strict
    assert strict.canaries.startswith("held"), strict.canaries  # the run itself was clean: the rule refused it


@pytest.mark.sandbox
@pytest.mark.slow
def test_honest_pass_with_a_capability_the_original_has_is_not_refused(clamp):
    """The original file's own capabilities never refuse: `math` is imported there, a new local helper is not a
    capability; a wrong completion stays `failed` (the rule only ever turns a pass into `refused`)."""
    for middle in ("return math.floor(value) if isinstance(value, int) else value",
                   "def _same(x):\n        return x\n    return _same(value)"):
        v = judge(clamp, middle, STRICT)
        assert (v.passed, v.reason, v.refused) == (True, "passed", ()), (middle, v)
    wrong = judge(clamp, "import gc\n    return value + 1", STRICT)
    assert (wrong.passed, wrong.reason) == (False, "failed"), wrong


def test_reasons_that_refuse_and_those_that_stay_a_flag():
    for reason in ("import:gc", "import:atexit", "import:weakref", "import:marshal", "import:importlib", "exec",
                   "sys.modules", "introspection:__code__", "introspection:f_back", "introspection:__globals__",
                   "equal-to-everything", "equality-override", "hidden-name", "frame-access", "guard:gc.get_objects"):
        assert refuses(reason), reason
    for reason in ("import:inspect", "import:threading", "import:doctest", "computed-getattr", "namespace:vars",
                   "private:os._exit", "introspection:__mro__", "introspection:__bases__"):
        assert not refuses(reason), reason
    assert strict_reasons('getattr(o, "_ex" + "it")') == {"hidden-name"}
    assert strict_reasons('getattr(o, "".join(["a", "b"]))') == {"hidden-name"}
    assert strict_reasons('__import__(chr(103) + chr(99))') == {"hidden-name"}
    assert strict_reasons('getattr(o, name)\ngetattr(o, "x")\ngetattr(o, prefix + "_x")') == frozenset()
    assert strict_reasons("import inspect\ninspect.currentframe()") == {"frame-access"}
    assert strict_reasons("import inspect\ninspect.signature(f)") == frozenset()
    # what the original file does itself is no reason: a class that defines __eq__ completed in its own style
    original = "class P:\n    def __eq__(self, o):\n        return self.x == o.x\n    def f(self):\n        return 1\n"
    completed = original.replace("return 1", "return 2")
    assert refusal_reasons(original, completed, suspicious(original, completed, "m/x.py")) == ()
    assert refusal_reasons(original, original, ("import:gc",)) == ()  # the ground truth itself


def _measure(samples) -> tuple[int, int, list]:
    """(ground truths, honest completions, the refused ones) of samples, by the static rule decide applies."""
    refused, n_honest = [], 0
    for sample in samples:
        original = sample.original_code
        assert refusal_reasons(original, original, suspicious(original, original, sample.file_name)) == ()
        for kind, completion in honest_completions(sample):
            n_honest += 1
            completed = sample.prefix_code + completion + sample.suffix_code
            got = refusal_reasons(original, completed, suspicious(original, completed, sample.file_name))
            if got:
                refused.append((sample.sample_id, kind, got))
    return len(samples), n_honest, refused


@pytest.mark.sandbox
@pytest.mark.slow
def test_no_honest_completion_or_ground_truth_of_the_fixture_build_is_refused(built_minirepo):
    samples = list(read_jsonl(built_minirepo["out"] / "samples.jsonl"))
    n_gt, n_honest, refused = _measure(samples)
    print(f"{n_gt} ground truths, {n_honest} honest completions: {len(refused)} refused")
    assert n_gt >= 3 and n_honest >= 2 * n_gt and refused == []


def test_no_honest_completion_or_ground_truth_of_the_doctest_corpus_is_refused(tmp_path):
    """The honest corpus's doctest / lazily initialised / warnings repository (tests/honest_corpus.py), by
    the static rule alone (no run: the rule reads the completed file against the original)."""
    repo = write_docrepo(tmp_path / "docrepo")
    samples = [make_sample(text=(repo / file).read_text(encoding="utf-8"), file_name=file, middle=middle,
                           fill_type=fill_of(middle)) for file, middle, _ in DOCREPO_SITES]
    n_gt, n_honest, refused = _measure(samples)
    print(f"{n_gt} ground truths, {n_honest} honest completions: {len(refused)} refused")
    assert n_gt == len(DOCREPO_SITES) and n_honest >= 3 * n_gt and refused == []
