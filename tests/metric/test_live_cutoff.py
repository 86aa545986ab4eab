"""A training cutoff keeps only samples released after it: `cutoff=` in compute, `--cutoff` on evaluate and run.
The judging itself is covered by tests/builder/test_live_real.py; here every path stops before anything runs."""
import json
from dataclasses import replace

import pytest

from conftest import make_sample
from execrepobench.runner.cli import main
from execrepobench_dataset.record import FILL_SPAN, Sample, write_jsonl
from execrepobench_metric.api import compute
from execrepobench_metric.cutoff import apply_cutoff, check_cutoff, describe
from execrepobench_metric.inputs import InputError


DEMO = {"repo_name": "demo", "repo_source": "pypi:demo==1.0", "file_name": "demo/mod.py", "middle": "a + b",
        "prefix_code": "def f(a, b):\n    return ", "fill_type": FILL_SPAN, "node_type": "span", "env_key": "env",
        "judged": ("tests/test_x.py::test_x",),
        "test_command": ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no")}
LIVE = {"baseline_version": "0.9", "baseline_date": "2026-01-01T00:00:00Z"}  # a live sample's baseline release
SAMPLES = [make_sample(sample_id="old", release_date="2026-03-31T23:59:59Z", **DEMO, **LIVE),
           make_sample(sample_id="edge", release_date="2026-06-30T12:00:00Z", **DEMO, **LIVE),
           make_sample(sample_id="new", release_date="2026-07-01T00:00:01Z", **DEMO, **LIVE),
           make_sample(sample_id="undated", **DEMO)]


def test_apply_cutoff_keeps_samples_released_after_the_day():
    completions, kept, report = apply_cutoff([["a"], ["b"], ["c"], ["d"]], SAMPLES, "2026-06-30")
    assert [s.sample_id for s in kept] == ["new"] and completions == [["c"]]  # the cutoff day itself is not after it
    assert report == {"date": "2026-06-30", "kept": 1, "of": 4, "dropped": 3, "without_release_date": 1}
    assert describe(report) == ("cutoff 2026-06-30: 1 of 4 samples released after it are scored "
                                "(1 without a release date dropped)")
    assert [s.sample_id for s in apply_cutoff([[]] * 4, SAMPLES, "2026-03-31")[1]] == ["edge", "new"]
    with pytest.raises(InputError, match="no sample was released after 2026-07-01 .*1 without a release date"):
        apply_cutoff([[]] * 4, SAMPLES, "2026-07-01")
    for bad in ("2026-7-1", "yesterday", 20260701, "2026-02-30"):
        with pytest.raises(InputError, match="field cutoff: expected a date YYYY-MM-DD"):
            check_cutoff(bad)


def test_compute_refuses_a_cutoff_that_keeps_nothing_before_judging():
    # no allow_exec: the cutoff is checked with the inputs, before the opt-in and before anything runs
    with pytest.raises(InputError, match="no sample was released after 2027-01-01"):
        compute(["a + b"] * 4, SAMPLES, cutoff="2027-01-01")
    with pytest.raises(InputError, match="field cutoff"):
        compute(["a + b"] * 4, SAMPLES, cutoff="soon")


def test_record_round_trip_of_the_live_fields():
    s = SAMPLES[2]
    back = Sample.from_dict(json.loads(json.dumps(s.to_dict())))
    assert (back.release_date, back.baseline_version, back.baseline_date) == (
        "2026-07-01T00:00:01Z", "0.9", "2026-01-01T00:00:00Z")
    assert Sample.from_dict({k: v for k, v in s.to_dict().items() if k not in ("release_date", "baseline_version",
                                                                               "baseline_date")}).release_date == ""
    with pytest.raises(Exception, match="release_date must be a string"):
        replace(s, release_date=None)


def test_cli_cutoff_on_evaluate_and_run(tmp_path, capsys):
    path = tmp_path / "samples.jsonl"
    write_jsonl(SAMPLES, path)
    rc = main(["evaluate", "--samples", str(path), "--reference-fill", "ground_truth", "--cutoff", "2026-12-01",
               "--out", str(tmp_path / "ev")])
    assert rc == 2 and "no sample was released after 2026-12-01" in capsys.readouterr().err
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"sample_id": "new", "completion": "a + b"}) + "\n")
    # completions are needed only for the samples the cutoff keeps; then the opt-in is asked for
    rc = main(["evaluate", "--samples", str(path), "--predictions", str(preds), "--cutoff", "2026-06-30",
               "--out", str(tmp_path / "ev2")])
    err = capsys.readouterr().err
    assert rc == 2 and "no completion for" not in err and "ALLOW_EXEC" in err
    rc = main(["run", "--samples", str(path), "--backend", "oracle", "--cutoff", "2026-12-31",
               "--out", str(tmp_path / "run")])
    assert rc == 2 and "no sample was released after 2026-12-31" in capsys.readouterr().err


def test_limit_picks_among_the_samples_released_after_the_cutoff(tmp_path, capsys, monkeypatch):
    """--limit N with --cutoff: N samples of those the cutoff keeps (a subset taken first would judge fewer)."""
    monkeypatch.delenv("EXECREPOBENCH_ALLOW_EXEC", raising=False)
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    path = tmp_path / "samples.jsonl"
    write_jsonl(SAMPLES, path)
    rc = main(["run", "--samples", str(path), "--backend", "oracle", "--cutoff", "2026-03-31", "--limit", "1",
               "--out", str(tmp_path / "run")])
    said = capsys.readouterr()
    assert "cutoff 2026-03-31: 2 of 4 samples released after it" in said.out  # counted before the subset
    assert rc == 2 and "Opt in explicitly" in said.err  # then the opt-in, before anything is generated
