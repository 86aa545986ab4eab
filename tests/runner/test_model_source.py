"""Model flags without a GPU: `--model OWNER/NAME` resolved through the Hugging Face cache (the real
`huggingface_hub`, offline, reading a cache of the Hub's layout), a clear error for a model that is not there,
and the engine flags passed through to the engine.  vLLM, torch and transformers are not installed here (they
live in .venv-models; the GPU does not exist here): stand-ins record what the backends hand them, and stop at
engine construction - nothing is generated."""
import dataclasses
import json
import sys
import types
from pathlib import Path

import pytest

from execrepobench.runner.backends.model_source import resolve_model
from execrepobench.runner.cli import main
from model_fixture import make_tokenizer
from sample_build import judgeable_build

COMMIT = "5eed" + "0" * 36


def cached_model(cache: Path, repo_id: str, commit: str = COMMIT) -> Path:
    """A model as `hf download` leaves it in the Hugging Face cache: snapshots/<commit>/ and refs/main."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    make_tokenizer(snapshot)
    (snapshot / "config.json").write_text(json.dumps({"model_type": "qwen2", "max_position_embeddings": 4096}))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot


@pytest.fixture()
def hf_cache(hf_hub_cache):
    return hf_hub_cache


class EngineStarted(BaseException):
    """Raised by the stand-in engines once they have recorded their arguments (a BaseException, as a
    KeyboardInterrupt: the command's crash report, for any Exception, lets it through to the test)."""


@pytest.fixture()
def fake_vllm(monkeypatch):
    """`vllm.LLM` and `vllm.engine.arg_utils.EngineArgs` as the backend uses them: the LLM records its keyword
    arguments and stops."""
    calls = []

    @dataclasses.dataclass
    class EngineArgs:  # the fields the backend may pass (vLLM's EngineArgs has these and more)
        model: str = ""
        tensor_parallel_size: int = 1
        enable_prefix_caching: bool = False
        seed: int = 0
        enforce_eager: bool = False
        dtype: str = "auto"
        generation_config: str = "auto"
        kv_cache_memory_bytes: int = 0
        max_model_len: int = 0
        gpu_memory_utilization: float = 0.9
        trust_remote_code: bool = False

    def llm(**kwargs):
        calls.append(kwargs)
        raise EngineStarted()

    vllm = types.ModuleType("vllm")
    vllm.LLM = llm
    engine, arg_utils = types.ModuleType("vllm.engine"), types.ModuleType("vllm.engine.arg_utils")
    arg_utils.EngineArgs = EngineArgs
    for name, module in (("vllm", vllm), ("vllm.engine", engine), ("vllm.engine.arg_utils", arg_utils)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the backend sets it on the CPU: restored after
    return calls


def test_resolve_local_folders_and_cached_hub_ids(tmp_path, hf_cache):
    snapshot = cached_model(hf_cache, "me/tiny-coder")
    resolved = resolve_model("me/tiny-coder", "vllm")
    assert resolved.path == snapshot and resolved.commit == COMMIT and resolved.record() == {"model_commit": COMMIT}
    local = resolve_model(str(snapshot), "vllm")
    assert local.path == snapshot and local.record() == {}
    with pytest.raises(FileNotFoundError, match=r"'me/absent' \(the 'vllm' backend\) is not in the Hugging Face "
                                                r"cache .* offline .*`hf download me/absent`"):
        resolve_model("me/absent", "vllm")
    with pytest.raises(FileNotFoundError, match="does not exist, and it is not a Hugging Face Hub model id"):
        resolve_model(str(tmp_path / "nowhere" / "x"), "transformers")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        resolve_model(str(tmp_path / "empty"), "transformers")
    with pytest.raises(ValueError, match="needs --model"):
        resolve_model(None, "vllm")


def test_a_served_model_fetches_its_tokenizer_not_its_weights(tmp_path, monkeypatch):
    """openai (the model runs on a server): only TOKENIZER_FILES come from the Hub; the engines get the whole
    snapshot.  The Hub's HTTP API cannot be reached here: snapshot_download is a recording stand-in."""
    import huggingface_hub
    from huggingface_hub import constants, errors

    from execrepobench.runner.backends.model_source import TOKENIZER_FILES

    folder = tmp_path / "snap"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    asked = []

    def snapshot_download(repo_id, local_files_only=False, allow_patterns=None):
        if local_files_only:  # nothing cached yet: the online path
            raise errors.LocalEntryNotFoundError("not cached")
        asked.append((repo_id, allow_patterns))
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    assert resolve_model("me/served", "openai", tokenizer_only=True).path == folder
    assert resolve_model("me/engine", "vllm").path == folder
    assert asked == [("me/served", TOKENIZER_FILES), ("me/engine", None)]
    assert "tokenizer.json" in TOKENIZER_FILES and not any(f.endswith((".safetensors", ".bin")) for f in TOKENIZER_FILES)


def test_run_with_a_hub_model_id_passes_engine_flags_to_vllm(tmp_path, hf_cache, fake_vllm, monkeypatch):
    snapshot = cached_model(hf_cache, "me/tiny-coder")
    build = judgeable_build(tmp_path / "OUT")
    # the samples' environments: checked before the engine starts, and not what this test is about
    monkeypatch.setattr("execrepobench.runner.run.ensure_prepared", lambda *a, **k: None)
    with pytest.raises(EngineStarted):
        main(["run", "--samples", str(build / "samples.jsonl"), "--backend", "vllm", "--model", "me/tiny-coder",
              "--template", "qwen2.5-coder", "--out", str(tmp_path / "res"), "--max-model-len", "2048",
              "--gpu-memory-utilization", "0.55", "--dtype", "bfloat16", "--tensor-parallel-size", "2",
              "--trust-remote-code", "--no-progress", "--allow-exec"])
    (args,) = fake_vllm
    assert args["model"] == str(snapshot)
    assert (args["max_model_len"], args["gpu_memory_utilization"], args["dtype"], args["tensor_parallel_size"],
            args["trust_remote_code"]) == (2048, 0.55, "bfloat16", 2, True)
    fake_vllm.clear()
    with pytest.raises(EngineStarted):  # without the flags: vLLM's own defaults, remote code off
        main(["run", "--samples", str(build / "samples.jsonl"), "--backend", "vllm", "--model", str(snapshot),
              "--template", "qwen2.5-coder", "--out", str(tmp_path / "res2"), "--no-progress", "--allow-exec"])
    (args,) = fake_vllm
    assert "max_model_len" not in args and "gpu_memory_utilization" not in args
    assert args["trust_remote_code"] is False and args["dtype"] == "auto" and args["tensor_parallel_size"] == 1


def test_transformers_backend_loads_the_cached_snapshot(tmp_path, hf_cache, monkeypatch):
    snapshot = cached_model(hf_cache, "me/tiny-coder")
    calls = []

    class Auto:
        def __init__(self, kind):
            self.kind = kind

        def from_pretrained(self, path, **kwargs):
            calls.append((self.kind, path, kwargs))
            if self.kind == "model":
                raise EngineStarted()
            return object()

    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)
    torch.bfloat16 = "torch.bfloat16"
    transformers = types.ModuleType("transformers")
    transformers.AutoTokenizer, transformers.AutoModelForCausalLM = Auto("tokenizer"), Auto("model")
    transformers.GenerationConfig = object
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "transformers", transformers)
    from execrepobench.runner.backends.base import get_backend

    with pytest.raises(EngineStarted):
        get_backend("transformers", "me/tiny-coder", dtype="bfloat16", trust_remote_code=True)
    assert calls == [("tokenizer", str(snapshot), {"local_files_only": True, "trust_remote_code": True}),
                     ("model", str(snapshot), {"local_files_only": True, "dtype": "torch.bfloat16",
                                               "trust_remote_code": True})]


