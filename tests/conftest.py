import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
collect_ignore = ["fixtures"]  # fixture repositories carry their own tests; they are data here


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


# --- the rule for real things: a test needing one names it by marker (or, at import, `require`); where it is
# missing the test is skipped on a developer machine and FAILS where it is required (CI=1, or the variable
# scripts/test.sh sets): a green run must have used it.  No test module skips on its own
# (tests/project/test_suite_rules.py).

def _no_sandbox() -> str | None:
    from execrepobench_metric.execution.sandbox import strong_available

    reason = strong_available()
    return f"no bwrap sandbox: {reason}" if reason else None


def _no_modules(*names: str, hint: str):
    def missing() -> str | None:
        import importlib

        for name in names:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                return f"{name} does not import ({exc}): {hint}"
        return None
    return missing


def _no_program(*names: str, hint: str):
    import shutil

    return lambda: None if any(shutil.which(n) for n in names) else f"{' / '.join(names)} not installed: {hint}"


def _no_cgroup() -> str | None:
    from execrepobench_metric.execution.limits import PidsCgroup

    group = PidsCgroup.create(16)
    if group is None:
        return "no writable pids cgroup on this machine"
    group.kill_and_remove()
    return None


def _offline() -> str | None:
    return "EXECREPOBENCH_OFFLINE=1: nothing is downloaded" if os.environ.get("EXECREPOBENCH_OFFLINE") == "1" else None


# marker -> (its description, the variables that make it required, why it is missing here or None)
REAL_THINGS = {
    "sandbox": ("needs the bubblewrap sandbox", ("CI", "EXECREPOBENCH_REQUIRE_SANDBOX"), _no_sandbox),
    "ray": ("starts a local Ray cluster", ("CI", "EXECREPOBENCH_REQUIRE_RAY"),
            _no_modules("ray", hint="pip install -e '.[test,ray]'")),
    "browser": ("renders a page in headless Chromium (Debian's `chromium`)", ("CI", "EXECREPOBENCH_REQUIRE_BROWSER"),
                _no_program("chromium", "chromium-browser", hint="apt-get install chromium")),
    "pypi": ("downloads a real PyPI sdist and builds a real uv environment", ("CI", "EXECREPOBENCH_REQUIRE_PYPI"),
             _offline),
    "git": ("runs git", ("CI", "EXECREPOBENCH_REQUIRE_GIT"), _no_program("git", hint="apt-get install git")),
    # not required by CI=1: a CI container may have no cgroup delegation; this machine has (set the variable)
    "cgroup": ("creates a pids cgroup", ("EXECREPOBENCH_REQUIRE_CGROUP",), _no_cgroup),
    # the model environment (.venv-models): part 2 of scripts/test.sh sets the variable
    "models": ("runs the model backends (torch, transformers, vLLM)", ("EXECREPOBENCH_REQUIRE_MODELS",),
               _no_modules("torch", "transformers", "vllm", hint="bash scripts/setup-model-env.sh, then "
                           "`.venv-models/bin/python -m pytest tests/runner/test_model_backends.py`")),
    # EleutherAI's lm-evaluation-harness, in the model environment too (scripts/setup-model-env.sh installs it)
    "lm_eval": ("runs lm-evaluation-harness (lm_eval) with a model", ("EXECREPOBENCH_REQUIRE_MODELS",),
                _no_modules("lm_eval", "torch", "transformers", hint="bash scripts/setup-model-env.sh, then "
                            "`.venv-models/bin/python -m pytest tests/runner/test_lm_eval_task.py`")),
}


def required(marker: str) -> bool:
    return any(os.environ.get(v, "") not in ("", "0", "false") for v in REAL_THINGS[marker][1])


