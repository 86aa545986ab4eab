"""Model backends (transformers, vllm, openai) on a tiny local random-weight Qwen2 (tests/model_fixture.py).

Runs only inside the model environment (bash scripts/setup-model-env.sh), where torch, transformers and vLLM
import; anywhere else the whole module is skipped:

    .venv-models/bin/python -m pytest tests/runner/test_model_backends.py

Nothing is downloaded: the tokenizer is trained on this project's sources and the weights are random (seeded).
"""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # vLLM's engine in-process: starts in seconds on CPU

from conftest import FIXTURES, make_sample, require  # noqa: E402

require("models", at_import=True)  # skipped without the model environment; FAILS in part 2 of scripts/test.sh

from model_fixture import NAME, make_tiny_model  # noqa: E402

from execrepobench.runner.backends.base import Request, get_backend  # noqa: E402
from execrepobench.runner.backends.hf import SamplingOptions, require  # noqa: E402
from execrepobench.runner.backends.openai_backend import ServerError  # noqa: E402
from execrepobench.runner.postprocess import clean  # noqa: E402
from execrepobench.runner.prompts import build_prompt_for_sample, load_tokenizer, model_max_length  # noqa: E402
from execrepobench.runner.templates import get_template  # noqa: E402
from execrepobench_dataset.record import ContextFile, Sample  # noqa: E402

TEMPLATE = get_template("qwen2.5-coder")
STOPS = list(TEMPLATE.stop)
MAX_NEW = 24
KV_BYTES = 256 * 1024 * 1024
ENGINE = {"dtype": "float32", "kv_cache_memory_bytes": KV_BYTES}


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("models") / NAME)


def _samples() -> list[Sample]:
    """Samples cut from the fixture repository's real files: a masked line (or span), the other files as context."""
    repo = FIXTURES / "minirepo"
    files = {p.relative_to(repo).as_posix(): p.read_text(encoding="utf-8")
             for p in sorted(repo.rglob("*.py")) if "egg-info" not in str(p)}
    cuts = [("minirepo/mathx.py", 0.3), ("minirepo/mathx.py", 0.7), ("minirepo/strings.py", 0.5),
            ("tests/test_mathx.py", 0.4)]
    out = []
    for i, (name, where) in enumerate(cuts):
        lines = files[name].splitlines(keepends=True)
        at = max(1, int(len(lines) * where))
        prefix, middle, suffix = "".join(lines[:at]), lines[at], "".join(lines[at + 1:])
        indent = middle[:len(middle) - len(middle.lstrip())]
        prefix, middle = prefix + indent, middle[len(indent):]  # the cursor after the indentation
        context = tuple(ContextFile(p, c) for p, c in files.items() if p != name)
        out.append(make_sample(file_name=name, middle=middle, fill_type="Random Single-line Completion",
                               prefix_code=prefix, suffix_code=suffix, sample_id=f"tiny-{i}", repo_name="minirepo",
                               repo_source="path:/minirepo#tree=0", context_code=context, node_type="line"))
    return out


@pytest.fixture(scope="session")
def requests_(model_dir) -> list[Request]:
    tok, model_max = load_tokenizer(model_dir), model_max_length(model_dir)
    reqs = []
    for s in _samples():
        p = build_prompt_for_sample(TEMPLATE, s, tok, max_generation_tokens=MAX_NEW, model_max=model_max)
        assert p.n_tokens > 50 and p.context_files >= 1
        reqs.append(Request(s, p.text, 2))
    return reqs


@pytest.fixture(scope="session")
def vllm_backend(model_dir):
    started = time.monotonic()
    backend = get_backend("vllm", str(model_dir), stop=STOPS, max_new_tokens=MAX_NEW, **ENGINE)
    print(f"vLLM engine start: {time.monotonic() - started:.1f}s")
    return backend


@pytest.fixture(scope="session")
def hf_backend(model_dir):
    return get_backend("transformers", str(model_dir), stop=STOPS, max_new_tokens=MAX_NEW, dtype="float32")


