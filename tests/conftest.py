import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
collect_ignore = ["fixtures"]  # fixture repositories carry their own tests; they are data here


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    """The shared download/environment cache (EXECREPOBENCH_CACHE or ~/.cache/execrepobench).

    Tests that need real PyPI sources and uv environments reuse it across runs, as a user would.
    """
    from execrepobench_metric.layout import cache_root

    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture()
def minirepo(tmp_path) -> Path:
    """A private copy of the fixture repository (tests may modify it)."""
    import shutil

    dest = tmp_path / "minirepo"
    shutil.copytree(FIXTURES / "minirepo", dest, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    return dest


@pytest.fixture(scope="session")
def built_minirepo(tmp_path_factory):
    """The fixture repository built by the real builder (path source, uv env, sandboxed baseline)."""
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.manifest import parse_manifest
    from execrepobench_metric.environments import find_environment

    base = tmp_path_factory.mktemp("built")
    text = f'[[repo]]\nsource = "path:{FIXTURES / "minirepo"}"\nname = "minirepo"\nsamples_per_repo = 4\n'
    summary = build(BuildConfig(manifest=parse_manifest(text, base), out=base / "out", baseline_runs=1,
                                progress=False))
    rep = summary["repos"][0]
    assert rep["status"] == "ok", rep
    env = find_environment(rep["env_key"])
    from execrepobench_dataset.record import read_jsonl

    first = next(read_jsonl(base / "out" / "samples.jsonl"))
    return {"root": env.root, "env_key": rep["env_key"], "pinned": rep["pinned"],
            "test_command": first.test_command, "report": rep, "out": base / "out"}


def make_sample(built, file_name, middle, judged=(), fill_type="grammar-based: statement", occurrence=0):
    """A sample masking the `occurrence`-th `middle` in `file_name` of a built repository."""
    from execrepobench_dataset.record import Sample, make_sample_id

    text = (built["root"] / file_name).read_text(encoding="utf-8")
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(middle, start + 1)
    prefix, suffix = text[:start], text[start + len(middle):]
    return Sample(sample_id=make_sample_id(built["pinned"], file_name, prefix, middle, suffix, fill_type),
                  repo_name="minirepo", repo_source=built["pinned"], file_name=file_name, prefix_code=prefix,
                  middle_code=middle, suffix_code=suffix, context_code=(), fill_type=fill_type,
                  node_type="return_statement", middle_start_byte=len(prefix.encode()),
                  middle_end_byte=len((prefix + middle).encode()), env_key=built["env_key"], seed=0,
                  builder_version="test", test_command=tuple(built["test_command"]), judged_tests=tuple(judged))
