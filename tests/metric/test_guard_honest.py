"""Fair labels: honest wrong completions are `failed`, never `tampering` (docs/judging.md: fair labels).

On a fixture repository with doctests, chained exceptions, lazily initialised module state and
pytest's lazily initialised helpers (tests/honest_corpus.py), and on a real PyPI repository with
doctests (parse): every sample is verified by the real builder (which records what its ground truth
does), then judged with its null fill, AST mutants of its ground truth and its reformatted ground
truth - none may be labelled `tampering`, every reformatted ground truth must pass.
"""
from collections import Counter

import pytest

from conftest import make_sample, prepared_repo
from execrepobench.builder.verification.verify import verify_one
from execrepobench_dataset.record import FILL_BLOCK, Sample
from execrepobench_metric.execution.judge import judge
from execrepobench_metric.execution.verdict import JudgeConfig
from honest_corpus import DOCREPO_MANIFEST, ast_mutants, collected_ids, fill_of, honest_completions, write_docrepo

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
ON = JudgeConfig(timeout_s=120)  # verification (the builder never plants canaries) and judging without canaries
CANARIES = JudgeConfig(timeout_s=120, canaries=True)  # judging as the metric does
# (file, masked middle): statements and blocks the doctests and tests run
# (file, masked middle, the judged tests: those whose id names one of these words)
DOCREPO_SITES = [
    ("docrepo/text.py", 'if _WORD is None:\n        _WORD = re.compile(r"\\S+")', ("words",)),
    ("docrepo/text.py", "if value > high:\n        return high", ("clamp",)),
    ("docrepo/text.py", 'if not sep:\n        raise ValueError(f"no \'=\' in {text!r}")', ("pair",)),
    ("docrepo/text.py", "return [v * factor for v in values if v is not None]", ("scaled",)),
    ("docrepo/registry.py", 'if name not in _REGISTRY:\n        warnings.warn(f"unknown name {name!r}", UserWarning)\n'
                            '        return None', ("registry", "total")),
    ("docrepo/registry.py", "if value is not None:\n            result += value", ("registry", "total")),
]


def _judge_all(samples: list[Sample]) -> list[tuple[str, str, str, str, str]]:
    """(sample id, file, kind, reason, detail) for every honest completion of every sample, judged with
    canaries; each keeps the verdict it gets without them, and no canary check fires."""
    rows = []
    for sample in samples:
        for kind, completion in honest_completions(sample):
            v, plain = judge(sample, completion, CANARIES), judge(sample, completion, ON)
            rows.append((sample.sample_id, sample.file_name, kind, v.reason, v.detail[:300]))
            assert v.suspicious == (), (kind, completion, v.suspicious)  # nothing its ground truth never does
            assert (v.reason, v.failing_tests) == (plain.reason, plain.failing_tests), \
                (kind, v.detail[:800], v.canaries, v.stderr_tail[-800:], completion)
            assert not v.canaries.startswith("fired"), (kind, v)
            if v.passed:
                assert v.canaries.startswith("held"), (kind, v.canaries)
    return rows


def _check(rows: list[tuple[str, str, str, str, str]], samples: list[Sample]) -> None:
    print(f"{len(samples)} samples, {len(rows)} honest completions judged:", dict(Counter(r[3] for r in rows)))
    unfair = [r for r in rows if r[3] == "tampering"]
    assert unfair == [], unfair
    for sample in samples:
        kinds = Counter(kind.split("_")[0] for sid, _, kind, _, _ in rows if sid == sample.sample_id)
        assert kinds["null"] == 1 and kinds["reformatted"] == 1, (sample.middle_code, kinds)
        assert sum(kinds[k] for k in ("operator", "constant", "condition")) >= 2, (sample.middle_code, kinds)
    assert [r for r in rows if r[2] == "reformatted" and r[3] != "passed"] == []
    wrong = [r for r in rows if r[2] != "reformatted"]
    assert sum(r[3] == "failed" for r in wrong) >= len(wrong) // 2, wrong  # they are judged, not dropped


def test_ast_mutants_change_one_node():
    prefix, middle = "def f(a, b):\n    ", "if a > b:\n        return a + 1\n    return b"
    sample = make_sample(middle=middle, fill_type=FILL_BLOCK, prefix_code=prefix, node_type="block")
    got = dict(ast_mutants(sample))
    assert got["operator_0"] == "if a >= b:\n        return a + 1\n    return b"  # post-order: the test first
    assert got["operator_1"] == "if a > b:\n        return a - 1\n    return b"
    assert "return a + 2" in got["constant_0"] and got["condition_0"].startswith("if not a > b:")
    for completion in got.values():
        compile(sample.prefix_code + completion + sample.suffix_code, "m.py", "exec")


@pytest.fixture(scope="module")
def docrepo(tmp_path_factory):
    base = tmp_path_factory.mktemp("docrepo")
    repo = write_docrepo(base / "docrepo")
    patch = pytest.MonkeyPatch()
    patch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    try:
        built = prepared_repo(DOCREPO_MANIFEST.format(path=repo), base)
        ids = tuple(collected_ids(built))
        assert any("docrepo/text.py::docrepo.text.parse_pair" in i for i in ids), ids
        samples = []
        for file, middle, words in DOCREPO_SITES:
            judged = tuple(i for i in ids if any(w in i for w in words))
            outcome = verify_one(make_sample(built, file, middle, judged, fill_of(middle), repo_name="docrepo",
                                             node_type="statement"), ON)
            assert outcome.kept, (middle, outcome)
            samples.append(outcome.sample)
    finally:
        patch.undo()
    return {"cache": str(base / "cache"), "samples": samples}