@pytest.fixture(scope="session")
def vllm_greedy(vllm_backend, requests_):
    return vllm_backend.generate(requests_)


# -- (a) vLLM and transformers agree ----------------------------------------------------------------------------

def test_prompts_are_fim_prompts_with_special_tokens(model_dir, requests_):
    from transformers import AutoTokenizer

    hf_tok, tok = AutoTokenizer.from_pretrained(str(model_dir)), load_tokenizer(model_dir)
    for r in requests_:
        assert r.prompt.startswith("<|repo_name|>minirepo") and r.prompt.endswith("<|fim_middle|>")
        ids = hf_tok(r.prompt)["input_ids"]
        assert ids == tok.encode(r.prompt)  # the budget's tokenizer counts what the engines see
        for special in ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|file_sep|>"):
            assert hf_tok.convert_tokens_to_ids(special) in ids


def test_vllm_greedy_equals_transformers_greedy(vllm_greedy, hf_backend, requests_):
    hf = hf_backend.generate(requests_)
    assert len(hf) == len(vllm_greedy) == len(requests_)
    for r, v, h in zip(requests_, vllm_greedy, hf):
        assert len(v.raw) == len(h.raw) == r.n == 2 and v.raw[0] == v.raw[1]  # greedy: n identical draws
        assert v.raw == h.raw, r.sample.sample_id
        assert v.meta["completion_tokens"] == h.meta["completion_tokens"]
        assert v.meta["finish_reason"] == h.meta["finish_reason"]
    assert any(v.raw[0] for v in vllm_greedy)  # the model wrote something


def test_vllm_token_ids_equal_a_plain_greedy_loop(vllm_backend, hf_backend, requests_):
    """Token ids, without stops or EOS: vLLM against argmax over transformers' full forward pass, step by step."""
    import torch
    from vllm import SamplingParams

    prompts = [r.prompt for r in requests_]
    outs = vllm_backend.llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True),
                                     use_tqdm=False)
    for prompt, out in zip(prompts, outs):
        ids = hf_backend.tokenizer(prompt)["input_ids"]
        assert list(out.prompt_token_ids) == ids
        seq = list(ids)
        with torch.no_grad():
            for _ in range(8):
                seq.append(int(hf_backend.lm(torch.tensor([seq])).logits[0, -1].argmax()))
        assert list(out.outputs[0].token_ids) == seq[len(ids):]


def test_chat_template_path_agrees(vllm_backend, hf_backend, model_dir):
    sample = _samples()[0]
    prompt = build_prompt_for_sample("chat", sample, load_tokenizer(model_dir), max_generation_tokens=MAX_NEW,
                                     model_max=model_max_length(model_dir), reserve_tokens=64)
    assert isinstance(prompt.text, list) and prompt.text[0]["role"] == "system"
    req = [Request(sample, prompt.text, 1)]
    assert vllm_backend.generate(req)[0].raw == hf_backend.generate(req)[0].raw


def test_sampling_is_seeded_per_sample(vllm_backend, hf_backend, requests_):
    for backend in (vllm_backend, hf_backend):
        greedy = backend.sampling
        try:
            backend.sampling = SamplingOptions(temperature=1.0, top_p=0.95, seed=7, max_new_tokens=12, stop=())
            reqs = [replace(r, n=3) for r in requests_[:2]]
            first, again = backend.generate(reqs), backend.generate(reqs[::-1])[::-1]
            assert [g.raw for g in first] == [g.raw for g in again]  # per-sample seeds: order does not matter
            assert all(len(g.raw) == 3 for g in first)
            assert any(len(set(g.raw)) > 1 for g in first)  # n draws, not one draw copied
            backend.sampling = replace(backend.sampling, seed=8)
            assert [g.raw for g in backend.generate(reqs)] != [g.raw for g in first]
        finally:
            backend.sampling = greedy


