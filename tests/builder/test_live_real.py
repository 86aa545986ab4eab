"""A live snapshot of two real PyPI projects with tiny suites (parse, funcy), over a fixed past window: samples
from both, each released after the date, its middle absent from the baseline release's same file (and from
every file of it); the folder publishes as the window's config and is judged with a cutoff."""
import pytest

from execrepobench.builder.live.candidates import Candidate
from execrepobench.builder.live.index import IndexClient, parse_time
from execrepobench.builder.live.snapshot import LiveConfig, snapshot
from execrepobench.builder.live.window import Window
from execrepobench_dataset.load import open_dataset
from execrepobench_dataset.publish import publish
from execrepobench_dataset.record import read_jsonl
from execrepobench_metric.api import compute
from execrepobench_metric.environments.sources import fetch_pypi

AFTER = "2026-04-02"
EXPECTED = {"parse": ("1.22.4", "1.21.1"), "funcy": ("2.1", "2.0")}  # (target, baseline) for the window below


@pytest.mark.pypi
@pytest.mark.slow
@pytest.mark.sandbox
def test_live_snapshot_of_real_releases(tmp_path):
    window = Window.of(AFTER, "2026-12-01")
    out = tmp_path / "live"
    summary = snapshot(LiveConfig(window=window, out=out, candidates=(Candidate("parse"), Candidate("funcy")),
                                  samples_per_repo=3, progress=False))
    entries = {e["candidate"]: e for e in summary["live"]["candidates"]}
    for name, (target, baseline) in EXPECTED.items():
        e = entries[name]
        assert e["status"] == "ok", e
        assert (e["target"]["version"], e["baseline"]["version"]) == (target, baseline)
        assert e["samples"] >= 1 and e["time_s"] > 0 and e["new_code"]["new_rows"] > 0 and "used" in e["requirements"]
    samples = list(read_jsonl(out / "samples.jsonl"))
    assert {s.repo_name for s in samples} == set(EXPECTED)
    client = IndexClient()
    for s in samples:
        target, baseline = EXPECTED[s.repo_name]
        assert s.repo_source.startswith(f"pypi:{s.repo_name}=={target}#sha256=")
        assert s.release_date[:10] > AFTER and window.contains(parse_time(s.release_date))
        assert s.baseline_version == baseline and s.baseline_date[:10] <= AFTER
        release = next(r for r in client.project(s.repo_name).releases if r.version == baseline)
        root = fetch_pypi(s.repo_name, baseline, release.sdist.sha256, s.repo_name).root
        same_file = root / s.file_name
        if same_file.is_file():
            assert s.middle_code.strip() not in same_file.read_text(encoding="utf-8")
        assert all(s.middle_code.strip() not in p.read_text(encoding="utf-8", errors="replace")
                   for p in root.rglob("*.py"))
    assert client.requests == 0  # the snapshot's answers were cached

    published = tmp_path / "published"
    publish(out, published)
    assert (published / "data" / "live-2026-04-03-to-2026-12-01").is_dir()
    card = (published / "README.md").read_text(encoding="utf-8")
    assert "## Live snapshot" in card and "How \"new\" was decided" in card and "after 2026-04-02" in card
    opened = open_dataset(published)
    assert opened.fingerprint == open_dataset(out).fingerprint

    # parse 1.22.4 was released 2026-10-20, funcy 2.1 on 2026-09-10: a cutoff between them keeps parse only
    result = compute([s.middle_code for s in opened.samples], list(opened.samples), cutoff="2026-09-30",
                     allow_exec=True, dataset=str(published), progress=False)
    parse_count = sum(s.repo_name == "parse" for s in opened.samples)
    assert result["cutoff"] == {"date": "2026-09-30", "kept": parse_count, "of": len(samples),
                                "dropped": len(samples) - parse_count, "without_release_date": 0}
    assert result["n_samples"] == parse_count and result["pass@1"] == 1.0
