"""Tests for runner/prompts.py: token budgets with a whitespace tokenizer, and with a real BPE (the `test` extra's tokenizers)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import make_sample
from execrepobench.runner.prompts import (Budget, as_tokenizer, build_prompt, build_prompt_for_sample, keep_head,
                                          keep_tail, model_max_length)
from execrepobench.runner.templates import TEMPLATES, SampleParts, Template


class WhitespaceTokenizer:
    """One token per whitespace-separated word; decode joins with single spaces."""

    def __init__(self):
        self.ids: dict[str, int] = {}
        self.words: list[str] = []

    def encode(self, text):
        out = []
        for w in text.split():
            if w not in self.ids:
                self.ids[w] = len(self.words)
                self.words.append(w)
            out.append(self.ids[w])
        return out

    def decode(self, ids):
        return " ".join(self.words[i] for i in ids)


# Tokens set apart by spaces, so the whitespace tokenizer counts each as one.
T = Template("ws", "fim", "test template", "tests", " PRE ", " SUF ", " MID ", repo_header="REPO {repo} ",
             file_block="FILE {path}\n{code}", target_outer="FILE {path}\n")
OVERHEAD = 7  # REPO demo FILE core.py PRE SUF MID


def lines(tag, n, width=3):
    return "".join(" ".join(f"{tag}{i}_{j}" for j in range(width)) + "\n" for i in range(n))


A, B, C = lines("a", 4), lines("b", 10), lines("c", 1)  # blocks: 2 + 12, 2 + 30, 2 + 3 tokens
PREFIX = " ".join(f"p{i}" for i in range(100))
SUFFIX = "\n".join(f"s{i}" for i in range(100)) + "\n"  # newlines: decode() is not a substring -> search path
PARTS = SampleParts("demo", "core.py", PREFIX, SUFFIX, (("a.py", A), ("b.py", B), ("c.py", C)))


def test_budget_defaults_and_model_clamp():
    assert Budget.make() == Budget(prompt=8192 - 512, context=4096, generation=512)  # the paper's eval.py defaults
    assert Budget.make(model_max=2048) == Budget(prompt=2048 - 512, context=1024, generation=512)
    assert Budget.make(model_max=32768) == Budget.make()
    with pytest.raises(ValueError):
        Budget.make(max_tokens=512, max_generation_tokens=512)


def test_context_stops_at_budget_and_cuts_last_file_at_line_boundary():
    tok = WhitespaceTokenizer()
    p = build_prompt(T, PARTS, tok, max_context_tokens=30, max_tokens=200, max_generation_tokens=20)
    # a.py whole (14); b.py: room 16 -> header 2 + 4 lines x 3 = 14; c.py is not added after the cut
    assert (p.context_files, p.context_tokens, p.context_truncated, p.files_dropped) == (2, 28, True, 1)
    assert "FILE b.py\n" + lines("b", 4) + "FILE a.py\n" in p.text  # close: most relevant (a.py) last
    assert "b4_0" not in p.text and "c0_0" not in p.text
    # in-file: 180 - 7 - 28 = 145 -> 72 each; prefix keeps its end, suffix its start
    kept_prefix = " ".join(f"p{i}" for i in range(28, 100))
    assert " PRE " + kept_prefix + " SUF " in p.text and "p27 " not in p.text
    assert " SUF s0\n" in p.text and "s71\n MID " in p.text and "s72" not in p.text
    assert p.prefix_truncated and p.suffix_truncated and p.truncated
    assert p.n_tokens == len(tok.encode(p.text)) == OVERHEAD + 28 + 72 + 72 <= p.budget.prompt == 180
    assert p.info()["prompt_tokens"] == p.n_tokens and p.stop == ()


def test_far_order_and_nothing_truncated():
    tok = WhitespaceTokenizer()
    far = build_prompt(T, PARTS, tok, order="far")
    assert far.text.index("FILE a.py") < far.text.index("FILE b.py") < far.text.index("FILE c.py")
    assert far.text.endswith(PREFIX + " SUF " + SUFFIX + " MID ")
    assert not far.truncated and far.context_files == 3 and far.files_dropped == 0
    assert far.n_tokens == len(tok.encode(far.text)) == OVERHEAD + 14 + 32 + 5 + 100 + 100
    close = build_prompt(T, PARTS, tok)
    assert close.text.index("FILE c.py") < close.text.index("FILE b.py") < close.text.index("FILE a.py")


def test_file_too_big_for_one_line_is_dropped_and_counted():
    tok = WhitespaceTokenizer()
    p = build_prompt(T, PARTS, tok, max_context_tokens=15, max_tokens=400, max_generation_tokens=20)
    assert (p.context_files, p.context_truncated, p.files_dropped) == (1, False, 2)  # b.py: 1 token of room
    assert "FILE b.py" not in p.text


def test_too_long_sample_is_truncated_never_empty():
    tok = WhitespaceTokenizer()
    p = build_prompt(T, PARTS, tok, max_context_tokens=4, max_tokens=40, max_generation_tokens=20)
    assert p.n_tokens <= 20 and p.prefix_truncated and p.suffix_truncated and p.files_dropped == 3
    assert p.text.endswith("p99 SUF s0\n" + "".join(f"s{i}\n" for i in range(1, 6)) + " MID ")
    with pytest.raises(ValueError, match="before any code"):
        build_prompt(T, PARTS, tok, max_tokens=25, max_generation_tokens=20)  # 5 tokens < overhead 7


def test_keep_tail_and_head_are_exact_substrings():
    tok = WhitespaceTokenizer()
    text = "x = 1\n\ny  =  2\n    z = 3\n"
    for n in range(0, 12):
        tail, head = keep_tail(tok, text, n), keep_head(tok, text, n)
        assert text.endswith(tail) and text.startswith(head)
        assert len(tok.encode(tail)) == len(tok.encode(head)) == min(n, 9)


def test_chat_template_counts_messages_and_reserve():
    tok = WhitespaceTokenizer()
    p = build_prompt("chat", PARTS, tok, max_tokens=300, max_generation_tokens=20, reserve_tokens=10)
    assert isinstance(p.text, list) and [m["role"] for m in p.text] == ["system", "user"]
    assert p.n_tokens == sum(len(tok.encode(m["content"])) for m in p.text) + 10 <= 280


def test_transformers_style_tokenizer_and_chat_template():
    class FakeHF:  # the transformers tokenizer surface prompts.py uses
        def __init__(self):
            self.ws, self.calls = WhitespaceTokenizer(), []

        def convert_tokens_to_ids(self, t):
            return 0

        def encode(self, text, add_special_tokens=True):
            self.calls.append(add_special_tokens)
            return self.ws.encode(text)

        def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=True):
            assert not skip_special_tokens and not clean_up_tokenization_spaces
            return self.ws.decode(ids)

        def apply_chat_template(self, messages, add_generation_prompt, tokenize):
            text = "".join(f"<|im_start|> {m['role']} {m['content']} <|im_end|> " for m in messages)
            return self.ws.encode(text + "<|im_start|> assistant") if tokenize else text

    hf = FakeHF()
    p = build_prompt("chat", PARTS, hf, max_tokens=400, max_generation_tokens=20)
    assert set(hf.calls) == {False}  # never adds special tokens itself
    assert p.n_tokens == len(hf.apply_chat_template(p.text, True, True))  # role markers counted
    q = build_prompt(T, PARTS, hf)
    assert q.n_tokens == len(hf.ws.encode(q.text))
    plain = WhitespaceTokenizer()
    assert as_tokenizer(plain) is plain


def test_bos_is_reserved():
    tok = WhitespaceTokenizer()
    p = build_prompt("codellama", SampleParts("r", "f.py", "a b", "c"), tok)
    assert p.n_tokens == len(tok.encode(p.text)) + 1  # <s>, added by the engine's tokenizer


def test_model_max_length_from_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 16384}))
    assert model_max_length(tmp_path) == 16384
    (tmp_path / "config.json").write_text(json.dumps({"n_positions": 8192}))
    assert model_max_length(tmp_path) == 8192
    (tmp_path / "config.json").write_text("{}")
    assert model_max_length(tmp_path) is None


def test_build_prompt_for_sample():
    from execrepobench_dataset.record import FILL_TYPES, ContextFile

    pre, suf = "def f():\n    ", "\n"
    s = make_sample(file_name="core.py", middle="return 1", fill_type=FILL_TYPES[0], prefix_code=pre, suffix_code=suf,
                    repo_name="demo", context_code=(ContextFile("a.py", A),), node_type="span")
    p = build_prompt_for_sample("qwen2.5-coder", s, WhitespaceTokenizer())
    assert p.text.endswith("<|fim_prefix|>" + pre + "<|fim_suffix|>" + suf + "<|fim_middle|>") and not p.truncated


# --- a real byte-level BPE, trained here on local Python source, with Qwen2.5-Coder's FIM tokens ---------------

QWEN_SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                 "<|repo_name|>", "<|file_sep|>"]


@pytest.fixture(scope="module")
def bpe(tmp_path_factory):
    import tokenizers  # the `test` extra
    from tokenizers import decoders, models, pre_tokenizers, trainers

    import json as json_mod
    corpus = [p.read_text(encoding="utf-8") for p in sorted(Path(json_mod.__file__).parent.glob("*.py"))]
    corpus += [p.read_text(encoding="utf-8") for p in sorted(Path(__file__).parents[1].glob("*/test_*.py"),
                                                                  key=lambda p: p.name)[:5]]
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=800, special_tokens=QWEN_SPECIALS,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return tok, path


def test_fim_special_tokens_are_single_tokens(bpe):
    tok, _ = bpe
    t = as_tokenizer(tok)
    for special in QWEN_SPECIALS:
        assert t.encode(special) == [tok.token_to_id(special)]
    p = build_prompt("qwen2.5-coder", PARTS, tok, max_context_tokens=100, max_tokens=400, max_generation_tokens=50)
    ids = t.encode(p.text)
    assert p.n_tokens == len(ids) <= 350
    assert ids.count(tok.token_to_id("<|file_sep|>")) == p.text.count("<|file_sep|>") == p.context_files + 1
    for special in ("<|repo_name|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"):
        assert ids.count(tok.token_to_id(special)) == 1
    assert t.decode(ids) == p.text


def test_bpe_truncation_keeps_exact_ends(bpe):
    tok, path = bpe
    from execrepobench.runner.prompts import load_tokenizer

    loaded = load_tokenizer(path.parent)
    code = Path(__file__).read_text(encoding="utf-8")
    parts = SampleParts("demo", "core.py", code[:6000], code[6000:12000], (("a.py", code[:3000]), ("b.py", code)))
    p = build_prompt("qwen2.5-coder", parts, loaded, max_context_tokens=300, max_tokens=1200, max_generation_tokens=200)
    assert p.n_tokens == len(loaded.encode(p.text)) <= 1000
    assert p.prefix_truncated and p.suffix_truncated and p.context_truncated
    pre = p.text.split("<|fim_prefix|>")[1].split("<|fim_suffix|>")[0]
    suf = p.text.split("<|fim_suffix|>")[1].split("<|fim_middle|>")[0]
    assert parts.prefix.endswith(pre) and parts.suffix.startswith(suf) and pre and suf
    assert TEMPLATES["qwen2.5-coder"].stop == p.stop
