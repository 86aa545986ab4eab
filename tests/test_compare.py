"""`execrepobench compare`: the leaderboard over result folders (synthetic folders in the layout `run`
writes; the end-to-end run -> compare -> browser test is in test_run_dataset.py)."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from execrepobench.runner.cli import main
from execrepobench.runner.compare import CompareError, compare, permutation_p
from execrepobench_dataset.record import FILL_BLOCK, FILL_EXPRESSION, FILL_SPAN

FILLS = (FILL_SPAN, FILL_EXPRESSION, FILL_BLOCK)


def write_run(folder: Path, label: str, passes: dict, fingerprint: str = "f" * 64, n: int = 1) -> Path:
    """A result folder as `execrepobench run` writes it: results.jsonl rows and metrics.json with its run
    record. `passes`: sample id -> number of passing completions (of n)."""
    folder.mkdir(parents=True)
    rows = []
    for i, (sid, c) in enumerate(sorted(passes.items())):
        for j in range(n):
            rows.append({"sample_id": sid, "passed": j < c, "reason": "passed" if j < c else "failed",
                         "completion_index": j, "fill_type": FILLS[i % 3], "repo_name": f"repo{i % 2}",
                         "es": 1.0 if j < c else 0.25})
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    metrics = {"pass@1": sum(passes.values()) / n / len(passes),
               "run": {"backend": label, "model": None, "n": n, "k": [1],
                       "dataset": {"name": "some/dataset", "fingerprint": fingerprint}}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def ids(count):
    return [f"s{i:03d}" for i in range(count)]


def test_oracle_and_null_intervals_do_not_overlap_and_files_are_written(tmp_path):
    oracle = write_run(tmp_path / "oracle", "oracle", {s: 1 for s in ids(12)})
    null = write_run(tmp_path / "null", "null", {s: 0 for s in ids(12)})
    assert main(["compare", str(null), str(oracle), "--out", str(tmp_path / "cmp")]) == 0
    result = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    first, second = result["models"]
    assert (first["label"], first["rank"], second["label"]) == ("oracle", 1, "null")
    assert first["pass@1_ci95"] == [1.0, 1.0] and second["pass@1_ci95"] == [0.0, 0.0]
    assert second["pass@1_ci95"][1] < first["pass@1_ci95"][0]
    (pair,) = result["pairs"]
    assert pair["difference"] == 1.0 and pair["p_value"] < 0.01
    md = (tmp_path / "cmp" / "leaderboard.md").read_text()
    assert "| 1 | oracle | 100.0 | 100.0 - 100.0 |" in md and "| 2 | null | 0.0 |" in md
    html = (tmp_path / "cmp" / "leaderboard.html").read_text()
    assert html.count("<table>") == 4 and "<svg" in html and "<script" not in html and "http://www.w3.org/2000/svg" in html
    assert not re.search(r'(src|href)="(?!#)', html)  # self-contained: only references inside the page
    shown = f"{pair['p_value']:.4f}"  # the same p-value on the page and in the Markdown
    assert f"| {shown} |" in md and f"<td>{shown}</td>" in html.replace(' class="num"', "")
    assert set(result["per_fill_type"]) == set(FILLS) and set(result["per_repository"]) == {"repo0", "repo1"}


def test_interval_width_matches_the_binomial_standard_error(tmp_path):
    """200 samples, half passing: the 95% bootstrap interval is about +-1.96 * sqrt(0.25 / 200) = +-0.069."""
    half = write_run(tmp_path / "a", "half", {s: i % 2 for i, s in enumerate(ids(200))})
    other = write_run(tmp_path / "b", "other", {s: 1 for s in ids(200)})
    result = compare([half, other], resamples=4000)
    low, high = next(m for m in result["models"] if m["label"] == "half")["pass@1_ci95"]
    assert 0.12 < high - low < 0.16 and low < 0.5 < high
    assert result == compare([half, other], resamples=4000)  # fixed seed: reproducible
    assert result != compare([half, other], resamples=4000, seed=1)


def test_p_values_separate_real_differences_from_noise():
    rng = np.random.default_rng(5)
    a = (rng.random(300) < 0.6).astype(float)
    same = a.copy()
    assert permutation_p(a, same, 2000, np.random.default_rng(0)) == 1.0
    noise = a.copy()
    noise[:10] = 1 - noise[:10]  # a few samples flipped both ways: no real difference
    assert permutation_p(a, noise, 2000, np.random.default_rng(0)) > 0.05
    better = np.maximum(a, (rng.random(300) < 0.5).astype(float))
    assert permutation_p(better, a, 2000, np.random.default_rng(0)) < 0.001


def test_pass_at_1_per_sample_uses_every_completion(tmp_path):
    three = write_run(tmp_path / "a", "sampled", {s: 1 for s in ids(4)}, n=3)  # 1 of 3 passes
    one = write_run(tmp_path / "b", "greedy", {s: 1 for s in ids(4)})
    result = compare([three, one], resamples=200)
    by = {m["label"]: m for m in result["models"]}
    assert by["sampled"]["pass@1"] == pytest.approx(1 / 3) and by["greedy"]["pass@1"] == 1.0


def test_mixed_datasets_are_refused_naming_the_folders(tmp_path, capsys):
    a = write_run(tmp_path / "run-a", "x", {s: 1 for s in ids(4)}, fingerprint="a" * 64)
    b = write_run(tmp_path / "run-b", "y", {s: 1 for s in ids(4)}, fingerprint="b" * 64)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert "different datasets" in err and str(a) in err and str(b) in err and "fingerprint" in err
    assert not (tmp_path / "cmp").exists()
    with pytest.raises(CompareError, match="at least two"):
        compare([a])
    (b / "metrics.json").write_text(json.dumps({"pass@1": 1.0}))
    with pytest.raises(CompareError, match="run-b: metrics.json names no dataset fingerprint"):
        compare([a, b])
    with pytest.raises(CompareError, match="run-c: no metrics.json"):
        compare([a, tmp_path / "run-c"])


def test_subsets_are_compared_on_their_common_samples_and_labels_are_unique(tmp_path):
    a = write_run(tmp_path / "a", "oracle", {s: 1 for s in ids(10)})
    b = write_run(tmp_path / "b", "oracle", {s: 1 for s in ids(6)})
    result = compare([a, b], resamples=200)
    assert result["samples"]["compared"] == 6
    assert sorted(m["label"] for m in result["models"]) == ["oracle (a)", "oracle (b)"]
    assert sorted(result["samples"]["per_run"].values()) == [6, 10]
    c = write_run(tmp_path / "c", "z", {"other": 1})
    with pytest.raises(CompareError, match="no judged sample in common"):
        compare([a, c])


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_leaderboard_page_renders_in_a_headless_browser(tmp_path):
    """Debian's chromium renders the page: the DOM it built holds the tables and the chart, and the
    screenshot is a real image (look at it: tmp_path/leaderboard.png)."""
    runs = [write_run(tmp_path / name, name, {s: int(i % k == 0) for i, s in enumerate(ids(30))})
            for name, k in (("model-a", 1), ("model-b", 2), ("model-c", 5))]
    out = tmp_path / "cmp"
    assert main(["compare", *map(str, runs), "--out", str(out), "--resamples", "500"]) == 0
    page = (out / "leaderboard.html").resolve()
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<table>") == 4 and "<svg" in dom.stdout and "model-c" in dom.stdout
    assert "pass@1 per fill type" in dom.stdout and "repo1" in dom.stdout
    shot = tmp_path / "leaderboard.png"
    proc = subprocess.run([*base, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.read_bytes()[:4] == b"\x89PNG", proc.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert image.size == (1200, 1600) and len(colours) > 50  # drawn, not a blank page
