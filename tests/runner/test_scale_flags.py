"""`run`'s generation-at-scale flags (runner/cli_scale.py): each belongs to one backend, and reaches it."""
import argparse

import pytest

from execrepobench.runner.cli_scale import add_scale_flags, scale_options


def test_scale_flags_belong_to_their_backend(tmp_path, capsys):
    from execrepobench.runner.cli import main

    for flags, backend in ((["--batch-size", "4"], "vllm"), (["--data-parallel-size", "2"], "openai"),
                           (["--concurrency", "4"], "transformers")):
        rc = main(["run", "--samples", str(tmp_path / "none.jsonl"), "--backend", backend, "--out", str(tmp_path / "o"),
                   *flags])
        assert rc == 2 and flags[0] in capsys.readouterr().err


def test_flags_become_backend_options():
    p = argparse.ArgumentParser()
    p.add_argument("--backend")
    add_scale_flags(p)
    args = p.parse_args(["--backend", "openai", "--concurrency", "16", "--request-timeout", "30", "--retries", "0",
                         "--extra-body", '{"repetition_penalty": 1.05}'])
    assert scale_options(args) == {"concurrency": 16, "timeout_s": 30.0, "retries": 0,
                                   "extra_body": {"repetition_penalty": 1.05}}
    with pytest.raises(SystemExit):
        p.parse_args(["--backend", "openai", "--extra-body", "[1, 2]"])  # not an object


def test_openai_backend_takes_them():
    from execrepobench.runner.backends.base import get_backend

    backend = get_backend("openai", "m", concurrency=16, timeout_s=30.0, retries=0, extra_body={"a": 1})
    assert (backend.concurrency, backend.timeout_s, backend.retries, backend.extra_body) == (16, 30.0, 0, {"a": 1})
