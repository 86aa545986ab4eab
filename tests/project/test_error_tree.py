"""One error tree: every exception class of the packages is defined in its package's errors.py, drawn in that
module's docstring, and derives from `ExecRepoBenchError` (the user's to fix: exit 2) or `HarnessFailure`
(exit 3).  Anything else reaching the command line is a bug: a crash report, never "the user's mistake"."""
from __future__ import annotations

import ast
import importlib

import pytest

from execrepobench.runner.cli import CRASH_EXIT, USER_ERROR_EXIT, main
from execrepobench_dataset.errors import ExecRepoBenchError, HarnessFailure
from test_import_cycles import ROOT, module_files

ERROR_MODULES = ("execrepobench_dataset.errors", "execrepobench_metric.errors", "execrepobench.builder.errors",
                 "execrepobench.runner.errors")
# exceptions that are no error of the packages: a signal, or a class of the plugin folder (no package)
NOT_ERRORS = {"execrepobench.builder.live.plan.Skip"}


def _exception_classes_outside_errors_modules() -> list[str]:
    found = []
    for name, path in module_files().items():
        if name in ERROR_MODULES:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and any(
                    (b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")).endswith(("Error", "Exception",
                                                                                            "Failure", "Found"))
                    or (isinstance(b, ast.Name) and b.id.endswith("Unavailable"))
                    for b in node.bases):
                found.append(f"{name}.{node.name}")
    return sorted(set(found) - NOT_ERRORS)


def _defined_in(module):
    return [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, BaseException)
            and v.__module__ == module.__name__]


def test_every_exception_class_is_in_an_errors_module():
    assert _exception_classes_outside_errors_modules() == []


@pytest.mark.parametrize("name", ERROR_MODULES)
def test_each_errors_module_draws_its_tree_and_every_class_has_a_root(name):
    module = importlib.import_module(name)
    classes = _defined_in(module)
    assert classes, name
    for cls in classes:
        assert f" {cls.__name__}" in module.__doc__, f"{name}: {cls.__name__} not drawn in the docstring"
        if cls not in (ExecRepoBenchError, HarnessFailure):
            assert issubclass(cls, ExecRepoBenchError) != issubclass(cls, HarnessFailure), cls


def test_the_old_homes_still_name_the_same_classes():
    """Modules that raise an error import it from errors.py: one class, whichever name is used."""
    from execrepobench.builder.preparation.baseline import BaselineError
    from execrepobench_metric.environments.venvs import EnvError
    from execrepobench_metric.errors import EnvError as TreeEnvError
    from execrepobench_metric.execution.junit import JunitError
    from execrepobench.builder.errors import BaselineError as TreeBaselineError

    assert EnvError is TreeEnvError and BaselineError is TreeBaselineError
    for cls in (EnvError, JunitError, BaselineError):  # outside the roots before
        assert issubclass(cls, ExecRepoBenchError)


def test_an_unknown_backend_is_the_users_error():
    from execrepobench.runner.backends.base import get_backend

    with pytest.raises(ExecRepoBenchError, match="unknown backend 'nope'"):
        get_backend("nope")


def test_unreadable_predictions_are_the_users_error(tmp_path, capsys):
    from sample_build import judgeable_build

    build = judgeable_build(tmp_path / "build")
    for predictions, said in ((tmp_path / "missing.jsonl", "cannot read it"), (tmp_path / "bad.jsonl", "bad.jsonl:1")):
        if predictions.name == "bad.jsonl":
            predictions.write_text("{not json\n")
        assert main(["evaluate", "--samples", str(build / "samples.jsonl"), "--predictions", str(predictions),
                     "--out", str(tmp_path / "out")]) == USER_ERROR_EXIT
        err = capsys.readouterr().err
        assert err.startswith("error: ") and said in err and "Traceback" not in err


@pytest.mark.parametrize("bug", [ValueError("a bug's value"), OSError(2, "a bug's missing file"), KeyError("k")])
def test_a_bug_is_a_crash_report_not_the_users_error(bug, monkeypatch, capsys, tmp_path):
    """An exception that is no ExecRepoBenchError, raised inside a command (here the comparison, injected), is
    reported as a bug: the traceback, where to report it, exit 3 - never 'error: ...' and exit 2."""
    import execrepobench.runner.compare as compare

    def broken(*args, **kwargs):
        raise bug

    monkeypatch.setattr(compare, "write_comparison", broken)
    code = main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == CRASH_EXIT != USER_ERROR_EXIT
    assert "Traceback (most recent call last)" in err and f"{type(bug).__name__}" in err and "in broken" in err
    assert "this is a bug in execrepobench" in err and "report it" in err and "command: execrepobench compare" in err
    assert not err.startswith("error: ")


def test_user_mistakes_that_were_builtin_errors_exit_2(tmp_path, capsys):
    """Once OSErrors: an --out that is a file, a --benchmark-samples that does not exist."""
    (tmp_path / "afile").write_text("")
    manifest = str(tmp_path / "m.toml")
    (tmp_path / "m.toml").write_text("")
    for args, said in ((["build", "--manifest", manifest, "--out", str(tmp_path / "afile")], "a file, not a folder"),
                       (["instruct", "--manifest", manifest, "--out", str(tmp_path / "o"), "--benchmark-samples",
                         str(tmp_path / "none.jsonl")], "--benchmark-samples")):
        assert main(args) == USER_ERROR_EXIT
        err = capsys.readouterr().err
        assert err.startswith("error: ") and said in err and "Traceback" not in err


def test_a_hub_refusal_is_the_users_error_not_a_crash(tmp_path):
    """The Hub's HTTP errors are OSErrors: a push they stop is a PublishError / MetricPublishError (exit 2)."""
    from execrepobench_dataset.errors import PublishError
    from execrepobench_dataset.publish import push_to_hub
    from execrepobench_metric.errors import MetricPublishError
    from execrepobench_metric.hub_module import push_metric

    class Refusing:
        def create_repo(self, *args, **kwargs):
            raise OSError("403 Forbidden: you cannot write to me/x")

    (tmp_path / "ds" / "data").mkdir(parents=True)
    (tmp_path / "ds" / "README.md").write_text("card")
    with pytest.raises(PublishError, match="403 Forbidden"):
        push_to_hub(tmp_path / "ds", "me/x", token="t", api=Refusing())
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "x.py").write_text("")
    (tmp_path / "m" / "README.md").write_text("")
    with pytest.raises(MetricPublishError, match="403 Forbidden"):
        push_metric(tmp_path / "m", "me/x", token="t", api=Refusing())
