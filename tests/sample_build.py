"""A small builder output, written by hand: two repositories (alpha, beta), their records, five samples
(`of` gives a sample's fields as the builder writes them) and the folder `write_build` makes of them.
The dataset tests publish it (tests/dataset/test_dataset.py); tests of other packages reuse it
(`judgeable_build`: the same samples as judging accepts them)."""
import dataclasses
import hashlib
import json
from pathlib import Path

from conftest import make_sample
from execrepobench_dataset.record import (FILL_BLOCK, FILL_EXPRESSION, FILL_SPAN, FILL_STATEMENT, FILL_TYPES,
                                          ContextFile, write_jsonl)
from execrepobench_dataset.repo_record import RepoRecord, environment_key, write_repo_records

PINNED = {"alpha": "pypi:alpha==1.0#sha256=" + "a" * 64, "beta": "git:https://example.org/beta.git@" + "b" * 40}
LOCKS = {"alpha": ("alpha-dep==1.0 --hash=sha256:" + "c" * 64, "pytest==8.3.0 --hash=sha256:" + "d" * 64),
         "beta": ("pytest==8.3.0",)}
ENV_KEYS = {r: environment_key("3.11", PINNED[r], LOCKS[r]) for r in PINNED}
RECORDS = [RepoRecord(repo_name=r, repo_source=PINNED[r], python="3.11", env_key=ENV_KEYS[r], lock=LOCKS[r],
                      test_command=("python", "-m", "pytest"), test_paths=("tests",), env=("TZ=UTC",),
                      license={"alpha": "MIT", "beta": ""}[r], manifest_entry=f'[[repo]]\nname = "{r}"\n')
           for r in PINNED]


def of(repo, *judged, node_type="expression_statement"):
    """The fields of a sample of `repo` as the builder writes them (verified: with judged tests)."""
    fields = {"repo_name": repo, "repo_source": PINNED[repo], "env_key": ENV_KEYS[repo], "seed": 7, "judged": judged,
              "builder_version": "0.1.0", "test_command": ("python", "-m", "pytest"), "node_type": node_type}
    if judged:
        fields.update(excluded_tests=("tests/test_x.py::test_flaky",), selection_rule="coverage")
    return fields


SAMPLES = [
    make_sample(file_name="alpha/core.py", middle="    return a + b\n", fill_type=FILL_STATEMENT,
                prefix_code="def add(a, b):\n", suffix_code="\n\nX = 1\n",
                context_code=(ContextFile("alpha/__init__.py", "from .core import add\n"),
                              ContextFile("alpha/util.py", "def f():\n    pass\n")),
                **of("alpha", "tests/test_core.py::test_add", "tests/test_core.py::test_add_neg")),
    # empty context_code, judged_tests and test_command: empty list columns must not change the schema
    make_sample(file_name="alpha/util.py", middle="None", fill_type=FILL_EXPRESSION,
                prefix_code="def f():\n    return ", **{**of("alpha"), "test_command": ()}),
    # non-ASCII text: byte offsets differ from character offsets
    make_sample(file_name="beta/grüße.py", middle="    return s * 2\n", fill_type=FILL_BLOCK,
                prefix_code="def grüß():\n    s = 'héllo ☃ 世界'\n", suffix_code="# 终\n",
                context_code=(ContextFile("beta/ünï.py", "π = 3.14159  # ≈ π\n"),),
                **of("beta", "tests/test_ß.py::test_ü")),
    make_sample(file_name="beta/mod.py", middle=", 3]", fill_type=FILL_SPAN, prefix_code="x = [1, 2",
                suffix_code="\ny = 'ü'\n", context_code=(ContextFile("beta/a.py", "a = 1\n"),
                                                        ContextFile("beta/b.py", "b = 2\n"),
                                                        ContextFile("beta/c.py", "c = 'ç' * 3\n")),
                **of("beta", "tests/test_mod.py::test_x", node_type="span")),
    make_sample(file_name="beta/mod.py", middle="'ü'", fill_type=FILL_EXPRESSION, prefix_code="x = [1, 2, 3]\ny = ",
                **of("beta", "tests/test_mod.py::test_y")),
]


def judgeable_build(out: Path) -> Path:
    """`write_build` of SAMPLES as judging accepts them (our test command, judged tests named): for checks
    that come after the samples' (their environments are not in any cache)."""
    from execrepobench_metric.execution.pytest_run import COMMAND_PREFIX

    return write_build(out, [dataclasses.replace(s, test_command=COMMAND_PREFIX,
                                                 judged_tests=s.judged_tests or ("tests/t.py::t",)) for s in SAMPLES])


def write_build(out: Path, samples=SAMPLES, report_changes=None) -> Path:
    """A builder output folder: samples.jsonl (deliberately not sorted), repositories.jsonl and a minimal
    build_report.json."""
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(samples, out / "samples.jsonl")
    write_repo_records(RECORDS, out / "repositories.jsonl")
    per_repo = {r: [s for s in samples if s.repo_name == r] for r in PINNED}
    report = {"builder_version": "0.1.0", "seed": 7, "manifest": "builder/manifests/test.toml",
              "samples_fingerprint": hashlib.sha256((out / "samples.jsonl").read_bytes()).hexdigest(),
              "totals": {"repos": 3, "repos_ok": 2, "samples": len(samples), "candidates": 40,
                         "dropped": {"too_short": 8, "has_hash": 2}, "verify_candidates": 20,
                         "dropped_verify": {"gt_failed": 1, "null_passed": 9, "no_null_fill": 0, "no_tests": 0}},
              "repos": [{"repo": r, "status": "ok", "pinned": PINNED[r], "env_key": ENV_KEYS[r],
                         "environment": {"python": "/envs/x/bin/python", "freeze": [f"{r}==1.0", "pytest==8.3.0"]},
                         "per_fill_type": {f: sum(s.fill_type == f for s in ss) for f in FILL_TYPES},
                         "kept_gt_run_s": {s.sample_id: 0.5 + i for i, s in enumerate(ss)},
                         "samples": len(ss)} for r, ss in per_repo.items()]
              + [{"repo": "gamma", "status": "error", "reason": "no tests found"}]}
    report.update(report_changes or {})
    (out / "build_report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return out