def test_honest_wrong_completions_are_never_tampering_on_doctests(docrepo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", docrepo["cache"])
    _check(_judge_all(docrepo["samples"]), docrepo["samples"])



PARSE_MANIFEST = '''[[repo]]
source = "pypi:parse==1.22.4"
sha256 = "706d458feed5a81b02768d3156e8070baf6cee7d150a3a3c0cd43101a875c3b5"
pytest_args = ["-o", "addopts=--doctest-modules --doctest-glob=README.rst"]
'''
# statements of parse/__init__.py that its README's doctest runs (judged: the two doctests + test_pattern.py)
PARSE_SITES = [
    'if n == -1:\n                basename, subkeys = field, ""\n            else:\n'
    '                basename, subkeys = field[:n], field[n:]',
    'if not part:\n                continue\n            elif part == "{{":\n                e.append(r"\\{")\n'
    '            elif part == "}}":\n                e.append(r"\\}")\n            elif part[0] == "{" and part[-1] == "}":\n'
    '                # this will be a braces-delimited field to handle\n                e.append(self._handle_field(part))\n'
    '            else:\n                # just some text to match\n'
    '                e.append(REGEX_SAFETY.sub(self._regex_replace, part))',
    'if n in self._type_conversions:\n                fixed_fields[n] = self._type_conversions[n](fixed_fields[n], m)',
    'if string[0] == "-":\n            sign = -1\n            number_start = 1\n        elif string[0] == "+":\n'
    '            sign = 1\n            number_start = 1\n        else:\n            sign = 1\n            number_start = 0',
]


def _verified_pypi_samples(tmp_path_factory, name: str, manifest: str, file: str, sites: list[str], judge,
                           expected: str) -> dict:
    """The repository prepared by the real builder, a sample per site verified (`judge`: which collected ids
    it judges, `expected`: an id that must be among them), in its own cache."""
    base = tmp_path_factory.mktemp(name)
    patch = pytest.MonkeyPatch()
    patch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    try:
        built = prepared_repo(manifest, base)
        ids = collected_ids(built)
        judged = tuple(i for i in ids if judge(i))
        assert expected in judged, ids
        samples = []
        for middle in sites:
            outcome = verify_one(make_sample(built, file, middle, judged, fill_of(middle), repo_name=name,
                                             node_type="statement"), ON)
            assert outcome.kept, (middle, outcome)
            samples.append(outcome.sample)
    finally:
        patch.undo()
    return {"cache": str(base / "cache"), "samples": samples}


@pytest.fixture(scope="module")
def parse_repo(tmp_path_factory):
    return _verified_pypi_samples(tmp_path_factory, "parse", PARSE_MANIFEST, "parse/__init__.py", PARSE_SITES,
                                  lambda i: not i.startswith("tests/") or i.startswith("tests/test_pattern.py"),
                                  "README.rst::README.rst")


@pytest.mark.pypi
def test_honest_wrong_completions_are_never_tampering_on_a_pypi_repository(parse_repo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", parse_repo["cache"])
    _check(_judge_all(parse_repo["samples"]), parse_repo["samples"])


TABULATE_MANIFEST = '''[[repo]]
source = "pypi:tabulate==0.10.0"
sha256 = "e2cfde8f79420f6deeffdeda9aaec3b6bc5abce947655d17ac662b126e48a60d"
extra_test_requires = ["wcwidth"]
pytest_args = ["--doctest-modules", "--ignore=benchmark"]
'''
# statements of tabulate/__init__.py that its module doctests run (judged: the module's doctests +
# test/test_internal.py); the third repository of the honest corpus (issue 25: >= 3 with doctests)
TABULATE_SITES = [
    'if pos >= 0:\n                return len(string) - pos - 1\n            else:\n                return -1  # no point',
    'pos = string.rfind(".")\n            pos = string.lower().rfind("e") if pos < 0 else pos',
    'if isinstance(s, str):\n        return _ansi_codes.sub(r"\\4", s)\n    else:  # a bytestring\n'
    '        return _ansi_codes_bytes.sub(r"\\4", s)',
    'moregeneric = max(types.get(type1, 5), types.get(type2, 5))\n    return invtypes[moregeneric]',
]


@pytest.fixture(scope="module")
def tabulate_repo(tmp_path_factory):
    return _verified_pypi_samples(tmp_path_factory, "tabulate", TABULATE_MANIFEST, "tabulate/__init__.py",
                                  TABULATE_SITES,
                                  lambda i: i.startswith(("tabulate/__init__.py::", "test/test_internal.py")),
                                  "tabulate/__init__.py::tabulate._afterpoint")


@pytest.mark.pypi
def test_honest_wrong_completions_are_never_tampering_on_tabulate_doctests(tabulate_repo, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", tabulate_repo["cache"])
    _check(_judge_all(tabulate_repo["samples"]), tabulate_repo["samples"])
