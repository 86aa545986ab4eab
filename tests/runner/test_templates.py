"""Tests for runner/templates.py: every family renders a known sample exactly as its official source writes it."""
from __future__ import annotations

import unicodedata

import pytest

from conftest import make_sample
from execrepobench.runner.templates import (DETECTION, FALLBACK, TEMPLATES, SampleParts, Template, detect_template,
                                            get_template, ordered, render)
from execrepobench_dataset.instruct_record import SYSTEM_PROMPT

PRE = "def add(a, b):\n    "
SUF = "\n\nprint(add(1, 2))\n"
# most relevant first: util.py, then io.py
PARTS = SampleParts("demo", "pkg/core.py", PRE, SUF, (("pkg/util.py", "X = 1\n"), ("pkg/io.py", "Y = 2\n")))


def test_qwen25_coder_repo_level_fim():
    # QwenLM/Qwen2.5-Coder README.md section 4 + examples/Qwen2.5-Coder-repolevel-fim.py:
    # <|repo_name|>{repo}\n<|file_sep|>{path}\n{content}\n<|file_sep|>{target}\n<|fim_prefix|>{pre}<|fim_suffix|>{suf}<|fim_middle|>
    # (ExecRepoBench eval.py "qwen2.5-coder-base-": repo_start + "\n<|file_sep|>{f}\n{c}" + "\n<|file_sep|>{file}\n")
    assert render("qwen2.5-coder", PARTS) == (
        "<|repo_name|>demo\n<|file_sep|>pkg/io.py\nY = 2\n\n<|file_sep|>pkg/util.py\nX = 1\n\n"
        "<|file_sep|>pkg/core.py\n<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n\nprint(add(1, 2))\n<|fim_middle|>")
    # README section 3, file-level: '<|fim_prefix|>' + prefix_code + '<|fim_suffix|>' + suffix_code + '<|fim_middle|>'
    bare = SampleParts("demo", "pkg/core.py", PRE, SUF)
    assert render("qwen2.5-coder", bare) == ("<|repo_name|>demo\n<|file_sep|>pkg/core.py\n"
                                             "<|fim_prefix|>" + PRE + "<|fim_suffix|>" + SUF + "<|fim_middle|>")


def test_codeqwen15_repo_level_fim():
    # QwenLM/Qwen2.5-Coder examples/CodeQwen1.5-base-repolevel-fim.py: <repo_name>..\n<file_sep>path\n..<fim_prefix>..
    assert render("codeqwen1.5", PARTS) == (
        "<repo_name>demo\n<file_sep>pkg/io.py\nY = 2\n\n<file_sep>pkg/util.py\nX = 1\n\n"
        "<file_sep>pkg/core.py\n<fim_prefix>def add(a, b):\n    <fim_suffix>\n\nprint(add(1, 2))\n<fim_middle>")


def test_starcoder2_paper_layout():
    # StarCoder2 paper (arXiv:2402.19173) sec. 5:
    # <repo_name>reponame<file_sep>filepath0\ncode0<file_sep><fim_prefix>filepath1\ncode1_pre<fim_suffix>code1_suf<fim_middle>
    assert render("starcoder2", PARTS) == (
        "<repo_name>demo<file_sep>pkg/io.py\nY = 2\n<file_sep>pkg/util.py\nX = 1\n"
        "<file_sep><fim_prefix>pkg/core.py\ndef add(a, b):\n    <fim_suffix>\n\nprint(add(1, 2))\n<fim_middle>")


def test_starcoder1_metadata_tokens():
    # bigcode tiny_starcoder_py special_tokens_map.json: <reponame>, <filename>, <fim_prefix>, <fim_suffix>, <fim_middle>
    assert render("starcoder", PARTS) == (
        "<reponame>demo<filename>pkg/io.py\nY = 2\n<filename>pkg/util.py\nX = 1\n"
        "<filename>pkg/core.py\n<fim_prefix>def add(a, b):\n    <fim_suffix>\n\nprint(add(1, 2))\n<fim_middle>")


