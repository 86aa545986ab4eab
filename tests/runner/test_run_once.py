"""`run` opens its dataset once and checks the environments once: the opened dataset is handed to
`ensure_prepared` and `compute_with` (counted by wrapping the functions where they are looked up)."""
import json

import pytest

import execrepobench.runner.run as run_module
import execrepobench_dataset.load as load_module
import execrepobench_metric.api as api
import execrepobench_metric.prepare as prepare
from execrepobench.runner.cli import main


def _counting(monkeypatch, modules, name):
    """Wrap `name` in each of `modules` with one shared call list; returns that list."""
    calls = []
    real = getattr(modules[0], name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    for module in modules:
        if hasattr(module, name):
            monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.sandbox
@pytest.mark.slow
def test_run_opens_the_dataset_once_and_prepares_once(built_minirepo, tmp_path, monkeypatch):
    opens = _counting(monkeypatch, [load_module, run_module, api, prepare], "open_dataset")
    checks = _counting(monkeypatch, [prepare], "missing_repositories")
    out = tmp_path / "out"
    assert main(["run", "--samples", str(built_minirepo["out"] / "samples.jsonl"), "--backend", "oracle",
                 "--limit", "1", "--out", str(out), "--allow-exec", "--no-progress"]) == 0
    assert json.loads((out / "metrics.json").read_text())["n_samples"] == 1  # it judged
    assert len(opens) == 1, opens  # run's own open; compute_with read the one it was handed
    assert len(checks) == 1, checks  # run's ensure_prepared; compute_with did not check again


def test_compute_with_reads_the_dataset_it_is_handed(monkeypatch):
    """Given `opened`, compute_with never opens the dataset by its name and hands it on to the preparation."""
    import dataclasses

    from execrepobench_metric.execution.pytest_run import COMMAND_PREFIX
    from execrepobench_metric.options import EvaluationOptions, RuntimeOptions
    from sample_build import SAMPLES

    sample = dataclasses.replace(SAMPLES[0], test_command=COMMAND_PREFIX,
                                 judged_tests=SAMPLES[0].judged_tests or ("tests/t.py::t",))

    def no_open(*args, **kwargs):
        raise AssertionError(f"opened again: {args}")

    monkeypatch.setattr(api, "open_dataset", no_open)
    seen = []

    def stop(samples, dataset, prepare_flag, config, *, opened=None):
        seen.append(opened)
        raise prepare.EnvironmentsMissing("stop here")

    monkeypatch.setattr(api, "ensure_prepared", stop)
    marker = object()
    with pytest.raises(prepare.EnvironmentsMissing):
        api.compute_with([sample.middle_code], [sample], EvaluationOptions(dataset="somewhere"), RuntimeOptions(allow_exec=True),
                         opened=marker)
    assert seen == [marker]
