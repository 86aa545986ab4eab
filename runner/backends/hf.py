"""`transformers`: a local Hugging Face model folder run with `model.generate` (CPU, or the GPU when there is one).

Greedy by default; `temperature` > 0 samples (with `top_p`, a per-sample `seed`, `n` draws per sample).
Generation stops at the model's EOS or at the first of the template's stop strings (`stop`, passed by
`execrepobench run`); `raw` is the decoded text without the EOS and cut before the stop string, as vLLM
returns it (generate.py cuts at the stops again, harmlessly).  Requests are generated one at a time (n
draws batched): plain and exact; use the `vllm` backend for throughput.

`model`: a local model folder or a Hugging Face Hub model id (its snapshot in the Hugging Face cache:
`model_source.resolve_model`).  Options (keyword arguments / RunConfig.backend_options): temperature (0.0),
top_p (1.0), seed (0), max_new_tokens (512), stop (()), device ("auto": cuda when available, else cpu), dtype
("auto": the checkpoint's; or float32, bfloat16, float16), trust_remote_code (False: the model's own Python
code is not run).

The heavy dependencies (torch, transformers) are imported when the backend is made; they live in the model
environment made by scripts/setup-model-env.sh.  The helpers here (`local_model_dir`, `require`,
`SamplingOptions`, `sample_seed`) are shared with the vllm and openai backends.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from execrepobench_dataset.errors import UsageError

from ..errors import BackendUnavailable
from ..postprocess import cut_at_stop
from .base import Backend, Generation, Request

SETUP_HINT = ("run `bash scripts/setup-model-env.sh` and use the model environment "
              "(.venv-models/bin/execrepobench, .venv-models/bin/python)")
DEFAULT_MAX_NEW_TOKENS = 512


def require(backend: str, *modules: str) -> None:
    """Import `modules`; a missing one -> `BackendUnavailable` (an ImportError) naming it, the backend and
    the setup script."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = getattr(exc, "name", None) or name
            raise BackendUnavailable(f"the {backend!r} backend needs the Python package {missing!r}, which is "
                                     f"not installed here ({exc}); {SETUP_HINT}") from exc


def local_model_dir(model: Optional[str], backend: str) -> Path:
    """The model folder, checked: a local folder with a config.json, or a Hub model id's snapshot in the
    Hugging Face cache (`model_source.resolve_model`)."""
    from .model_source import resolve_model

    return resolve_model(model, backend).path


@dataclass(frozen=True)
class SamplingOptions:
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    stop: tuple[str, ...] = ()

    @classmethod
    def from_options(cls, options: dict) -> "SamplingOptions":
        def pick(key, default, cast):
            value = options.get(key)
            return default if value is None else cast(value)

        opts = cls(temperature=pick("temperature", 0.0, float), top_p=pick("top_p", 1.0, float),
                   seed=pick("seed", 0, int), max_new_tokens=pick("max_new_tokens", DEFAULT_MAX_NEW_TOKENS, int),
                   stop=tuple(s for s in (options.get("stop") or ()) if s))
        if opts.temperature < 0 or not 0 < opts.top_p <= 1 or opts.max_new_tokens <= 0:
            raise UsageError(f"bad sampling options: temperature={opts.temperature} top_p={opts.top_p} "
                             f"max_new_tokens={opts.max_new_tokens}")
        return opts

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def describe(self) -> dict:
        return {"temperature": self.temperature, "top_p": self.top_p, "seed": self.seed,
                "max_new_tokens": self.max_new_tokens}


def sample_seed(seed: int, sample_id: str) -> int:
    """A per-sample seed: draws do not depend on batch composition or order."""
    return (seed * 1_000_003 + zlib.crc32(sample_id.encode("utf-8"))) % (2 ** 31 - 1)


