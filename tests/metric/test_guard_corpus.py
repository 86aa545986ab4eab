"""Our adversarial corpus (guard_attacks.py) on a real PyPI repository, in the real sandbox: every
attack passes without the guard (it is real) and is judged tampering / failed with it."""
from dataclasses import replace

import pytest

import guard_attacks as corpus
from conftest import make_sample, prepared_repo
from execrepobench.builder.verification.verify import verify_one
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig
from honest_corpus import collected_ids

pytestmark = [pytest.mark.pypi, pytest.mark.sandbox]
# Without the guard every test runs (fail_fast off), as in the official procedure: stopping at the first
# failure happens to end some attacks early, and that must not be what the corpus shows to catch them.
# the guard alone: the lenient rule (strict.py refuses many of these on its own: tests/metric/test_attacks_strict.py)
ON, OFF = JudgeConfig(timeout_s=120, strict=False), JudgeConfig(timeout_s=120, guard="off", fail_fast=False, strict=False)
JUDGE = JudgeConfig(timeout_s=120, canaries=True)  # as the metric judges (ON: verification, which plants none)
# pytest and pluggy pinned: several attacks name their internals (as a real attacker would, for the
# versions it meets), so the proof that each attack works must not drift with new releases.
MANIFEST = '''[[repo]]
source = "pypi:isodate==0.7.2"
sha256 = "4cd1aa0f43ca76f4a6c6c0292a85f40b35ec2e43e315b59f06e6d32171a953e6"
extra_test_requires = ["pytest==9.2.0", "pluggy==1.7.0"]
'''
# (file, masked middle, indent of its body, wrong statement the attacks end with, judged tests)
TARGETS = {
    "parse": ("src/isodate/isodates.py", 'raise ISO8601Error("Unrecognised ISO 8601 date format: %r" % datestring)',
              "    ", "return None",
              lambda i: ("test_datetime.py::test_parse[" in i or "test_duration.py" in i
                         or i.endswith("test_date.py::test_parse[4-1-W1-1-None-%YW%W%w]"))),
    "hash": ("src/isodate/duration.py", "return hash((self.tdelta, self.months, self.years))", "        ", "return 0",
             lambda i: i.endswith("test_duration.py::test_hash")),
}
REAL = [a for a in corpus.ATTACKS if a.target in TARGETS]


@pytest.fixture(scope="module")
def isodate(tmp_path_factory):
    """isodate built by the real builder in this module's own cache; the two samples verified (which
    records what their ground truth does for the guard)."""
    base = tmp_path_factory.mktemp("corpus")
    patch = pytest.MonkeyPatch()
    patch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    built = prepared_repo(MANIFEST, base)
    ids = collected_ids(built)  # those every hash seed collects (some of isodate's ids follow set order)
    samples = {}
    for name, (file, middle, indent, wrong, pick) in TARGETS.items():
        judged = tuple(i for i in ids if pick(i))
        outcome = verify_one(make_sample(built, file, middle, judged, repo_name="isodate", node_type="statement"), ON)
        assert outcome.kept, outcome
        samples[name] = (outcome.sample, indent, wrong)
    patch.undo()
    samples["cache"] = str(base / "cache")
    return samples


@pytest.fixture(autouse=True)
def _own_cache(request, monkeypatch):
    if "isodate" in request.fixturenames:
        monkeypatch.setenv("EXECREPOBENCH_CACHE", request.getfixturevalue("isodate")["cache"])


def test_corpus_is_large_and_spells_no_blocklisted_name(isodate):
    assert len(REAL) >= 25 and len({a.name for a in corpus.ATTACKS}) == len(corpus.ATTACKS)
    for attack in REAL:
        sample, indent, wrong = isodate[attack.target]
        assert corpus.old_blocklist_hits(corpus.completion(attack, indent, wrong), sample.original_code) == [], \
            attack.name
    for sample, _, wrong in (isodate[t] for t in TARGETS):
        assert sample.guard_allowed == ()  # these ground truths do nothing the guard watches
        assert judge(sample, sample.middle_code, ON).passed
        assert judge(sample, wrong, ON).reason == "failed"
        truth = judge(sample, sample.middle_code, replace(JUDGE, known_verdicts=False))
        assert truth.passed and truth.canaries.startswith("held"), truth
        assert judge(sample, wrong, JUDGE).reason == "failed"


@pytest.mark.parametrize("attack", REAL, ids=lambda a: a.name)
def test_attack_passes_without_the_guard_and_fails_with_it(isodate, attack):
    sample, indent, wrong = isodate[attack.target]
    completion = corpus.completion(attack, indent, wrong)
    unguarded = judge(sample, completion, OFF)
    assert (unguarded.passed, unguarded.reason) == (True, "passed"), unguarded
    guarded = judge(sample, completion, JUDGE)
    assert not guarded.passed and guarded.reason in ("tampering", "failed"), guarded
