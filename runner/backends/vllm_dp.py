"""vLLM data parallelism (`--data-parallel-size D`): D engines, each in its own process on its own GPUs.

Engine i sees the GPUs i*T .. i*T+T-1 (T = tensor_parallel_size; CUDA_VISIBLE_DEVICES, set before vLLM is
imported there) when this machine has D*T GPUs; on the CPU each process runs its own CPU engine.  A batch of
requests is split into D contiguous shards, one per engine, and the generations come back in request order.
Sampling is seeded per sample (hf.sample_seed), so a sample's completions do not depend on which engine
drew them: the output equals one engine's.
"""
from __future__ import annotations

import multiprocessing as mp
import os
from typing import Any, Sequence

from execrepobench_metric.defaults import PROBE_TIMEOUT_S

from .base import Generation, Request


def _visible_devices(rank: int, per_engine: int) -> str | None:
    """The GPUs of engine `rank` (a CUDA_VISIBLE_DEVICES value), or None to leave the environment as it is."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        devices = [d for d in visible.split(",") if d.strip()]
    else:
        try:
            import torch

            devices = [str(i) for i in range(torch.cuda.device_count())]
        except ImportError:
            devices = []
    chosen = devices[rank * per_engine:(rank + 1) * per_engine]
    return ",".join(chosen) if len(chosen) == per_engine else None


def _serve(rank: int, devices: str | None, model: str, options: dict, conn) -> None:
    """One engine's process: make the backend, report its settings, then answer batches until told to stop."""
    if devices is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = devices
    try:
        from ..run_record import engine_report
        from .base import get_backend

        backend = get_backend("vllm", model, **options)  # one engine: the options hold no data_parallel_size
        conn.send(("ready", engine_report(backend)))
    except Exception as exc:  # the parent raises it, naming the engine
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        requests = conn.recv()
        if requests is None:
            return
        try:
            conn.send(("ok", backend.generate(requests)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class EnginePool:
    def __init__(self, model: str, options: dict[str, Any], size: int) -> None:
        ctx = mp.get_context("spawn")  # a fresh interpreter per engine: CUDA is initialised there, not here
        per_engine = int(options.get("tensor_parallel_size") or 1)
        self.size, self.conns, self.processes, self.reports = size, [], [], []
        for rank in range(size):
            parent, child = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(rank, _visible_devices(rank, per_engine), model, options, child),
                                  daemon=True, name=f"vllm-engine-{rank}")
            process.start()
            self.conns.append(parent)
            self.processes.append(process)
        for rank, conn in enumerate(self.conns):
            self.reports.append(self._answer(rank, conn))

    def _answer(self, rank: int, conn) -> Any:
        try:
            status, value = conn.recv()
        except EOFError:
            self.close()
            raise RuntimeError(f"vLLM data-parallel engine {rank} exited (see its output above)") from None
        if status == "error":
            self.close()
            raise RuntimeError(f"vLLM data-parallel engine {rank}: {value}")
        return value

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        step = -(-len(requests) // self.size)  # contiguous shards, the last one shorter
        shards = [list(requests[i * step:(i + 1) * step]) for i in range(self.size)]
        for conn, shard in zip(self.conns, shards):
            if shard:
                conn.send(shard)
        out: list[Generation] = []
        for rank, (conn, shard) in enumerate(zip(self.conns, shards)):
            if shard:
                out += self._answer(rank, conn)
        return out

    def engine_report(self) -> dict:
        return {**self.reports[0], "data_parallel_size": self.size, "engines": self.reports}

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        for process in self.processes:
            process.join(timeout=PROBE_TIMEOUT_S)
            if process.is_alive():
                process.terminate()