def test_stop_strings_end_generation(vllm_backend, hf_backend, requests_):
    """A stop string is cut out of `raw` and ends generation (same place in both engines)."""
    # the tiny model is trained on the project's sources, so what it says changes with them: the first request
    # whose greedy text has two ASCII letters past its first third gives the stop string
    texts = [g.raw[0] for g in vllm_backend.generate(requests_)]
    picks = [(r, text, i) for r, text in zip(requests_, texts) for i in range(len(text) // 3, len(text) - 1)
             if text[i:i + 2].isascii() and text[i:i + 2].isalpha()]
    assert picks, f"no ASCII stop string to pick in {texts!r}"
    request, text, at = picks[0]
    stop = text[at:at + 2]
    for backend in (vllm_backend, hf_backend):
        saved = backend.sampling
        try:
            backend.sampling = replace(saved, stop=(stop,))
            g = backend.generate([request])[0]
            assert stop not in g.raw[0] and text.startswith(g.raw[0]) and len(g.raw[0]) <= at
            assert g.meta["finish_reason"][0] == "stop"
        finally:
            backend.sampling = saved


# -- (b) the openai backend against vLLM's own OpenAI-compatible server ----------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(model_dir, tmp_path_factory):
    port = _free_port()
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--host", "127.0.0.1", "--port", str(port), "--enforce-eager", "--dtype", "float32",
           "--kv-cache-memory-bytes", str(KV_BYTES), "--generation-config", "vllm", "--seed", "0"]
    env = {**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    base = f"http://127.0.0.1:{port}/v1"
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            started, deadline = time.monotonic(), time.monotonic() + 240
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"vLLM server exited ({proc.returncode}):\n{log_path.read_text()[-3000:]}")
                try:
                    with urllib.request.urlopen(f"{base}/models", timeout=2) as resp:
                        if json.loads(resp.read())["data"]:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"vLLM server not ready in 240s:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.5)
            print(f"vLLM server ready in {time.monotonic() - started:.1f}s")
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


def test_openai_backend_equals_offline_vllm(vllm_server, vllm_greedy, model_dir, requests_):
    client = get_backend("openai", str(model_dir), base_url=vllm_server, stop=STOPS, max_new_tokens=MAX_NEW,
                         concurrency=3)
    got = client.generate(requests_)
    assert [g.raw for g in got] == [g.raw for g in vllm_greedy]
    assert [g.meta["finish_reason"] for g in got] == [g.meta["finish_reason"] for g in vllm_greedy]
    assert [clean(g.raw[0], STOPS) for g in got] == [clean(g.raw[0], STOPS) for g in vllm_greedy]
    assert len(client.stop_token_ids) == len(STOPS) and client.server_stops == []  # all special tokens: by id
    # Without the tokenizer: 4 stop strings go to the server (its limit), the other 4 are cut here; same text.
    strings = get_backend("openai", str(model_dir), base_url=vllm_server, stop=STOPS, max_new_tokens=MAX_NEW,
                          tokenizer=str(model_dir / "nowhere"))
    assert strings.stop_token_ids == [] and strings.server_stops == STOPS[:4]
    assert [g.raw for g in strings.generate(requests_)] == [g.raw for g in vllm_greedy]
    nameless = get_backend("openai", None, base_url=vllm_server.removesuffix("/v1"), stop=STOPS,
                           max_new_tokens=MAX_NEW)
    assert nameless.served_model() == str(model_dir)  # the server's first model; "/v1" added to the URL
    assert nameless.generate(requests_[:1])[0].raw == vllm_greedy[0].raw


# -- (c) a server that does not answer --------------------------------------------------------------------------

def test_openai_connection_refused_is_a_clear_error_after_bounded_retries(requests_):
    port = _free_port()  # nothing listens there
    client = get_backend("openai", "m", base_url=f"http://127.0.0.1:{port}/v1", retries=2, backoff_s=0.05)
    started = time.monotonic()
    with pytest.raises(ServerError, match=rf"server at http://127\.0\.0\.1:{port}/v1 did not answer .*3 attempt"):
        client.generate(requests_[:1])
    assert time.monotonic() - started < 10