class TransformersBackend(Backend):
    name = "transformers"
    needs_prompt = True

    engine_options = ("dtype", "trust_remote_code", "max_model_len")  # max_model_len: what prompts are fitted to

    def __init__(self, model: str | None = None, **options: Any) -> None:
        from .model_source import resolve_model

        super().__init__(model, **options)
        resolved = resolve_model(model, self.name)
        self.path, self.model_source = resolved.path, resolved.record()
        require(self.name, "torch", "transformers")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

        self.sampling = SamplingOptions.from_options(options)
        device = options.get("device") or "auto"
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        dtype = options.get("dtype") or "auto"
        remote = bool(options.get("trust_remote_code"))
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True, trust_remote_code=remote)
        self.lm = AutoModelForCausalLM.from_pretrained(
            str(self.path), local_files_only=True, dtype=dtype if dtype == "auto" else getattr(torch, dtype),
            trust_remote_code=remote)
        self.lm.to(self.device).eval()
        eos = self.lm.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos_ids = [e for e in (eos if isinstance(eos, list) else [eos]) if e is not None]
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (self.eos_ids[0] if self.eos_ids else 0)
        # The model's own generation defaults (repetition_penalty, top_k, do_sample ...) are replaced: only what
        # the options say applies, so greedy is plain greedy, as in the vllm backend.
        self.lm.generation_config = GenerationConfig(eos_token_id=self.eos_ids or None, pad_token_id=self.pad_id)

    def _input_ids(self, prompt) -> list[int]:
        if isinstance(prompt, str):  # BOS (when the model has one) is the tokenizer's to add, as in vLLM
            return list(self.tokenizer(prompt, add_special_tokens=True)["input_ids"])
        text = self.tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=False)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _stopping(self, prompt_len: int):
        from transformers import StoppingCriteria, StoppingCriteriaList
        import torch

        stops, tok = self.sampling.stop, self.tokenizer

        class _Stops(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                done = [any(s in tok.decode(row[prompt_len:], skip_special_tokens=False,
                                            clean_up_tokenization_spaces=False) for s in stops)
                        for row in input_ids.tolist()]
                return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

        return StoppingCriteriaList([_Stops()]) if stops else None

    def _one(self, request: Request) -> tuple[list[str], list[str], list[int]]:
        import torch

        s = self.sampling
        ids = self._input_ids(request.prompt)
        draws = 1 if s.greedy else request.n
        kwargs: dict[str, Any] = {"max_new_tokens": s.max_new_tokens, "num_return_sequences": draws,
                                  "stopping_criteria": self._stopping(len(ids)), "pad_token_id": self.pad_id}
        if s.greedy:
            kwargs["do_sample"] = False
        else:
            kwargs.update(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=0)
            torch.manual_seed(sample_seed(s.seed, request.sample.sample_id))
        input_ids = torch.tensor([ids], device=self.device)
        with torch.no_grad():
            out = self.lm.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
        decoded = [self._decode(row) for row in out[:, len(ids):].tolist()]
        texts, reasons, counts = [d[0] for d in decoded], [d[1] for d in decoded], [d[2] for d in decoded]
        if s.greedy:  # deterministic: one draw stands for all n
            texts, reasons, counts = texts * request.n, reasons * request.n, counts * request.n
        return texts, reasons, counts

    def _decode(self, row: list[int]) -> tuple[str, str, int]:
        """(text, finish reason, tokens) of one generated row (after the prompt)."""
        s = self.sampling
        end = next((i for i, t in enumerate(row) if t in self.eos_ids), None)
        while end is None and row and row[-1] == self.pad_id and len(row) < s.max_new_tokens:
            row = row[:-1]  # padding after a row that stopped before the others
        toks = row if end is None else row[:end]
        text, stopped = cut_at_stop(self.tokenizer.decode(toks, skip_special_tokens=False,
                                                          clean_up_tokenization_spaces=False), s.stop)
        if not stopped:  # bytes of an unfinished UTF-8 character at the end: dropped, as vLLM's detokenizer does
            text = text.rstrip("\ufffd")
        return text, "stop" if stopped or end is not None else "length", len(toks) + (1 if end is not None else 0)

    def _greedy_batch(self, requests: Sequence[Request]) -> list[tuple[list[str], list[str], list[int]]]:
        """Greedy prompts generated together (`batch_size`), left-padded, each row decoded on its own."""
        import torch

        s = self.sampling
        ids = [self._input_ids(r.prompt) for r in requests]
        width = max(len(x) for x in ids)
        input_ids = torch.tensor([[self.pad_id] * (width - len(x)) + x for x in ids], device=self.device)
        mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids], device=self.device)
        with torch.no_grad():
            out = self.lm.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=s.max_new_tokens,
                                   do_sample=False, pad_token_id=self.pad_id, stopping_criteria=self._stopping(width))
        results = []
        for r, row in zip(requests, out[:, width:].tolist()):
            text, reason, count = self._decode(row)
            results.append(([text] * r.n, [reason] * r.n, [count] * r.n))
        return results

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        size = max(1, int(self.options.get("batch_size") or 1)) if self.sampling.greedy else 1
        made = []
        for start in range(0, len(requests), size):
            chunk = requests[start:start + size]
            made += self._greedy_batch(chunk) if size > 1 else [self._one(r) for r in chunk]
        return [Generation(tuple(texts), {"finish_reason": reasons, "completion_tokens": counts})
                for texts, reasons, counts in made]
