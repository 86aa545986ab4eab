"""`vllm`: offline vLLM (`vllm.LLM`) on a local model folder or a Hugging Face Hub model id (its snapshot in the
Hugging Face cache: `model_source.resolve_model`); all requests of a batch go to the engine at once.

Greedy by default (temperature 0; n identical draws are generated once); `temperature` > 0 samples with
`top_p` and a per-sample seed (`SamplingParams.seed`), n draws per sample.  Stops: the template's stop strings
(`stop`), matched on the text with special tokens kept (`skip_special_tokens=False`), so the FIM/repository
tokens of a template stop generation; `raw` excludes the stop string and the EOS.

Options: temperature, top_p, seed, max_new_tokens, stop (as the transformers backend), tensor_parallel_size (1),
enforce_eager (default: on for the CPU, off on GPUs), kv_cache_memory_bytes (default 256 MiB on the CPU; only
passed where the installed vLLM has the argument), dtype ("auto"), max_model_len, gpu_memory_utilization,
trust_remote_code (False), engine_seed (0), engine_args (a dict of further `vllm.LLM` keyword arguments), and
data_parallel_size (1; more: that many engines in their own processes, vllm_dp.py).
`execrepobench run` has flags for tensor_parallel_size, dtype, max_model_len, gpu_memory_utilization and
trust_remote_code.  The model's
generation_config.json is not applied (`generation_config="vllm"`): the options are the whole sampling setup.
On the CPU, VLLM_ENABLE_V1_MULTIPROCESSING defaults to 0 (the engine in-process starts in seconds).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

from .base import Backend, Generation, Request
from .hf import SamplingOptions, require, sample_seed
from .model_source import resolve_model

CPU_KV_CACHE_BYTES = 256 * 1024 * 1024


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:  # pragma: no cover - vllm depends on torch
        return False


class VLLMBackend(Backend):
    name = "vllm"
    needs_prompt = True
    engine_options = ("max_model_len", "gpu_memory_utilization", "dtype", "tensor_parallel_size", "trust_remote_code")

    def __init__(self, model: str | None = None, **options: Any) -> None:
        super().__init__(model, **options)
        resolved = resolve_model(model, self.name)
        self.path, self.model_source = resolved.path, resolved.record()
        self.sampling = SamplingOptions.from_options(options)
        self.pool = None
        size = int(options.get("data_parallel_size") or 1)
        if size > 1:  # several engines, each in its own process (vllm_dp.py)
            from .vllm_dp import EnginePool

            engine = {k: v for k, v in options.items() if k != "data_parallel_size"}
            self.pool = EnginePool(str(self.path), engine, size)
            self.engine_args = {"data_parallel_size": size}
            return
        on_cpu = not _cuda_available()
        if on_cpu:
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        require(self.name, "vllm")
        from vllm import LLM
        from vllm.engine.arg_utils import EngineArgs

        supported = {f.name for f in dataclasses.fields(EngineArgs)}
        args: dict[str, Any] = {
            "model": str(self.path), "tensor_parallel_size": int(options.get("tensor_parallel_size") or 1),
            "enable_prefix_caching": True, "seed": int(options.get("engine_seed") or 0),
            "enforce_eager": bool(on_cpu if options.get("enforce_eager") is None else options["enforce_eager"]),
            "dtype": options.get("dtype") or "auto", "generation_config": "vllm",
            "trust_remote_code": bool(options.get("trust_remote_code")),
        }
        kv_bytes = options.get("kv_cache_memory_bytes")
        if kv_bytes is None and on_cpu:
            kv_bytes = CPU_KV_CACHE_BYTES
        if kv_bytes is not None and "kv_cache_memory_bytes" in supported:
            args["kv_cache_memory_bytes"] = int(kv_bytes)
        for key in ("max_model_len", "gpu_memory_utilization"):
            if options.get(key) is not None:
                args[key] = options[key]
        args.update(options.get("engine_args") or {})
        args = {k: v for k, v in args.items() if k == "model" or k in supported}
        self.engine_args = args
        self.llm = LLM(**args)
        self.tokenizer = self.llm.get_tokenizer()

    def _prompt(self, prompt):
        if isinstance(prompt, str):
            return prompt  # vLLM tokenizes it, adding BOS when the model has one
        text = self.tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=False)
        return {"prompt_token_ids": list(self.tokenizer(text, add_special_tokens=False)["input_ids"])}

    def sampling_params(self, request: Request):
        from vllm import SamplingParams

        s = self.sampling
        common = {"max_tokens": s.max_new_tokens, "stop": list(s.stop) or None, "skip_special_tokens": False}
        if s.greedy:
            return SamplingParams(n=1, temperature=0.0, **common)
        return SamplingParams(n=request.n, temperature=s.temperature, top_p=s.top_p,
                              seed=sample_seed(s.seed, request.sample.sample_id), **common)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        if not requests:
            return []
        if self.pool is not None:
            return self.pool.generate(requests)
        outs = self.llm.generate([self._prompt(r.prompt) for r in requests],
                                 [self.sampling_params(r) for r in requests], use_tqdm=False)
        gens = []
        for r, out in zip(requests, outs):
            texts = [c.text for c in out.outputs]
            reasons = [c.finish_reason or "" for c in out.outputs]
            counts = [len(c.token_ids) for c in out.outputs]
            if self.sampling.greedy:
                texts, reasons, counts = texts * r.n, reasons * r.n, counts * r.n
            gens.append(Generation(tuple(texts), {"finish_reason": reasons, "completion_tokens": counts}))
        return gens
