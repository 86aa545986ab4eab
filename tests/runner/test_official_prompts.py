"""The `-official` templates against prompts rendered by the official ExecRepoBench eval.py.

tests/data/official_prompts.json holds only the official code's OUTPUT (see its "note": which file and
commit produced it) for fixed inputs (several files, empty context, unicode, trailing newlines, braces,
budgets that cut), per eval.py model branch; tests/data/official_tokenizer.json is the small byte-level
BPE (trained here, on this project's own code) both sides count tokens with.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from execrepobench.runner import official_budget
from execrepobench.runner.prompts import as_tokenizer, build_prompt
from execrepobench.runner.templates import (DETECTION, EVAL_PY_BRANCHES, FALLBACK, OFFICIAL_VARIANTS, TEMPLATES,
                                            SampleParts, detect_template, eval_py_template, render,
                                            resolve_template)

DATA = Path(__file__).parents[1] / "data"
GOLDEN = json.loads((DATA / "official_prompts.json").read_text(encoding="utf-8"))
DEFAULT_BUDGETS = {"max_context_tokens": 4096, "max_tokens": 8192, "max_generation_tokens": 512, "model_max": None}
ROWS = GOLDEN["prompts"]
UNCUT = [r for r in ROWS if all(r[k] == v for k, v in DEFAULT_BUDGETS.items())]
CUT = [r for r in ROWS if r not in UNCUT]


def row_id(r):
    return f"{r['model_name']}/{r['case']}/{r['context_order']}/{r['max_context_tokens']}/{r['model_max']}"


def parts_of(case: str) -> SampleParts:
    c = GOLDEN["cases"][case]
    return SampleParts(c["repo_name"], c["file_name"], c["prefix"], c["suffix"], tuple(map(tuple, c["context"])))


@pytest.fixture(scope="module")
def tok():
    import tokenizers  # the `test` extra
    return as_tokenizer(tokenizers.Tokenizer.from_file(str(DATA / GOLDEN["tokenizer"])))


def test_golden_data_covers_every_branch_and_official_template():
    official = {t for t in TEMPLATES if t.endswith("-official")}
    assert {eval_py_template(r["model_name"]) for r in UNCUT} == official == {t for _, t in EVAL_PY_BRANCHES}
    assert {eval_py_template(r["model_name"]) for r in CUT} == official
    assert {r["case"] for r in UNCUT} == set(GOLDEN["cases"]) and {r["context_order"] for r in UNCUT} == {"close", "far"}
    assert GOLDEN["source"]["repository"] == "QwenLM/Qwen2.5-Coder" and len(GOLDEN["source"]["commit"]) == 40


@pytest.mark.parametrize("row", UNCUT, ids=row_id)
def test_render_is_byte_identical_to_official(row):
    got = render(eval_py_template(row["model_name"]), parts_of(row["case"]), order=row["context_order"])
    assert got == row["prompt"]


@pytest.mark.parametrize("rule", ["official", "ours"])
@pytest.mark.parametrize("row", UNCUT, ids=row_id)
def test_prompt_builder_passes_official_prompts_through(tok, row, rule):
    # nothing to cut at the default budgets: either budget rule leaves the official prompt as it is
    t = TEMPLATES[eval_py_template(row["model_name"])]
    p = build_prompt(t, parts_of(row["case"]), tok, order=row["context_order"], budget_rule=rule)
    assert p.text == row["prompt"] and not p.truncated and p.template == t.name and p.stop == t.stop
    assert p.context_files == len(parts_of(row["case"]).context)
    if isinstance(p.text, str):
        assert p.n_tokens == len(tok.encode(p.text)) + (1 if t.bos else 0)


@pytest.mark.parametrize("row", CUT, ids=row_id)
def test_official_budget_rule_cuts_as_eval_py(tok, row):
    parts = parts_of(row["case"])
    p = build_prompt(eval_py_template(row["model_name"]), parts, tok, order=row["context_order"],
                     **{k: row[k] for k in DEFAULT_BUDGETS})
    assert p.text == row["prompt"]
    assert p.truncated and p.files_dropped + p.context_files <= len(parts.context)


def test_cut_flags_and_header_cut(tok):
    # max_context_tokens 150 on "long": a.py whole, then the next file's entry is cut inside its
    # "##path##:" header, so only its block's wrapper is left (eval.py keeps it)
    parts = parts_of("long")
    p = build_prompt("qwen2.5-coder-official", parts, tok, max_context_tokens=150, max_tokens=700,
                     max_generation_tokens=100)
    assert (p.context_files, p.context_truncated, p.files_dropped) == (2, True, 2)
    assert "<|file_sep|>big/\u00e9b.py\n\n<|file_sep|>big/a.py\n##big/a.py##:\n" in p.text
    assert p.context_tokens == len(tok.encode(parts.context[0][1])) < 150  # code tokens, as eval.py counts them
    assert p.prefix_truncated and p.suffix_truncated and p.budget.context == 150


def test_official_limits():
    assert official_budget.limits(4096, 8192, None) == (4096, 8192)  # no length stated: 8192
    assert official_budget.limits(4096, 32768, None) == (4096, 8192)
    assert official_budget.limits(100, 8192, 2048) == (1024, 2048)  # half the model, even above what was asked
    assert official_budget.limits(4096, 8192, 32768) == (4096, 8192)


def test_unknown_budget_rule(tok):
    with pytest.raises(ValueError, match="budget rule"):
        build_prompt("qwen2.5-coder", parts_of("several_files"), tok, budget_rule="paper")


def test_official_variants_and_detection():
    assert set(OFFICIAL_VARIANTS) == {t for _, t in DETECTION} | {FALLBACK}
    assert all(TEMPLATES[v].budget_rule == "official" for v in OFFICIAL_VARIANTS.values())
    assert all(TEMPLATES[t].budget_rule == "ours" for t in OFFICIAL_VARIANTS)
    assert detect_template("Qwen/Qwen2.5-Coder-7B", official=True) == "qwen2.5-coder-official"
    assert detect_template("bigcode/starcoder2-15b", official=True) == "continuation-official"
    assert detect_template("Qwen/Qwen2.5-Coder-7B-Instruct", official=True) == "chat-official"
    assert detect_template("google/codegemma-7b", official=True) == "continuation-official"
    assert eval_py_template("starcoder2-15B") == "continuation-official"  # eval.py's order: not "starcoder-"
    with pytest.raises(ValueError, match="NotImplementedError"):
        eval_py_template("Qwen2.5-Coder-7B")  # eval.py's labels are case-sensitive


def test_resolve_template_for_the_run_command():
    assert resolve_template(None, "/models/Qwen2.5-Coder-7B") == "qwen2.5-coder"
    assert resolve_template("official", "/models/Qwen2.5-Coder-7B") == "qwen2.5-coder-official"
    assert resolve_template("official", "/models/deepseek-coder-6.7b-base") == "deepseek-coder-official"
    assert resolve_template("starcoder2", "/models/Qwen2.5-Coder-7B") == "starcoder2"
    with pytest.raises(ValueError, match="unknown template"):
        resolve_template("paper", "/models/x")
