"""The honest corpus, measured whole (docs/judging.md, "Fair labels"): >= 150 honest completions (ground
truths reformatted, null fills, AST mutants: an operator swapped, a constant off by one, a condition
negated) of samples over 5 repositories - doctests (docrepo, parse, tabulate), unittest-style tests
(isodate, i18nrepo), gettext-using code (i18nrepo: plural forms, the float plural that makes
`gettext._as_int` call `sys._getframe` with the completion's frame on the stack) - each judged as the
metric judges (guard enforcing, canaries planted).  None may be `tampering`, no run's canaries may be
off or fire for a reason of their own, and a completion that passes has canaries that held.
"""
from collections import Counter

import pytest

from conftest import make_sample, prepared_repo
from execrepobench.builder.verification.verify import verify_one
from execrepobench_metric.execution.judge import judge
from honest_corpus import collected_ids, fill_of, honest_completions
from honest_corpus_wide import I18NREPO_MANIFEST, I18NREPO_SITES, auto_sites, write_i18nrepo
from test_guard_honest import (CANARIES, ON, _verified_pypi_samples, docrepo, parse_repo,  # noqa: F401 - fixtures
                               tabulate_repo)

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
ISODATE_MANIFEST = '''[[repo]]
source = "pypi:isodate==0.7.2"
sha256 = "4cd1aa0f43ca76f4a6c6c0292a85f40b35ec2e43e315b59f06e6d32171a953e6"
'''
ISODATE_FILE = "src/isodate/isostrf.py"


@pytest.fixture(scope="module")
def i18nrepo(tmp_path_factory):
    base = tmp_path_factory.mktemp("i18nrepo")
    repo = write_i18nrepo(base / "i18nrepo")
    patch = pytest.MonkeyPatch()
    patch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    try:
        built = prepared_repo(I18NREPO_MANIFEST.format(path=repo), base)
        ids = tuple(collected_ids(built))
        assert "tests/test_plural.py::PluralTests::test_float_count_warns" in ids, ids
        samples = []
        for middle, words in I18NREPO_SITES:
            judged = tuple(i for i in ids if any(w in i.lower() for w in words))
            outcome = verify_one(make_sample(built, "i18nrepo/plural.py", middle, judged, fill_of(middle),
                                             repo_name="i18nrepo", node_type="statement"), ON)
            if outcome.kept:
                samples.append(outcome.sample)
    finally:
        patch.undo()
    assert len(samples) >= 5, "i18nrepo: too few verified sites"
    return {"cache": str(base / "cache"), "samples": samples}


@pytest.fixture(scope="module")
def isodate_repo(tmp_path_factory):
    """Sites drawn from isodate's source (unittest-style tests), each kept only when verification keeps it."""
    base = tmp_path_factory.mktemp("isodate")
    patch = pytest.MonkeyPatch()
    patch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    try:
        built = prepared_repo(ISODATE_MANIFEST, base)
        ids = tuple(collected_ids(built))
        judged = tuple(i for i in ids if i.startswith(("tests/test_strf.py", "tests/test_duration.py")))
        assert judged, ids
        samples = []
        for middle in auto_sites((built["root"] / ISODATE_FILE).read_text(encoding="utf-8"), 10):
            outcome = verify_one(make_sample(built, ISODATE_FILE, middle, judged, fill_of(middle),
                                             repo_name="isodate", node_type="statement"), ON)
            if outcome.kept:
                samples.append(outcome.sample)
    finally:
        patch.undo()
    assert len(samples) >= 4, "isodate: too few verified sites"
    return {"cache": str(base / "cache"), "samples": samples}


def _judge(repo: dict, monkeypatch) -> list[tuple[str, str, str, str]]:
    """(repository, kind, reason, canaries) of every honest completion of every sample of `repo`."""
    monkeypatch.setenv("EXECREPOBENCH_CACHE", repo["cache"])
    rows = []
    for sample in repo["samples"]:
        for kind, completion in honest_completions(sample):
            v = judge(sample, completion, CANARIES)
            rows.append((sample.repo_name, kind, v.reason, v.canaries))
    return rows


@pytest.mark.pypi
def test_the_honest_corpus_has_no_tampering_and_canaries_never_go_off(docrepo, parse_repo, tabulate_repo, i18nrepo,
                                                                     isodate_repo, monkeypatch):
    rows = []
    for repo in (docrepo, parse_repo, tabulate_repo, i18nrepo, isodate_repo):
        rows += _judge(repo, monkeypatch)
    print(f"{len(rows)} honest completions over {len({r[0] for r in rows})} repositories:",
          dict(Counter(r[2] for r in rows)), dict(Counter(r[3].split(":")[0].split(" (")[0] for r in rows)))
    assert len(rows) >= 150 and len({r[0] for r in rows}) >= 5
    assert [r for r in rows if r[2] == "tampering"] == []
    assert [r for r in rows if r[3].startswith(("off", "fired")) or "rerun" in r[3]] == []  # never for their own reason
    assert [r for r in rows if r[2] == "passed" and r[3] != "held"] == []
    assert [r for r in rows if r[1] == "reformatted" and r[2] != "passed"] == []
    wrong = [r for r in rows if r[1] != "reformatted"]
    assert sum(r[2] == "failed" for r in wrong) >= len(wrong) // 2, wrong  # they are judged, not dropped
