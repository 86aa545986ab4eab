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
from execrepobench.runner.compare_html import fill_chart
from execrepobench.runner.compare_md import markdown
from execrepobench_dataset.errors import UsageError
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
    with pytest.raises(CompareError, match="run-c: no such folder"):
        compare([a, tmp_path / "run-c"])


def test_subsets_are_compared_on_their_common_samples_and_labels_are_unique(tmp_path, capsys):
    a = write_run(tmp_path / "a", "oracle", {s: 1 for s in ids(10)})
    b = write_run(tmp_path / "b", "oracle", {s: 1 for s in ids(6)})
    result = compare([a, b], resamples=200)
    assert result["samples"]["compared"] == 6
    assert sorted(m["label"] for m in result["models"]) == ["oracle (a)", "oracle (b)"]
    assert sorted(result["samples"]["per_run"].values()) == [6, 10]
    # every output says so: comparison.json (note), leaderboard.md, the page and the printed lines
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--resamples", "200"]) == 0
    said = "Runs judged different subsets; only the samples they share are compared"
    note = json.loads((tmp_path / "cmp" / "comparison.json").read_text())["note"]
    assert note.startswith(said) and "oracle (a): 10" in note and "oracle (b): 6" in note and "6 shared" in note
    assert said in (tmp_path / "cmp" / "leaderboard.md").read_text() and said in capsys.readouterr().out
    assert said in (tmp_path / "cmp" / "leaderboard.html").read_text()
    same = write_run(tmp_path / "same", "other", {s: 0 for s in ids(10)})
    assert main(["compare", str(a), str(same), "--out", str(tmp_path / "cmp2"), "--resamples", "200"]) == 0
    assert json.loads((tmp_path / "cmp2" / "comparison.json").read_text())["note"] is None
    assert said not in (tmp_path / "cmp2" / "leaderboard.md").read_text() and said not in capsys.readouterr().out
    shifted = write_run(tmp_path / "shifted", "shifted", {s: 0 for s in ids(12)[2:]})  # as many, not the same
    assert compare([a, shifted], resamples=200)["note"].startswith(said)
    c = write_run(tmp_path / "c", "z", {"other": 1})
    with pytest.raises(CompareError, match="no judged sample in common"):
        compare([a, c])


def test_the_same_folder_twice_is_refused_naming_it(tmp_path, capsys, monkeypatch):
    a = write_run(tmp_path / "run-a", "x", {s: 1 for s in ids(4)})
    write_run(tmp_path / "run-b", "y", {s: 0 for s in ids(4)})
    (tmp_path / "link").symlink_to(a)
    monkeypatch.chdir(tmp_path)
    for given, named in ((["run-a", "run-a"], "run-a is given twice"),
                         (["run-a", "run-b", "run-a/"], "run-a is given twice"),
                         (["run-a", "link"], "link (the same folder as run-a) is given twice"),
                         (["run-a", str(a)], f"{a} (the same folder as run-a) is given twice")):
        assert main(["compare", *given, "--out", "cmp"]) == 2
        assert f"error: {named}" in capsys.readouterr().err
    assert not (tmp_path / "cmp").exists()


@pytest.mark.parametrize("flag, value, said", [("--resamples", "0", "an integer of at least 100, got 0"),
                                                ("--resamples", "50", "an integer of at least 100, got 50"),
                                                ("--resamples", "-1", "an integer of at least 100, got -1"),
                                                ("--seed", "-3", "a non-negative integer, got -3")])
def test_bad_resamples_and_seed_are_refused_naming_the_flag(tmp_path, capsys, flag, value, said):
    a = write_run(tmp_path / "a", "x", {s: 1 for s in ids(4)})
    b = write_run(tmp_path / "b", "y", {s: 0 for s in ids(4)})
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), flag, value]) == 2
    assert f"error: {flag} must be {said}" in capsys.readouterr().err
    assert not (tmp_path / "cmp").exists()
    with pytest.raises(UsageError, match=f"^{flag[2:]} must be"):  # called from Python: the keyword's name
        compare([a, b], **{flag[2:]: int(value)})


