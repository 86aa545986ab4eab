"""Results on the Hub (`push-results`, `run --push-results`) through a stand-in of the Hub's HTTP API that keeps
the files it is given (the Hub cannot be reached here), and `run --wandb` in wandb's offline mode."""
import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

from conftest import make_sample
from execrepobench.runner.push_results import PushResultsError, card, config_name, push_results


class FileHub:
    """huggingface_hub.HfApi's calls push_results makes, on a folder per repository (the Hub's HTTP API cannot be
    reached here): what is uploaded is what is listed and downloaded back."""

    def __init__(self, root: Path):
        self.root, self.calls = root, []

    def _repo(self, repo_id):
        return self.root / repo_id

    def create_repo(self, repo_id, repo_type=None, private=False, exist_ok=False, token=None):
        self.calls.append(("create_repo", repo_id, repo_type, private))
        self._repo(repo_id).mkdir(parents=True, exist_ok=True)

    def upload_folder(self, folder_path, repo_id, repo_type=None, path_in_repo="", commit_message="", token=None):
        self.calls.append(("upload_folder", repo_id, repo_type, path_in_repo))
        dest = self._repo(repo_id) / path_in_repo
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(folder_path, dest)

    def upload_file(self, path_or_fileobj, path_in_repo, repo_id, repo_type=None, commit_message="", token=None):
        self.calls.append(("upload_file", repo_id, repo_type, path_in_repo))
        shutil.copyfile(path_or_fileobj, self._repo(repo_id) / path_in_repo)

    def list_repo_files(self, repo_id, repo_type=None, token=None):
        root = self._repo(repo_id)
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())

    def hf_hub_download(self, repo_id, filename, repo_type=None, token=None):
        return str(self._repo(repo_id) / filename)


@pytest.fixture(scope="module")
def two_runs(built_minirepo, tmp_path_factory):
    from execrepobench.runner.cli import main
    from execrepobench_dataset.record import write_jsonl

    base = tmp_path_factory.mktemp("runs")
    samples = [make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                           judged=("tests/test_mathx.py::test_clamp_inside",)),
               make_sample(built_minirepo, "minirepo/mathx.py", "acc += value",
                           judged=("tests/test_mathx.py::test_running_total",))]
    write_jsonl(samples, base / "samples.jsonl")
    for backend in ("oracle", "null"):
        assert main(["run", "--samples", str(base / "samples.jsonl"), "--backend", backend, "--out",
                     str(base / backend), "--allow-exec", "--no-progress"]) == 0
    return base / "oracle", base / "null"


def test_config_name_is_the_runs_identity_not_the_machine():
    metrics = {"run": {"model": "/models/Qwen2.5-Coder-7B", "n": 1}, "run_record": {"date": "2026-01-01"}}
    name = config_name(metrics)
    assert name.startswith("Qwen2_5-Coder-7B_") and len(name.split("_")[-1]) == 10
    assert config_name({**metrics, "run_record": {"date": "2027-01-01"}}) == name  # another day, same run
    assert config_name({**metrics, "run": {"model": "/models/Qwen2.5-Coder-7B", "n": 2}}) != name
    text = card("me/results", {name: {**metrics, "pass@1": 0.5, "es": 0.25, "n_samples": 4}})
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["configs"] == [{"config_name": name, "data_files": [{"split": "latest",
                                                                     "path": f"{name}/results.jsonl"}]}]
    assert "| 50.0% | 25.0% |" in text


def test_bad_input_is_named(tmp_path):
    with pytest.raises(PushResultsError, match="not a finished"):
        push_results(tmp_path, "me/results", api=FileHub(tmp_path / "hub"))
    with pytest.raises(PushResultsError, match="OWNER/NAME"):
        push_results(tmp_path, "not an id", api=FileHub(tmp_path / "hub"))


@pytest.mark.sandbox
def test_pushed_runs_round_trip_and_give_the_same_leaderboard(two_runs, tmp_path):
    from datasets import load_dataset

    from execrepobench.runner.compare import compare

    hub = FileHub(tmp_path / "hub")
    names = [push_results(run, "me/results", api=hub) for run in two_runs]
    assert names[0] != names[1]
    assert push_results(two_runs[0], "me/results", api=hub) == names[0]  # the same run again: the same config
    repo = tmp_path / "hub" / "me" / "results"
    files = hub.list_repo_files("me/results")
    for name, run in zip(names, two_runs):
        for file_name in ("metrics.json", "results.json", "results.jsonl", "generations.jsonl"):
            assert f"{name}/{file_name}" in files
            assert (repo / name / file_name).read_bytes() == (run / file_name).read_bytes()
    meta = yaml.safe_load((repo / "README.md").read_text().split("---\n")[1])
    assert sorted(c["config_name"] for c in meta["configs"]) == sorted(names)  # the card names both runs
    # the card's configs load with datasets from the repository's files
    details = load_dataset("json", data_files=str(repo / names[0] / "results.jsonl"), split="train")
    assert details.num_rows == 2 and all(details["passed"])

    def board(folders):
        result = compare(list(folders), resamples=200, seed=0)
        models = [{k: v for k, v in m.items() if k != "folder"} for m in result["models"]]
        return models, result["pairs"], result["per_fill_type"], result["per_repository"], result["dataset"]

    assert board(repo / n for n in names) == board(two_runs)


@pytest.mark.sandbox
def test_run_push_results_flag_and_command(two_runs, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    from execrepobench.runner.cli import main

    hub = FileHub(tmp_path / "hub")
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: hub)
    assert main(["push-results", str(two_runs[1]), "--repo", "me/results"]) == 0
    assert "config null_" in capsys.readouterr().out
    assert ("create_repo", "me/results", "dataset", False) in hub.calls
    assert main(["push-results", str(tmp_path), "--repo", "me/results"]) == 2  # not a run folder: a user error


@pytest.mark.sandbox
def test_wandb_offline_logs_scores_record_and_samples(two_runs, tmp_path, monkeypatch):
    import wandb  # noqa: F401

    from execrepobench.runner.wandb_log import log_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    where = Path(log_run(two_runs[0], "execrepobench-test"))
    table = json.loads(next(tmp_path.rglob("samples_*.table.json")).read_text())
    assert len(table["data"]) == 2 and table["columns"][0] == "sample_id"  # one row per judged completion
    assert all(row[table["columns"].index("passed")] for row in table["data"])
    wanted = (b"pass@1", b"lm_eval/pass@1_stderr", b"run_record", b"package_version", b"oracle")
    log = b""
    for _ in range(600):  # the offline run's record (summary and config): wandb's service may still be writing it
        log = b"".join(p.read_bytes() for p in tmp_path.rglob("run-*.wandb"))
        if all(text in log for text in wanted):
            break
        time.sleep(0.5)
    for text in wanted:
        assert text in log, text
    assert str(tmp_path) in str(where)