def require(marker: str, at_import: bool = False) -> None:
    """Skip, or fail where it is required, when the real thing `marker` names is missing here."""
    description, variables, missing = REAL_THINGS[marker]
    reason = missing()
    if reason is None:
        return
    if required(marker):
        pytest.fail(f"{marker} required here ({'/'.join(variables)} set) but unavailable: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=at_import)


def pytest_configure(config):
    for marker, (description, variables, _) in REAL_THINGS.items():
        config.addinivalue_line("markers", f"{marker}: {description} (skipped where missing; fails where "
                                           f"{'/'.join(variables)} is set)")
    config.addinivalue_line("markers", "slow: end-to-end: builds fixture repositories or runs many sandboxed suites "
                                       "(integration tier; the fast tier is -m 'not pypi and not slow')")


def pytest_runtest_setup(item):
    """Every real thing the test's markers name is checked (`require`), before its fixtures are set up."""
    for marker in REAL_THINGS:
        if item.get_closest_marker(marker) is not None:
            require(marker)


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


def make_sample(built: dict | None = None, file_name: str = "m.py", middle: str = "x", judged=(),
                fill_type: str = "grammar-based: statement", occurrence: int = 0, *, text: str | None = None,
                prefix_code: str = "", suffix_code: str = "\n", **fields):
    """The one way tests make a `Sample`.  The masked file is `built`'s file `file_name` (a repository
    made by the real builder: `built_minirepo`, `prepared_repo`) or `text`, and `middle` is its
    `occurrence`-th occurrence there; without either the file is prefix_code + middle + suffix_code.
    Every other field of the record is a keyword in `fields` and overrides the default: sample_id (the
    content hash by default), repo_name ("minirepo" for a built repository, else "r"), repo_source and
    env_key (the built repository's), test_command, node_type, context_code, ..."""
    from execrepobench_dataset.record import Sample, make_sample_id

    if built is not None or text is not None:
        text = (built["root"] / file_name).read_text(encoding="utf-8") if text is None else text
        start = -1
        for _ in range(occurrence + 1):
            start = text.index(middle, start + 1)
        prefix_code, suffix_code = text[:start], text[start + len(middle):]
    record = {"repo_name": "r", "repo_source": "pypi:r==1", "env_key": "k", "context_code": (),
              "node_type": "return_statement", "seed": 0, "builder_version": "test", "test_command": ()}
    if built is not None:
        record.update(repo_name="minirepo", repo_source=built["pinned"], env_key=built["env_key"],
                      test_command=tuple(built["test_command"]))
    record.update(file_name=file_name, prefix_code=prefix_code, middle_code=middle, suffix_code=suffix_code,
                  fill_type=fill_type, judged_tests=tuple(judged), middle_start_byte=len(prefix_code.encode()),
                  middle_end_byte=len((prefix_code + middle).encode()))
    record.update(fields)
    record.setdefault("sample_id", make_sample_id(record["repo_source"], file_name, prefix_code, middle, suffix_code,
                                                  fill_type))
    return Sample(**record)


def write_local_repo(base: Path, name: str, files: dict[str, str]) -> Path:
    """A small repository at `base/name` for `prepared_local_repo`: a setuptools pyproject.toml (unless `files`
    has one) and `files` (repository path -> text)."""
    repo = base / name
    files = {"pyproject.toml": f'[project]\nname = "{name}"\nversion = "0.1"\n\n[build-system]\n'
                               'requires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n', **files}
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    return repo


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
    from execrepobench.builder.settings import BuildSettings, RepoTask
    from execrepobench.builder.sources.sources import fetch
    from execrepobench_metric.execution.sandbox import decide_isolation

    manifest = parse_manifest(manifest_text, base)
    spec = manifest.repos[0]
    fetched = fetch(spec)
    settings = BuildSettings(baseline_runs=1, baseline_timeout_s=600, workers=1)
    prepared = prepare(RepoTask(spec, settings, decide_isolation(False)[0], manifest.python), fetched)
    record = prepared.record
    return {"root": prepared.env.root, "env_key": record.env_key, "pinned": record.repo_source,
            "test_command": record.test_command, "python": prepared.env.python}
