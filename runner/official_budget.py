"""The official ExecRepoBench eval.py budget rules (QwenLM/Qwen2.5-Coder,
qwencoder-eval/base/benchmarks/ExecRepoBench/eval.py `generate_samples` / `get_prompt`, and
utils/utils.py `truncate_prompt`), for the `-official` templates (`budget_rule="official"`):

- limits: a model whose config states a length below `max_tokens` (none stated: 8192) sets
  `max_tokens` to it and `max_context_tokens` to half of it (whatever was asked);
- context, most relevant first: a file is added whole while the tokens of its *code* (not of its
  entry or block) plus those already added stay strictly below `max_context_tokens`; the first that
  does not is cut: its entry ("##path##:\\ncode", header included) keeps its first
  `max_context_tokens - used` tokens, then its last line (complete or not) is dropped, and no file
  after it is looked at;
- in-file code: `(max_tokens - max_generation_tokens - max_context_tokens) // 2` tokens each, whatever
  the context used; the prefix keeps its last tokens, the suffix its first (a cut is the decoded
  tokens, as `convert_tokens_to_string` writes them);
- nothing else: headers, FIM tokens and chat markers are not counted, and the whole prompt is never
  checked against the model's length.

Token counts are the tokenizer's `encode` without special tokens added (transformers' `tokenize`).
"""
from __future__ import annotations

from typing import Optional

OFFICIAL_UNKNOWN_LENGTH = 8192  # eval.py: a config without max_position_embeddings / n_positions


def limits(max_context_tokens: int, max_tokens: int, model_max: Optional[int]) -> tuple[int, int]:
    """(max_context_tokens, max_tokens) after eval.py's clamp to the model's length."""
    supported = OFFICIAL_UNKNOWN_LENGTH if model_max is None else model_max
    if supported < max_tokens:
        return supported // 2, supported
    return max_context_tokens, max_tokens


def head_tokens(tok, text: str, n: int) -> str:
    """truncate_prompt(side="right"): `text` when it has at most `n` tokens, else its first `n` decoded."""
    ids = tok.encode(text) if text else []
    return tok.decode(ids[:n]) if len(ids) > n else text


def tail_tokens(tok, text: str, n: int) -> str:
    """truncate_prompt(side="left"): `text` when it has at most `n` tokens, else its last `n` decoded."""
    ids = tok.encode(text) if text else []
    return tok.decode(ids[len(ids) - n:]) if len(ids) > n else text


def context_entries(tok, entry_of, context, max_context_tokens: int):
    """eval.py's context loop over (path, code) pairs, most relevant first.  `entry_of(path, code)` writes
    a file's entry.  Returns (kept (path, entry) pairs, code tokens counted, last one cut, files left out)."""
    kept, used = [], 0
    for i, (path, code) in enumerate(context):
        n = len(tok.encode(code)) if code else 0
        if n + used < max_context_tokens:
            used += n
            kept.append((path, entry_of(path, code)))
            continue
        cut = head_tokens(tok, entry_of(path, code), max_context_tokens - used)
        kept.append((path, "\n".join(cut.split("\n")[:-1])))
        return kept, used, True, len(context) - i - 1
    return kept, used, False, 0


def in_file(tok, prefix: str, suffix: str, max_context_tokens: int, max_tokens: int,
            max_generation_tokens: int) -> tuple[str, str]:
    """The prefix and suffix as eval.py cuts them."""
    half = (max_tokens - max_generation_tokens - max_context_tokens) // 2
    return tail_tokens(tok, prefix, half), head_tokens(tok, suffix, half)
