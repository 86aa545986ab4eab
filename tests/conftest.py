import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
collect_ignore = ["fixtures"]  # fixture repositories carry their own tests; they are data here
REQUIRE_SANDBOX_VARS = ("CI", "EXECREPOBENCH_REQUIRE_SANDBOX")
REQUIRE_RAY_VARS = ("CI", "EXECREPOBENCH_REQUIRE_RAY")
REQUIRE_BROWSER_VARS = ("CI", "EXECREPOBENCH_REQUIRE_BROWSER")


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory) -> Path:
    """Every test runs against a private, temporary EXECREPOBENCH_CACHE, never the user's.

    Session-wide, so session fixtures (a built repository) and the tests using them share it.
    Source downloads may still come from pip's and uv's own caches (real PyPI, fetched once).
    """
    from execrepobench_metric.environments.layout import CACHE_ENV_VAR

    root = tmp_path_factory.mktemp("execrepobench-cache")
    old = os.environ.get(CACHE_ENV_VAR)
    os.environ[CACHE_ENV_VAR] = str(root)
    yield root
    if old is None:
        os.environ.pop(CACHE_ENV_VAR, None)
    else:
        os.environ[CACHE_ENV_VAR] = old


@pytest.fixture(scope="session")
def cache_dir(private_cache) -> Path:
    """The test session's private download/environment cache."""
    return private_cache


@pytest.fixture()
def offline_hf(tmp_path, monkeypatch) -> Path:
    """No network, no user cache: what `datasets` / `huggingface_hub` write goes under tmp_path/hf_home.

    Sets the variables for child processes and the libraries' module constants for this process
    (they are read once, at import). Opt-in: tests ask for it by name.
    """
    import datasets.config
    import huggingface_hub.constants

    hf = tmp_path / "hf_home"
    for name, value in (("HF_HUB_OFFLINE", "1"), ("HF_DATASETS_OFFLINE", "1"), ("HF_EVALUATE_OFFLINE", "1"),
                        ("HF_HOME", str(hf)), ("HF_DATASETS_CACHE", str(hf / "datasets"))):
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", hf / "datasets")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return hf


@pytest.fixture()
def hf_hub_cache(tmp_path, offline_hf, monkeypatch) -> Path:
    """An empty Hugging Face Hub cache (HF_HUB_CACHE) under tmp_path, offline: Hub ids resolve from what a test
    puts there, in the Hub cache's own layout."""
    import huggingface_hub.constants

    cache = tmp_path / "hf_hub"
    cache.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    return cache


def sandbox_required() -> bool:
    return any(os.environ.get(v, "") not in ("", "0", "false") for v in REQUIRE_SANDBOX_VARS)


def ray_required() -> bool:
    return any(os.environ.get(v, "") not in ("", "0", "false") for v in REQUIRE_RAY_VARS)


def pytest_configure(config):
    config.addinivalue_line("markers", "sandbox: needs the bubblewrap sandbox (fails in CI when it is missing)")
    config.addinivalue_line("markers", "slow: end-to-end: builds fixture repositories or runs many sandboxed suites "
                                       "(integration tier; the fast tier is -m 'not pypi and not slow')")
    config.addinivalue_line("markers", "ray: starts a local Ray cluster (fails in CI when Ray is missing)")
    config.addinivalue_line("markers", "browser: renders a page in headless Chromium (Debian's `chromium`; fails in "
                                       "CI when it is missing)")


def pytest_runtest_setup(item):
    """`sandbox` tests: skipped without bubblewrap on a developer machine, FAILED in CI (CI=1 or
    EXECREPOBENCH_REQUIRE_SANDBOX=1, which scripts/test.sh sets): a green run must have judged.
    `ray` tests: the same without Ray (the `ray` extra; EXECREPOBENCH_REQUIRE_RAY=1 in scripts/test.sh).
    `browser` tests: the same without Debian's chromium (EXECREPOBENCH_REQUIRE_BROWSER=1 in scripts/test.sh)."""
    if item.get_closest_marker("ray") is not None:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            if ray_required():
                pytest.fail(f"Ray required here ({'/'.join(REQUIRE_RAY_VARS)} set) but not installed: "
                            "pip install -e '.[test,ray]'", pytrace=False)
            pytest.skip("Ray is not installed (pip install -e '.[test,ray]')")
    if item.get_closest_marker("browser") is not None:
        import shutil

        if not (shutil.which("chromium") or shutil.which("chromium-browser")):
            if any(os.environ.get(v, "") not in ("", "0", "false") for v in REQUIRE_BROWSER_VARS):
                pytest.fail(f"Chromium required here ({'/'.join(REQUIRE_BROWSER_VARS)} set) but not installed: "
                            "apt-get install chromium", pytrace=False)
            pytest.skip("Chromium is not installed (apt-get install chromium)")
    if item.get_closest_marker("sandbox") is None:
        return
    from execrepobench_metric.execution.sandbox import strong_available

    reason = strong_available()
    if reason is None:
        return
    if sandbox_required():
        pytest.fail(f"bubblewrap sandbox required here ({'/'.join(REQUIRE_SANDBOX_VARS)} set) but unavailable: "
                    f"{reason}", pytrace=False)
    pytest.skip(f"no bwrap sandbox: {reason}")


@pytest.fixture()
def minirepo(tmp_path) -> Path:
    """A private copy of the fixture repository (tests may modify it)."""
    import shutil

    dest = tmp_path / "minirepo"
    shutil.copytree(FIXTURES / "minirepo", dest, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    return dest


@pytest.fixture(scope="session")
def built_minirepo(tmp_path_factory, private_cache):
    """The fixture repository built by the real builder (path source, uv env, sandboxed baseline)."""
    from execrepobench.builder.build import BuildConfig, build
    from execrepobench.builder.sources.manifest import parse_manifest
    from execrepobench_metric.environments.venvs import find_environment

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


def prepared_local_repo(base: Path, repo: Path) -> dict:
    """`prepared_repo` of a repository a test wrote at `repo`, in its own cache `base/cache` (tests that
    use it set EXECREPOBENCH_CACHE to `built["cache"]` again)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))
    try:
        built = prepared_repo(f'[[repo]]\nsource = "path:{repo}"\nname = "{repo.name}"\n', base)
    finally:
        patch.undo()
    built["cache"] = str(base / "cache")
    return built


def prepared_repo(manifest_text: str, base: Path) -> dict:
    """A repository prepared by the real builder (pinned source, locked uv environment, sandboxed
    baseline) without masking or verification: what `make_sample` needs to make samples by hand."""
    from execrepobench.builder.sources.manifest import parse_manifest
    from execrepobench.builder.preparation.prepare import prepare
    from execrepobench.builder.sources.sources import fetch
    from execrepobench_metric.execution.sandbox import decide_isolation

    manifest = parse_manifest(manifest_text, base)
    spec = manifest.repos[0]
    fetched = fetch(spec)
    prepared = prepare(spec, fetched, manifest.python, runs=1, timeout_s=600, isolation=decide_isolation(False)[0])
    record = prepared.record
    return {"root": prepared.env.root, "env_key": record.env_key, "pinned": record.repo_source,
            "test_command": record.test_command, "python": prepared.env.python}
