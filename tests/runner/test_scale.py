"""Generation at scale on the tiny local model (tests/model_fixture.py), in the model environment: vLLM data
parallelism (two engines in their own processes) gives what one engine gives, the transformers backend's
--batch-size gives what one prompt at a time gives (the flags' checks: tests/runner/test_scale_flags.py)."""
import os

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

from conftest import require  # noqa: E402

require("models", at_import=True)  # skipped without the model environment; FAILS in part 2 of scripts/test.sh

from test_model_backends import ENGINE, MAX_NEW, STOPS, model_dir, requests_  # noqa: E402,F401

from execrepobench.runner.backends.base import get_backend  # noqa: E402


def test_data_parallel_engines_equal_one_engine(model_dir, requests_):
    one = get_backend("vllm", str(model_dir), stop=STOPS, max_new_tokens=MAX_NEW, **ENGINE)
    expected = one.generate(requests_)
    pool = get_backend("vllm", str(model_dir), stop=STOPS, max_new_tokens=MAX_NEW, data_parallel_size=2, **ENGINE)
    try:
        got = pool.generate(requests_)
        assert [g.raw for g in got] == [g.raw for g in expected]
        from execrepobench.runner.run_record import engine_report

        report = engine_report(pool)
        assert report["data_parallel_size"] == 2 and len(report["engines"]) == 2
        assert report["dtype"] == "torch.float32"  # as the engine reports it
    finally:
        pool.pool.close()


def test_transformers_batches_equal_one_at_a_time(model_dir, requests_):
    single = get_backend("transformers", str(model_dir), stop=STOPS, max_new_tokens=MAX_NEW, dtype="float32")
    batched = get_backend("transformers", str(model_dir), stop=STOPS, max_new_tokens=MAX_NEW, dtype="float32",
                          batch_size=3)
    assert [g.raw for g in batched.generate(requests_)] == [g.raw for g in single.generate(requests_)]

