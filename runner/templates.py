"""Prompt templates, as data: one frozen `Template` per model family, in the `TEMPLATES` registry.

`render(template, parts, order)` lays out a sample.  Layout of a "fim" template (psm order)::

    repo_header + file_block * N + target_outer + fim_prefix + [file_block * N if context_in_prefix]
        + target_inner + PREFIX + fim_suffix + SUFFIX + fim_middle + trail

spm order (Codestral): fim_suffix + SUFFIX + fim_prefix + inner + PREFIX + fim_middle.  Format fields:
{repo}, {path}, {code}; the code itself is never parsed as a format string.  A file_block's {code} is the
file's `entry` ("{code}": the code itself).  `bos` is the BOS token the model expects first: render()
never writes it (the tokenizer or engine adds it); budgets reserve it.

The `-official` variants reproduce, byte for byte, the official ExecRepoBench eval.py prompts (QwenLM/Qwen2.5-Coder
qwencoder-eval/base/benchmarks/ExecRepoBench; `EVAL_PY_BRANCHES` lists its model branches) with its budget rules
(runner/official_budget.py): use them to compare with the paper's table.  The defaults leave out their stray
newlines before the prompt and after the FIM middle token, the "##path##:" entry repeating the path in each file
block, and the continuation prompt for families with FIM tokens (docs/prompts.md lists every difference).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Union

from execrepobench_dataset.context import ranked_context
from execrepobench_dataset.errors import UsageError
from execrepobench_dataset.instruct_record import SYSTEM_PROMPT

ORDERS = ("close", "far")
BUDGET_RULES = ("ours", "official")


@dataclass(frozen=True)
class Template:
    name: str
    kind: str  # "fim" | "continuation" | "chat"
    doc: str  # one line
    source: str  # repository/path (or paper) the tokens and layout come from
    fim_prefix: str = ""
    fim_suffix: str = ""
    fim_middle: str = ""
    order: str = "psm"  # "psm" or "spm"
    repo_name: str = ""  # the repository-name token, "" when the family has none
    file_sep: str = ""  # the file-separator token, "" when the family has none
    repo_header: str = ""  # once, before the context files; fields {repo}
    file_block: str = ""  # one context file; fields {path} {code} (= the entry) {repo}
    entry: str = "{code}"  # one context file's content inside its block; fields {path} {code}
    file_joiner: str = ""  # between context file blocks
    target_outer: str = ""  # before the first FIM token; fields {path} {repo}
    target_inner: str = ""  # inside the prefix segment, before the prefix code; fields {path} {repo}
    context_in_prefix: bool = False  # context files go inside the prefix segment (no repo tokens)
    comment: str = ""  # continuation: line-comment marker put before every suffix line
    trail: str = ""  # fim: after the last FIM token (the official templates' stray newline)
    tail: str = ""  # chat: after the context; fields {prefix} {suffix} {path}
    system: str = ""  # chat: the system message
    stop: tuple[str, ...] = ()
    bos: str = ""
    budget_rule: str = "ours"  # "ours" (runner/prompts.py) or "official" (eval.py's, runner/official_budget.py)

    def __post_init__(self) -> None:
        if (self.kind not in ("fim", "continuation", "chat") or self.order not in ("psm", "spm")
                or self.budget_rule not in BUDGET_RULES):
            raise ValueError(f"template {self.name}: bad kind {self.kind!r}, order {self.order!r} "
                             f"or budget rule {self.budget_rule!r}")


@dataclass(frozen=True)
class SampleParts:
    """What a prompt is built from; `context` is (path, code) pairs, most relevant first."""
    repo_name: str
    file_name: str
    prefix: str
    suffix: str
    context: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_sample(cls, sample, files=None) -> "SampleParts":
        """The parts of a `Sample`; its ranked context in either form (`ranked_context`: materialised
        `context_code`, or `context_paths` looked up in `files`, the repository's path -> code or record)."""
        return cls(sample.repo_name, sample.file_name, sample.prefix_code, sample.suffix_code,
                   tuple((c.path, c.code) for c in ranked_context(sample, files)))


_EVAL_PY = "QwenLM/Qwen2.5-Coder qwencoder-eval/base/benchmarks/ExecRepoBench/eval.py, utils/prompt_template.py"
_ENTRY = "##{path}##:\n{code}"  # eval.py get_prompt: one context file
_QWEN_STOPS = ("<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>",
               "<|file_sep|>", "<|im_end|>")
_CODEQWEN_STOPS = ("<|endoftext|>", "<file_sep>", "<repo_name>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>")
_STARCODER_STOPS = ("<|endoftext|>", "<filename>", "<reponame>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>",
                    "<fim_pad>")
_DEEPSEEK_FIM = ("<\uff5cfim\u2581begin\uff5c>", "<\uff5cfim\u2581hole\uff5c>", "<\uff5cfim\u2581end\uff5c>")
_DEEPSEEK_STOPS = ("<\uff5cend\u2581of\u2581sentence\uff5c>", *_DEEPSEEK_FIM, "<|EOT|>")

_TEMPLATE_LIST = (
    # QwenLM/Qwen2.5-Coder README.md (sections 3 "File-Level Code Completion" and 4 "Repository-Level") and
    # examples/Qwen2.5-Coder-repolevel-fim.py: <|repo_name|>r\n<|file_sep|>p\ncode\n<|file_sep|>f\n<|fim_prefix|>...
    # Stops: the eos_token_ids list of examples/Qwen2.5-Coder-fim.py (151659-151664, 151645, 151643), named
    # by the Qwen2.5 tokenizer_config.json added_tokens_decoder.  Layout = ExecRepoBench eval.py "qwen2.5-coder-base-".
    Template("qwen2.5-coder", "fim", "Qwen2.5-Coder base: repository-level FIM",
             "QwenLM/Qwen2.5-Coder README.md, examples/Qwen2.5-Coder-repolevel-fim.py",
             "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", repo_name="<|repo_name|>", file_sep="<|file_sep|>",
             repo_header="<|repo_name|>{repo}", file_block="\n<|file_sep|>{path}\n{code}",
             target_outer="\n<|file_sep|>{path}\n", stop=_QWEN_STOPS),
    # QwenLM/Qwen2.5-Coder examples/CodeQwen1.5-base-repolevel-fim.py (<repo_name>, <file_sep>, <fim_*>; the
    # README's "<reponame>" was corrected to <repo_name> by QwenLM PR #60); eval.py stops on <file_sep>.
    Template("codeqwen1.5", "fim", "CodeQwen1.5 base: repository-level FIM",
             "QwenLM/Qwen2.5-Coder examples/CodeQwen1.5-base-repolevel-fim.py",
             "<fim_prefix>", "<fim_suffix>", "<fim_middle>", repo_name="<repo_name>", file_sep="<file_sep>",
             repo_header="<repo_name>{repo}", file_block="\n<file_sep>{path}\n{code}", target_outer="\n<file_sep>{path}\n",
             stop=_CODEQWEN_STOPS),
    # StarCoder2 paper (arXiv:2402.19173, sec. 5, repository-context FIM):
    # <repo_name>r<file_sep>p0\ncode0<file_sep><fim_prefix>p1\npre<fim_suffix>suf<fim_middle>; the path sits
    # inside the prefix segment.  FIM tokens: bigcode-project/bigcode-evaluation-harness santacoder_fim.py.
    Template("starcoder2", "fim", "StarCoder2: repository-context FIM (paper layout)",
             "StarCoder2 paper arXiv:2402.19173 sec. 5; bigcode-project/bigcode-evaluation-harness "
             "bigcode_eval/tasks/santacoder_fim.py", "<fim_prefix>", "<fim_suffix>", "<fim_middle>",
             repo_name="<repo_name>", file_sep="<file_sep>", repo_header="<repo_name>{repo}",
             file_block="<file_sep>{path}\n{code}", target_outer="<file_sep>", target_inner="{path}\n",
             stop=("<|endoftext|>", "<file_sep>", "<repo_name>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>",
                   "<fim_pad>")),
    # StarCoder 1: tokens from bigcode/tiny_starcoder_py special_tokens_map.json (<reponame>, <filename>, <fim_*>,
    # <|endoftext|>).  StarCoder 1 saw one file per document, so this multi-file layout (StarCoder2's shape with
    # StarCoder 1's metadata tokens) is an adaptation: UNCONFIRMED as a training format.
    Template("starcoder", "fim", "StarCoder / StarCoderBase: FIM, <reponame>/<filename> metadata",
             "bigcode tiny_starcoder_py special_tokens_map.json; bigcode_eval/tasks/santacoder_fim.py",
             "<fim_prefix>", "<fim_suffix>", "<fim_middle>", repo_name="<reponame>", file_sep="<filename>",
             repo_header="<reponame>{repo}", file_block="<filename>{path}\n{code}", target_outer="<filename>{path}\n",
             stop=_STARCODER_STOPS),
    # deepseek-ai/DeepSeek-Coder README.md "Code Insertion" (<｜fim▁begin｜>pre<｜fim▁hole｜>suf<｜fim▁end｜>, U+FF5C
    # and U+2581) and "Repository Level Code Completion" (#path headers); ExecRepoBench eval.py "deepseek-coder"
    # puts the context before <｜fim▁begin｜>.  BOS/EOS from the tokenizer's added tokens (ids 32013/32014).
    Template("deepseek-coder", "fim", "DeepSeek-Coder base: FIM with #path file headers",
             "deepseek-ai/DeepSeek-Coder README.md", *_DEEPSEEK_FIM, file_block="#{path}\n{code}\n",
             target_outer="#{path}\n", stop=_DEEPSEEK_STOPS, bos="<\uff5cbegin\u2581of\u2581sentence\uff5c>"),
    # meta-llama/codellama llama/generation.py infilling_prompt_tokens: "<PRE> {pre} <SUF>{suf} <MID>" (BOS first;
    # the spaces are the SentencePiece pieces "▁<SUF>"/"▁<MID>" and the dummy prefix of `pre`, llama/tokenizer.py);
    # stop on <EOT>.  No repository tokens: context goes in the prefix segment with "## path" headers (UNCONFIRMED).
    Template("codellama", "fim", "Code Llama: <PRE> {pre} <SUF>{suf} <MID> infilling",
             "meta-llama/codellama llama/generation.py, llama/tokenizer.py", "<PRE> ", " <SUF>", " <MID>",
             file_block="## {path}\n{code}\n", target_inner="## {path}\n", context_in_prefix=True,
             stop=("<EOT>", "</s>"), bos="<s>"),
    # mistralai/mistral-common src/mistral_common/tokens/tokenizers/instruct.py InstructTokenizerV2.encode_fim:
    # [BOS, [SUFFIX], suffix, [PREFIX], prefix] (SPM, no middle token); names from tokenizers/base.py SpecialTokens.
    # No repository format: context in the prefix segment with "## path" headers (UNCONFIRMED).
    Template("codestral", "fim", "Codestral: [SUFFIX]suffix[PREFIX]prefix (SPM)",
             "mistralai/mistral-common src/mistral_common/tokens/tokenizers/instruct.py (encode_fim)",
             "[PREFIX]", "[SUFFIX]", "", order="spm", file_block="## {path}\n{code}\n", target_inner="## {path}\n",
             context_in_prefix=True, stop=("</s>", "[PREFIX]", "[SUFFIX]", "[MIDDLE]"), bos="<s>"),
    # ExecRepoBench eval.py get_continue_prompt_with_suffix (used there for StarCoder2, CodeLlama, Codestral,
    # CodeGemma, Yi-Coder, ...): context, file name, the suffix commented out, then the prefix to continue.
    Template("continuation", "continuation", "any base model: suffix as comments, then the prefix to continue",
             "QwenLM/Qwen2.5-Coder qwencoder-eval/base/benchmarks/ExecRepoBench/eval.py",
             file_block="\n## {path}\n{code}", target_outer="\n{path}\n## Suffix code of {path}\n",
             target_inner="\n## Prefix code of {path}\n", comment="# "),
    # Instruct models, rendered later with the tokenizer's chat template.  User layout = this project's
    # Repo-Instruct records (builder/instruct/instruct.py render_user), so evaluation matches the training data.
    Template("chat", "chat", "instruct models: ##Context Code## / ##Prefix Code## / ##Suffix Code## / ##Middle Code##",
             "builder/instruct/instruct.py (render_user); "
             "ExecRepoBench utils/prompt_template.py REPO_COMPLETE_TEMPLATE",
             repo_header="##Context Code##:\n", file_block="##File: {path}##\n{code}\n",
             tail="##Prefix Code##:\n{prefix}\n##Suffix Code##:\n{suffix}\n##Middle Code##:\n", system=SYSTEM_PROMPT),
    # --- the official ExecRepoBench eval.py prompts, byte for byte (tests/data/official_prompts.json) -------------
    # get_prompt: each context file is the entry "##{file_name}##:\n{file_code}", wrapped per branch below; the
    # templates of utils/prompt_template.py are triple-quoted, so every FIM prompt starts and ends with "\n".
    # Stops: eval.py sets none (vLLM stops at the model's EOS); the FIM ones keep their family's here.
    # "qwen2.5-coder-base-": "\n" + <|repo_name|>r + "\n<|file_sep|>f\nentry"... + "\n<|file_sep|>file\n" + FIM + "\n".
    Template("qwen2.5-coder-official", "fim", "Qwen2.5-Coder base: the official ExecRepoBench eval.py prompt",
             _EVAL_PY, "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", repo_name="<|repo_name|>",
             file_sep="<|file_sep|>", repo_header="\n<|repo_name|>{repo}", file_block="\n<|file_sep|>{path}\n{code}",
             entry=_ENTRY, target_outer="\n<|file_sep|>{path}\n", trail="\n", stop=_QWEN_STOPS, budget_rule="official"),
    # "codeqwen1.5-base": the same layout with CodeQwen1.5's tokens (CODEQWEN_BASE_TEMPLATE).
    Template("codeqwen1.5-official", "fim", "CodeQwen1.5 base: the official ExecRepoBench eval.py prompt",
             _EVAL_PY, "<fim_prefix>", "<fim_suffix>", "<fim_middle>", repo_name="<repo_name>", file_sep="<file_sep>",
             repo_header="\n<repo_name>{repo}", file_block="\n<file_sep>{path}\n{code}", entry=_ENTRY,
             target_outer="\n<file_sep>{path}\n", trail="\n", stop=_CODEQWEN_STOPS, budget_rule="official"),
    # "starcoder-": the CodeQwen1.5 text exactly (<repo_name>/<file_sep> are not StarCoder 1 tokens: plain text).
    Template("starcoder-official", "fim", "StarCoder base: the official ExecRepoBench eval.py prompt",
             _EVAL_PY, "<fim_prefix>", "<fim_suffix>", "<fim_middle>", repo_header="\n<repo_name>{repo}",
             file_block="\n<file_sep>{path}\n{code}", entry=_ENTRY, target_outer="\n<file_sep>{path}\n", trail="\n",
             stop=_STARCODER_STOPS, budget_rule="official"),
    # "deepseek-coder": "\n" + "\n".join("#f\nentry") + <｜fim▁begin｜>pre<｜fim▁hole｜>suf<｜fim▁end｜> + "\n".
    Template("deepseek-coder-official", "fim", "DeepSeek-Coder base: the official ExecRepoBench eval.py prompt",
             _EVAL_PY, *_DEEPSEEK_FIM, repo_header="\n", file_block="#{path}\n{code}", file_joiner="\n",
             entry=_ENTRY, trail="\n", stop=_DEEPSEEK_STOPS, bos="<\uff5cbegin\u2581of\u2581sentence\uff5c>",
             budget_rule="official"),
    # get_continue_prompt_with_suffix, context "\n## f\nentry"...: eval.py's prompt for "starcoder2-", "codegeex",
    # "codellama", "granite-coder-base", "opencoder-base", "codestral-", "yi-coder", "codegemma".
    Template("continuation-official", "continuation", "base models without a FIM branch in eval.py (StarCoder2, "
             "Code Llama, Codestral, ...): the official continuation prompt", _EVAL_PY,
             file_block="\n## {path}\n{code}", entry=_ENTRY, target_outer="\n{path}\n## Suffix code of {path}\n",
             target_inner="\n## Prefix code of {path}\n", comment="# ", budget_rule="official"),
    # "qwen2.5-coder-C": SYSTEM_PROMPT and REPO_COMPLETE_TEMPLATE (both triple-quoted: leading and trailing "\n"),
    # context entries joined by "\n"; eval.py then applies the tokenizer's chat template.
    Template("chat-official", "chat", "instruct models: the official ExecRepoBench eval.py chat messages", _EVAL_PY,
             repo_header="\n##Context Code##:\n", file_block="{code}", file_joiner="\n", entry=_ENTRY,
             tail="\n##Prefix Code##:\n{prefix}\n##Suffix Code##:\n{suffix}\n##Middle Code##:\n",
             system="\n" + SYSTEM_PROMPT + "\n", budget_rule="official"),
)
TEMPLATES: dict[str, Template] = {t.name: t for t in _TEMPLATE_LIST}

# Model name -> template: the first (substring, template) whose substring is in the lower-cased name wins.
# Instruct/chat models first; a name matching nothing gets "continuation", which needs no special tokens.
DETECTION: tuple[tuple[str, str], ...] = (
    ("instruct", "chat"), ("-chat", "chat"),
    ("codeqwen1.5", "codeqwen1.5"), ("codeqwen", "codeqwen1.5"), ("qwen2.5-coder", "qwen2.5-coder"),
    ("starcoder2", "starcoder2"), ("starcoder", "starcoder"), ("deepseek-coder", "deepseek-coder"),
    ("codellama", "codellama"), ("code-llama", "codellama"), ("codestral", "codestral"),
)
FALLBACK = "continuation"

# Our template -> its official variant (`--template official`): eval.py prompts StarCoder2, Code Llama, Codestral
# and unknown base models with its continuation prompt.
OFFICIAL_VARIANTS: dict[str, str] = {
    "qwen2.5-coder": "qwen2.5-coder-official", "codeqwen1.5": "codeqwen1.5-official",
    "starcoder": "starcoder-official", "deepseek-coder": "deepseek-coder-official", "chat": "chat-official",
    "starcoder2": "continuation-official", "codellama": "continuation-official", "codestral": "continuation-official",
    "continuation": "continuation-official",
}
# eval.py get_prompt's branches, in its order: (substring of its --model_name, case-sensitive; our template).
EVAL_PY_BRANCHES: tuple[tuple[str, str], ...] = (
    ("codeqwen1.5-base", "codeqwen1.5-official"), ("qwen2.5-coder-base-", "qwen2.5-coder-official"),
    ("starcoder-", "starcoder-official"), ("starcoder2-", "continuation-official"),
    ("deepseek-coder", "deepseek-coder-official"), ("codegeex", "continuation-official"),
    ("qwen2.5-coder-C", "chat-official"), ("codellama", "continuation-official"),
    ("granite-coder-base", "continuation-official"), ("opencoder-base", "continuation-official"),
    ("codestral-", "continuation-official"), ("yi-coder", "continuation-official"),
    ("codegemma", "continuation-official"),
)


def get_template(name: Union[str, Template]) -> Template:
    if isinstance(name, Template):
        return name
    if name not in TEMPLATES:
        raise UsageError(f"unknown template {name!r}; known: {', '.join(sorted(TEMPLATES))}")
    return TEMPLATES[name]


def detect_template(model_name: str, official: bool = False) -> str:
    """The template name for a model name or path (see DETECTION; FALLBACK when nothing matches); with
    `official`, that template's official variant (OFFICIAL_VARIANTS)."""
    low = model_name.lower()
    name = next((t for sub, t in DETECTION if sub in low), FALLBACK)
    return OFFICIAL_VARIANTS[name] if official else name


def resolve_template(choice: Optional[str], model_name: str) -> str:
    """--template: a template name; "official": the official variant of the one detected; None: detected."""
    if choice is None or choice == "official":
        return detect_template(model_name, official=choice == "official")
    return get_template(choice).name


def eval_py_template(label: str) -> str:
    """The official template for one of eval.py's --model_name labels (e.g. "qwen2.5-coder-base-7B")."""
    found = next((t for sub, t in EVAL_PY_BRANCHES if sub in label), None)
    if found is None:
        raise UsageError(f"eval.py has no prompt for model name {label!r} (its NotImplementedError)")
    return found


def entry_text(template: Template, path: str, code: str) -> str:
    """One context file's content as the template writes it inside its block."""
    return template.entry.format(path=path, code=code)


def context_block(template: Template, path: str, code: str, repo: str = "") -> str:
    """One context file as the template writes it (what context budgets count)."""
    return template.file_block.format(path=path, code=entry_text(template, path, code), repo=repo)


def ordered(context: Iterable[tuple[str, str]], order: str = "close") -> list[tuple[str, str]]:
    """Most relevant first in, rendering order out: `close` puts the most relevant file last (nearest
    the target file), `far` keeps it first."""
    if order not in ORDERS:
        raise UsageError(f"unknown context order {order!r}; known: {', '.join(ORDERS)}")
    items = [tuple(c) for c in context]
    return items[::-1] if order == "close" else items


def render(template: Union[str, Template], parts: SampleParts, order: str = "close") -> Union[str, list[dict]]:
    """The prompt text (fim, continuation) or the chat messages list (chat)."""
    t = get_template(template)
    return render_entries(t, parts, [(p, entry_text(t, p, c)) for p, c in parts.context], order)


def render_entries(template: Union[str, Template], parts: SampleParts, entries: Iterable[tuple[str, str]],
                   order: str = "close") -> Union[str, list[dict]]:
    """`render` with each context file's entry already written (a budget may cut into its header);
    `parts.context` is not read."""
    t = get_template(template)
    fields = {"repo": parts.repo_name, "path": parts.file_name}
    blocks = (t.file_block.format(path=p, code=e, repo=parts.repo_name) for p, e in ordered(entries, order))
    files = t.file_joiner.join(blocks)
    head = t.repo_header.format(**fields) + files
    outer, inner = t.target_outer.format(**fields), t.target_inner.format(**fields)
    if t.kind == "chat":
        user = head + t.tail.format(prefix=parts.prefix, suffix=parts.suffix, path=parts.file_name)
        return [{"role": "system", "content": t.system}, {"role": "user", "content": user}]
    if t.kind == "continuation":
        suffix = "\n".join(t.comment + line for line in parts.suffix.split("\n"))
        return head + outer + suffix + inner + parts.prefix
    if t.context_in_prefix:
        head, inner = "", head + inner
    end = t.fim_middle + t.trail
    if t.order == "spm":
        return head + outer + t.fim_suffix + parts.suffix + t.fim_prefix + inner + parts.prefix + end
    return head + outer + t.fim_prefix + inner + parts.prefix + t.fim_suffix + parts.suffix + end
