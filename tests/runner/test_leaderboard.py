"""The leaderboard a lab publishes (runner/compare_meta.py): display names (--name), metadata columns from the
run records, ties shown as ties, intervals on ES, chart labels equal to the table's, the dataset by its name
rather than a local path; the page looked at in headless Chromium."""
import json
import shutil
import subprocess

import pytest

from test_compare import ids, write_run
from execrepobench.runner.cli import main
from execrepobench.runner.compare import compare
from execrepobench.runner.compare_html import fill_chart
from execrepobench.runner.compare_meta import dataset_display_name, ranks


def _with_record(folder, dataset_name, commit=None, **run):
    metrics = json.loads((folder / "metrics.json").read_text())
    metrics["run"].update(run)
    metrics["run"]["dataset"].update(name=dataset_name, commit=commit)
    metrics["run_record"] = {"date": "2026-11-30T10:00:00+00:00", "engine": {"dtype": "torch.bfloat16"},
                             "source": {"commit": "abcdef0123456789"}, "package_version": "0.1.0"}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def test_ranks_share_equal_scores():
    assert ranks([0.5, 0.75, 0.5, 0.25]) == [(2, True), (1, False), (2, True), (4, False)]
    assert ranks([0.1 + 0.2, 0.3]) == [(1, True), (1, True)]  # equal up to float noise


def test_dataset_is_named_by_hub_id_or_folder_name():
    def named(name, commit=None):
        return dataset_display_name({"run": {"dataset": {"name": name, "commit": commit}}})

    assert named("me/execrepobench", commit="a" * 40) == "me/execrepobench"
    assert named("/home/me/out/quickstart/build/samples.jsonl") == "build"
    assert named("/data/published/execrepobench-v1") == "execrepobench-v1"


def test_names_metadata_ties_and_es_intervals(tmp_path):
    a = _with_record(write_run(tmp_path / "a", "vllm", {s: i % 2 for i, s in enumerate(ids(20))}),
                     "/scratch/me/out/published-v1", template="qwen2.5-coder", sampling={"temperature": 0.0}, n=1)
    b = _with_record(write_run(tmp_path / "b", "vllm", {s: (i + 1) % 2 for i, s in enumerate(ids(20))}),
                     "/scratch/me/out/published-v1", template="starcoder2", sampling={"temperature": 0.2}, n=1)
    c = write_run(tmp_path / "c", "null", {s: 0 for s in ids(20)})
    assert main(["compare", str(a), str(b), str(c), "--name", "Qwen 7B", "--name", "SC2 7B", "--name", "floor",
                 "--out", str(tmp_path / "cmp"), "--resamples", "500"]) == 0
    result = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    by = {m["label"]: m for m in result["models"]}
    assert set(by) == {"Qwen 7B", "SC2 7B", "floor"}
    assert by["Qwen 7B"]["rank"] == by["SC2 7B"]["rank"] == 1 and by["Qwen 7B"]["tied"] and by["floor"]["rank"] == 3
    low, high = by["Qwen 7B"]["es_ci95"]
    assert low < by["Qwen 7B"]["es"] < high and by["floor"]["es_ci95"] == [0.25, 0.25]
    assert by["Qwen 7B"]["meta"]["template"] == "qwen2.5-coder" and by["SC2 7B"]["meta"]["temperature"] == 0.2
    assert by["Qwen 7B"]["meta"]["date"] == "2026-11-30" and by["Qwen 7B"]["meta"]["dtype"] == "torch.bfloat16"
    assert result["dataset"]["name"] == "published-v1"  # not the machine's path
    md = (tmp_path / "cmp" / "leaderboard.md").read_text()
    assert "| =1 | Qwen 7B |" in md and "| =1 | SC2 7B |" in md and "| 3 | floor |" in md
    assert "/scratch" not in md and "ES 95% CI" in md and "qwen2.5-coder" in md
    html = (tmp_path / "cmp" / "leaderboard.html").read_text()
    assert "/scratch" not in html and "<td class=name>=1</td>" in html
    fig = fill_chart(result)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [m["label"] for m in result["models"]]
    with pytest.raises(Exception, match="--name given 1 time"):
        compare([a, b], names=["only one"])


@pytest.mark.browser
def test_leaderboard_with_names_in_headless_chromium(tmp_path):
    a = _with_record(write_run(tmp_path / "a", "vllm", {s: i % 2 for i, s in enumerate(ids(30))}), "me/erb",
                     commit="c" * 40, template="qwen2.5-coder", sampling={"temperature": 0.0})
    b = _with_record(write_run(tmp_path / "b", "openai", {s: i % 3 == 0 for i, s in enumerate(ids(30))}), "me/erb",
                     commit="c" * 40, template="starcoder2", sampling={"temperature": 0.2})
    assert main(["compare", str(a), str(b), "--name", "Qwen2.5-Coder-7B", "--name", "StarCoder2-7B",
                 "--out", str(tmp_path / "cmp"), "--resamples", "300"]) == 0
    page = tmp_path / "cmp" / "leaderboard.html"
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert "Qwen2.5-Coder-7B" in dom and "StarCoder2-7B" in dom and "me/erb" in dom and "ES 95% CI" in dom
    shot = tmp_path / "leaderboard.png"
    subprocess.run([*base, f"--screenshot={shot}", "--window-size=1400,1400", page.as_uri()], capture_output=True,
                   timeout=120)
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000
