"""One user-facing error base (`ExecRepoBenchError`), mapped to exit code 2 in one place (`cli.main`):
every subcommand given bad input exits 2 with the message, nothing else printed as a traceback."""
import pytest

from execrepobench.runner.cli import COMMANDS, USER_ERROR_EXIT, main
from execrepobench_dataset.errors import ExecRepoBenchError, HarnessFailure, UsageError


def _bad_input(tmp_path):
    """subcommand -> (arguments with one bad input, a piece of the message that names it)."""
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text("{not json\n")
    missing, out = str(tmp_path / "missing"), str(tmp_path / "out")
    return {
        "build": (["--manifest", f"{missing}.toml", "--out", out], "missing.toml: cannot read manifest"),
        "evaluate": (["--samples", f"{missing}.jsonl", "--reference-fill", "ground_truth", "--out", out],
                     "missing.jsonl: no such folder or file"),
        "run": (["--out", out], "nothing to evaluate: give --dataset"),
        "instruct": (["--manifest", f"{missing}.toml", "--out", out, "--benchmark-samples", missing],
                     "missing.toml: cannot read manifest"),
        "import-official": (["--jsonl", str(bad_json), "--repos", str(tmp_path), "--out", out],
                            "bad.jsonl:1: not valid JSON"),
        "publish": (["--samples", missing, "--out", out], "missing/samples.jsonl: not found"),
        "release": (["--manifest", f"{missing}.toml", "--out", out], "missing.toml: cannot read manifest"),
        "publish-metric": (["--out", out, "--push-to-hub", "me/not-an-identifier"],
                           "module name 'not-an-identifier': use letters, digits and underscores"),
        "prepare": (["--dataset", missing, "--workers", "0"], "--workers must be >= 1"),
        "fingerprint": ([missing], "missing: no such folder or file"),
        "compare": ([str(tmp_path / "a"), str(tmp_path / "b"), "--out", out], "a: no such folder"),
        "live": (["--after", "2999-01-01", "--out", out], "--after 2999-01-01 is in the future"),
        "push-results": ([missing, "--repo", "me/results"], "not a finished `execrepobench run`"),
    }


NO_INPUT = {"lm-eval-path"}  # subcommands that read no input: nothing of the user's to refuse


def test_a_subcommand_without_input_only_prints(capsys):
    assert main(["lm-eval-path"]) == 0
    from pathlib import Path
    folder = Path(capsys.readouterr().out.strip())
    assert (folder / "execrepobench.yaml").is_file() or any(folder.glob("*.yaml")), folder


def test_every_subcommand_has_a_bad_input_case(tmp_path):
    """A new subcommand must say here how it refuses bad input."""
    assert set(_bad_input(tmp_path)) | NO_INPUT == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - NO_INPUT))
def test_bad_input_exits_2_with_the_message(command, tmp_path, capsys, offline_hf):
    args, message = _bad_input(tmp_path)[command]
    assert main([command, *args]) == USER_ERROR_EXIT
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing was made


def test_harness_failures_exit_3_without_a_message_of_their_own(monkeypatch, capsys):
    """The command already wrote and printed what failed: main maps the failure to 3 and adds nothing."""
    import execrepobench.runner.cli as cli

    def failing(args):
        raise HarnessFailure("already reported")

    monkeypatch.setitem(cli.COMMANDS, "compare", (*cli.COMMANDS["compare"][:2], failing))
    assert main(["compare", "x", "--out", "y"]) == cli.HARNESS_ERROR_EXIT
    assert capsys.readouterr().err == ""


def test_user_facing_errors_share_the_base_and_keep_their_builtin_one():
    from execrepobench.builder.live.candidates import CandidateError
    from execrepobench.builder.live.snapshot import LiveInputError
    from execrepobench.builder.live.window import WindowError
    from execrepobench.builder.official import OfficialFormatError
    from execrepobench.builder.sources.manifest import ManifestError
    from execrepobench.runner.backends.hf import BackendUnavailable
    from execrepobench.runner.compare import CompareError
    from execrepobench.runner.run import BuildFailed
    from execrepobench_dataset.context import ContextUnavailable
    from execrepobench_dataset.load import DatasetNotFound
    from execrepobench_dataset.publish_inputs import PublishError
    from execrepobench_dataset.record import RecordError
    from execrepobench_metric.api import HarnessError
    from execrepobench_metric.execution.engine import ExecutionNotAllowed
    from execrepobench_metric.errors import ExecutorUnavailable
    from execrepobench_metric.hub_module import MetricPublishError
    from execrepobench_metric.inputs import InputError
    from execrepobench_metric.execution.sandbox import SandboxUnavailable
    from execrepobench_metric.prepare import EnvironmentsMissing

    builtin = {CandidateError: ValueError, LiveInputError: ValueError, WindowError: ValueError,
               ManifestError: ValueError, OfficialFormatError: ValueError, BackendUnavailable: ImportError,
               CompareError: ValueError, ContextUnavailable: LookupError, DatasetNotFound: FileNotFoundError,
               PublishError: ValueError, RecordError: ValueError, ExecutionNotAllowed: RuntimeError,
               ExecutorUnavailable: RuntimeError, MetricPublishError: ValueError, InputError: ValueError,
               SandboxUnavailable: RuntimeError, EnvironmentsMissing: RuntimeError, UsageError: ValueError}
    for cls, base in builtin.items():
        assert issubclass(cls, ExecRepoBenchError) and issubclass(cls, base), cls
        assert not issubclass(cls, HarnessFailure), cls
    for cls in (HarnessError, BuildFailed):  # the harness's, not the user's: exit 3
        assert issubclass(cls, HarnessFailure) and issubclass(cls, RuntimeError)
        assert not issubclass(cls, ExecRepoBenchError)
    assert str(DatasetNotFound("no such dataset")) == "no such dataset"  # messages unchanged


@pytest.mark.parametrize("flags, said", [
    (["--dtype", "float8"], "argument --dtype: invalid choice: 'float8'"),
    (["--max-model-len", "-5"], "argument --max-model-len: -5 is below 1"),
    (["--gpu-memory-utilization", "1.5"], "argument --gpu-memory-utilization: 1.5 is not in (0, 1]"),
    (["--tensor-parallel-size", "0"], "argument --tensor-parallel-size: 0 is below 1"),
    (["--n", "0"], "argument --n: 0 is below 1"),
    (["--temperature", "-1"], "argument --temperature: -1 is below 0.0"),
    (["--top-p", "0"], "argument --top-p: 0 is not in (0, 1]"),
    (["--seed", "x"], "argument --seed: 'x' is not an integer"),
])
def test_run_flag_values_are_checked_by_name(flags, said, tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", "--out", str(tmp_path / "out"), *flags])
    assert done.value.code == USER_ERROR_EXIT and said in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flags", [["--model", "org/model"], ["--temperature", "0.8"], ["--template", "qwen2.5-coder"],
                                   ["--max-new-tokens", "64", "--seed", "3"]])
def test_offline_backends_take_no_model_or_sampling_flag(flags, tmp_path, capsys):
    """An oracle run labelled as a model (its LaTeX row and leaderboard name) is refused, naming the flags."""
    from sample_build import judgeable_build

    build = judgeable_build(tmp_path / "build")
    out = tmp_path / "out"
    assert main(["run", "--samples", str(build / "samples.jsonl"), "--backend", "oracle", "--allow-exec",
                 "--out", str(out), *flags]) == USER_ERROR_EXIT
    err = capsys.readouterr().err
    assert f"{flags[0]}" in err and "the 'oracle' backend is offline" in err and not out.exists()