def test_errors_name_the_folder_the_file_and_the_line(tmp_path, capsys):
    good = write_run(tmp_path / "good", "x", {s: 1 for s in ids(4)})
    (tmp_path / "afile").write_text("x")
    no_metrics = write_run(tmp_path / "no-metrics", "y", {s: 1 for s in ids(4)})
    (no_metrics / "metrics.json").unlink()
    no_rows = write_run(tmp_path / "no-rows", "y", {s: 1 for s in ids(4)})
    (no_rows / "results.jsonl").unlink()
    (tmp_path / "empty").mkdir()
    corrupt = write_run(tmp_path / "corrupt", "y", {s: 1 for s in ids(4)})
    lines = (corrupt / "results.jsonl").read_text().splitlines()
    (corrupt / "results.jsonl").write_text("\n".join([lines[0], "", "{oops", *lines[1:]]) + "\n")
    bad_row = write_run(tmp_path / "bad-row", "y", {s: 1 for s in ids(4)})
    (bad_row / "results.jsonl").write_text("\n" + (bad_row / "results.jsonl").read_text() + "[1, 2]\n")
    cases = {tmp_path / "missing": "missing: no such folder",
             tmp_path / "afile": "afile: not a folder",
             no_metrics: "no-metrics: no metrics.json: not a finished",
             no_rows: "no-rows: no results.jsonl: not a finished",
             tmp_path / "empty": "empty: no metrics.json and results.jsonl (the folder has neither)",
             corrupt: f"{corrupt / 'results.jsonl'}:3: unreadable results line, not JSON (Expecting",
             bad_row: f"{bad_row / 'results.jsonl'}:6: not a result row"}
    for folder, said in cases.items():
        assert main(["compare", str(good), str(folder), "--out", str(tmp_path / "cmp")]) == 2
        assert said in capsys.readouterr().err, said
    (no_metrics / "metrics.json").write_text("[]")
    assert main(["compare", str(good), str(no_metrics), "--out", str(tmp_path / "cmp")]) == 2
    assert f"{no_metrics / 'metrics.json'}: not a JSON object" in capsys.readouterr().err
    other = write_run(tmp_path / "other", "y", {s: 0 for s in ids(4)})
    for out in (tmp_path / "afile", tmp_path / "afile" / "under"):
        assert main(["compare", str(good), str(other), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"error: --out {out}" in err and "--out must be a folder" in err and "Errno" not in err
    assert (tmp_path / "afile").read_text() == "x"


EVIL = "evil|<img src=x onerror=alert(1)>"


def test_model_names_are_escaped_in_the_markdown_and_drawn_as_given_in_the_chart(tmp_path):
    names = (EVIL, "_hidden $x$ *bold*", "plain")
    runs = [write_run(tmp_path / f"r{i}", name, {s: int(i == 0) for s in ids(6)}) for i, name in enumerate(names)]
    result = compare(runs, resamples=200)
    md = markdown(result)
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md and "evil\\|" in md
    assert "\\_hidden $x$ \\*bold\\*" in md
    for header, cells in (("| rank |", 13), ("| model A |", 5), ("| group |", 2 + len(names))):
        block = md[md.index(header):].split("\n\n")[0].splitlines()
        assert len(block) >= 3 and all(len(re.findall(r"(?<!\\)\|", row)) == cells + 1 for row in block), block
    fig = fill_chart(result)
    fig.draw_without_rendering()  # the legend shows each name as it is (no mathtext, a leading _ kept)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        m["label"].replace("$", "\\$") for m in result["models"]]
    assert "_hidden $x$ *bold*" in {m["label"] for m in result["models"]}


def test_chart_legend_is_outside_the_axes_and_every_bar_shows_its_value(tmp_path):
    runs = [write_run(tmp_path / name, name, {s: int(i % k == 0) if k else 0 for i, s in enumerate(ids(30))})
            for name, k in (("model-a", 1), ("model-b", 2), ("model-null", 0))]
    result = compare(runs, resamples=200)
    fig = fill_chart(result)
    fig.draw_without_rendering()
    (ax,) = fig.axes
    legend, frame = fig.legends[0].get_window_extent(), ax.get_window_extent()
    assert legend.y0 >= frame.y1 or legend.x0 >= frame.x1  # above or beside the axes: it covers no bar
    groups = 1 + len(result["per_fill_type"])
    values = [t.get_text() for t in ax.texts]
    assert len(values) == len(runs) * groups  # one value per bar, 0 included
    assert values[-groups:] == ["0.0"] * groups and values[:groups] == ["100.0"] * groups
    html = (Path(write_comparison_to(runs, tmp_path / "cmp")) / "leaderboard.html").read_text()
    # the pairs belong to the leaderboard: after it, before the per-fill-type section
    assert html.index("Leaderboard (pass@1") < html.index("Pairs of models") < html.index("<h2>Per fill type")


def write_comparison_to(runs, out):
    assert main(["compare", *map(str, runs), "--out", str(out), "--resamples", "200"]) == 0
    return out


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
