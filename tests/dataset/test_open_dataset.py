"""One way to open a dataset: builder folder, published folder, samples file or Hub id (snapshot_download is
the one stand-in: it returns a local folder of the published layout), and the fingerprint of each form."""
import dataclasses
import json

import pytest

from execrepobench.runner.cli import main
from execrepobench_dataset.load import (DatasetNotFound, dataset_fingerprint, load_repositories, open_dataset)
from execrepobench_dataset.record import RecordError
from execrepobench_dataset.repo_record import RepoRecord, environment_key, read_repo_records
from sample_build import RECORDS, SAMPLES, write_build


@pytest.fixture()
def forms(tmp_path, offline_hf):
    """(builder folder, published folder), with HF caches under tmp_path and no network."""
    from execrepobench_dataset.publish import publish

    build = write_build(tmp_path / "OUT")
    publish(build, tmp_path / "published")
    return build, tmp_path / "published"


def test_every_form_gives_the_same_records_and_fingerprint(forms, monkeypatch, capsys):
    import huggingface_hub

    build, published = forms
    calls = []

    def fake_snapshot_download(**kwargs):
        calls.append(kwargs)
        return str(published)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    opened = {name: open_dataset(x) for name, x in (("builder", build), ("published", published),
                                                     ("file", build / "samples.jsonl"), ("hub", "me/execrepobench"))}
    assert [o.kind for o in opened.values()] == ["builder", "published", "samples-file", "published"]
    assert calls == [{"repo_id": "me/execrepobench", "repo_type": "dataset", "revision": None,
                      "allow_patterns": ["README.md", "data/exec_repo_bench/*", "data/live-*/*",
                                         "data/repositories/*", "measurements.jsonl"]}]
    expected = dataset_fingerprint(SAMPLES, RECORDS)
    for name, o in opened.items():
        assert sorted(o.samples, key=lambda s: s.sample_id) == sorted(SAMPLES, key=lambda s: s.sample_id), name
        assert list(o.repositories) == RECORDS, name
        assert o.fingerprint == expected, name
    assert opened["hub"].repository("beta") == RECORDS[1] and opened["hub"].repository("nope") is None
    # the fingerprint changes with any record, and does not depend on the order of the rows
    assert dataset_fingerprint(SAMPLES[::-1], RECORDS[::-1]) == expected
    changed = dataclasses.replace(RECORDS[0], license="GPL-3.0")
    assert dataset_fingerprint(SAMPLES, [changed, RECORDS[1]]) != expected
    assert dataset_fingerprint(SAMPLES[1:], RECORDS) != expected
    # the documented command prints it for every form
    for form in (str(build), str(published), "me/execrepobench"):
        assert main(["fingerprint", form]) == 0
        assert capsys.readouterr().out.strip() == expected


def test_repositories_config_loads_with_datasets(forms, tmp_path):
    _, published = forms
    assert load_repositories(str(published), cache_dir=str(tmp_path / "c")) == RECORDS


def test_not_a_dataset_is_named(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for bad, why in ((tmp_path / "empty", "neither builder output"), (tmp_path / "nothing", "no such folder"),
                     ("not a hub id", "no such folder")):
        with pytest.raises(DatasetNotFound, match=why):
            open_dataset(bad)
    assert main(["fingerprint", str(tmp_path / "nothing")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_repo_record_round_trip_and_errors(tmp_path):
    record = RECORDS[0]
    assert RepoRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert record.key_matches and environment_key(record.python, record.repo_source, record.lock) == record.env_key
    # the key is content: the same content gives the same key, any change another one
    assert environment_key("3.11", record.repo_source, list(record.lock)) == record.env_key
    assert environment_key("3.12", record.repo_source, record.lock) != record.env_key
    assert environment_key("3.11", record.repo_source, record.lock[:1]) != record.env_key
    bad = {"python": ("3", "field python must be MAJOR.MINOR"), "lock": ("x==1", "field lock must be a list"),
           "env": (["TZ"], "field env: 'TZ' is not NAME=VALUE"),
           "repo_source": ("path:/home/me/proj#tree=" + "a" * 64, "field repo_source .*no folder of the machine"),
           "license": (3, "field license must be a string")}
    for field, (value, message) in bad.items():
        with pytest.raises(RecordError, match=f"repository record 'alpha': {message}"):
            RepoRecord.from_dict({**record.to_dict(), field: value})
    with pytest.raises(RecordError, match="missing field\\(s\\) env_key"):
        RepoRecord.from_dict({k: v for k, v in record.to_dict().items() if k != "env_key"})
    with pytest.raises(RecordError, match="unknown field\\(s\\) sources"):
        RepoRecord.from_dict({**record.to_dict(), "sources": []})
    (tmp_path / "r.jsonl").write_text(json.dumps(record.to_dict()) + "\n" + json.dumps({"repo_name": "x"}) + "\n")
    with pytest.raises(RecordError, match="r.jsonl:2: repository record 'x': missing field"):
        list(read_repo_records(tmp_path / "r.jsonl"))
