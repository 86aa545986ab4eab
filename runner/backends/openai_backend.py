"""`openai`: any OpenAI-compatible server (vLLM's `python -m vllm.entrypoints.openai.api_server`, TGI, SGLang,
llama.cpp server, ...), through `/v1/completions`.

The FIM prompt is rendered here, client-side, and sent whole as `prompt` (vLLM rejects `suffix`); chat prompts
(message lists, the "chat" templates) go to `/v1/chat/completions`.  Requests run on a bounded thread pool
(`concurrency`); a connection error, a timeout, HTTP 429 or 5xx is retried with exponential backoff
(`retries`, `backoff_s`), then fails with an error naming the URL.  Standard library only (urllib).

Stop strings: OpenAI's API and vLLM's server (VLLM_MAX_STOP_STRINGS, default 4) take at most 4 `stop` strings,
while a template has up to 8.  So, with `extensions` on (vLLM's extra request fields, the default), the stops that
are single special tokens of the model's tokenizer.json (--model as a local folder, or the `tokenizer` option)
go as `stop_token_ids` (no limit), the others as `stop` (at most `max_stop`); `skip_special_tokens: false` keeps
special tokens in the text.  Whatever was not sent is applied here: `raw` is cut before the first stop string
(as offline vLLM returns it), so the server-side stops only save tokens.

Options: base_url (--base-url; default $OPENAI_BASE_URL or http://127.0.0.1:8000/v1), api_key (default
$OPENAI_API_KEY), model (--model: the served model name; default the server's first /v1/models entry),
temperature, top_p, seed, max_new_tokens, stop (as the transformers backend), concurrency (8), retries (4),
backoff_s (0.5), timeout_s (600, per HTTP request), max_stop (4), extensions (True; False for servers that
reject vLLM's extra fields), tokenizer (a folder with tokenizer.json), extra_body (merged into every request).
For greedy results equal to offline vLLM, start vLLM's server with `--generation-config vllm` (otherwise it
applies the model's generation_config.json defaults, e.g. a repetition penalty, to every request).
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from execrepobench_metric.defaults import SERVER_REQUEST_TIMEOUT_S

from ..errors import ServerError
from .base import Backend, Generation, Request
from ..postprocess import cut_at_stop
from .hf import SamplingOptions, sample_seed

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def _special_tokens(folder) -> dict[str, int]:
    """Special (added) token -> id from a local folder's tokenizer.json; {} when there is none."""
    path = Path(str(folder)).expanduser() / "tokenizer.json" if folder else None
    if path is None or not path.is_file():
        return {}
    try:
        added = json.loads(path.read_text(encoding="utf-8")).get("added_tokens") or []
    except (OSError, ValueError):
        return {}
    return {t["content"]: int(t["id"]) for t in added if t.get("content") and "id" in t}


class OpenAIBackend(Backend):
    name = "openai"
    needs_prompt = True
    engine_options = ("max_model_len",)  # what prompts are fitted to (the server has its own)

    def __init__(self, model: str | None = None, **options: Any) -> None:
        super().__init__(model, **options)
        base = options.get("base_url") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        base = base.rstrip("/")
        self.base_url = base if base.endswith("/v1") else base + "/v1"
        self.api_key = options.get("api_key") or os.environ.get("OPENAI_API_KEY") or ""
        self.sampling = SamplingOptions.from_options(options)
        self.concurrency = max(1, int(options.get("concurrency") or 8))
        self.retries = max(0, int(4 if options.get("retries") is None else options["retries"]))
        self.backoff_s = float(0.5 if options.get("backoff_s") is None else options["backoff_s"])
        self.timeout_s = float(options.get("timeout_s") or SERVER_REQUEST_TIMEOUT_S)
        self.max_stop = int(4 if options.get("max_stop") is None else options["max_stop"])
        self.extensions = bool(True if options.get("extensions") is None else options["extensions"])
        self.extra_body = dict(options.get("extra_body") or {})
        self._served: str | None = None
        self.stop_token_ids: list[int] = []
        stop_strings = list(self.sampling.stop)
        if self.extensions:
            special = _special_tokens(options.get("tokenizer") or model)
            self.stop_token_ids = [special[s] for s in stop_strings if s in special]
            stop_strings = [s for s in stop_strings if s not in special]
        self.server_stops = stop_strings[:self.max_stop] if self.max_stop > 0 else stop_strings

    # -- HTTP ----------------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        url = f"{self.base_url}{path}"
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:500]
                if exc.code not in RETRY_STATUS:
                    raise ServerError(f"{method} {url}: HTTP {exc.code}: {detail}") from exc
                last = f"HTTP {exc.code}: {detail}"
            except (urllib.error.URLError, OSError, TimeoutError) as exc:  # refused, reset, DNS, timeout
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            except ValueError as exc:  # not JSON
                raise ServerError(f"{method} {url}: the answer is not JSON ({exc})") from exc
        raise ServerError(f"the OpenAI-compatible server at {self.base_url} did not answer {method} {url} after "
                          f"{self.retries + 1} attempt(s): {last} (is it running? see --base-url)")

    def served_model(self) -> str:
        if self.model:
            return self.model
        if self._served is None:
            data = self._call("GET", "/models").get("data") or []
            if not data:
                raise ServerError(f"{self.base_url}/models lists no model; give --model")
            self._served = data[0]["id"]
        return self._served

    # -- generation ----------------------------------------------------------------------------------------
    def body(self, request: Request) -> tuple[str, dict]:
        s = self.sampling
        body: dict[str, Any] = {"model": self.served_model(), "max_tokens": s.max_new_tokens,
                                "temperature": s.temperature, "top_p": s.top_p if not s.greedy else 1.0,
                                "n": 1 if s.greedy else request.n}
        if not s.greedy:
            body["seed"] = sample_seed(s.seed, request.sample.sample_id)
        if self.server_stops:
            body["stop"] = list(self.server_stops)
        if self.extensions:
            body["skip_special_tokens"] = False
            if self.stop_token_ids:
                body["stop_token_ids"] = list(self.stop_token_ids)
        body.update(self.extra_body)
        if isinstance(request.prompt, str):
            return "/completions", {**body, "prompt": request.prompt}
        return "/chat/completions", {**body, "messages": list(request.prompt)}

    def _one(self, request: Request) -> Generation:
        path, body = self.body(request)
        answer = self._call("POST", path, body)
        choices = sorted(answer.get("choices") or [], key=lambda c: c.get("index", 0))
        if not choices:
            raise ServerError(f"POST {self.base_url}{path}: no choices in the answer: {str(answer)[:300]}")
        texts, reasons = [], []
        for c in choices:
            text = (c.get("text") if "text" in c else (c.get("message") or {}).get("content")) or ""
            text, cut = cut_at_stop(text, self.sampling.stop)  # the stops the server was not given, and the token
            texts.append(text)                                 # text a stop_token_ids stop leaves
            reasons.append("stop" if cut else c.get("finish_reason") or "")
        if self.sampling.greedy:
            texts, reasons = texts[:1] * request.n, reasons[:1] * request.n
        meta = {"finish_reason": reasons}
        usage = answer.get("usage") or {}
        if "completion_tokens" in usage:
            meta["usage_completion_tokens"] = usage["completion_tokens"]
        return Generation(tuple(texts), meta)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        if not requests:
            return []
        self.served_model()  # resolve once, before the threads
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))
