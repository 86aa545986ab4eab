"""The scheme identifiers (execrepobench_dataset/schemes.py): defined there only, each with its section in
CHANGELOG.md, the published ones under the keys the release lock hashes, the derived ones covering the code
they claim to and found without importing anything."""
import re
import subprocess
import sys
from pathlib import Path

from execrepobench_dataset import schemes
from execrepobench_dataset.schemes import BUILD_SCHEMES, RELEASE_SCHEMES, DerivedKey, digest_of

CHECKOUT = Path(__file__).resolve().parents[2]
SCHEMES_FILE = Path(schemes.__file__).resolve()
NAMES = sorted(n for n in vars(schemes) if n.isupper() and not n.startswith("_"))
# A module-level constant named like a scheme identifier (so a new one defined elsewhere is caught too).
SCHEME_LIKE = re.compile(r"^[ \t]*([A-Z][A-Z0-9_]*(?:SCHEMES?|SCHEMAS?|_VERSION|_RECORDING|_FORMAT|_CODE))[ \t]*"
                         r"(?::[^=\n]*)?=(?!=)", re.MULTILINE)


def python_files() -> list[Path]:
    """The project's Python files (what git tracks or would: no virtual environments, no fixtures' data)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=CHECKOUT,
                         capture_output=True, text=True, check=True).stdout.split()
    return [CHECKOUT / p for p in out if (CHECKOUT / p).is_file()]


def definitions_outside(files: list[Path], names: list[str], root: Path = CHECKOUT) -> list[str]:
    own = re.compile(rf"^[ \t]*({'|'.join(map(re.escape, names))})[ \t]*(?::[^=\n]*)?=(?!=)", re.MULTILINE)
    return [f"{path.relative_to(root)}: {m.group(1)}" for path in files if path.resolve() != SCHEMES_FILE
            for pattern in (own, SCHEME_LIKE) for m in pattern.finditer(path.read_text(encoding="utf-8"))]


def test_every_scheme_identifier_is_defined_in_the_schemes_module_only():
    files = python_files()
    assert len(files) > 100 and SCHEMES_FILE in {p.resolve() for p in files}
    for name in ("ENV_KEY_SCHEMA", "VERIFY_SCHEME", "GUARD_RECORDING", "MIX_NAME", "LOCK_SCHEMA", "CONTEXT_SCHEME",
                 "JUDGEMENT_CODE", "BYTECODE_CODE", "PUBLISH_CODE"):
        assert name in NAMES
    assert definitions_outside(files, NAMES) == []


def test_the_check_finds_a_definition_elsewhere(tmp_path):
    """What the test above says of a module defining identifiers beside its code, as before the move."""
    stray = tmp_path / "verify.py"
    stray.write_text("VERIFY_SCHEME = 8  # 3: null fill first\nENGINE_VERSION: str = '6'\nok = VERIFY_SCHEME == 8\n"
                     "def f():\n    MIX_NAME = 'x'\n")
    assert sorted(definitions_outside([stray], NAMES, tmp_path)) == [
        "verify.py: ENGINE_VERSION", "verify.py: MIX_NAME", "verify.py: VERIFY_SCHEME", "verify.py: VERIFY_SCHEME"]


def test_every_scheme_identifier_has_its_section_in_the_changelog():
    text = (CHECKOUT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = "\n".join(line for line in text.splitlines() if line.startswith("### "))
    assert [n for n in NAMES if f"`{n}`" not in headings] == []


def test_the_published_sets_name_the_identifiers_themselves():
    assert RELEASE_SCHEMES == {"guard": schemes.GUARD_RECORDING, "verify": schemes.VERIFY_SCHEME,
                               "mix": schemes.MIX_NAME, "context": schemes.CONTEXT_SCHEME,
                               "lock": schemes.LOCK_SCHEMA, "env_key": schemes.ENV_KEY_SCHEMA,
                               "fill_levels": schemes.FILL_LEVEL_SCHEME}
    # what changes the samples of a build (the release scheme) also rebuilds a finished repository: a new lock
    # resolution or env key scheme must not reuse samples that carry the old env keys
    assert BUILD_SCHEMES == RELEASE_SCHEMES


def test_the_judgement_key_covers_the_code_that_decides_a_verdict():
    files = schemes.JUDGEMENT_CODE.files()
    for module in ("execution.engine", "execution.judge", "execution.verdict", "execution.run_plan",
                   "execution.decide", "execution.sandbox", "execution.pytest_run",
                   "execution.guard", "execution.guard_verdict", "execution.budget", "execution.junit",
                   "execution.fills", "execution.limits", "execution.process", "environments.venvs"):
        assert f"execrepobench_metric.{module}" in files, module
    assert "execrepobench_dataset.record" in files  # the Sample a judgement reads
    plugin = [n for n in files if n.startswith("execrepobench_metric.execution:pytest_plugin/")]
    assert "execrepobench_metric.execution:pytest_plugin/_execrepobench_collect.py" in plugin and len(plugin) >= 4
    assert not any(n.startswith("execrepobench.runner") for n in files)  # the CLI's code decides nothing
    assert all(path.is_file() for path in files.values())


def test_every_derived_key_resolves_and_a_missing_module_is_an_error():
    keys = {n: getattr(schemes, n) for n in NAMES if isinstance(getattr(schemes, n), DerivedKey)}
    assert set(keys) == {"JUDGEMENT_CODE", "BYTECODE_CODE", "PUBLISH_CODE"}
    for name, key in keys.items():
        assert re.fullmatch(r"[0-9a-f]{24}", key.value()), name
    assert set(schemes.BYTECODE_CODE.files()) == {"execrepobench_metric.environments.bytecode"}
    publish = set(schemes.PUBLISH_CODE.files())
    assert {"execrepobench_dataset.publish", "execrepobench.builder.release.release"} <= publish
    moved = DerivedKey(modules=("execrepobench_metric.no_such_module",))
    try:
        moved.value()
    except LookupError as exc:
        assert "no_such_module" in str(exc)
    else:
        raise AssertionError("a key naming a module that does not exist must not resolve")


def test_a_changed_file_changes_the_digest(tmp_path):
    files = schemes.JUDGEMENT_CODE.files()
    copies = {}
    for name, path in files.items():
        copies[name] = tmp_path / name.replace(":", "_").replace("/", "_")
        copies[name].write_bytes(path.read_bytes())
    before = digest_of(copies)
    assert before == schemes.JUDGEMENT_CODE.value()  # the key is the digest of exactly these files
    decide = copies["execrepobench_metric.execution.decide"]
    decide.write_bytes(decide.read_bytes() + b"\n# a verdict rule changed\n")
    assert digest_of(copies) != before


def test_deriving_a_key_imports_nothing():
    """Finding the modules must not import them: the executors package's Ray module would start Ray's import."""
    code = ("import sys; from execrepobench_dataset import schemes; schemes.JUDGEMENT_CODE.value(); "
            "schemes.PUBLISH_CODE.value(); "
            "print(sorted(m for m in ('ray', 'datasets', 'execrepobench_metric.execution.engine',"
            " 'execrepobench_metric.execution.judge',"
            " 'execrepobench.builder.release', 'execrepobench.builder.release.release') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CHECKOUT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_lm_eval_task_states_the_task_version():
    text = (CHECKOUT / "runner" / "lm_eval_task" / "execrepobench.yaml").read_text(encoding="utf-8")
    found = re.search(r"^metadata:\n  version: ([0-9.]+)$", text, re.MULTILINE)  # (!function tags: no safe_load)
    assert found and float(found.group(1)) == schemes.LM_EVAL_TASK_VERSION