def test_deepseek_coder_exact_fullwidth_tokens():
    # deepseek-ai/DeepSeek-Coder README.md "Code Insertion": <｜fim▁begin｜>{pre}<｜fim▁hole｜>{suf}<｜fim▁end｜>;
    # "Repository Level Code Completion": "#utils.py\n..." file headers.  (Characters copied from the README.)
    assert render("deepseek-coder", PARTS) == (
        "#pkg/io.py\nY = 2\n\n#pkg/util.py\nX = 1\n\n#pkg/core.py\n"
        "<｜fim▁begin｜>def add(a, b):\n    <｜fim▁hole｜>\n\nprint(add(1, 2))\n<｜fim▁end｜>")
    t = TEMPLATES["deepseek-coder"]
    assert unicodedata.name(t.fim_prefix[1]) == "FULLWIDTH VERTICAL LINE"
    assert unicodedata.name(t.fim_prefix[5]) == "LOWER ONE EIGHTH BLOCK"
    assert t.bos == "<｜begin▁of▁sentence｜>" and "<｜end▁of▁sentence｜>" in t.stop


def test_codellama_infilling_spacing():
    # meta-llama/codellama llama/generation.py infilling_prompt_tokens: format as "<PRE> {pre} <SUF>{suf} <MID>"
    pre = "## pkg/io.py\nY = 2\n\n## pkg/util.py\nX = 1\n\n## pkg/core.py\n" + PRE  # context lives in the prefix
    assert render("codellama", PARTS) == f"<PRE> {pre} <SUF>{SUF} <MID>"
    assert TEMPLATES["codellama"].stop[0] == "<EOT>" and TEMPLATES["codellama"].bos == "<s>"


def test_codestral_suffix_first():
    # mistralai/mistral-common instruct.py encode_fim: [BOS, [SUFFIX], suffix..., [PREFIX], prefix...]
    pre = "## pkg/io.py\nY = 2\n\n## pkg/util.py\nX = 1\n\n## pkg/core.py\n" + PRE
    assert render("codestral", PARTS) == f"[SUFFIX]{SUF}[PREFIX]{pre}"
    assert TEMPLATES["codestral"].order == "spm"


def _official_continue(file_name, context_code, prefix_code, suffix_code):
    # QwenLM/Qwen2.5-Coder qwencoder-eval/base/benchmarks/ExecRepoBench/eval.py get_continue_prompt_with_suffix
    suffix_code_lines = ["# " + line for line in suffix_code.split("\n")]
    suffix_code = f"## Suffix code of {file_name}\n" + "\n".join(suffix_code_lines)
    prefix_code = f"## Prefix code of {file_name}\n{prefix_code}"
    return f"{context_code}\n{file_name}\n{suffix_code}\n{prefix_code}"


def test_continuation_matches_official_function():
    ctx = "".join(f"\n## {f}\n{c}" for f, c in [("pkg/io.py", "Y = 2\n"), ("pkg/util.py", "X = 1\n")])
    got = render("continuation", PARTS)
    assert got == _official_continue("pkg/core.py", ctx, PRE, SUF)
    assert got == ("\n## pkg/io.py\nY = 2\n\n## pkg/util.py\nX = 1\n\npkg/core.py\n## Suffix code of pkg/core.py\n"
                   "# \n# \n# print(add(1, 2))\n# \n## Prefix code of pkg/core.py\ndef add(a, b):\n    ")