def test_openai_silent_server_times_out_after_bounded_retries(requests_):
    with socket.socket() as silent:  # accepts connections (kernel backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        client = get_backend("openai", "m", base_url=url, retries=1, backoff_s=0.05, timeout_s=0.5)
        started = time.monotonic()
        with pytest.raises(ServerError, match=rf"{url} did not answer .*2 attempt"):
            client.generate(requests_[:1])
        assert time.monotonic() - started < 10


def test_openai_retries_5xx_then_succeeds_and_4xx_fails_at_once(requests_):
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append(body)
            if body["model"] == "bad":
                code, answer = 400, {"error": {"message": "no such model"}}
            elif len(calls) < 3:
                code, answer = 503, {"error": "busy"}
            else:
                code, answer = 200, {"choices": [{"index": 0, "text": "x = 1<|file_sep|>", "finish_reason": "stop"}]}
            data = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        client = get_backend("openai", "m", base_url=url, retries=3, backoff_s=0.01, stop=STOPS)
        g = client.generate(requests_[:1])[0]
        assert g.raw == ("x = 1",) * 2 and g.meta["finish_reason"] == ["stop"] * 2 and len(calls) == 3
        assert calls[0]["prompt"] == requests_[0].prompt and "suffix" not in calls[0]  # FIM rendered client-side
        assert calls[0]["stop"] == STOPS[:4] and calls[0]["skip_special_tokens"] is False and calls[0]["n"] == 1
        strict = get_backend("openai", "m", base_url=url, extensions=False, stop=STOPS, max_stop=2)
        assert strict.generate(requests_[:1])[0].raw == ("x = 1",) * 2
        assert calls[-1]["stop"] == STOPS[:2] and "skip_special_tokens" not in calls[-1]
        with pytest.raises(ServerError, match="HTTP 400.*no such model"):
            get_backend("openai", "bad", base_url=url, retries=3, backoff_s=0.01).generate(requests_[:1])
        assert len(calls) == 5  # a client error is not retried
    finally:
        server.shutdown()
        server.server_close()


# -- (d) errors naming what is missing ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["transformers", "vllm"])
def test_unknown_model_path_names_it(backend, tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError, match=re.escape(f"model folder '{missing}' does not exist")):
        get_backend(backend, str(missing))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        get_backend(backend, str(tmp_path / "empty"))


def test_missing_package_names_it_and_the_setup_script():
    with pytest.raises(ImportError, match=r"'vllm' backend needs the Python package 'no_such_pkg_xyz'.*"
                                          r"setup-model-env\.sh"):
        require("vllm", "no_such_pkg_xyz")


def test_run_command_unknown_model_path(tmp_path, capsys):
    from execrepobench.runner.cli import main
    from execrepobench_dataset.record import write_jsonl

    from execrepobench_metric.execution.pytest_run import COMMAND_PREFIX

    # samples judging would take (they are checked first), then the model is looked for
    write_jsonl([replace(s, test_command=COMMAND_PREFIX, judged_tests=("tests/t.py::t",)) for s in _samples()[:1]],
                tmp_path / "samples.jsonl")
    missing = str(tmp_path / "nowhere" / "tiny-qwen2.5-coder")
    rc = main(["run", "--samples", str(tmp_path / "samples.jsonl"), "--backend", "transformers", "--model", missing,
               "--out", str(tmp_path / "res"), "--no-progress"])
    assert rc == 2
    assert missing in capsys.readouterr().err


# -- (e) `execrepobench run --backend transformers|vllm` end to end ---------------------------------------------------

