"""Token budgets: fit a sample into a template with the model's own tokenizer.

Defaults are those of the official ExecRepoBench eval.py (QwenLM/Qwen2.5-Coder,
qwencoder-eval/base/benchmarks/ExecRepoBench/eval.py): `max_context_tokens` 4096 for cross-file
context, `max_tokens` 8192 for the whole sequence (prompt + generation: eval.py gives the in-file code
``max_tokens - max_generation_tokens - max_context_tokens``), `max_generation_tokens` 512.  A model
shorter than `max_tokens` clamps it, and the context budget to half of it, as eval.py does.

Budget of one prompt: ``prompt_budget = max_tokens - max_generation_tokens`` (so prompt + generation
<= model max).  Context files are added most relevant first while their rendered blocks fit the
context budget; the first that does not fit is cut at a line boundary (left out when not even one line
fits) and no file after it is added.  The in-file budget is what is left: ``prompt_budget -
context used - template overhead (repository/target headers, FIM tokens, BOS, reserve_tokens)``; the
prefix keeps its END and the suffix its START, each within half of it.  The finished prompt is counted
again whole; should BPE merges across the joins push it over, the prefix (then the suffix, then the
farthest context file) gives back the excess.  Nothing is dropped silently: every cut is a flag.

A tokenizer is anything with ``encode(text) -> list[int]`` and ``decode(ids) -> str``; `as_tokenizer`
adapts a `tokenizers.Tokenizer` or a transformers tokenizer (special tokens written in the text are
counted as the single tokens they are; none are added).  `tokenizers` is imported only by
`load_tokenizer`.

Templates with `budget_rule="official"` (the `-official` ones) are fitted by the official eval.py's
rules instead (runner/official_budget.py), so that their prompts equal the official script's.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Protocol, Sequence, Union

from execrepobench_dataset.errors import UsageError

from . import official_budget
from .templates import SampleParts, Template, context_block, entry_text, get_template, render, render_entries

MAX_CONTEXT_TOKENS = 4096
MAX_TOKENS = 8192
MAX_GENERATION_TOKENS = 512


class TokenizerLike(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class _Adapter:
    def __init__(self, tok, kind: str):
        self.tok, self.kind = tok, kind

    def encode(self, text: str) -> list[int]:
        if self.kind == "tokenizers":
            return list(self.tok.encode(text, add_special_tokens=False).ids)
        return list(self.tok.encode(text, add_special_tokens=False))

    def __getattr__(self, name: str):  # e.g. a transformers tokenizer's apply_chat_template
        return getattr(self.tok, name)

    def decode(self, ids: Sequence[int]) -> str:
        if self.kind == "tokenizers":
            return self.tok.decode(list(ids), skip_special_tokens=False)
        return self.tok.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)


def as_tokenizer(tok) -> TokenizerLike:
    """A `tokenizers.Tokenizer` or a transformers tokenizer wrapped to the protocol; others as they are."""
    if type(tok).__module__.split(".")[0] == "tokenizers":
        return _Adapter(tok, "tokenizers")
    if hasattr(tok, "convert_tokens_to_ids"):  # transformers PreTrainedTokenizer(Fast)
        return _Adapter(tok, "transformers")
    return tok


def load_tokenizer(model_dir: Union[str, Path]) -> TokenizerLike:
    """The model's tokenizer.json from a local folder (never downloads)."""
    from tokenizers import Tokenizer

    return as_tokenizer(Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json")))


def model_max_length(model_dir: Union[str, Path]) -> Optional[int]:
    """The model's maximum length from its config.json, as eval.py reads it (None when not stated)."""
    config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    return config.get("max_position_embeddings") or config.get("n_positions")


@dataclass(frozen=True)
class Budget:
    prompt: int  # prompt tokens allowed (max_tokens - max_generation_tokens)
    context: int  # cross-file context tokens allowed
    generation: int

    @classmethod
    def make(cls, max_context_tokens: int = MAX_CONTEXT_TOKENS, max_tokens: int = MAX_TOKENS,
             max_generation_tokens: int = MAX_GENERATION_TOKENS, model_max: Optional[int] = None) -> "Budget":
        if model_max is not None and model_max < max_tokens:  # eval.py: clamp, context to half
            max_tokens, max_context_tokens = model_max, min(max_context_tokens, model_max // 2)
        if not 0 < max_generation_tokens < max_tokens or max_context_tokens < 0:
            raise UsageError(f"bad budgets: max_tokens={max_tokens} max_generation_tokens={max_generation_tokens} "
                             f"max_context_tokens={max_context_tokens}")
        prompt = max_tokens - max_generation_tokens
        return cls(prompt=prompt, context=min(max_context_tokens, prompt), generation=max_generation_tokens)


@dataclass(frozen=True)
class Prompt:
    text: Union[str, list]  # the prompt text, or the chat messages list for "chat" templates
    n_tokens: int  # prompt tokens (BOS and reserve_tokens included)
    template: str
    budget: Budget
    context_tokens: int = 0
    context_files: int = 0  # context files in the prompt (a cut one included)
    context_truncated: bool = False  # the last context file kept was cut at a line boundary
    files_dropped: int = 0  # context files left out
    prefix_truncated: bool = False
    suffix_truncated: bool = False
    stop: tuple[str, ...] = ()  # the template's stop strings

    @property
    def truncated(self) -> bool:
        return bool(self.context_truncated or self.files_dropped or self.prefix_truncated or self.suffix_truncated)

    def info(self) -> dict:
        """JSON-able record of the counts and flags (stored with each generation)."""
        return {"prompt_tokens": self.n_tokens, "context_tokens": self.context_tokens,
                "context_files": self.context_files, "context_truncated": self.context_truncated,
                "files_dropped": self.files_dropped, "prefix_truncated": self.prefix_truncated,
                "suffix_truncated": self.suffix_truncated}


def _count(tok: TokenizerLike, text: str) -> int:
    return len(tok.encode(text)) if text else 0


def keep_tail(tok: TokenizerLike, text: str, n: int) -> str:
    """The longest end of `text` within `n` tokens (an exact suffix of `text`)."""
    if n <= 0:
        return ""
    ids = tok.encode(text)
    if len(ids) <= n:
        return text
    guess = tok.decode(ids[-n:])
    if guess and text.endswith(guess) and _count(tok, guess) <= n:
        return guess
    lo, hi = 0, len(text)  # smallest start whose tail fits
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _count(tok, text[mid:]) <= n else (mid + 1, hi)
    return text[lo:]


def keep_head(tok: TokenizerLike, text: str, n: int) -> str:
    """The longest start of `text` within `n` tokens (an exact prefix of `text`)."""
    if n <= 0:
        return ""
    ids = tok.encode(text)
    if len(ids) <= n:
        return text
    guess = tok.decode(ids[:n])
    if guess and text.startswith(guess) and _count(tok, guess) <= n:
        return guess
    lo, hi = 0, len(text)  # largest end whose head fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _count(tok, text[:mid]) <= n else (lo, mid - 1)
    return text[:lo]


def fit_context(tok: TokenizerLike, template: Template, parts: SampleParts, budget: int):
    """(kept (path, code) pairs most relevant first, tokens used, last one cut, files dropped)."""
    kept, used = [], 0
    for i, (path, code) in enumerate(parts.context):
        n = _count(tok, context_block(template, path, code, parts.repo_name))
        if used + n <= budget:
            kept.append((path, code))
            used += n
            continue
        lines = code.splitlines(keepends=True)
        lo, hi = 0, len(lines)  # most whole leading lines that fit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            fits = used + _count(tok, context_block(template, path, "".join(lines[:mid]), parts.repo_name)) <= budget
            lo, hi = (mid, hi) if fits else (lo, mid - 1)
        if lo:
            cut = "".join(lines[:lo])
            kept.append((path, cut))
            used += _count(tok, context_block(template, path, cut, parts.repo_name))
        return kept, used, bool(lo), len(parts.context) - i - (1 if lo else 0)
    return kept, used, False, 0


def _measure(tok: TokenizerLike, rendered, template: Template, reserve: int) -> int:
    extra = reserve + (1 if template.bos else 0)
    if isinstance(rendered, str):
        return _count(tok, rendered) + extra
    if hasattr(tok, "apply_chat_template"):  # transformers: count the chat template's own tokens too
        ids = tok.apply_chat_template(rendered, add_generation_prompt=True, tokenize=True)
        return len(ids["input_ids"] if hasattr(ids, "keys") else ids) + reserve
    return sum(_count(tok, m["content"]) for m in rendered) + extra


def build_prompt(template: Union[str, Template], parts: SampleParts, tokenizer, *,
                 max_context_tokens: int = MAX_CONTEXT_TOKENS, max_tokens: int = MAX_TOKENS,
                 max_generation_tokens: int = MAX_GENERATION_TOKENS, model_max: Optional[int] = None,
                 order: str = "close", reserve_tokens: int = 0, budget_rule: Optional[str] = None) -> Prompt:
    """Fit `parts` into `template` within the budgets (see the module doc).  `reserve_tokens`: tokens the
    caller adds outside this text (e.g. a chat template's role markers when the tokenizer cannot say).
    `budget_rule`: "ours" or "official" (default: the template's).  Raises ValueError when not even the
    template's own text fits the prompt budget (ours)."""
    t, tok = get_template(template), as_tokenizer(tokenizer)
    if (budget_rule or t.budget_rule) == "official":
        return _official_prompt(t, parts, tok, max_context_tokens, max_tokens, max_generation_tokens, model_max,
                                order, reserve_tokens)
    if budget_rule not in (None, "ours"):
        raise UsageError(f"unknown budget rule {budget_rule!r}; known: ours, official")
    budget = Budget.make(max_context_tokens, max_tokens, max_generation_tokens, model_max)
    bare = replace(parts, prefix="", suffix="", context=())
    overhead = _measure(tok, render(t, bare, order), t, reserve_tokens)
    if overhead > budget.prompt:
        raise UsageError(f"template {t.name!r} needs {overhead} tokens before any code; prompt budget is {budget.prompt}")
    kept, ctx_used, ctx_cut, dropped = fit_context(tok, t, parts, min(budget.context, budget.prompt - overhead))
    half = max(budget.prompt - overhead - ctx_used, 0) // 2
    prefix, suffix = keep_tail(tok, parts.prefix, half), keep_head(tok, parts.suffix, half)
    while True:
        cur = replace(parts, prefix=prefix, suffix=suffix, context=tuple(kept))
        rendered = render(t, cur, order)
        n = _measure(tok, rendered, t, reserve_tokens)
        excess = n - budget.prompt
        if excess <= 0:
            break
        if prefix:  # BPE merges across joins: give back the excess, prefix first
            prefix = keep_tail(tok, prefix, _count(tok, prefix) - excess)
        elif suffix:
            suffix = keep_head(tok, suffix, _count(tok, suffix) - excess)
        elif kept:
            kept.pop()
            dropped += 1
            ctx_cut = False
        else:  # pragma: no cover - overhead alone was checked above
            raise UsageError(f"prompt for template {t.name!r} does not fit {budget.prompt} tokens")
    ctx_tokens = sum(_count(tok, context_block(t, p, c, parts.repo_name)) for p, c in kept)
    return Prompt(rendered, n, t.name, budget, context_tokens=ctx_tokens, context_files=len(kept),
                  context_truncated=ctx_cut, files_dropped=dropped, prefix_truncated=prefix != parts.prefix,
                  suffix_truncated=suffix != parts.suffix, stop=t.stop)


def _official_prompt(t: Template, parts: SampleParts, tok: TokenizerLike, max_context_tokens: int, max_tokens: int,
                     max_generation_tokens: int, model_max: Optional[int], order: str, reserve: int) -> Prompt:
    """eval.py's prompt (runner/official_budget.py): its cuts, our counts and flags (`context_tokens`: the
    context files' code tokens, as eval.py counts them)."""
    max_context_tokens, max_tokens = official_budget.limits(max_context_tokens, max_tokens, model_max)
    entries, ctx_used, ctx_cut, dropped = official_budget.context_entries(
        tok, lambda p, c: entry_text(t, p, c), parts.context, max_context_tokens)
    prefix, suffix = official_budget.in_file(tok, parts.prefix, parts.suffix, max_context_tokens, max_tokens,
                                             max_generation_tokens)
    rendered = render_entries(t, replace(parts, prefix=prefix, suffix=suffix), entries, order)
    budget = Budget(prompt=max_tokens - max_generation_tokens, context=max_context_tokens,
                    generation=max_generation_tokens)
    return Prompt(rendered, _measure(tok, rendered, t, reserve), t.name, budget, context_tokens=ctx_used,
                  context_files=len(entries), context_truncated=ctx_cut, files_dropped=dropped,
                  prefix_truncated=prefix != parts.prefix, suffix_truncated=suffix != parts.suffix, stop=t.stop)


def build_prompt_for_sample(template: Union[str, Template], sample, tokenizer, *, files=None, **kwargs) -> Prompt:
    """`build_prompt` for a `Sample` record, its context in either form: materialised, or by reference with
    `files` its repository's path -> code (or `RepoRecord`); see `execrepobench_dataset.context`."""
    return build_prompt(template, SampleParts.from_sample(sample, files), tokenizer, **kwargs)