def test_chat_messages_match_repo_instruct_records():
    from execrepobench.builder.instruct.instruct import render_user
    from execrepobench_dataset.record import ContextFile

    msgs = render("chat", PARTS, order="far")  # Repo-Instruct records list the most relevant file first
    user = render_user([ContextFile(p, c) for p, c in PARTS.context], PRE, SUF, 10**9)
    assert msgs == [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
    assert msgs[1]["content"] == ("##Context Code##:\n##File: pkg/util.py##\nX = 1\n\n##File: pkg/io.py##\nY = 2\n\n"
                                  "##Prefix Code##:\n" + PRE + "\n##Suffix Code##:\n" + SUF + "\n##Middle Code##:\n")


def test_chat_official_layout():
    # ExecRepoBench utils/prompt_template.py REPO_COMPLETE_TEMPLATE and SYSTEM_PROMPT (triple-quoted: their
    # newlines kept) with eval.py's context entries "##{file_name}##:\n{file_code}" joined by "\n", reversed for
    # --context_order close.  (Byte-equality with the official code's output: tests/runner/test_official_prompts.py.)
    template = "\n##Context Code##:\n{}\n##Prefix Code##:\n{}\n##Suffix Code##:\n{}\n##Middle Code##:\n"
    ctx = "\n".join(f"##{f}##:\n{c}" for f, c in reversed(PARTS.context))
    msgs = render("chat-official", PARTS)
    assert msgs[1]["content"] == template.format(ctx, PRE, SUF)
    assert msgs[0] == {"role": "system", "content": "\n" + SYSTEM_PROMPT + "\n"} and "\n" not in SYSTEM_PROMPT


def test_close_and_far_order():
    close, far = render("qwen2.5-coder", PARTS), render("qwen2.5-coder", PARTS, order="far")
    assert close.index("pkg/io.py") < close.index("pkg/util.py") < close.index("pkg/core.py")  # most relevant last
    assert far.index("pkg/util.py") < far.index("pkg/io.py") < far.index("pkg/core.py")
    assert ordered([("a", "1"), ("b", "2")]) == [("b", "2"), ("a", "1")]
    with pytest.raises(ValueError, match="close"):
        ordered([], "middle")


def test_code_with_braces_is_not_formatted():
    parts = SampleParts("r{x}", "f{0}.py", "d = {'a': 1}\ns = f'{d}'\n", "}{", (("c{}.py", "{{}}"),))
    for name in TEMPLATES:
        out = render(name, parts)
        text = out if isinstance(out, str) else out[1]["content"]
        assert "d = {'a': 1}\ns = f'{d}'\n" in text and "{{}}" in text


@pytest.mark.parametrize("model,expected", [
    ("Qwen/Qwen2.5-Coder-7B", "qwen2.5-coder"), ("bigcode/starcoder2-15b", "starcoder2"),
    ("deepseek-ai/deepseek-coder-6.7b-base", "deepseek-coder"), ("codellama/CodeLlama-7b-hf", "codellama"),
    ("mistralai/Codestral-22B-v0.1", "codestral"), ("Qwen/CodeQwen1.5-7B", "codeqwen1.5"),
    ("bigcode/starcoderbase-1b", "starcoder"), ("Qwen/Qwen2.5-Coder-7B-Instruct", "chat"),
    ("Qwen/CodeQwen1.5-7B-Chat", "chat"), ("/models/local/qwen2.5-coder-1.5b", "qwen2.5-coder"),
    ("gpt2", "continuation"), ("some-org/unknown-model", "continuation"),
])
def test_detect_template(model, expected):
    assert detect_template(model) == expected


def test_detection_table_is_data_and_falls_back_to_continuation():
    assert FALLBACK == "continuation" and all(t in TEMPLATES for _, t in DETECTION)
    assert all(sub == sub.lower() for sub, _ in DETECTION)


def test_unknown_template_lists_known_ones():
    with pytest.raises(ValueError) as exc:
        get_template("gpt-9")
    for name in TEMPLATES:
        assert name in str(exc.value)
    assert get_template(TEMPLATES["codellama"]) is TEMPLATES["codellama"]


def test_registry_entries_are_complete():
    for name, t in TEMPLATES.items():
        assert t.name == name and t.doc and t.source and "\n" not in t.doc
        if t.kind == "fim":
            assert t.fim_prefix and t.fim_suffix and t.stop
            out = render(t, PARTS)
            assert t.fim_prefix in out and t.fim_suffix in out and out.endswith((t.fim_middle or PRE) + t.trail)
    with pytest.raises(ValueError):
        Template("x", "fim", "d", "s", order="mps")


def test_from_sample():
    from execrepobench_dataset.record import FILL_TYPES, ContextFile

    s = make_sample(file_name="pkg/core.py", middle="return a + b", fill_type=FILL_TYPES[0], prefix_code=PRE,
                    suffix_code=SUF, repo_name="demo", context_code=(ContextFile("pkg/util.py", "X = 1\n"),))
    assert SampleParts.from_sample(s) == SampleParts("demo", "pkg/core.py", PRE, SUF, (("pkg/util.py", "X = 1\n"),))
