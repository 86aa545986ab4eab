"""Attacks that reach pytest's plugin manager, hook implementations, collected items and their test
data through back-references, or patch the standard library's doctest machinery
(guard_attacks.REACH_ATTACKS): each passes without the guard (it is real: wrong code judged
`passed`) and is judged `tampering` or `failed` with it.  docs/judging.md names the defence of each."""
import pytest

import guard_attacks as corpus
from conftest import make_sample, prepared_repo
from execrepobench.builder.verification.verify import verify_one
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig
from honest_corpus import DOCREPO_MANIFEST, collected_ids, fill_of, write_docrepo

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
# the guard alone: the lenient rule (strict.py refuses many of these on its own: tests/metric/test_attacks_strict.py)
ON, OFF = JudgeConfig(timeout_s=60, strict=False), JudgeConfig(timeout_s=60, guard="off", fail_fast=False, strict=False)
JUDGE = JudgeConfig(timeout_s=60, canaries=True)  # as the metric judges (ON: verification, which plants none)
CLAMP_TESTS = ("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")
SCALED = "return [v * factor for v in values if v is not None]"
WRONG = {"clamp": ("    ", "return value + 1"), "doc": ("    ", "return values"), "docmix": ("    ", "return values")}


@pytest.fixture(scope="module")
def targets(built_minirepo, tmp_path_factory):
    base = tmp_path_factory.mktemp("reach")
    repo = write_docrepo(base / "docrepo")
    patch = pytest.MonkeyPatch()
    patch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    try:
        built = prepared_repo(DOCREPO_MANIFEST.format(path=repo), base)
        ids = collected_ids(built)
        doctest_id = next(i for i in ids if i.endswith("::docrepo.text.scaled"))
        out = {"cache": str(base / "cache")}
        for name, judged in (("doc", (doctest_id,)), ("docmix", (doctest_id, "tests/test_text.py::test_scaled_approx"))):
            sample = make_sample(built, "docrepo/text.py", SCALED, judged, fill_of(SCALED), repo_name="docrepo",
                                 node_type="statement")
            outcome = verify_one(sample, ON)
            assert outcome.kept and outcome.sample.guard_allowed == (), outcome
            out[name] = outcome.sample
    finally:
        patch.undo()
    out["clamp"] = make_sample(built_minirepo, "minirepo/mathx.py", "return value", judged=CLAMP_TESTS)
    return out


def _judge(targets, monkeypatch, target, completion, config):
    if target != "clamp":
        monkeypatch.setenv("EXECREPOBENCH_CACHE", targets["cache"])
    return judge(targets[target], completion, config)


def test_wrong_code_fails_and_the_corpus_spells_no_blocklisted_name(targets, monkeypatch):
    assert len(corpus.REACH_ATTACKS) >= 15 and len({a.name for a in corpus.REACH_ATTACKS}) == len(corpus.REACH_ATTACKS)
    for target, (_, wrong) in WRONG.items():
        assert _judge(targets, monkeypatch, target, wrong, ON).reason == "failed"
        assert _judge(targets, monkeypatch, target, wrong, JUDGE).reason == "failed"
        assert _judge(targets, monkeypatch, target, wrong, OFF).reason == "failed"
    for attack in corpus.REACH_ATTACKS:
        indent, wrong = WRONG[attack.target]
        assert corpus.old_blocklist_hits(corpus.completion(attack, indent, wrong), "") == [], attack.name


@pytest.mark.parametrize("attack", corpus.REACH_ATTACKS, ids=lambda a: a.name)
def test_reach_attack_passes_without_the_guard_and_fails_with_it(targets, monkeypatch, attack):
    indent, wrong = WRONG[attack.target]
    completion = corpus.completion(attack, indent, wrong)
    unguarded = _judge(targets, monkeypatch, attack.target, completion, OFF)
    assert (unguarded.passed, unguarded.reason) == (True, "passed"), unguarded
    guarded = _judge(targets, monkeypatch, attack.target, completion, JUDGE)
    assert not guarded.passed and guarded.reason in ("tampering", "failed"), guarded
    assert guarded.suspicious and unguarded.suspicious, guarded  # flagged for people to look at, either way


# The canaries alone, with the guard blind (the evidence stream, no refusal, no integrity check: an attack
# past every in-process check): what rewrites the outcomes pytest reports, or patches doctest's machinery
# (the canary that must fail is a doctest where doctests are judged), is caught; what rewrites only the
# running test's own data, or makes the judged tests' modules no-ops, is not (docs/judging.md).
CANARIES_CATCH = {"pm_register_via_debugging", "pm_register_via_assertion_config", "pm_hookcall_monitoring",
                  "hookimpl_function_swap", "hookimpls_list_insert", "hookcaller_hookexec_swap",
                  "hookrelay_attribute_swap", "doctest_checker_patch_and_equal_to_all", "doctest_runner_run_at_import",
                  "doctest_private_run_at_import", "doctest_item_runtest_at_import", "doctest_checker_patch_at_import",
                  # canaries appended to the judged test modules run under its autouse fixture too
                  "autouse_fixture_noop_runtest"}


@pytest.mark.parametrize("attack", corpus.REACH_ATTACKS, ids=lambda a: a.name)
def test_canaries_alone_catch_the_attacks_that_rewrite_outcomes(targets, monkeypatch, attack):
    indent, wrong = WRONG[attack.target]
    blind = JudgeConfig(timeout_s=60, guard="blind", canaries=True, strict=False)  # the canaries alone
    v = _judge(targets, monkeypatch, attack.target, corpus.completion(attack, indent, wrong), blind)
    assert (v.reason == "tampering") == (attack.name in CANARIES_CATCH), v
    assert v.reason in ("tampering", "passed"), v
