"""`execrepobench publish-metric`: a folder `evaluate` loads by name, the same metric as the in-repo
module, a correct missing-dependency hint, and the push to a Space (through a recording HfApi stand-in:
the Hub's HTTP API cannot exist here)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import make_sample
from execrepobench_metric import hub_module
from execrepobench_metric.hub_module import MetricPublishError, push_metric, write_metric_folder

METRIC_DIR = Path(__file__).parents[2] / "execrepobench_metric"
needs_bwrap = pytest.mark.sandbox


def front_matter(text):
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_in_repo_module_is_rendered_from_the_template():
    # One template for both scripts: regenerate with
    # python -c "from execrepobench_metric.hub_module import module_script as m; print(m('execrepobench_metric'), end='')"
    assert (METRIC_DIR / "execrepobench_metric.py").read_text() == hub_module.module_script("execrepobench_metric")


def test_publish_metric_writes_a_space_folder(tmp_path, capsys):
    from execrepobench.runner.cli import main

    assert main(["publish-metric", "--out", str(tmp_path)]) == 0
    assert "until the package is published there, pass --requirement" in capsys.readouterr().out
    folder = tmp_path / "execrepobench"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "app.py", "execrepobench.py", "requirements.txt"]
    script = (folder / "execrepobench.py").read_text()
    assert script == hub_module.module_script("execrepobench") and "class Execrepobench(" in script
    assert "def " not in script  # thin: the metric lives in the package
    meta = front_matter((folder / "README.md").read_text())
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py" and {"evaluate", "metric"} <= set(meta["tags"])
    assert meta["title"] and meta["description"] and meta["python_version"] == "3.11"
    assert (folder / "README.md").read_text().split("---\n", 2)[2] == (METRIC_DIR / "README.md").read_text().split(
        "---\n", 2)[2]  # one card
    from execrepobench_dataset.version import __version__

    assert (folder / "requirements.txt").read_text() == f"execrepobench=={__version__}\n"
    app = (folder / "app.py").read_text()
    assert "launch_gradio_widget(module)" in app and 'with_name("execrepobench.py")' in app
    compile(app, "app.py", "exec")
    assert main(["publish-metric", "--out", str(tmp_path)]) == 2  # refuses to overwrite silently
    assert main(["publish-metric", "--out", str(tmp_path), "--overwrite", "--requirement",
                 "execrepobench @ git+https://example.org/erb@v1"]) == 0
    assert (folder / "requirements.txt").read_text() == "execrepobench @ git+https://example.org/erb@v1\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_script_imports_name_the_distribution():
    from evaluate.loading import get_imports

    for path in (METRIC_DIR / "execrepobench_metric.py",):
        imports = get_imports(str(path))
        assert imports == [("library", "execrepobench_metric", "execrepobench", None)], imports


def test_missing_package_hint_says_pip_install_execrepobench(tmp_path):
    """A real `evaluate.load` in a Python where our package cannot be imported (a stub shadows it)."""
    stub = tmp_path / "stub" / "execrepobench_metric"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('not installed (test stub)')\n")
    folder = write_metric_folder(tmp_path / "out")
    env = {**os.environ, "PYTHONPATH": str(stub.parent), "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1",
           "HF_EVALUATE_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", f"import evaluate; evaluate.load({str(folder)!r})"], env=env,
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode != 0
    assert "'pip install execrepobench'" in proc.stderr, proc.stderr[-2000:]
    assert "execrepobench_dataset" not in proc.stderr.splitlines()[-1]


class RecordingHfApi:
    """Stands in for huggingface_hub.HfApi (no Hub here): records the calls and what the folder held."""
    instances = []

    def __init__(self, token=None):
        self.token, self.calls = token, []
        RecordingHfApi.instances.append(self)

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, *, folder_path, repo_id, **kwargs):
        files = sorted(p.name for p in Path(folder_path).iterdir())
        self.calls.append(("upload_folder", repo_id, {**kwargs, "files": files}))
        return "commit-info"


def test_push_creates_a_gradio_space_and_uploads(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    from execrepobench.runner.cli import main

    RecordingHfApi.instances.clear()
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHfApi)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_from_login")
    assert main(["publish-metric", "--out", str(tmp_path), "--push-to-hub", "me/execrepobench"]) == 0
    (api,) = RecordingHfApi.instances
    assert api.token == "hf_from_login"
    assert api.calls[0] == ("create_repo", "me/execrepobench", {"repo_type": "space", "space_sdk": "gradio",
                                                                 "private": False, "exist_ok": True,
                                                                 "token": "hf_from_login"})
    name, repo_id, kwargs = api.calls[1]
    assert (name, repo_id, kwargs["repo_type"]) == ("upload_folder", "me/execrepobench", "space")
    assert kwargs["files"] == ["README.md", "app.py", "execrepobench.py", "requirements.txt"]
    assert 'evaluate.load("me/execrepobench")' in (tmp_path / "execrepobench" / "README.md").read_text()
    assert "pushed to the Space me/execrepobench" in capsys.readouterr().out
    # the module is named after the Space: evaluate.load("me/other") fetches other.py
    assert main(["publish-metric", "--out", str(tmp_path / "b"), "--push-to-hub", "me/erb_metric"]) == 0
    assert (tmp_path / "b" / "erb_metric" / "erb_metric.py").read_text() == hub_module.module_script("erb_metric")
    assert main(["publish-metric", "--out", str(tmp_path / "c"), "--push-to-hub", "me/erb-metric"]) == 2
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(MetricPublishError, match="no Hugging Face token"):
        push_metric(tmp_path / "execrepobench", "me/execrepobench")
    with pytest.raises(MetricPublishError, match="not a metric folder"):
        push_metric(tmp_path / "execrepobench", "me/other", token="t", api=RecordingHfApi())


@needs_bwrap
def test_published_module_computes_what_the_in_repo_module_computes(built_minirepo, tmp_path, offline_hf):
    import evaluate

    samples = [make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                           judged=("tests/test_mathx.py::test_clamp_inside", "tests/test_mathx.py::test_clamp_edges")),
               make_sample(built_minirepo, "minirepo/strings.py", "return slug[:limit]",
                           judged=("tests/test_strings.py::test_slugify",), fill_type="Random Single-line Completion")]
    preds = [[samples[0].middle_code, "return low"], ("return slug", samples[1].middle_code)]
    refs = [samples[0].to_dict(), samples[1]]  # a dict and a Sample: both become one canonical text
    folder = write_metric_folder(tmp_path / "hub")
    outs = []
    for where in (METRIC_DIR, folder):
        metric = evaluate.load(str(where))
        scores, report = metric.compute(predictions=preds, references=refs, k=[1, 2], allow_exec=True,
                                        use_cache=False, num_workers=2, return_details=True)
        outs.append({**scores, "details": report["details"]})
    for out in outs:
        for d in out["details"]:
            d.pop("duration_s")
    assert outs[0] == outs[1]
    assert outs[0]["pass@1"] == 0.5 and outs[0]["pass@2"] == 1.0
    assert outs[0]["verdicts/passed"] == 2 and outs[0]["verdicts/failed"] == 2
    assert [d["completion_index"] for d in outs[0]["details"] if d["passed"]] == [0, 1]


def test_space_card_names_the_dataset_and_the_code(tmp_path):
    from execrepobench.runner.cli import main

    assert main(["publish-metric", "--out", str(tmp_path), "--dataset", "me/execrepobench-data", "--code-url",
                 "https://example.org/erb"]) == 0
    text = (tmp_path / "execrepobench" / "README.md").read_text()
    meta = front_matter(text)
    assert meta["datasets"] == ["me/execrepobench-data"] and meta["sdk"] == "gradio"
    assert "https://huggingface.co/datasets/me/execrepobench-data" in text and "https://example.org/erb" in text
    assert 'load_dataset("me/execrepobench-data", "exec_repo_bench"' in text and "USER/execrepobench-dataset" not in text
    assert "pip install execrepobench`)\n" not in text  # the code link replaced the package's name
    named = write_metric_folder(tmp_path / "named", repo_id="me/execrepobench", dataset_id="me/execrepobench-data")
    assert 'evaluate.load("me/execrepobench")' in (named / "README.md").read_text()
    plain = (tmp_path / "plain")
    write_metric_folder(plain)
    assert "datasets" not in front_matter((plain / "execrepobench" / "README.md").read_text())
    with pytest.raises(MetricPublishError, match="not of the form owner/name"):
        write_metric_folder(tmp_path / "bad", dataset_id="no-owner")