@pytest.mark.sandbox
@pytest.mark.parametrize("backend", ["transformers", "vllm"])
def test_run_command_end_to_end(backend, built_minirepo, model_dir, tmp_path, capsys):
    from execrepobench.runner.cli import main
    from execrepobench_dataset.record import write_jsonl

    samples = [make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                           judged=("tests/test_mathx.py::test_clamp_inside",)),
               make_sample(built_minirepo, "minirepo/mathx.py", "acc += value",
                           judged=("tests/test_mathx.py::test_running_total",))]
    write_jsonl(samples, tmp_path / "samples.jsonl")
    base = ["run", "--samples", str(tmp_path / "samples.jsonl"), "--backend", backend, "--model",
            str(model_dir), "--allow-exec", "--no-progress"]
    assert main(base + ["--out", str(tmp_path / "res"), "--max-new-tokens", "16", "--n", "2",
                        "--temperature", "0.8", "--seed", "3"]) == 0
    assert "template: qwen2.5-coder (detected" in capsys.readouterr().out
    lines = [json.loads(x) for x in (tmp_path / "res" / "generations.jsonl").read_text().splitlines()]
    assert [x["sample_id"] for x in lines] == [s.sample_id for s in samples]
    for line in lines:
        assert line["backend"] == backend and line["template"] == "qwen2.5-coder"
        assert line["model"] == str(model_dir) and line["n"] == 2 and len(line["completion"]) == 2
        assert line["sampling"] == {"temperature": 0.8, "top_p": 1.0, "seed": 3, "max_new_tokens": 16}
        assert line["prompt_tokens"] > 20 and line["truncated"] is False
        assert line["prefix_truncated"] is False and line["suffix_truncated"] is False
        assert len(line["finish_reason"]) == 2 and all(0 < c <= 16 for c in line["completion_tokens"])
        assert all(not any(s in c for s in STOPS) for c in line["completion"])
    metrics = json.loads((tmp_path / "res" / "metrics.json").read_text())
    assert metrics["pass@1"] <= 1.0 and (tmp_path / "res" / "results.jsonl").is_file()

    # A generation budget that leaves the prompt 40 tokens (2048 - 2008): the file is cut, and says so.
    assert main(base + ["--out", str(tmp_path / "cut"), "--max-new-tokens", "2008",
                        "--template", "qwen2.5-coder"]) == 0
    assert "template: qwen2.5-coder (detected" not in capsys.readouterr().out
    cut = [json.loads(x) for x in (tmp_path / "cut" / "generations.jsonl").read_text().splitlines()]
    for line in cut:
        assert line["prompt_tokens"] <= 40 and line["truncated"] is True
        assert line["prefix_truncated"] is True and line["suffix_truncated"] is True
        assert line["sampling"] == {"temperature": 0.0, "top_p": 1.0, "seed": 0, "max_new_tokens": 2008}


@pytest.mark.sandbox
@pytest.mark.parametrize("backend", ["transformers", "vllm"])
def test_run_with_a_hub_model_id_from_the_cache(backend, built_minirepo, model_dir, hf_hub_cache, tmp_path, capsys):
    """`--model OWNER/NAME` through the Hugging Face cache (offline: the Hub cannot be reached here), the real
    engines: the snapshot is what they load, and metrics.json records the id and the snapshot's commit."""
    import shutil

    from execrepobench.runner.cli import main
    from execrepobench_dataset.record import write_jsonl

    commit = "b" * 40
    repo = hf_hub_cache / f"models--me--{NAME}"
    shutil.copytree(model_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    samples = [make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                           judged=("tests/test_mathx.py::test_clamp_inside",))]
    write_jsonl(samples, tmp_path / "samples.jsonl")
    out = tmp_path / "res"
    assert main(["run", "--samples", str(tmp_path / "samples.jsonl"), "--backend", backend, "--model",
                 f"me/{NAME}", "--allow-exec", "--no-progress", "--max-new-tokens", "8", "--out", str(out)]) == 0
    assert "template: qwen2.5-coder (detected" in capsys.readouterr().out
    (line,) = [json.loads(x) for x in (out / "generations.jsonl").read_text().splitlines()]
    assert len(line["completion"]) == 1 and 0 < line["completion_tokens"][0] <= 8
    run = json.loads((out / "metrics.json").read_text())["run"]
    assert (run["model"], run["model_commit"], run["backend"]) == (f"me/{NAME}", commit, backend)