def test_missing_model_and_misplaced_flags_are_clear_errors(tmp_path, hf_cache, fake_vllm, capsys):
    build = judgeable_build(tmp_path / "OUT")
    base = ["run", "--samples", str(build / "samples.jsonl"), "--out", str(tmp_path / "res"), "--no-progress"]
    assert main([*base, "--backend", "vllm", "--model", "me/not-fetched", "--template", "qwen2.5-coder"]) == 2
    err = capsys.readouterr().err
    assert "me/not-fetched" in err and "hf download me/not-fetched" in err and "HF_HUB_OFFLINE=1" in err
    assert main([*base, "--backend", "oracle", "--dtype", "bfloat16", "--gpu-memory-utilization", "0.5"]) == 2
    assert "--gpu-memory-utilization, --dtype: not a setting of the 'oracle' backend" in capsys.readouterr().err
    assert main([*base, "--backend", "transformers", "--model", "me/x", "--tensor-parallel-size", "2"]) == 2
    assert "--tensor-parallel-size: not a setting of the 'transformers' backend" in capsys.readouterr().err
    assert not fake_vllm and not (tmp_path / "res" / "generations.jsonl").exists()


def test_prompts_fit_the_engine_context_length(tmp_path, hf_cache):
    """--max-model-len below the model's own length: the prompt (with the generation budget) fits it."""
    from execrepobench.runner.run import RunConfig, _prompting
    from execrepobench_dataset.record import ContextFile
    from sample_build import SAMPLES

    cached_model(hf_cache, "me/tiny-coder")  # max_position_embeddings 4096
    big = dataclasses.replace(SAMPLES[0], context_code=(ContextFile("alpha/big.py", "def f(x):\n    return x\n" * 2000),))
    config = RunConfig(out=tmp_path, backend="vllm", model="me/tiny-coder", template="qwen2.5-coder",
                       max_new_tokens=256)
    sizes = {}
    for limit in (None, 1024):
        render, _, _ = _prompting(config, {"max_model_len": limit} if limit else {})
        sizes[limit] = render(big)[1]["prompt_tokens"]
    assert sizes[1024] <= 1024 - 256 < sizes[None]
