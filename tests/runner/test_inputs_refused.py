"""Inputs refused with errors that name the item (issue 32): duplicate sample ids in predictions (or a chosen
line), and `fingerprint` of a repository's folder of a build, which is not a dataset."""
from __future__ import annotations

import json

import pytest

from conftest import make_sample
from execrepobench.runner.cli import main
from execrepobench.runner.predictions import DuplicatePredictionError, read_predictions
from execrepobench_dataset.errors import ExecRepoBenchError
from execrepobench_dataset.load import DatasetNotFound, open_dataset
from execrepobench_dataset.record import write_jsonl


def _lines(path, rows):
    path.write_text("".join((json.dumps(r) if not isinstance(r, str) else r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_duplicate_sample_ids_are_refused_with_their_line_numbers(tmp_path):
    path = _lines(tmp_path / "p.jsonl", [{"sample_id": "a", "completion": "1"}, {"sample_id": "b", "completion": "2"},
                                         "", {"sample_id": "a", "completion": "3"}])
    with pytest.raises(DuplicatePredictionError, match=r"a on lines 1, 4") as info:
        read_predictions(path)
    assert isinstance(info.value, ExecRepoBenchError) and "--duplicates" in str(info.value)
    assert read_predictions(path, "first") == {"a": "1", "b": "2"}
    assert read_predictions(path, "last") == {"a": "3", "b": "2"}
    assert read_predictions(_lines(tmp_path / "ok.jsonl", [{"sample_id": "a", "completion": ["x", "y"]}])) == \
        {"a": ["x", "y"]}


def test_a_line_that_is_not_json_names_its_line(tmp_path):
    path = _lines(tmp_path / "p.jsonl", [{"sample_id": "a", "completion": "1"}, "{not json"])
    with pytest.raises(ExecRepoBenchError, match=r"p.jsonl:2: not JSON"):
        read_predictions(path)


def test_evaluate_refuses_duplicates_before_judging(tmp_path, capsys):
    sample = make_sample(prefix_code="x = ", middle="f(1)", fill_type="grammar-based: expression", node_type="call")
    write_jsonl([sample], tmp_path / "samples.jsonl")
    preds = _lines(tmp_path / "p.jsonl", [{"sample_id": sample.sample_id, "completion": "f(1)"}] * 2)
    code = main(["evaluate", "--samples", str(tmp_path / "samples.jsonl"), "--predictions", str(preds),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code != 0 and f"{sample.sample_id} on lines 1, 2" in err, err
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_fingerprint_of_a_repository_folder_of_a_build_is_refused(tmp_path, capsys):
    sample = make_sample(prefix_code="x = ", middle="f(1)")
    repo_folder = tmp_path / "out" / "repos" / "r"
    repo_folder.mkdir(parents=True)
    write_jsonl([sample], repo_folder / "samples.jsonl")
    (repo_folder / "repository.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(DatasetNotFound, match="one repository's folder of a build"):
        open_dataset(repo_folder)
    assert main(["fingerprint", str(repo_folder)]) == 2
    assert "repos/r" in capsys.readouterr().err
    # The build's own folder (samples.jsonl + repositories.jsonl) is a dataset.
    write_jsonl([sample], tmp_path / "out" / "samples.jsonl")
    (tmp_path / "out" / "repositories.jsonl").write_text("", encoding="utf-8")
    assert main(["fingerprint", str(tmp_path / "out")]) == 0
